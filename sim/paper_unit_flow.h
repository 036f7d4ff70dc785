#pragma once

#include <vector>

#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"
#include "sim/paper.h"

namespace hyperfed::sim {

// unit-flow: integer balancing flows from unit flows on any connected graph.
absl::StatusOr<PaperReport> PaperUnitFlow(const PaperOptions& opts);

// Hu et al.'s l2-optimal balancing flow (unit-flow §1, its reference
// [2]): with L the graph Laplacian, solve L x = excess by conjugate
// gradients; the flow on edge (u, v) is x_u - x_v. Returns the flow per edge
// in Topology::Edges() order. `excess` must sum to 0.
std::vector<double> OptimalBalancingFlow(const balance::Topology& topo, const std::vector<double>& excess);

// Net flow per edge (Topology::Edges() order, positive from the first node
// to the second) of a plan whose transfers run along edges.
std::vector<double> NetEdgeFlow(const balance::Topology& topo, const balance::Plan& plan);

// The l2 norm of a flow.
double L2Norm(const std::vector<double>& flow);

}  // namespace hyperfed::sim
