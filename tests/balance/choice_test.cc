#include "daemon/balance/choice.h"

#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

StartProfile Profile(int64_t widest, std::vector<std::pair<int64_t, int64_t>> free) {
  return StartProfile{widest, std::move(free)};
}

// 12 cores: 2 free now, 8 from 100 until 150, then 4 until 400, then all.
TEST(StartProfileTest, AJobStartsAtTheFirstStepThatKeepsItsCoresForItsLimit) {
  const StartProfile p = Profile(12, {{0, 2}, {100, 8}, {150, 4}, {400, 12}});
  EXPECT_EQ(p.WaitFor(2, 1000), 0);
  EXPECT_EQ(p.WaitFor(3, 50), 100);   // fits the hole 100..150
  EXPECT_EQ(p.WaitFor(3, 51), 100);   // past the hole 4 are free: still fits
  EXPECT_EQ(p.WaitFor(5, 50), 100);
  EXPECT_EQ(p.WaitFor(5, 60), 400);
  EXPECT_EQ(p.WaitFor(5), 400);       // no limit: as if for ever
  EXPECT_EQ(p.WaitFor(12), 400);
  EXPECT_EQ(p.WaitFor(13), kNeverStarts);
  EXPECT_EQ(Profile(4, {}).WaitFor(4), 0);  // says nothing: taken as at once
  EXPECT_EQ(Profile(4, {{0, 1}}).WaitFor(2), kNeverStarts);
  EXPECT_EQ(ProfileWidths(12), (std::vector<int64_t>{1, 2, 4, 8, 12}));
  EXPECT_EQ(ProfileWidths(8), (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(ProfileWidths(0), (std::vector<int64_t>{}));
}

TEST(StartProfileTest, APeersBadProfileIsRefused) {
  EXPECT_TRUE(CheckStartProfile(Profile(4, {{0, 1}, {5, 4}}), 100).ok());
  EXPECT_TRUE(CheckStartProfile(Profile(0, {}), 100).ok());
  EXPECT_FALSE(CheckStartProfile(Profile(4, {{1, 1}, {5, 4}}), 100).ok());   // not from 0
  EXPECT_FALSE(CheckStartProfile(Profile(4, {{0, 1}, {0, 4}}), 100).ok());   // not ascending
  EXPECT_FALSE(CheckStartProfile(Profile(4, {{0, 5}}), 100).ok());           // more free than widest
  EXPECT_FALSE(CheckStartProfile(Profile(4, {{0, -1}}), 100).ok());          // negative
  EXPECT_FALSE(CheckStartProfile(Profile(4, {{0, 1}, {101, 4}}), 100).ok()); // too far
  EXPECT_FALSE(CheckStartProfile(Profile(-1, {}), 100).ok());
  StartProfile many;
  many.widest = 40;
  for (int64_t t = 0; t < 40; ++t) many.free.push_back({t, 1});
  EXPECT_FALSE(CheckStartProfile(many, 100).ok());
}

TEST(StartProfileTest, FromWaitsEachWidthIsFreeFromItsWait) {
  const StartProfile p = ProfileFromWaits(8, {1, 2, 4, 8}, {0, 0, 30, 90});
  EXPECT_EQ(p.free, (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {30, 4}, {90, 8}}));
  EXPECT_TRUE(CheckStartProfile(p, 100).ok());
  EXPECT_EQ(p.WaitFor(3), 30);
}

TEST(StartProfileTest, AForecastOfManyStepsIsMergedNeverPromisingMore) {
  // 64 cores; jobs of 1 core ending at 1, 2, ..., 63: 64 steps.
  std::vector<RunningJob> running;
  for (int64_t e = 1; e < 64; ++e) running.push_back({1, e});
  const EasyForecast f = EasyForecastStarts(64, 0, running, {});
  const StartProfile p = ProfileFromForecast(f);
  EXPECT_LE(p.free.size(), kMaxProfileSteps);
  EXPECT_TRUE(CheckStartProfile(p, 1000).ok());
  EXPECT_EQ(p.free.back(), (std::pair<int64_t, int64_t>{63, 64}));
  // At every time the merged profile has no more free cores than the forecast.
  for (int64_t t = 0; t < 70; ++t) {
    int64_t merged = 0, exact = 0;
    for (const auto& [at, c] : p.free)
      if (at <= t) merged = c;
    for (const auto& [at, c] : f.free_cores)
      if (at <= t) exact = c;
    EXPECT_LE(merged, exact) << "at " << t;
  }
}

TEST(MovableLoadTest, CountsOnlyJobsAnotherSiteCanRun) {
  const std::vector<int64_t> cores{1, 8, 64, 144, 2};
  EXPECT_EQ(MovableLoad(cores, 108), 4);
  EXPECT_EQ(MovableLoad(cores, 8), 3);
  EXPECT_EQ(MovableLoad(cores, 0), 0);
}

// Three jobs at home, waiting 100, 500 and 60; one transfer of 2 to a site
// where narrow jobs start at once and 4-core jobs wait 450: gains 100, 50, 60.
TEST(ChooseJobsTest, GainPicksTheJobsThatGainMost) {
  const std::vector<Candidate> jobs{{1, 0, 100, false}, {4, 0, 500, false}, {1, 0, 60, false}};
  // 2 cores free now, all 8 from 450.
  const std::vector<Outgoing> out{{3, 2, Profile(8, {{0, 2}, {450, 8}})}};
  const auto chosen = ChooseJobs(JobChoice::kGain, jobs, out);
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].job, 0u);
  EXPECT_EQ(chosen[0].gain, 100);
  EXPECT_EQ(chosen[1].job, 2u);
  EXPECT_EQ(chosen[1].gain, 60);
}

