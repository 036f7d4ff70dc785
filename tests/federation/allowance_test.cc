#include "daemon/federation/allowance.h"

#include <thread>

#include "gtest/gtest.h"

namespace hyperfed::federation {
namespace {

TEST(TransferAllowanceTest, AdmitsWhatThePlanSendsAndNoMore) {
  FakeEnv env;
  TransferAllowance a(&env);
  a.Expect("r1", "site-0", 5);
  a.Expect("r1", "site-0", 2);  // a second phase of the same plan adds up
  EXPECT_TRUE(a.Admit("r1", "site-0", 4, absl::ZeroDuration()).ok());
  EXPECT_EQ(a.Left("r1", "site-0"), 3);
  // More than is left, another source, another round, no round at all.
  EXPECT_EQ(a.Admit("r1", "site-0", 4, absl::ZeroDuration()).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a.Left("r1", "site-0"), 3) << "a refusal takes nothing";
  EXPECT_EQ(a.Admit("r1", "site-3", 1, absl::ZeroDuration()).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a.Admit("r2", "site-0", 1, absl::ZeroDuration()).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a.Admit("", "site-0", 1, absl::Hours(1)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(a.Admit("r1", "site-0", 3, absl::ZeroDuration()).ok());
}

TEST(TransferAllowanceTest, WaitsForThePlanOfTheDestination) {
  FakeEnv env;
  TransferAllowance a(&env);
  // The source's Transfer arrives before this site has planned.
  std::thread planner([&] {
    while (env.waiters() == 0) std::this_thread::yield();
    a.Expect("r1", "site-0", 2);
  });
  EXPECT_TRUE(a.Admit("r1", "site-0", 2, absl::Seconds(10)).ok());
  planner.join();
  // A plan that never covers the request: refused when the wait ends.
  std::thread clock([&] {
    while (env.waiters() == 0) std::this_thread::yield();
    env.Advance(absl::Seconds(11));
  });
  EXPECT_EQ(a.Admit("r1", "site-0", 1, absl::Seconds(10)).code(), absl::StatusCode::kFailedPrecondition);
  clock.join();
}

// This site's part ended before it planned (it failed): a source's
// Transfer is refused at once, not after the wait; what a part planned
// before it ended is still admitted.
TEST(TransferAllowanceTest, AnEndedPartRefusesAtOnceWhatItNeverPlanned) {
  FakeEnv env;
  TransferAllowance a(&env);
  a.Expect("r1", "site-0", 2);
  std::thread ender([&] {
    while (env.waiters() == 0) std::this_thread::yield();
    a.Ended("r2");
    a.Ended("r1");
  });
  EXPECT_EQ(a.Admit("r2", "site-0", 1, absl::InfiniteDuration()).code(), absl::StatusCode::kFailedPrecondition);
  ender.join();
  EXPECT_TRUE(a.Admit("r1", "site-0", 2, absl::InfiniteDuration()).ok());
  EXPECT_EQ(a.Admit("r1", "site-0", 1, absl::InfiniteDuration()).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(TransferAllowanceTest, KeepsTheLastRoundsOnly) {
  FakeEnv env;
  TransferAllowance a(&env);
  for (int i = 0; i <= TransferAllowance::kKeptRounds; ++i) a.Expect("r" + std::to_string(i), "site-0", 1);
  EXPECT_EQ(a.Left("r0", "site-0"), 0) << "the oldest round is forgotten";
  EXPECT_EQ(a.Left("r1", "site-0"), 1);
  EXPECT_EQ(a.Left("r" + std::to_string(TransferAllowance::kKeptRounds), "site-0"), 1);
}

}  // namespace
}  // namespace hyperfed::federation
