#pragma once

// Diffusion load balancing: xu §3.2 (Xu, Monien, Lueling, Lau).
//
// In every iteration all nodes at once compare their load with each
// neighbour's and hand the fraction alpha of each positive difference to that
// neighbour: w_i <- w_i + sum_j alpha (w_j - w_i). ADF uses alpha = 1/(1+d)
// (d the largest degree), ODF the paper's optimum: 1/(2n) for an n-D mesh,
// 1/(2n+1-cos(2 pi/k)) for an n-D torus with largest dimension k, 1/(n+1)
// for an n-cube.

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/balance/iterative.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"

namespace hyperfed::balance {

// ---- Per-node step functions ----

// Integer version: the tasks node i sends to neighbour j in one iteration,
// floor(alpha (w_i - w_j)) when w_i > w_j, else 0. With alpha d <= 1 a node
// never sends more than it has.
Load DiffusionTransfer(Load w_i, Load w_j, double alpha);
// Node i's load after one iteration, from its load and its neighbours'.
Load DiffusionNewLoad(Load w_i, absl::Span<const Load> neighbour_loads, double alpha);
// Real-valued form (xu Eq. 4).
double DiffusionNewLoadReal(double w_i, absl::Span<const double> neighbour_loads, double alpha);

// alpha for the topology. kOptimal on a graph: InvalidArgumentError.
absl::StatusOr<double> DiffusionAlpha(const Topology& topo, ExchangeParameter parameter);

// ---- Whole-system drivers ----

// Integer diffusion, all-port: one iteration is one communication step
// (xu §3.2), and Metrics.steps counts iterations. Stops when the
// stop test holds (tested after every iteration), when no node would send
// any more (integer fixed point), or at max_steps. Transfer.step: the
// iteration (or block). Messages: two load messages per edge per iteration,
// plus the transfers.
absl::StatusOr<Plan> DiffusionPlan(const Topology& topo, absl::Span<const Load> loads, const IterativeOptions& opts);

// Real-valued diffusion for the paper reproductions.
absl::StatusOr<IterativeTrace> DiffusionTraceReal(const Topology& topo, absl::Span<const double> loads,
                                                  const IterativeOptions& opts, bool keep_variance = false);

}  // namespace hyperfed::balance
