#pragma once

// FCFS with EASY backfilling on one cluster (Lifka 1995; Mu'alem and
// Feitelson 2001), and the start times it forecasts. Pure: time is a plain
// integer in the caller's unit (the sim adapter uses ms, the replay seconds).
//
// One implementation serves the embedded `sim` scheduler (which jobs start
// now, each pending job's estimated start) and `hyperfed-sim replay` (every
// cluster of the replayed federation), so the simulator predicts what the
// daemons do.
//
// The rule (docs/algorithms.md, "Jobs that gain"): jobs start in queue order
// while the head of the queue fits in the free cores. When the head does not
// fit, it gets a reservation: the earliest time ("shadow") at which, with
// every running job ending at its time limit, enough cores are free for it;
// "extra" is what is left free then besides the head. A later job starts now
// (backfills) if it fits in the free cores and either ends by the shadow time
// (its time limit) or takes no more than the extra cores, which it then uses
// up. So a backfilled job never delays the head's reservation. A job wider
// than the whole cluster never starts and reserves nothing (callers refuse
// such jobs at submit; here they only must not block the queue).

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/types/span.h"

namespace hyperfed::balance {

struct RunningJob {
  int64_t cores = 1;
  int64_t end = 0;  // when its time limit runs out: start + limit
};

struct QueuedJob {
  int64_t cores = 1;
  int64_t limit = 1;  // time limit, > 0 (values below 1 count as 1)
};

inline constexpr int64_t kNeverStarts = std::numeric_limits<int64_t>::max();

// The queued jobs that start at `now` (indices into `queue`, ascending).
// `running` are the jobs running at `now` (those with end <= now count as
// ended). Jobs wider than `cores` are skipped.
std::vector<size_t> EasyStartNow(int64_t cores, int64_t now, absl::Span<const RunningJob> running,
                                 absl::Span<const QueuedJob> queue);

// What EASY would do if every job ran to its time limit and nothing else
// arrived.
struct EasyForecast {
  int64_t now = 0;
  int64_t cores = 0;
  // Estimated start of each queued job (kNeverStarts for one wider than the
  // cluster), indexed like the queue.
  std::vector<int64_t> starts;
  // Free cores as a step function from `now`: (time, free cores from then
  // on), times ascending, the first at `now`, the last with every core free.
  std::vector<std::pair<int64_t, int64_t>> free_cores;
  // The latest estimated start of a queued job (now when none).
  int64_t last_start = 0;
};
EasyForecast EasyForecastStarts(int64_t cores, int64_t now, absl::Span<const RunningJob> running,
                                absl::Span<const QueuedJob> queue);

// When a job of `width` cores submitted now would start behind the whole
// queue, with no backfilling ahead of anyone: the earliest time, not before
// the queue's last start, from which `width` cores stay free. kNeverStarts
// when width exceeds the cluster. This is what a site publishes about
// itself for the jobs other sites might send (see StartProfile).
int64_t TailStart(const EasyForecast& forecast, int64_t width);

}  // namespace hyperfed::balance
