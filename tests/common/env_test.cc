#include "daemon/common/env.h"

#include <atomic>
#include <thread>

#include "daemon/common/executor.h"
#include "gtest/gtest.h"

namespace hyperfed {
namespace {

TEST(FakeEnvTest, AWaitEndsWhenTimeReachesItsDeadlineAndNotBefore) {
  FakeEnv env;
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<bool> woke{false};
  const absl::Time deadline = env.Now() + absl::Seconds(5);
  std::thread waiter([&] {
    std::unique_lock<std::mutex> l(mu);
    EXPECT_FALSE(env.WaitUntil(l, cv, deadline, [] { return false; }));
    woke = true;
  });
  while (env.waiters() == 0) std::this_thread::yield();
  env.Advance(absl::Seconds(4));
  EXPECT_FALSE(woke.load()) << "4 of 5 seconds";
  env.Advance(absl::Seconds(1));
  waiter.join();
  EXPECT_TRUE(woke.load());
  EXPECT_EQ(env.waiters(), 0);
}

TEST(FakeEnvTest, ANotifiedConditionEndsTheWaitWithoutTimePassing) {
  FakeEnv env;
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;
  std::thread waiter([&] {
    std::unique_lock<std::mutex> l(mu);
    EXPECT_TRUE(env.WaitUntil(l, cv, absl::InfiniteFuture(), [&] { return ready; }));
  });
  while (env.waiters() == 0) std::this_thread::yield();
  {
    std::lock_guard<std::mutex> l(mu);
    ready = true;
  }
  cv.notify_all();
  waiter.join();
}

TEST(RealEnvTest, WaitForTimesOut) {
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> l(mu);
  EXPECT_FALSE(RealEnv::Get()->WaitFor(l, cv, absl::Milliseconds(5), [] { return false; }));
}

TEST(ExecutorTest, ParallelForRunsEveryItemOnceEvenWithThePoolBusy) {
  Executor ex(2);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  // Both pool threads block: the caller must run every item itself.
  for (int i = 0; i < 2; ++i)
    ex.Submit([&] {
      std::unique_lock<std::mutex> l(mu);
      cv.wait(l, [&] { return release; });
    });
  std::vector<std::atomic<int>> hits(100);
  ParallelFor(&ex, hits.size(), [&](size_t i) { ++hits[i]; });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  {
    std::lock_guard<std::mutex> l(mu);
    release = true;
  }
  cv.notify_all();
  ex.Join();
  EXPECT_EQ(ex.pending(), 0u);
  EXPECT_FALSE(ex.Submit([] {})) << "no work after Join";
}

}  // namespace
}  // namespace hyperfed