TEST(ChooseJobsTest, TiesGoToTheOlderJob) {
  const std::vector<Candidate> jobs{{1, 0, 100, false}, {4, 0, 500, false}, {1, 0, 50, false}};
  // 2 cores free now, all 8 from 450.
  const std::vector<Outgoing> out{{3, 2, Profile(8, {{0, 2}, {450, 8}})}};
  const auto chosen = ChooseJobs(JobChoice::kGain, jobs, out);
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].job, 0u);
  EXPECT_EQ(chosen[1].job, 1u);
  EXPECT_EQ(chosen[1].gain, 50);
}

TEST(ChooseJobsTest, AQuotaIsAnUpperBoundNeverAReasonToLose) {
  // Every job would start later there: none moves, whatever the count.
  const std::vector<Candidate> jobs{{1, 0, 10, false}, {1, 0, 20, false}};
  const std::vector<Outgoing> out{{1, 2, Profile(4, {{0, 0}, {30, 4}})}};
  EXPECT_TRUE(ChooseJobs(JobChoice::kGain, jobs, out).empty());
}

TEST(ChooseJobsTest, NoJobGoesWhereItCannotFit) {
  const std::vector<Candidate> jobs{{16, 0, 1000, false}, {2, 0, 5, false}, {16, 0, 900, false}};
  const std::vector<Outgoing> out{{1, 3, Profile(8, {{0, 8}})}};
  for (JobChoice c : {JobChoice::kGain, JobChoice::kNewest}) {
    const auto chosen = ChooseJobs(c, jobs, out);
    ASSERT_EQ(chosen.size(), 1u) << JobChoiceName(c);
    EXPECT_EQ(chosen[0].job, 1u) << JobChoiceName(c);
  }
}

// Issue 29: the hysteresis pinned a recently moved job whatever it would
// gain. With a margin it moves on only when it gains at least the margin.
TEST(ChooseJobsTest, ARecentlyMovedJobMovesOnlyForTheMargin) {
  // 4 free cores at the destination; a recent job gaining 1000, one gaining
  // 20 (under the margin of 300), an old one gaining 10.
  const std::vector<Candidate> jobs{{1, 0, 1000, true}, {1, 0, 10, false}, {1, 0, 20, true}};
  const std::vector<Outgoing> out{{1, 3, Profile(4, {{0, 4}})}};
  const auto chosen = ChooseJobs(JobChoice::kGain, jobs, out, 1, 300);
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].job, 0u);
  EXPECT_EQ(chosen[0].gain, 1000);
  EXPECT_EQ(chosen[1].job, 1u);
  // newest knows no gain: a recent job stays.
  const auto newest = ChooseJobs(JobChoice::kNewest, jobs, out, 1, 300);
  ASSERT_EQ(newest.size(), 1u);
  EXPECT_EQ(newest[0].job, 1u);
}

TEST(ChooseJobsTest, ARecentlyMovedJobIsNeverChosenWithoutAMargin) {
  const std::vector<Candidate> jobs{{1, 0, 1000, true}, {1, 0, 10, false}, {1, 0, 20, true}};
  const std::vector<Outgoing> out{{1, 3, Profile(1, {{0, 1}})}};
  for (JobChoice c : {JobChoice::kGain, JobChoice::kNewest}) {
    const auto chosen = ChooseJobs(c, jobs, out);
    ASSERT_EQ(chosen.size(), 1u) << JobChoiceName(c);
    EXPECT_EQ(chosen[0].job, 1u) << JobChoiceName(c);
  }
}

