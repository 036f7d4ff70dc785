#include "daemon/balance/choice.h"

#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

StartProfile Profile(int64_t widest, std::vector<std::pair<int64_t, int64_t>> waits) {
  return StartProfile{widest, std::move(waits)};
}

TEST(StartProfileTest, WaitIsThatOfTheSmallestListedWidthThatHoldsTheJob) {
  const StartProfile p = Profile(12, {{1, 0}, {2, 5}, {4, 9}, {8, 9}, {12, 40}});
  EXPECT_EQ(p.WaitFor(1), 0);
  EXPECT_EQ(p.WaitFor(3), 9);
  EXPECT_EQ(p.WaitFor(9), 40);
  EXPECT_EQ(p.WaitFor(13), kNeverStarts);
  EXPECT_EQ(ProfileWidths(12), (std::vector<int64_t>{1, 2, 4, 8, 12}));
  EXPECT_EQ(ProfileWidths(8), (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(ProfileWidths(0), (std::vector<int64_t>{}));
}

TEST(StartProfileTest, APeersBadProfileIsRefused) {
  EXPECT_TRUE(CheckStartProfile(Profile(4, {{1, 0}, {4, 3}}), 100).ok());
  EXPECT_TRUE(CheckStartProfile(Profile(0, {}), 100).ok());
  EXPECT_FALSE(CheckStartProfile(Profile(4, {{2, 0}, {1, 3}}), 100).ok());   // not ascending
  EXPECT_FALSE(CheckStartProfile(Profile(8, {{1, 0}, {4, 3}}), 100).ok());   // does not end at widest
  EXPECT_FALSE(CheckStartProfile(Profile(4, {{1, -1}, {4, 3}}), 100).ok());  // negative wait
  EXPECT_FALSE(CheckStartProfile(Profile(4, {{1, 0}, {4, 101}}), 100).ok()); // wait too long
  EXPECT_FALSE(CheckStartProfile(Profile(-1, {}), 100).ok());
  StartProfile many;
  for (int64_t w = 1; w <= 40; ++w) many.waits.push_back({w, 0});
  many.widest = 40;
  EXPECT_FALSE(CheckStartProfile(many, 100).ok());
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
  const std::vector<Candidate> jobs{{1, 100, false}, {4, 500, false}, {1, 60, false}};
  const std::vector<Outgoing> out{{3, 2, Profile(8, {{1, 0}, {2, 0}, {4, 450}, {8, 450}})}};
  const auto chosen = ChooseJobs(JobChoice::kGain, jobs, out);
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].job, 0u);
  EXPECT_EQ(chosen[0].gain, 100);
  EXPECT_EQ(chosen[1].job, 2u);
  EXPECT_EQ(chosen[1].gain, 60);
}

TEST(ChooseJobsTest, TiesGoToTheOlderJob) {
  const std::vector<Candidate> jobs{{1, 100, false}, {4, 500, false}, {1, 50, false}};
  const std::vector<Outgoing> out{{3, 2, Profile(8, {{1, 0}, {2, 0}, {4, 450}, {8, 450}})}};
  const auto chosen = ChooseJobs(JobChoice::kGain, jobs, out);
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].job, 0u);
  EXPECT_EQ(chosen[1].job, 1u);
  EXPECT_EQ(chosen[1].gain, 50);
}

TEST(ChooseJobsTest, AQuotaIsAnUpperBoundNeverAReasonToLose) {
  // Every job would start later there: none moves, whatever the count.
  const std::vector<Candidate> jobs{{1, 10, false}, {1, 20, false}};
  const std::vector<Outgoing> out{{1, 2, Profile(4, {{1, 30}, {2, 30}, {4, 30}})}};
  EXPECT_TRUE(ChooseJobs(JobChoice::kGain, jobs, out).empty());
}

TEST(ChooseJobsTest, NoJobGoesWhereItCannotFit) {
  const std::vector<Candidate> jobs{{16, 1000, false}, {2, 5, false}, {16, 900, false}};
  const std::vector<Outgoing> out{{1, 3, Profile(8, {{1, 0}, {2, 0}, {4, 0}, {8, 0}})}};
  for (JobChoice c : {JobChoice::kGain, JobChoice::kNewest}) {
    const auto chosen = ChooseJobs(c, jobs, out);
    ASSERT_EQ(chosen.size(), 1u) << JobChoiceName(c);
    EXPECT_EQ(chosen[0].job, 1u) << JobChoiceName(c);
  }
}

TEST(ChooseJobsTest, ARecentlyMovedJobIsNeverChosen) {
  const std::vector<Candidate> jobs{{1, 1000, true}, {1, 10, false}, {1, 20, true}};
  const std::vector<Outgoing> out{{1, 3, Profile(1, {{1, 0}})}};
  for (JobChoice c : {JobChoice::kGain, JobChoice::kNewest}) {
    const auto chosen = ChooseJobs(c, jobs, out);
    ASSERT_EQ(chosen.size(), 1u) << JobChoiceName(c);
    EXPECT_EQ(chosen[0].job, 1u) << JobChoiceName(c);
  }
}

TEST(ChooseJobsTest, NewestTakesTheMostRecentlyQueuedPerTransferInOrder) {
  const std::vector<Candidate> jobs(5, Candidate{1, 0, false});
  const std::vector<Outgoing> out{{1, 2, Profile(1, {{1, 0}})}, {2, 2, Profile(1, {{1, 0}})}};
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
  const std::vector<Candidate> jobs{{2, 100, false}, {1, 100, false}};
  const std::vector<Outgoing> out{{1, 1, Profile(2, {{1, 0}, {2, 50}})}, {2, 1, Profile(2, {{1, 0}, {2, 0}})}};
  const auto chosen = ChooseJobs(JobChoice::kGain, jobs, out);
  ASSERT_EQ(chosen.size(), 2u);
  // Gains: job 0 -> site 2: 100; job 1 -> either: 100. Ties to the older job
  // first (job 0 to transfer 1, its only 100), then job 1 to transfer 0.
  EXPECT_EQ(chosen[0].job, 0u);
  EXPECT_EQ(chosen[0].transfer, 1u);
  EXPECT_EQ(chosen[1].job, 1u);
  EXPECT_EQ(chosen[1].transfer, 0u);
}

TEST(ChooseJobsTest, ParsesItsNames) {
  EXPECT_EQ(*ParseJobChoice("gain"), JobChoice::kGain);
  EXPECT_EQ(*ParseJobChoice("newest"), JobChoice::kNewest);
  EXPECT_FALSE(ParseJobChoice("oldest").ok());
}

TEST(ProfileFromForecastTest, ListsTailWaitsFromNow) {
  const EasyForecast f = EasyForecastStarts(10, 1000, std::vector<RunningJob>{{6, 1100}}, {});
  const StartProfile p = ProfileFromForecast(f);
  EXPECT_EQ(p.widest, 10);
  EXPECT_EQ(p.waits, (std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {2, 0}, {4, 0}, {8, 100}, {10, 100}}));
  EXPECT_TRUE(CheckStartProfile(p, 1000).ok());
}

}  // namespace
}  // namespace hyperfed::balance
