#pragma once

// Receiver initiated diffusion (RID), the asynchronous baseline of nam §3.1
// (Nam, Seo, Lee, Kim), after Willebeek-LeMair and Reeves.
//
// A node whose load drops below a threshold asks its non-faulty neighbours
// for their loads and asks each neighbour k for
//   phi_k = (l_avg - l(i)) * l(k) / sum_k l(k)          (rounded down)
// where l_avg is the average load of i and its neighbours. How we read 3.1:
// the printed formula is phi_k = l_avg * l(k) / sum l(k), which asks for
// l_avg in total and so overshoots the local average by l(i); it agrees with
// ours when l(i) = 0, the case the paper's text describes ("an underloaded
// node"). We subtract l(i) so that the receiver never passes the local
// average. Weighted form: i's target is (l(i) + sum l(k)) p_i / (p_i + sum
// p_k), i.e. l_avg per unit of capacity; with equal capacities it is the
// paper's l_avg.
//
// The library has no clock, so RidPlan models the asynchrony as rounds: in
// every round each node below the threshold (at the round's start) sends its
// requests, the neighbours answer with their loads, and the transfers happen.
// A neighbour asked by several nodes in one round grants the requests in
// ascending requester order until its round-start load is used up (with
// equal capacities the requests never exceed it).

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"

namespace hyperfed::balance {

struct RidOptions {
  Load threshold = 1;  // a node with load < threshold requests tasks
  int max_rounds = 100;
};

// Per node (the underloaded one): the tasks it asks of each neighbour, in the
// order of `neighbor_loads`. Empty capacities mean all equal. All zero when
// the node is not below its local average.
std::vector<Load> RidRequests(Load own, absl::Span<const Load> neighbor_loads, double own_capacity = 1.0,
                              absl::Span<const double> neighbor_capacities = {});

// Per node (the asked neighbour): what it grants for each request (requests
// in ascending requester order), never more in total than `own`.
std::vector<Load> RidGrant(Load own, absl::Span<const Load> requests);

// Rounds of RID on any topology (hypercube with faults, torus, mesh, ring,
// chain, graph); faulty nodes take no part and keep their load.
// Transfer.step = round number. Metrics.steps = 3 per round executed
// (request, load reply, transfer); rounds stop when no node is below the
// threshold, when a round moves nothing, or after max_rounds.
// Metrics.messages = per underloaded node per round, one request and one
// load reply per neighbour, plus the transfers.
absl::StatusOr<Plan> RidPlan(const Topology& topo, absl::Span<const Load> loads, absl::Span<const double> capacities,
                             const RidOptions& options);

}  // namespace hyperfed::balance
