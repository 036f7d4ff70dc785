#pragma once

// The exact round without the table: quotas and nearest-first matching from
// prefix sums over the cube (docs/algorithms.md, "exact by prefix sums").
//
// The gather of exact.h sends every site the whole load table: n exchanges
// whose messages double in size, O(N) bytes per site. Here a site sends and
// receives O(1) numbers per dimension:
//
//  1. Scan. Recursive doubling (MPI's scan and allreduce; Thakur,
//     Rabenseifner and Gropp 2005): in dimension k a site sends its partner
//     (label XOR 2^k) the totals of its k-subcube (the 2^k positions sharing
//     its label bits >= k) and adds the partner's to its own subcube's and,
//     if the partner's subcube is the lower one, to its prefix. After n
//     steps it holds the totals of the component and its exclusive prefix in
//     label order: load, capacity weight (quota.h), live sites. ScanStep.
//  2. Quota. floor(T P_{i+1} / W) - floor(T P_i / W), or the papers' rule
//     by rank with equal weights: Apportion()'s quota, with no table.
//     ScanQuota.
//  3. Matching. PlanDirectTransfers with no cost table matches surpluses
//     and deficits inside 1-subcubes, then 2-subcubes, ..., each subcube
//     keeping a list of residual imbalances in label order and matching its
//     halves' lists front to front. A block's residual is its load minus its
//     quota, and its quota is a difference of two prefix floors, so from the
//     totals the scan handed it in each dimension a site knows the residual
//     of each of its subcubes and of each sibling subcube, and therefore the
//     positions of its own units in every list: which of its units are
//     matched at which level, against which positions of the sibling's list
//     (DeriveMatch). Only the identity of the site holding those positions is
//     missing: a lookup routed down the sibling subcube, one dimension at a
//     time, finds it (Locate), and the site found answers with its own run.
//     Every overlapping (surplus, deficit) pair is found by one of its two
//     sites: the one whose run starts later looks up its start.
//
// Faults: a position with no live site contributes nothing. Its part in the
// exchange is played by a stand-in, a live site of the same subcube
// (LivePositions::StandIn), which holds the same subcube totals and the same
// residuals. The library knows nothing of messages: a caller
// (the federation round, or the drivers below) carries them.

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/balance/exact.h"
#include "daemon/balance/plan.h"

namespace hyperfed::balance {

// Totals over a set of positions (a subcube, a prefix): what a site sends in
// one dimension of the scan. O(1) numbers: about 44 bytes.
struct ScanTotals {
  Load load = 0;
  __int128 weight = 0;                                       // sum of CapacityWeight
  int64_t live = 0;                                          // live sites
  int64_t min_weight = std::numeric_limits<int64_t>::max();  // over live sites; max() if none
  int64_t max_weight = -1;                                   // -1 if none

  friend bool operator==(const ScanTotals&, const ScanTotals&) = default;
};

// One live site's own totals.
ScanTotals SiteTotals(Load load, double capacity);
// Totals of the union of two disjoint sets.
ScanTotals Combine(const ScanTotals& a, const ScanTotals& b);
// InvalidArgument unless `t` can be the totals of a `dimension`-subcube:
// at most 2^dimension sites, non-negative sums, weights within the bounds.
absl::Status CheckScanTotals(const ScanTotals& t, int dimension);

// One site's scan so far.
struct ScanState {
  NodeId label = 0;
  int dims = 0;                     // dimensions exchanged so far
  ScanTotals own;                   // the site itself
  ScanTotals block;                 // its dims-subcube
  ScanTotals prefix;                // live positions of that subcube below the site
  std::vector<ScanTotals> sibling;  // [k]: the partner's k-subcube, as received in dimension k
};

ScanState StartScan(NodeId label, Load load, double capacity);
// What the site (or a stand-in for its partner, which holds the same block)
// sends in the next dimension, state.dims.
inline const ScanTotals& ScanMessage(const ScanState& s) { return s.block; }
// Per-node step: takes the partner's totals for dimension state->dims.
// `theirs` is ScanTotals{} when the partner's subcube has no live site.
absl::Status ScanStep(ScanState* state, const ScanTotals& theirs);

// After all n dimensions: this site's quota, Apportion()'s for its label on
// the same live sites, loads and capacities.
Load ScanQuota(const ScanState& done);

// The quota of a set of consecutive live positions whose totals are
// `block`, with `below` the totals of every live position below it and `all`
// those of the component: Apportion's quotas summed over the block.
Load BlockQuota(const ScanTotals& below, const ScanTotals& block, const ScanTotals& all);

// One stretch of a site's residual matched at `level`: positions
// [begin, end) of its level-subcube's residual list are matched with the
// same positions of the sibling level-subcube's list (across dimension
// `level`). The site sends them when `sends`, else it receives them.
struct MatchRun {
  int level = 0;
  Load begin = 0;
  Load end = 0;
  bool sends = false;

