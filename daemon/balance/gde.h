#pragma once

// Generalized dimension exchange (GDE): xu §3.1 (Xu, Monien, Lueling, Lau)
// and its integer version in wu-shu Fig. 2 (Wu and Shu).
//
// The edges are coloured so that each colour class is a matching
// (EdgeColoring in iterative.h). A sweep visits the classes in turn; along
// every edge of the current class the two ends exchange their loads and move
// the fraction lambda of the difference from the heavier to the lighter:
// w_i <- w_i + lambda (w_j - w_i). ADE uses lambda = 1/2, ODE the optimum of
// xu (1/(1+sin(pi/k)) for a mesh, 1/(1+sin(2 pi/k)) for a torus, k the
// largest dimension; 1/2 for a hypercube, where ODE is ADE).

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/balance/iterative.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"

namespace hyperfed::balance {

// ---- Per-node step functions ----

// wu-shu Fig. 2 (integer version), evaluated by node i with its own load
// and its partner j's: the tasks i sends to j (negative: receives from j).
// floor(lambda (w_i - w_j)) when w_i - w_j > 1, -floor(lambda (w_j - w_i))
// when w_j - w_i > 1, else 0. Antisymmetric, so both ends agree.
Load GdeTransfer(Load w_i, Load w_j, double lambda);
// Node i's load after the exchange with j.
Load GdeNewLoad(Load w_i, Load w_j, double lambda);
// Real-valued form (xu Eq. 3): lambda (w_i - w_j).
double GdeTransferReal(double w_i, double w_j, double lambda);

// lambda for the topology. kOptimal on a graph: InvalidArgumentError.
// Odd rings (three colours) use the same formula as even ones, which the
// paper derives for even k only.
absl::StatusOr<double> GdeLambda(const Topology& topo, ExchangeParameter parameter);

// ---- Whole-system drivers ----

// Integer GDE. Runs sweeps over the colour classes until the stop test holds,
// no edge would move a task any more (an integer fixed point: the variance
// target of xu may be out of reach for integer loads), or max_steps.
// Metrics.steps: the exchange steps executed, one per colour class visited
// (xu §3.1: one pairwise step is one communication step in both
// the one-port and the all-port model, so a sweep of an n-D torus or mesh is
// 2n steps). Transfer.step: that exchange step (or the block, see
// IterativeOptions::merge_block). Messages: two load messages per edge of
// the class per step, plus the transfers.
absl::StatusOr<Plan> GdePlan(const Topology& topo, absl::Span<const Load> loads, const IterativeOptions& opts);

// Real-valued GDE (infinitely divisible load) for the paper reproductions.
// Same sweeps and stop tests; keep_variance fills trace.variance.
absl::StatusOr<IterativeTrace> GdeTraceReal(const Topology& topo, absl::Span<const double> loads,
                                            const IterativeOptions& opts, bool keep_variance = false);

}  // namespace hyperfed::balance
