#pragma once

// Modified cube walking algorithm (MCWA), nam §4 and §5 (Algorithms 3 and
// 4; Nam, Seo, Lee, Kim), read as docs/design.md §4.2 fixes it.
//
// Around failed or empty hypercube positions, MCWA picks a healthy
// "balancing subcube" and hangs every other healthy node on it by a
// breadth-first tree through healthy nodes. A round then:
//   1. sends tree loads l_t up the trees (deepest level first),
//   2. runs CWA's load exchange in the subcube on the tree loads,
//   3. computes quotas and sends subtree quotas q_t down the trees,
//   4. sends every subtree's excess l_t - q_t up to its parent (deepest
//      level first),
//   5. runs CWA's migration in the subcube,
//   6. sends every subtree's deficit q_t - l_t down to it (level 1 first).
// Faulty nodes keep their load and take no part. When the healthy nodes fall
// apart into several connected components, each component gets its own
// balancing subcube and balances its own total (docs/design.md §4.2).
//
// Quotas are weighted by capacity, not by node count as in the paper: a
// node's subtree quota q_t is the sum of Apportion(component total,
// capacities) over its subtree, so the final loads are exactly the
// apportionment (max_share_error < 1). With equal capacities and no
// remainder this is the paper's quota.

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/balance/cwa.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"

namespace hyperfed::balance {

// A balancing subcube with the trees of its connected component.
struct BalancingSubcube {
  int dim = 0;         // k: number of free dimensions
  NodeId base = 0;     // label with the free bits zero
  NodeId mask = 0;     // one bit per free dimension
  int tree_depth = 0;  // T: the largest level
  // Per label (size N): parent in the tree; -1 for subcube nodes, faulty
  // nodes and nodes of other components.
  std::vector<NodeId> parent;
  // Per label: hop distance to the subcube along the tree (0 in the
  // subcube); -1 for faulty nodes and nodes of other components.
  std::vector<int> level;
  // The component's nodes ordered by (level, label).
  std::vector<NodeId> order;
  // Children of every node, ascending, in compressed form:
  // child_list[child_begin[u] .. child_begin[u+1]).
  std::vector<int> child_begin;
  std::vector<NodeId> child_list;

  bool InSubcube(NodeId u) const { return (u & ~mask) == base; }
  bool Member(NodeId u) const { return level[u] >= 0; }
  absl::Span<const NodeId> Children(NodeId u) const {
    return absl::MakeConstSpan(child_list).subspan(child_begin[u], child_begin[u + 1] - child_begin[u]);
  }
  // Free dimensions, ascending: walked dimension j of the CWA inside the
  // subcube is hypercube dimension Dims()[j] (Algorithm 3 line 5).
  std::vector<int> Dims() const;
  // Walked-cube index of a subcube node: bit j = its bit in Dims()[j].
  int Index(NodeId u) const;
  NodeId Label(int index) const;
};

// docs/design.md §4.2: for every connected component of healthy nodes (ordered
// by lowest label), a maximum-size healthy subcube inside it whose BFS tree
// is shallowest, ties broken by the lowest (mask, base). Candidates are
// searched in that order with a lower bound on their depth (the distance
// from the subcube to its farthest healthy node of the component; n - k when
// a node of the antipodal k-subcube is healthy); the search skips candidates
// whose bound cannot beat the best found and stops at the first candidate
// whose depth equals the least bound of all. Parents are the lowest-label
// neighbour one level up. Hypercubes only.
absl::StatusOr<std::vector<BalancingSubcube>> SelectBalancingSubcubes(const Topology& topo);

// The trees for a given healthy subcube (mask, base): what a node computes
// once the subcube is known. Covers the component containing the subcube.
// Errors: not a hypercube, base has free bits set, subcube not healthy.
absl::StatusOr<BalancingSubcube> BuildBalancingSubcube(const Topology& topo, NodeId mask, NodeId base);

// Algorithm 4's filter (section 5, lines 3-7) for one candidate: true when
// no faulty node at distance j (1 <= j <= n-k) from the subcube shares its
// free-dimension bits with more than j faulty nodes at that distance
// (itself included). Theorem 1: a candidate that passes has tree depth at
// most n - k. Kept as documentation and for tests; the selection itself uses
// exact depths.
bool PaperFilterAccepts(const Topology& topo, NodeId mask, NodeId base);

// Quotas of one round, which every node of the component derives from the
// component total and the capacities (the roster has them; tree nodes get
// the total with their quota message).
struct McwaQuotas {
  std::vector<Load> node;         // per label: Apportion over the component
  std::vector<Load> tree;         // per label: q_t, node quota + descendants'
  std::vector<Load> cube_prefix;  // prefix sums of q_t over walked indices
};
McwaQuotas McwaQuotaTable(const BalancingSubcube& bs, Load total, absl::Span<const double> capacities);

// Algorithm 3 lines 4 and 21: l_t(u) = l(u) + sum of the children's l_t.
Load McwaTreeLoad(Load own, absl::Span<const Load> child_tree_loads);

// What a node moves in the tree phases, from its own l_t and q_t and those
// of its children (children in Children() order).
struct McwaTreeFlows {
  Load to_parent = 0;               // > 0 sent up (line 29), < 0 received (line 30); 0 in the subcube
  std::vector<Load> from_children;  // tasks received from child j (lines 12-13, 27-28)
  std::vector<Load> to_children;    // tasks sent to child j (lines 16-17, 31-32)
};
McwaTreeFlows McwaNodeFlows(bool in_subcube, Load tree_load, Load tree_quota, absl::Span<const Load> child_tree_loads,
                            absl::Span<const Load> child_tree_quotas);
// The same into *out, reusing its storage.
void McwaNodeFlows(bool in_subcube, Load tree_load, Load tree_quota, absl::Span<const Load> child_tree_loads,
                   absl::Span<const Load> child_tree_quotas, McwaTreeFlows* out);

// Whole-system MCWA on a hypercube with any faults: selects the balancing
// subcubes (returned in *chosen when not null) and runs McwaPlanOn.
// capacities: one per node (faulty ones ignored), empty = all equal.
absl::StatusOr<Plan> McwaPlan(const Topology& topo, absl::Span<const Load> loads, absl::Span<const double> capacities,
                              std::vector<BalancingSubcube>* chosen = nullptr);

// MCWA on given balancing subcubes (one per component), e.g. the paper's own
// choice in Example 2.
// Transfer steps: levels T..1 up (steps 1..T), the subcube walk (T+1..T+k),
// levels 1..T down (T+k+1..T+k+T); hops are always 1.
// Metrics.steps = 3k + 4T, the paper's per-phase count (section 4: T steps
// each for load up, quota down, excess up, deficit down; 2k for the load
// exchange and k for the migration in the subcube); the largest over
// components. With k = n - T, as the paper assumes, this is its 3 log N + T;
// with no faults it is CWA's 3 log N.
// Metrics.messages = one l_t per tree edge, k 2^k subcube load messages, one
// quota per tree edge, theta vectors sent without tasks, and transfers.
absl::StatusOr<Plan> McwaPlanOn(const Topology& topo, absl::Span<const Load> loads, absl::Span<const double> capacities,
                                absl::Span<const BalancingSubcube> subcubes);

}  // namespace hyperfed::balance