  friend bool operator==(const MatchRun&, const MatchRun&) = default;
};

// What a site derives alone after the scan.
struct MatchView {
  NodeId label = 0;
  Load quota = 0;  // the round's: ScanQuota, or the load itself when no site has weight (nothing moves)
  std::vector<Load> residual;          // [k], k = 0..n: load - quota of its k-subcube
  std::vector<Load> sibling_residual;  // [k], k < n: of the sibling k-subcube
  std::vector<MatchRun> runs;          // by level
};
MatchView DeriveMatch(const ScanState& done);

// One step of a lookup for unit `position` of the residual list of the
// `level`-subcube holding `at`'s site: either that site holds it, or the
// lookup goes on across dimension `next_level` (to label ^ 2^next_level, or
// its stand-in) for unit `position` of that site's next_level-subcube list.
struct LocateStep {
  bool here = false;
  int next_level = 0;
  Load position = 0;
};
LocateStep Locate(const MatchView& at, int level, Load position);

// A site's run as it tells the partner it found, or the site that found it.
struct PartnerRun {
  NodeId label = 0;
  MatchRun run;
};
// Every transfer of the round with this site at one end (from or to), from
// its runs and its partners' (each overlap once, duplicates ignored), sorted
// by (from, to); step 1, hops the cube distance.
std::vector<Transfer> MatchedTransfers(const MatchView& self, absl::Span<const PartnerRun> partners);

// The live positions of a cube and the stand-in rule.
class LivePositions {
 public:
  // `alive` empty: every position of the n-cube.
  LivePositions(int dims, const std::vector<bool>& alive);
  int dims() const { return dims_; }
  bool alive(NodeId v) const { return count_[v + 1] > count_[v]; }
  // Live sites in the k-subcube holding v.
  int64_t LiveIn(NodeId v, int k) const;
  // The live site of v's k-subcube that answers for v: v itself if alive;
  // else the dead positions of the subcube are dealt out to its live sites
  // in label order, in turn, so that none stands in for more than
  // ceil(dead / live) of them; -1 if the subcube has no live site.
  NodeId StandIn(NodeId v, int k) const;
  // Who sends `self` the totals (or answers for) the partner's k-subcube
  // in dimension k: the partner, its stand-in, or -1 (nobody: empty).
  NodeId SourceFor(NodeId self, int k) const { return StandIn(self ^ (NodeId{1} << k), k); }
  // The live sites that `self` sends its k-subcube totals to in dimension k:
  // its partner if alive, and every live site whose dead partner it stands in for.
  std::vector<NodeId> ServedBy(NodeId self, int k) const;

 private:
  int dims_;
  std::vector<int64_t> count_;  // count_[v]: live positions below v
};

// Whole-system driver: runs every live site's steps (scan, DeriveMatch,
// lookups with their forwards and answers) on an n-cube and returns the
// plan they derive, indexed by label, with what it cost per site.
struct ScanRoundCost {
  int64_t scan_messages_max = 0;    // scan messages sent by one site (stand-ins send more)
  int64_t lookup_messages_max = 0;  // lookups, forwards and answers sent by one site
  int64_t messages_max = 0;         // both, by the busiest site
  int64_t bytes_max = 0;            // bytes sent by the busiest site (kScanMessageBytes, kLookupMessageBytes each)
  int64_t messages_total = 0;
  int64_t lookups_total = 0;   // one per matched run
  int64_t forwards_total = 0;  // lookup hops past the first
  int64_t forwards_max = 0;    // forwards sent by one site (a relay for others)
  int64_t partners_max = 0;    // transfer partners of one site
};
// Payload sizes used for the byte counts: ScanTotals (44) and a lookup or an
// answer (label, level, position, run: 32), each with a 24-byte header
// (round id, epoch, sender, kind, dimension).
inline constexpr int64_t kScanMessageBytes = 24 + 44;
inline constexpr int64_t kLookupMessageBytes = 24 + 32;
struct ScanPlan {
  std::vector<Load> quotas;         // by label; 0 at dead positions
  std::vector<Transfer> transfers;  // sorted by (from, to)
  ScanTotals totals;
  ScanRoundCost cost;
};
absl::StatusOr<ScanPlan> PlanByPrefixScan(int dims, const std::vector<bool>& alive, absl::Span<const Load> loads,
                                          absl::Span<const double> capacities);

}  // namespace hyperfed::balance
