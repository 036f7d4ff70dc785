#pragma once

// Which jobs move (docs/algorithms.md, "Jobs that gain"). A round's quotas
// say how many jobs go from which site to which (every round mode); this
// says which ones. Pure: time is a plain integer in the caller's unit.
//
// What a site tells the others about itself (its StartProfile, carried in
// its row of the round's table): the widest job it can run and, for a few
// widths, how long a job of that width sent to it now would wait. A source
// knows each of its pending jobs' estimated start at home (its scheduler's
// forecast), so the gain of sending job j to site d is
//   gain = wait at home(j) - d's wait for j's width.
// Two rules:
//  - fit: a job never goes to a site narrower than the job; the load a
//    round balances (MovableLoad) counts only jobs some other site can run.
//  - choice: kGain picks, over all of a source's transfers at once, the
//    (job, destination) pairs of largest gain, each job once, each transfer
//    up to its count, and only pairs that gain at least `min_gain`: a
//    quota is then an upper bound, never a reason to move a job that would
//    start later. kNewest is the papers' and hyperfed's earlier rule (the
//    most recently queued jobs first), with the fit rule.
// Hysteresis: a job that arrived by a move less than the hysteresis time
// ago is never chosen (the caller marks it `recent`), so no job bounces.

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/balance/easy.h"
#include "daemon/balance/plan.h"

namespace hyperfed::balance {

// The most widths a profile lists (1, 2, 4, ... up to 2^30, and the widest).
inline constexpr size_t kMaxProfileWidths = 32;

struct StartProfile {
  int64_t widest = 0;  // cores of the widest job the site runs; 0 = none
  // (width, wait): a job of at most `width` cores sent now waits `wait`.
  // Widths ascending, distinct, the last equal to `widest`; waits >= 0.
  std::vector<std::pair<int64_t, int64_t>> waits;

  // The wait for a job of `cores`: that of the smallest listed width >=
  // cores; kNeverStarts when cores > widest; 0 when no wait is listed (a
  // site whose scheduler estimates nothing is taken as starting jobs at
  // once: the round's quota still bounds what it gets).
  int64_t WaitFor(int64_t cores) const;

  friend bool operator==(const StartProfile&, const StartProfile&) = default;
};

// The widths a site lists: 1, 2, 4, ... below widest, then widest.
std::vector<int64_t> ProfileWidths(int64_t widest);

// InvalidArgument saying what is wrong with a profile from a peer (widths
// not ascending or not ending at widest, too many, negative waits or widths,
// a wait above `max_wait`).
absl::Status CheckStartProfile(const StartProfile& p, int64_t max_wait);

// A profile from an EASY forecast (the sim scheduler's and the replay's).
StartProfile ProfileFromForecast(const EasyForecast& f);

// Jobs some other site can run: those no wider than `widest_elsewhere`.
Load MovableLoad(absl::Span<const int64_t> pending_cores, int64_t widest_elsewhere);

enum class JobChoice { kNewest, kGain };
// "newest" | "gain"; InvalidArgument otherwise.
absl::StatusOr<JobChoice> ParseJobChoice(std::string_view name);
std::string_view JobChoiceName(JobChoice c);

// One pending job of the source, in queue order (oldest first).
struct Candidate {
  int64_t cores = 1;
  int64_t wait_here = 0;  // estimated start at home minus now
  bool recent = false;    // arrived by a move within the hysteresis time
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
// gain go to the older job, then to the earlier transfer.
std::vector<Chosen> ChooseJobs(JobChoice choice, absl::Span<const Candidate> jobs,
                               absl::Span<const Outgoing> transfers, int64_t min_gain = 1);

}  // namespace hyperfed::balance
