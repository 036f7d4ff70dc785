#pragma once

// Integer balancing flows built from unit flows (unit-flow §3).
//
// unit-flow shows that an integer balancing flow exists on every connected
// graph: fix a vertex r and, for each other vertex j, a flow carrying one unit
// of load from r to j; the balancing flow is the sum of those unit flows
// weighted by each vertex's imbalance. hyperfed takes the unit flows along a
// breadth-first spanning tree rooted at r, so the flow on a tree edge is the
// imbalance of the subtree below it, and non-tree edges carry nothing (the
// paper's observation that the method uses only n-1 edges).

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"

namespace hyperfed::balance {

struct SpanningTree {
  NodeId root = 0;
  std::vector<NodeId> parent;  // -1 for the root and for nodes not alive
  std::vector<NodeId> order;   // breadth-first order from the root
  int depth = 0;
};

// Breadth-first spanning tree over alive nodes; a neighbour with the lowest
// number becomes the parent, so every node derives the same tree.
absl::StatusOr<SpanningTree> BreadthFirstTree(const Topology& topo, NodeId root);

// Per-node step: the flow a node sends to its parent (negative: receives),
// from its own excess (load - quota) and the flows its children sent it.
Load UnitFlowToParent(Load own_excess, absl::Span<const Load> child_flows);

// Whole-system driver: quotas by capacity (Apportion), the tree flow, then
// the transfers in phases: in each phase every node sends, along each edge
// with flow still owed, as much of it as it holds. Steps: the tree depth up
// for the excess sums, the depth down for the quotas, plus the phases.
// root -1: the lowest-numbered alive node.
absl::StatusOr<Plan> UnitFlowPlan(const Topology& topo, absl::Span<const Load> loads,
                                  absl::Span<const double> capacities = {}, NodeId root = -1);

}  // namespace hyperfed::balance
