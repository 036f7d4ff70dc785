// Exactly once under crashes (docs/design.md §7): a daemon killed with
// SIGKILL at each step of a transfer, then restarted from its journal,
// leaves every job at exactly one site (checked by key) and none held.

#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

class CrashTest : public ::testing::TestWithParam<CrashCase> {};

TEST_P(CrashTest, EveryJobExactlyOnceAfterRestart) {
  const CrashCase c = GetParam();
  // max_batch 3: the 10 jobs go in 4 batches, all in flight at once
  // (migration::kBatchesInFlight), so a crash cuts into overlapping batches.
  auto f = TestFederation::Start({.sites = 2, .slots = {1, 1}, .max_batch = 3});
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  // One running blocker at each site, 20 pending at site 0 (10 will move).
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(Submit(fed, i, 1, 3'600'000).ok());
    ASSERT_TRUE(WaitRunning(fed, i, 1, absl::Seconds(10)));
  }
  ASSERT_TRUE(Submit(fed, 0, 20, 3'600'000).ok());
  const auto before = AllKeys(fed);
  ASSERT_EQ(before.size(), 22u);

  // Restart the crashing side armed with the crash point.
  fed.Stop(c.site);
  ASSERT_TRUE(fed.StartSite(c.site, {{"HYPERFED_CRASH_AT", c.point}}).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30)).ok());

  // A site dies in this round: its end is not awaited here (and the call
  // fails when the coordinator dies before it answers).
  auto round = StartRound(fed, c.site == 0 ? 1 : 0);
  ASSERT_TRUE(fed.WaitExit(c.site, absl::Seconds(30)))
      << "site-" << c.site << " never reached crash point " << c.point << "\n"
      << fed.Log(c.site);

  ASSERT_TRUE(fed.StartSite(c.site).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30)).ok());
  // The round goes on at the survivor until it learns the restarted site is
  // out of it; what it does meanwhile is part of what is checked below.
  if (round.ok())
    ASSERT_TRUE(WaitRoundOver(fed, c.site == 0 ? 1 : 0, *round, absl::Seconds(60)))
        << "round " << *round << " never ended";
  // Recovery runs at start and every 5 s: wait until nothing is held.
  const absl::Time end = absl::Now() + absl::Seconds(60);
  std::multiset<std::string> keys;
  int64_t held = -1;
  while (absl::Now() < end) {
    keys = AllKeys(fed);
    held = CountState(ListJobs(fed, 0), "held") + CountState(ListJobs(fed, 1), "held");
    if (held == 0 && keys == before) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  EXPECT_EQ(held, 0) << "jobs left held after recovery\n" << fed.Log(0) << fed.Log(1);
  EXPECT_EQ(keys, before) << "a job lost or duplicated after a crash at " << c.point << "\n"
                          << fed.Log(0) << fed.Log(1);
  // Never runnable at two sites: a key pending or running at both is a duplicate.
  std::multiset<std::string> runnable;
  for (int i = 0; i < 2; ++i)
    for (const auto& j : ListJobs(fed, i))
      if (j.state() == "pending" || j.state() == "running") runnable.insert(j.spec().key());
  for (const auto& k : runnable) EXPECT_EQ(runnable.count(k), 1u) << k;
}

// The 10 jobs of this round are one adapter chunk (see TransferCrashCases).
INSTANTIATE_TEST_SUITE_P(Points, CrashTest, ::testing::ValuesIn(TransferCrashCases()), CrashCaseName);

}  // namespace
}  // namespace hyperfed::testing
