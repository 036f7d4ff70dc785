#pragma once

// Which jobs move (docs/algorithms.md, "Jobs that gain"). A round's quotas
// say how many jobs go from which site to which (every round mode); this
// says which ones. Pure: time is a plain integer in the caller's unit.
//
// What a site tells the others about itself (its StartProfile, carried in
// its row of the round's table): the widest job it can run and the cores
// its queue leaves free from now on. A source knows each of its pending
// jobs' estimated start at home (its scheduler's forecast), so the gain of
// sending job j to site d is
//   gain = wait at home(j) - d's wait for j (its width and time limit).
// Two rules:
//  - fit: a job never goes to a site narrower than the job; the load a
//    round balances (MovableLoad) counts only jobs some other site can run.
//  - choice: kGain picks, over all of a source's transfers at once, the
//    (job, destination) pairs of largest gain, each job once, each transfer
//    up to its count, and only pairs that gain at least `min_gain`: a
//    quota is then an upper bound, never a reason to move a job that would
//    start later. kNewest is the papers' and hyperfed's earlier rule (the
//    most recently queued jobs first), with the fit rule.
// Hysteresis: a job that arrived by a move (or was placed at arrival) less
// than the hysteresis time ago is chosen only when it gains at least
// `recent_min_gain` (kGain; kNewest never chooses it): the caller marks it
// `recent`. Each such move brings the job's estimated start forward by that
// margin, so no job bounces, and none is pinned where it would wait long.

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/balance/easy.h"
#include "daemon/balance/plan.h"

namespace hyperfed::balance {

// The most steps a profile lists.
inline constexpr size_t kMaxProfileSteps = 32;

struct StartProfile {
  int64_t widest = 0;  // cores of the widest job the site runs; 0 = none
  // Free cores from now on, as steps (offset from now, cores free from then
  // until the next step's offset; the last holds for ever): what the site's
  // own queue leaves free if every job runs to its time limit. Offsets
  // ascending from 0; free cores in [0, widest]. Empty: the site does not
  // say.
  std::vector<std::pair<int64_t, int64_t>> free;

  // When (offset from now) a job of `cores` and time limit `limit` (0:
  // unknown, as if for ever) sent now would start: the earliest step from
  // which `cores` stay free for `limit` (a job that fits a hole before the
  // queue's jobs, as backfilling starts it). kNeverStarts when cores >
  // widest or no step fits; 0 when the site says nothing (it is taken as
  // starting jobs at once: the round's quota still bounds what it gets).
  int64_t WaitFor(int64_t cores, int64_t limit = 0) const;

  friend bool operator==(const StartProfile&, const StartProfile&) = default;
};

// The widths a site asks its scheduler about when it cannot give its free
// cores (ArrivalStarts): 1, 2, 4, ... below widest, then widest.
std::vector<int64_t> ProfileWidths(int64_t widest);

// InvalidArgument saying what is wrong with a profile from a peer (too many
// steps, offsets not ascending from 0 or above `max_wait`, free cores
// outside [0, widest], a negative widest).
absl::Status CheckStartProfile(const StartProfile& p, int64_t max_wait);

// A profile from an EASY forecast (the sim scheduler's and the replay's):
// its free cores, merged down to kMaxProfileSteps (merged steps keep the
// fewer free cores, so the profile never promises more than the forecast).
StartProfile ProfileFromForecast(const EasyForecast& f);
// A profile from when jobs of some widths would start behind the whole
// queue (waits from now, one per width, widths ascending): from each wait
// on, at least that width is free.
StartProfile ProfileFromWaits(int64_t widest, const std::vector<int64_t>& widths, const std::vector<int64_t>& waits);

// Takes `cores` from the free cores of [start, start + limit) (never below
// 0). A limit <= 0 (unknown) or a profile that says nothing books nothing.
void Book(StartProfile* p, int64_t start, int64_t cores, int64_t limit);

// Jobs some other site can run: those no wider than `widest_elsewhere`.
Load MovableLoad(absl::Span<const int64_t> pending_cores, int64_t widest_elsewhere);

enum class JobChoice { kNewest, kGain };
// "newest" | "gain"; InvalidArgument otherwise.
absl::StatusOr<JobChoice> ParseJobChoice(std::string_view name);
std::string_view JobChoiceName(JobChoice c);

// One pending job of the source, in queue order (oldest first).
struct Candidate {
  int64_t cores = 1;
  int64_t limit = 0;      // time limit (0: unknown)
  int64_t wait_here = 0;  // estimated start at home minus now
  bool recent = false;    // arrived by a move or a placement within the hysteresis time
};

// One transfer of the round out of this source.
struct Outgoing {
  NodeId to = 0;
  Load count = 0;
  StartProfile profile;  // the destination's, from its row
};

struct Chosen {
  size_t job = 0;      // index into the candidates
  size_t transfer = 0; // index into the transfers
  int64_t gain = 0;    // wait_here - destination's wait (kGain; 0 for kNewest)
};

// The jobs to send, at most `count` per transfer, each job once. Ties in
// gain go to the older job, then to the earlier transfer. Under kGain each
// job chosen is booked into its destination's profile (Book), so later
// choices see the cores it takes there.
std::vector<Chosen> ChooseJobs(JobChoice choice, absl::Span<const Candidate> jobs,
                               absl::Span<const Outgoing> transfers, int64_t min_gain = 1,
                               int64_t recent_min_gain = kNeverStarts);

}  // namespace hyperfed::balance
