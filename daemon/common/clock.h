#pragma once

// The one way daemon code reads time, so tests can run on a fake clock.

#include <mutex>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace hyperfed {

// Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

class RealClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  // A process-wide instance; never deleted.
  static RealClock* Get() {
    static RealClock* c = new RealClock;
    return c;
  }
};

// Starts at the given time and moves only when told.
class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000)) : now_(start) {}
  absl::Time Now() const override {
    std::lock_guard<std::mutex> l(mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    std::lock_guard<std::mutex> l(mu_);
    now_ += d;
  }

 private:
  mutable std::mutex mu_;
  absl::Time now_;
};

}  // namespace hyperfed