TEST(ChooseJobsTest, NewestTakesTheMostRecentlyQueuedPerTransferInOrder) {
  const std::vector<Candidate> jobs(5, Candidate{1, 0, 0, false});
  const std::vector<Outgoing> out{{1, 2, Profile(1, {{0, 1}})}, {2, 2, Profile(1, {{0, 1}})}};
  const auto chosen = ChooseJobs(JobChoice::kNewest, jobs, out);
  ASSERT_EQ(chosen.size(), 4u);
  EXPECT_EQ(chosen[0].job, 4u);
  EXPECT_EQ(chosen[1].job, 3u);
  EXPECT_EQ(chosen[2].job, 2u);
  EXPECT_EQ(chosen[2].transfer, 1u);
  EXPECT_EQ(chosen[3].job, 1u);
}

TEST(ChooseJobsTest, GainSpreadsOverTransfersByBestDestination) {
  // Job 0 gains more at site 2 (wait 0) than at site 1 (wait 50).
  const std::vector<Candidate> jobs{{2, 0, 100, false}, {1, 0, 100, false}};
  const std::vector<Outgoing> out{{1, 1, Profile(2, {{0, 1}, {50, 2}})}, {2, 1, Profile(2, {{0, 2}})}};
  const auto chosen = ChooseJobs(JobChoice::kGain, jobs, out);
  ASSERT_EQ(chosen.size(), 2u);
  // Gains: job 0 -> site 2: 100; job 1 -> either: 100. Ties to the older job
  // first (job 0 to transfer 1, its only 100), then job 1 to transfer 0.
  EXPECT_EQ(chosen[0].job, 0u);
  EXPECT_EQ(chosen[0].transfer, 1u);
  EXPECT_EQ(chosen[1].job, 1u);
  EXPECT_EQ(chosen[1].transfer, 0u);
}

// 2 cores free until 100, then 10. Three 1-core jobs of 50 s, each waiting
// 80 at home: two start at once there; the third sees their cores booked
// and starts at 50 (gain 30).
TEST(ChooseJobsTest, EachChosenJobIsBookedAtItsDestination) {
  const std::vector<Candidate> jobs(3, Candidate{1, 50, 80, false});
  const std::vector<Outgoing> out{{1, 3, Profile(10, {{0, 2}, {100, 10}})}};
  const auto chosen = ChooseJobs(JobChoice::kGain, jobs, out);
  ASSERT_EQ(chosen.size(), 3u);
  EXPECT_EQ(chosen[0].gain, 80);
  EXPECT_EQ(chosen[1].gain, 80);
  EXPECT_EQ(chosen[2].gain, 30);
  StartProfile p = Profile(10, {{0, 2}, {100, 10}});
  Book(&p, 20, 2, 100);
  EXPECT_EQ(p.free, (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {20, 0}, {100, 8}, {120, 10}}));
}

TEST(ChooseJobsTest, ParsesItsNames) {
  EXPECT_EQ(*ParseJobChoice("gain"), JobChoice::kGain);
  EXPECT_EQ(*ParseJobChoice("newest"), JobChoice::kNewest);
  EXPECT_FALSE(ParseJobChoice("oldest").ok());
}

TEST(ProfileFromForecastTest, ListsFreeCoresFromNow) {
  const EasyForecast f = EasyForecastStarts(10, 1000, std::vector<RunningJob>{{6, 1100}}, {});
  const StartProfile p = ProfileFromForecast(f);
  EXPECT_EQ(p.widest, 10);
  EXPECT_EQ(p.free, (std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {100, 10}}));
  EXPECT_TRUE(CheckStartProfile(p, 1000).ok());
}

// A short job fits a hole the tail estimate would not see: 4 cores free
// until 100, when a queued 8-core job takes 8 of 10 until 500.
TEST(ChooseJobsTest, AShortJobGainsFromAHoleAtTheDestination) {
  const StartProfile there = Profile(10, {{0, 4}, {100, 2}, {500, 10}});
  const std::vector<Candidate> jobs{{4, /*limit=*/90, /*wait_here=*/200, false},
                                    {4, /*limit=*/1000, /*wait_here=*/200, false}};
  const auto chosen = ChooseJobs(JobChoice::kGain, jobs, std::vector<Outgoing>{{1, 2, there}});
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_EQ(chosen[0].job, 0u);  // the short one starts now there; the long one would wait until 500
  EXPECT_EQ(chosen[0].gain, 200);
}

}  // namespace
}  // namespace hyperfed::balance
