// The simulated world keeps the Env's waiting contract (daemon/common/env.h):
// a wait returns when its predicate holds or its deadline passes, never
// because another task was woken by the same change and got there first.

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "daemon/common/executor.h"
#include "sim/federation/world.h"

namespace hyperfed::fedsim {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1700000000);

// Every idle worker of an executor sees one submitted item; one takes it.
// The others must go back to waiting, not end: a worker that ended would
// leave the site with fewer threads than hyperfedd has (found as heartbeat
// fan-outs run one call at a time and peers seen going down: seed 19 of 64
// sites, network).
TEST(WorldTest, IdleWorkersThatLoseAnItemKeepWaiting) {
  World world(7, kStart);
  const int node = world.AddNode("site");
  SimEnv env(&world, node);
  auto ex = std::make_unique<Executor>(4, &env);
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0, most = 0;
  auto done = std::make_shared<bool>(false);
  world.Spawn(node, "test", [&] {
    ex->Submit([] {});  // wakes all four idle workers; one runs it
    std::unique_lock<std::mutex> l(mu);
    env.WaitFor(l, cv, absl::Seconds(1), [] { return false; });
    l.unlock();
    // Four items that each wait for all four to be inside at once: they can
    // only meet if four workers are left.
    for (int i = 0; i < 4; ++i)
      ex->Submit([&] {
        std::unique_lock<std::mutex> l(mu);
        ++inside;
        most = std::max(most, inside);
        cv.notify_all();
        env.WaitFor(l, cv, absl::Seconds(10), [&] { return most == 4; });
        --inside;
      });
    l.lock();
    env.WaitFor(l, cv, absl::Seconds(30), [&] { return false; });
    l.unlock();
    ex->Join();
    *done = true;
  });
  world.Run(kStart + absl::Minutes(5), [&] { return *done; });
  ASSERT_TRUE(*done);
  EXPECT_EQ(most, 4) << "workers of the executor ended after losing an item to another worker";
}

// Two tasks wait, each until 10 s, for one token that comes at 1 s: both
// are woken, one takes it, and the other waits on to its deadline.
TEST(WorldTest, AWaitThatLosesTheRaceWaitsOnToItsDeadline) {
  World world(3, kStart);
  const int node = world.AddNode("site");
  SimEnv env(&world, node);
  std::mutex mu;
  std::condition_variable cv;
  int tokens = 0, taken = 0, ended = 0;
  absl::Time loser_returned = absl::InfinitePast();
  for (int i = 0; i < 2; ++i)
    world.Spawn(node, "waiter", [&] {
      std::unique_lock<std::mutex> l(mu);
      if (env.WaitFor(l, cv, absl::Seconds(10), [&] { return tokens > 0; })) {
        --tokens;
        ++taken;
      } else {
        loser_returned = env.Now();
      }
      ++ended;
    });
  world.Spawn(node, "giver", [&] {
    std::unique_lock<std::mutex> l(mu);
    env.WaitFor(l, cv, absl::Seconds(1), [] { return false; });
    ++tokens;
    cv.notify_all();
  });
  world.Run(kStart + absl::Minutes(1), [&] { return ended == 2; });
  ASSERT_EQ(ended, 2);
  EXPECT_EQ(taken, 1);
  EXPECT_GE(loser_returned, kStart + absl::Seconds(10)) << "a wait returned before its deadline with its predicate false";
}

// An event that runs none of a node's code says so (At's `look`): the world
// then looks at no waiter after it, and the event wakes the one whose
// condition it changed through Notify (as a reply's arrival wakes its
// caller, sim/federation/network.h). An event that looks wakes every waiter
// whose condition holds.
TEST(WorldTest, AnEventThatDoesNotLookWakesOnlyTheTaskItNotifies) {
  // When a task of `node` waiting (until 10 s) for a flag an event sets at
  // 1 s returns.
  auto woke = [](bool look, bool notify) {
    World world(5, kStart);
    const int node = world.AddNode("site");
    SimEnv env(&world, node);
    std::mutex mu;
    std::condition_variable cv;
    bool flag = false;
    absl::Time returned = absl::InfinitePast();
    Task* task = nullptr;
    world.Spawn(node, "waiter", [&] {
      task = world.current_task();
      std::unique_lock<std::mutex> l(mu);
      env.WaitFor(l, cv, absl::Seconds(10), [&] { return flag; });
      returned = world.now();
    });
    world.At(
        kStart + absl::Seconds(1), node,
        [&] {
          flag = true;
          if (notify) world.Notify(task, &mu);
        },
        look);
    world.Run(kStart + absl::Minutes(1), [&] { return returned != absl::InfinitePast(); });
    return returned - kStart;
  };
  EXPECT_EQ(woke(/*look=*/true, /*notify=*/false), absl::Seconds(1));
  EXPECT_EQ(woke(/*look=*/false, /*notify=*/true), absl::Seconds(1)) << "Notify did not wake the task";
  EXPECT_EQ(woke(/*look=*/false, /*notify=*/false), absl::Seconds(10))
      << "the world looked at the node's waiters after an event that does not look";
}

}  // namespace
}  // namespace hyperfed::fedsim
