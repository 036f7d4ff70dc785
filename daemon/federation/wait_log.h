#pragma once

// How long this site's jobs waited before they started, per hour, for the
// operator's view (docs/design.md §6.10, "What an operator sees";
// docs/operations.md, "Web view"). The site shows it with its placement
// record: each site's own figures, asked of that site.
//
// The log watches the scheduler's queue: Site::HeartbeatOnce hands it
// ListJobs every heartbeat interval. A job listed running now that was not
// running at the last look (pending, held, or not yet listed) has started;
// its wait is now minus its queued_at_ms, the time it queued at this site
// (a job placed or moved here queued when it arrived). So a wait is known to
// within one heartbeat interval. The first look only learns what runs
// already (those started before the daemon did).
//
// Memory is bounded: kHours hourly buckets (clock hours, UTC), each with
// the exact count of jobs started and at most kSamplePerHour waits; past
// that a uniform sample of them is kept (reservoir sampling), so the hour's
// p50 and p95 are exact up to kSamplePerHour starts an hour and estimates
// beyond. The ids of the jobs listed (to tell a start) are as many as the
// queue holds.
//
// Thread-safe.

#include <array>
#include <cstdint>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "daemon/scheduler/adapter.h"

namespace hyperfed::federation {

// One clock hour's starts.
struct WaitHour {
  absl::Time start;     // the hour's first instant
  int64_t started = 0;  // jobs started in it
  int64_t p50_ms = 0;   // their median wait (0 when none started)
  int64_t p95_ms = 0;   // their 95th percentile wait
};

struct WaitSummary {
  std::vector<WaitHour> hours;  // WaitLog::kHours of them, oldest first; the last is the hour now
  // Over those hours, each hour's sample weighed by its starts.
  int64_t started = 0;
  int64_t p50_ms = 0;
  int64_t p95_ms = 0;
};

class WaitLog {
 public:
  static constexpr int kHours = 6;
  static constexpr size_t kSamplePerHour = 1000;

  // One look at the queue at `now` (above).
  void Observe(const std::vector<scheduler::Job>& jobs, absl::Time now);
  // A job that started at `now` after waiting `wait` (Observe's, and tests').
  void AddStart(absl::Duration wait, absl::Time now);
  // The last kHours hours up to `now`.
  WaitSummary Summary(absl::Time now) const;
  // Waits held now, in every bucket (at most kHours * kSamplePerHour).
  size_t SamplesHeld() const;

 private:
  struct Bucket {
    int64_t hour = -1;  // hours since the epoch; -1: unused
    int64_t started = 0;
    std::vector<int64_t> waits_ms;  // at most kSamplePerHour
  };
  static int64_t HourOf(absl::Time t);

  mutable std::mutex mu_;
  std::array<Bucket, kHours> buckets_;  // by hour % kHours
  bool looked_ = false;
  std::set<std::string> started_;  // ids listed at the last look that had run (so started) by then
  std::mt19937_64 rng_{29};        // the reservoir's draws: fixed, so a run repeats
};

}  // namespace hyperfed::federation
