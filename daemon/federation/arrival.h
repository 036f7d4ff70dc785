#pragma once

// Placement at arrival in the daemon (docs/design.md, "Placement at
// arrival"; the rule is balance::Placer, docs/algorithms.md). Every
// heartbeat interval, and at once after an operator's submit, a site:
//  - learns the start profiles its live peers published in their
//    heartbeats (balance::Placer::Publish; a peer down, drained, in a
//    protocol before 1.4 or saying nothing gets nothing);
//  - offers every pending job of its own to the Placer, new ones first in
//    queue order and then those waiting (except one its scheduler gives no
//    start time of yet, outside a placement window): a job goes where it
//    would start at least balancer.placement_margin sooner (so each move of
//    a job brings its estimated start forward by the margin: none bounces);
//  - moves the chosen jobs per destination through the exactly-once
//    transfer (JobMover::MoveChosen, id "placement:N"), at most the
//    destination's widest job's cores of them a pass (what it admits), and
//    leaves a destination that refused alone for five heartbeats (at least
//    5 s); it ends the
//    scheduler's placement window (SchedulerAdapter::EndPlacementWindow)
//    for the new jobs it keeps, so they may start here at once.
// A destination holds at most its own cores' worth of pending jobs placed
// by one source (Admit): a peer cannot flood it.
//
// Thread-safe: RunOnce runs one pass at a time.

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "daemon/balance/placement.h"
#include "daemon/common/env.h"
#include "daemon/federation/live_config.h"
#include "daemon/federation/membership.h"
#include "daemon/federation/round.h"
#include "daemon/scheduler/adapter.h"

namespace hyperfed::federation {

// The id of a placement move: "placement:N".
bool IsPlacementId(const std::string& round_id);

struct PlacementPass {
  int64_t new_jobs = 0;               // pending jobs seen for the first time
  int64_t placed = 0;                 // moved to a peer
  int64_t kept = 0;                   // new jobs that stay here
  int64_t failed = 0;                 // chosen but not moved (they stay here)
  std::map<std::string, int64_t> to;  // jobs moved per destination site
  std::string error;                  // the first error of the pass, "" if none
};

// The placement record a site keeps for its operator (web view, metrics).
struct PlacementCounters {
  int64_t passes = 0;
  int64_t placed = 0;
  int64_t kept = 0;
  int64_t failed = 0;
  std::map<std::string, int64_t> to;  // since start, per destination
};

class ArrivalPlacement {
 public:
  ArrivalPlacement(LiveConfig* live, const Env* env, scheduler::SchedulerAdapter* adapter, JobMover* mover,
                   Membership* membership);

  // One pass (above); `own` is this site's own start profile now (for jobs
  // its scheduler gives no start estimate of). Does nothing while
  // placement is off, this site is drained or not in the roster.
  PlacementPass RunOnce(const balance::StartProfile& own, bool drained);

  // Destination side: whether `source_site` may place the jobs with these
  // keys here now (FailedPrecondition saying why not): placement on, and
  // the jobs it placed here that are still pending, with these, at most
  // `cores` (this site's widest job).
  absl::Status Admit(const std::string& source_site, const std::vector<std::string>& keys, int64_t cores);

  PlacementCounters counters() const;

 private:
  void LearnProfiles();

  LiveConfig* live_;
  const Env* env_;
  scheduler::SchedulerAdapter* adapter_;
  JobMover* mover_;
  Membership* membership_;

  std::mutex pass_mu_;  // one pass at a time; guards the pass state below
  balance::Placer placer_;
  std::map<int, absl::Time> heard_;          // label -> when the profile placer_ has was received
  std::map<int, absl::Time> backoff_until_;  // label -> no placement there before (it refused)
  std::set<std::string> seen_;               // keys (ids when no key) of the pending jobs seen
  int64_t next_id_ = 1;

  mutable std::mutex mu_;  // guards counters_ and admitted_
  PlacementCounters counters_;
  std::map<std::string, std::set<std::string>> admitted_;  // source -> keys of jobs it placed here
  absl::Time last_logged_ = absl::InfinitePast();          // when a pass's error was last logged
};

}  // namespace hyperfed::federation
