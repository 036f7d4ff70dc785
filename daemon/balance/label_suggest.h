#pragma once

// Labels that follow the links (docs/algorithms.md, "Labels that follow the
// links"): hypercube labels that keep cheaply linked sites in small subcubes,
// and what a relabelling would have saved on the last round's transfers.
// Seed 003 section 1 groups the clusters joined by a high-speed link in one
// subcube; the objective and the heuristic below are hyperfed's reading.
// `hyperfedctl roster suggest --costs FILE` is built on this file.
//
// Sites are indexed 0..n-1 in the order of the roster's ids; every label
// vector here is indexed by site ("labels[i] is site i's label").

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/balance/exact.h"
#include "daemon/balance/modes.h"
#include "daemon/balance/plan.h"

namespace hyperfed::balance {

// Symmetric costs of sending a job between two sites (lower is a faster
// link); a site to itself costs 0.
class CostMatrix {
 public:
  // `n` sites, every pair costing `fill` (finite, >= 0).
  explicit CostMatrix(int n = 0, double fill = 1);
  int size() const { return n_; }
  double operator()(int i, int j) const { return cost_[static_cast<size_t>(i) * n_ + j]; }
  // Sets the cost of i-j and of j-i (i != j).
  void Set(int i, int j, double cost);

 private:
  int n_ = 0;
  std::vector<double> cost_;  // n x n, row-major
};

// The most sites SuggestLabels and ParseLinkCosts take: the work space is
// n^2 doubles a few times over (some 100 MB at this size).
inline constexpr int kMaxSuggestSites = 2048;
// Labels here are below 2^kMaxLabelBits, as a roster's are (config.h).
inline constexpr int kMaxLabelBits = 20;

// Reads a costs file: one pair per line, `SITE SITE COST`, separated by
// spaces or tabs; COST a finite number >= 0; `#` starts a comment; blank
// lines are ignored. A pair costs the same both ways and may be written in
// either order. A pair not listed costs the largest listed cost (an unknown
// link is taken to be as slow as the slowest known one), or 1 when the file
// lists none. `sites` are the roster's ids (distinct). InvalidArgument naming
// the line ("line 4: ...") for a line that is not three fields, an unknown
// site, a bad cost, a site paired with itself, or a pair given twice with
// different costs (the same cost twice is accepted).
absl::StatusOr<CostMatrix> ParseLinkCosts(std::string_view text, const std::vector<std::string>& sites);

// The objective, lower is better: the sum over pairs of sites of
// affinity(i, j) x level(i, j). level is the index of the highest bit in
// which the two labels differ, plus one: the dimension of the smallest
// subcube holding both (1 for partners across dimension 0, 2 for the same
// 2-subcube, ...). affinity is the largest cost in the matrix minus the
// pair's cost: the cheapest links pull hardest, the dearest not at all.
// (Weighing the costs themselves by level would pull the dearest pairs
// together: in a full cube the number of pairs at each level is fixed.)
// The round modes trade jobs between sites of a small subcube more often and
// more directly (the exact mode's near-first matching, the exchanges across
// dimension 0 first), so cheap pairs should be near. `labels` holds one
// label per site of `costs`.
double LabelCost(const CostMatrix& costs, const std::vector<int>& labels);

// A label per site in [0, 2^dimension), all distinct, that keeps cheap pairs
// in small subcubes (a low LabelCost). Deterministic, ties broken by site
// order. Two starts: recursive bisection (a set that fits in half of its
// subcube goes whole into one half; otherwise greedy growth from its first
// site, then Fiduccia-Mattheyses passes of moves, which swap sites when both
// halves are full, split it in two with the least affinity across the cut,
// i.e. the cheap pairs inside), and bottom-up merging (pair the sites, then
// the pairs, ..., the most affine groups first). The cheaper start is then
// improved by moves into empty positions and pairwise swaps, the best for
// each site in turn, while one lowers LabelCost. Last, subcubes are
// mirrored, which changes no pair's level: the site with the lowest current
// label gets label 0 (the coordinator is the lowest live label; relabelling
// would otherwise move it), and as many sites as possible keep their current
// labels. If the result is not cheaper than `current_labels`, those come
// back unchanged. With fewer sites than 2^dimension the labels may fit a
// smaller cube: the roster's dimension then shrinks. Well under a second for
// 1,024 sites.
// InvalidArgument if dimension is outside [0, kMaxLabelBits], there are more
// than 2^dimension or kMaxSuggestSites sites, a cost is negative or not
// finite, or current_labels are not one distinct label in
// [0, 2^kMaxLabelBits) per site.
absl::StatusOr<std::vector<int>> SuggestLabels(const CostMatrix& costs, const std::vector<int>& current_labels,
                                               int dimension);

// Sum over transfers of count x cost(site at `from`, site at `to`), with
// sites placed by `labels`. InvalidArgument if `labels` are not one distinct
// label per site or a transfer names a label no site holds.
absl::StatusOr<double> TransferCost(const CostMatrix& costs, const std::vector<int>& labels,
                                    const std::vector<Transfer>& transfers);

// One round planned under the current labels and again under new ones.
struct RelabelGain {
  RoundShape old_shape, new_shape;
  std::vector<Transfer> old_transfers;  // labels of the current labelling
  std::vector<Transfer> new_transfers;  // labels of the new labelling
  double old_cost = 0;                  // TransferCost of each
  double new_cost = 0;
};

// Plans the round whose before-table is `before` (a row per live site,
// labelled by `old_labels`, as the round record keeps it) with `mode`, then
// the same loads and capacities with every site moved to its `new_labels`
// label, and prices both plans' transfers. Each cube is the one the daemon
// would use: the smallest dimension holding every site's label, every
// position without a row in the fault set (failed sites and empty
// positions). InvalidArgument if the label vectors are not one distinct
// label in [0, 2^kMaxLabelBits) per site of `costs`, or a row's label is no
// site's or repeated, or its load is negative or its capacity negative or
// not finite.
absl::StatusOr<RelabelGain> CompareTransfers(const RoundMode& mode, const LoadTable& before,
                                             const std::vector<int>& old_labels, const std::vector<int>& new_labels,
                                             const CostMatrix& costs);

}  // namespace hyperfed::balance
