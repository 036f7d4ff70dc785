#pragma once

// Exact weighted balance in one round, every job moved at most once.
//
// hyperfed's default round mode (docs/algorithms.md, "exact"). The papers'
// methods move tasks edge by edge, so a task can move in one dimension and
// again in the next, and the capacity-weighted improved DEM splits pairs, not
// subcubes, so unequal capacities stay unbalanced. Sites of a federation are
// not wired as a hypercube: a job transfer is one call to any site. So:
//
//  1. Gather: the dimension exchange carries load tables instead of single
//     loads. In dimension k a node sends its partner the (label, load,
//     capacity) rows it knows (those of its k-subcube, 2^k rows) and merges
//     what it receives. After n exchanges every node holds every row. This is
//     a butterfly all-gather riding on the dimension exchange: n steps, n*N
//     messages, the largest carrying N/2 rows.
//  2. Quotas: every node runs Apportion() on the same rows, so every node
//     derives the same integer quotas, each within one task of T*w_i/W
//     (quota.h). prefix_scan.h derives the same quotas and transfers from
//     O(log N) messages of O(1) numbers instead of the table.
//  3. Matching: every node derives the same transfers from surplus sites
//     (load > quota) straight to deficit sites (load < quota): near first.
//     With no cost table, "near" is the smallest subcube holding both sites:
//     surpluses and deficits are matched inside 1-subcubes, then 2-subcubes,
//     and so on, in label order. With a cost table (per site pair, from the
//     roster), the cheapest pairs are matched first, ties to lower labels.
//  4. Migration: one step; each site sends its surpluses directly.
// Jobs moved equal the minimum, sum over sites of max(0, load - quota).
//
// On a cube with faults the gather runs over the MCWA logical topology
// (docs/design.md §4.2): rows go up the trees to the balancing subcube, the
// subcube all-gathers, and the full table goes back down the trees.

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/balance/choice.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"

namespace hyperfed::balance {

// One site's row in the gathered load table.
struct LoadRow {
  NodeId label = 0;
  Load load = 0;
  double capacity = 1;
  // The site's widest job and when jobs sent to it would start
  // (docs/algorithms.md, "Jobs that gain"); empty when it does not say.
  // Carried by the gather, not used by the plan: sources choose jobs by it.
  StartProfile profile;

  friend bool operator==(const LoadRow&, const LoadRow&) = default;
};

// Rows sorted by label, no label twice.
using LoadTable = std::vector<LoadRow>;

// Per-node step of the gather: merge the partner's rows into mine.
// InvalidArgumentError if a label appears on both sides with different
// values or the partner's rows are malformed (unsorted, negative load or
// capacity). A drained site reports capacity 0 and gets quota 0.
absl::StatusOr<LoadTable> MergeLoadTables(const LoadTable& mine, const LoadTable& theirs);

// Cost of sending a job from one site to another (lower is nearer).
using PairCost = std::function<int64_t(NodeId from, NodeId to)>;

// Per-node step after the gather: the quotas and every transfer of the
// round, identical at every node holding the same table. Transfers have
// step 1; `hops` is the hypercube distance (popcount of from ^ to).
struct DirectPlan {
  std::vector<Load> quotas;         // indexed like the table
  std::vector<Transfer> transfers;  // sorted by (from, to)
};
DirectPlan PlanDirectTransfers(const LoadTable& table, const PairCost& cost = nullptr);

// Per-node step: the transfers this node sends (from == self).
std::vector<Transfer> OutgoingTransfers(const DirectPlan& plan, NodeId self);

struct ExactOptions {
  PairCost cost;  // empty: the subcube nearness above
};

// Whole-system driver on a hypercube. Full cube: steps n exchanges + 1
// migration; messages n * N gather messages (2 per pair per dimension) plus
// transfers. With faults, per component of healthy nodes (MCWA's balancing
// subcube of dimension k with trees of depth T): steps T up + k + T down + 1;
// messages 2 per tree edge + k 2^k + transfers. Faulty nodes keep their load.
// The largest gather message carries the component's rows (16 bytes each):
// N/2 rows in the exchange, N down the trees.
absl::StatusOr<Plan> ExactPlan(const Topology& topo, absl::Span<const Load> loads, absl::Span<const double> capacities,
                               const ExactOptions& opts = {});

}  // namespace hyperfed::balance
