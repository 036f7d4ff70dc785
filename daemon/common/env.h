#pragma once

// Time and waiting, behind one interface (leveldb's Env is the model): every
// daemon class that reads the time, sleeps or waits for a condition with a
// deadline does it through an Env, so tests drive a whole site with FakeEnv
// and no real sleeps (docs/design.md §9).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace hyperfed {

// A thread of control started through an Env (Env::StartThread): an OS
// thread, or a task of the federation simulation (sim/federation).
class EnvThread {
 public:
  virtual ~EnvThread() = default;
  // Waits until the thread's function has returned (once).
  virtual void Join() = 0;
};

// Thread-safe.
class Env {
 public:
  virtual ~Env() = default;
  virtual absl::Time Now() const = 0;

  // Waits on `cv` until `pred()` holds or Now() reaches `deadline`, and
  // returns pred(). `l` holds the mutex that guards what pred reads; whoever
  // changes that state notifies `cv` while holding (or after releasing) it.
  // May release and retake `l` any number of times, as cv.wait does.
  virtual bool WaitUntil(std::unique_lock<std::mutex>& l, std::condition_variable& cv, absl::Time deadline,
                         const std::function<bool()>& pred) const = 0;

  bool WaitFor(std::unique_lock<std::mutex>& l, std::condition_variable& cv, absl::Duration timeout,
               const std::function<bool()>& pred) const {
    return WaitUntil(l, cv, Now() + timeout, pred);
  }
  // Sleeps until Now() >= Now() + d.
  void SleepFor(absl::Duration d) const;

  // Waits on `cv` until pred(), however long: a thread waiting for another
  // (an idle executor worker, a fan-out's caller, a stop). No move of time
  // ends it, so it is no waiter of a FakeEnv; the simulation parks it.
  virtual void WaitIdle(std::unique_lock<std::mutex>& l, std::condition_variable& cv,
                        const std::function<bool()>& pred) const {
    cv.wait(l, pred);
  }

  // Runs `fn` on a new thread of control. The daemon's long-lived threads
  // (a site's loops, its executor's workers) start here, so that a
  // simulation runs them as its own deterministic tasks. Default: an OS
  // thread.
  virtual std::unique_ptr<EnvThread> StartThread(std::function<void()> fn) const;

  // A random 64-bit number (a submitted job's key). Default: seeded once
  // per thread from the kernel's randomness; a FakeEnv counts through a
  // fixed sequence and a simulation draws from its seed, so runs repeat.
  virtual uint64_t Random() const;
};

class RealEnv : public Env {
 public:
  absl::Time Now() const override { return absl::Now(); }
  bool WaitUntil(std::unique_lock<std::mutex>& l, std::condition_variable& cv, absl::Time deadline,
                 const std::function<bool()>& pred) const override;
  // A process-wide instance; never deleted.
  static RealEnv* Get();
};

// Time starts at the given instant and moves only when a test calls Advance
// or Set; every wait whose deadline a move reaches wakes up.
class FakeEnv : public Env {
 public:
  explicit FakeEnv(absl::Time start = absl::FromUnixSeconds(1'700'000'000)) : now_ns_(absl::ToUnixNanos(start)) {}
  absl::Time Now() const override { return absl::FromUnixNanos(now_ns_.load()); }
  bool WaitUntil(std::unique_lock<std::mutex>& l, std::condition_variable& cv, absl::Time deadline,
                 const std::function<bool()>& pred) const override;
  void Advance(absl::Duration d);
  // Moves time to `t` (backwards too: tests of clocks stepping back).
  void Set(absl::Time t);
  // How many threads wait on this env now (for tests that advance time only
  // once the threads they drive have reached their waits).
  int waiters() const;
  uint64_t Random() const override;

 private:
  struct Waiter {
    std::mutex* mu;
    std::condition_variable* cv;
  };
  void WakeAll();

  std::atomic<int64_t> now_ns_;
  mutable std::atomic<uint64_t> random_state_{0};
  // Lock order: reg_mu_ before any waiter's mutex. A waiter never holds its
  // own mutex while it takes reg_mu_.
  mutable std::mutex reg_mu_;
  mutable std::set<Waiter*> waiters_;  // guarded by reg_mu_
};

}  // namespace hyperfed
