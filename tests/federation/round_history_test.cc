#include "daemon/federation/round_history.h"

#include <thread>

#include "gtest/gtest.h"

namespace hyperfed::federation {
namespace {

RoundView View(const std::string& id, bool dry, absl::Time at) {
  RoundView v;
  v.id = id;
  v.dry_run = dry;
  v.started = at;
  return v;
}

TEST(RoundHistoryTest, DryRunsNeverEvictALiveRound) {
  FakeEnv env;
  RoundHistory h(&env, /*keep=*/4);
  h.Add(View("live-1", false, env.Now()));
  for (int i = 0; i < 40; ++i) {
    env.Advance(absl::Seconds(1));
    h.Add(View("dry-" + std::to_string(i), true, env.Now()));
  }
  ASSERT_TRUE(h.Find("live-1").has_value()) << "a live round outlives any number of dry runs";
  EXPECT_TRUE(h.Update("live-1", [](RoundView& r) { r.done = true; }));
  EXPECT_FALSE(h.Find("dry-0").has_value()) << "dry runs are kept to their own limit";
  EXPECT_EQ(h.Last()->id, "dry-39");
  EXPECT_EQ(h.size(), 5u);
}

TEST(RoundHistoryTest, WaitEndsOnANewEventWithoutTimePassing) {
  FakeEnv env;
  RoundHistory h(&env);
  h.Add(View("r", false, env.Now()));
  std::thread t([&] {
    while (env.waiters() == 0) std::this_thread::yield();
    h.Update("r", [](RoundView& r) { r.events.push_back("started"); });
  });
  auto v = h.Wait("r", 0, absl::InfiniteFuture());
  t.join();
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->events.size(), 1u);
}

// Admin.Balance with wait waits for the end between its progress writes: an
// event short of the end does not end that wait, the end does (and a view
// that was not done would be written as if it were).
TEST(RoundHistoryTest, WaitDoneEndsOnlyWhenTheRoundIsDone) {
  FakeEnv env;
  RoundHistory h(&env);
  h.Add(View("r", false, env.Now()));
  std::thread t([&] {
    while (env.waiters() == 0) std::this_thread::yield();
    h.Update("r", [](RoundView& r) { r.events.push_back("a report"); });
    // Time for a waiter woken by the event to take it (real time: the
    // waiter's wake does not go through the fake clock).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    h.Update("r", [](RoundView& r) { r.events.push_back("another"); });
    h.Update("r", [](RoundView& r) {
      r.events.push_back("finished");
      r.done = true;
    });
  });
  auto v = h.WaitDone("r", absl::InfiniteFuture());
  t.join();
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->done);
  EXPECT_EQ(v->events.size(), 3u);
  // A round that is gone, or a closed history, ends it too.
  EXPECT_FALSE(h.WaitDone("gone", absl::InfiniteFuture()).has_value());
}

TEST(RoundTimeoutsTest, OneRuleFromTheConfig) {
  config::BalancerConfig b;
  b.step_timeout = absl::Seconds(10);
  RoundTimeouts t = ComputeRoundTimeouts(b, {3, {}});
  EXPECT_EQ(t.step, absl::Seconds(10));
  EXPECT_EQ(t.Wait(0), absl::Seconds(10));
  EXPECT_EQ(t.Wait(3), absl::Seconds(40));
  EXPECT_EQ(t.round, absl::Seconds(10 * (6 * 3 + 4)));
  // A round whose MCWA tree detours around faults deeper than the cube gets
  // the time that depth needs (balance::RoundDepth).
  const balance::RoundShape deep{5, {0, 1, 3, 6, 7, 9, 12, 15, 16, 21, 22, 24, 26, 29, 31}};
  ASSERT_GT(balance::RoundDepth(deep), 5);
  EXPECT_EQ(ComputeRoundTimeouts(b, deep).round, absl::Seconds(10 * (6 * balance::RoundDepth(deep) + 4)));
  EXPECT_EQ(t.report, absl::Seconds(10));
}

}  // namespace
}  // namespace hyperfed::federation
