#pragma once

// Direct dimension exchange (DDE), wu-shu (Wu and Shu).
//
// DDE balances a chain or a ring in one pass: a suffix scan gives every node
// the load W_i of the nodes from i to the end, the root derives the average,
// and each node computes the flow on its left edge as (its accumulated quota)
// - (its accumulated load) (Fig. 3). A ring first takes the chain flows and
// then shifts all of them by a median flow so that the total flow is of
// minimum cost (Fig. 8). Tori, k-ary n-cubes and meshes run rings (chains for
// a mesh) dimension by dimension (Fig. 10); the result differs by at most n
// tasks between any two nodes (Theorem 1).
//
// Flows along a line of k nodes are stored as flow[i] = x_{i,i+1}, the number
// of tasks that cross the edge (i, i+1) from i to i+1 (negative: from i+1 to
// i). flow[k-1] is the end-round edge (k-1, 0) of a ring and 0 on a chain.
// The paper indexes the same number at node i+1 as x_{i,i+1}.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"

namespace hyperfed::balance {

// How the tasks move once every node knows its flows.
enum class ExchangeSchedule {
  // Fig. 5: a node first receives everything it is owed, then sends.
  kReceiveBeforeSend,
  // Fig. 6: a node sends as soon as it holds enough tasks.
  kSendBeforeReceive,
};

struct DdeOptions {
  ExchangeSchedule schedule = ExchangeSchedule::kReceiveBeforeSend;
  // Fig. 8: shift ring flows to a minimum-cost flow. When false a ring is
  // balanced as a chain (the end-round edge carries nothing).
  bool ring_augmentation = true;
};

// ---- Per-node step functions (Fig. 3) ----

// Step 1, run from node k-1 down to node 0: W_i = w_i + W_{i+1}
// (W_k = 0). Node i receives W_{i+1} from node i+1 and passes W_i on.
Load DdeSuffixSum(Load w_i, Load suffix_of_next);

// Step 2 at the root (node 0, which holds T = W_0): w_avg = floor(T/k),
// R = T mod k. Broadcast to every node of the line.
struct DdeAverage {
  Load w_avg = 0;
  Load remainder = 0;  // R: nodes 0..R-1 get one task more
};
DdeAverage DdeAverageAtRoot(Load total, int k);

// Step 3 at node i: q_i = w_avg + 1 if i < R else w_avg.
Load DdeQuota(const DdeAverage& avg, int i);
// Step 3 at node i: Q_i = sum_{l>=i} q_l = w_avg*(k-i) + max(0, R-i).
// (The paper prints min(0, R-i); max is what makes Q_i the sum of quotas
// and what reproduces the table of Fig. 4.)
Load DdeAccumulatedQuota(const DdeAverage& avg, int k, int i);
// Step 4 at node i >= 1: the flow on its left edge, x_{i-1,i} = Q_i - W_i.
Load DdeChainFlow(Load accumulated_quota, Load suffix_sum);

// Fig. 8 at the root of a ring, from the k chain flows (flow[k-1] = 0):
// counts positive (n_p), negative (n_n) and zero (n_z) flows; when
// n_n + n_z - n_p < 0 returns the m-th largest positive flow, when
// n_p + n_z - n_n < 0 the m-th smallest negative flow, m = ceil(k/2);
// otherwise 0. Every node then subtracts the result from its flow.
Load DdeRingShift(absl::Span<const Load> chain_flows);

// What node i of a line sends in one exchange phase. `from_left` is the
// remaining x_{i-1,i} (> 0: node i still receives that many from the left,
// < 0: it still sends -from_left to the left), `to_right` the remaining
// x_{i,i+1} (> 0: sends to the right, < 0: still receives). `load` is what
// node i holds at the start of the phase.
struct DdeSends {
  Load left = 0;   // tasks sent to node i-1 in this phase
  Load right = 0;  // tasks sent to node i+1 in this phase
};
DdeSends DdeExchangeStep(ExchangeSchedule schedule, Load load, Load from_left, Load to_right);

// ---- Whole-line helpers (they call the per-node functions) ----

// Everything Fig. 4 tabulates for one line.
struct DdeLine {
  std::vector<Load> suffix;     // W_i
  std::vector<Load> quota;      // q_i
  std::vector<Load> acc_quota;  // Q_i
  std::vector<Load> flow;       // flow[i] = x_{i,i+1}; flow[k-1] end-round (0 for a chain)
  Load shift = 0;               // the ring augmentation applied (0 for a chain)
};
// `ring` with `augment` applies Fig. 8 (only for k >= 3).
DdeLine DdeLineFlows(absl::Span<const Load> loads, bool ring, bool augment);

// One transfer of a line exchange, in line positions.
struct DdeLineTransfer {
  int phase = 0;  // 1-based
  int from = 0;
  int to = 0;
  Load count = 0;
};
// Runs the exchange schedule phase by phase for a line with the given flows
// (ring: flow[k-1] is the end-round edge). Returns the transfers in phase
// order; the number of phases is the largest phase.
std::vector<DdeLineTransfer> DdeLineExchange(absl::Span<const Load> loads, absl::Span<const Load> flow, bool ring,
                                             ExchangeSchedule schedule);

// ---- Whole-system driver ----

// DDE on a chain, ring, torus (any sizes, k-ary n-cube included), mesh, or a
// hypercube without faults (a 2-ary n-mesh). Dimensions run one after the
// other (Fig. 10); within a dimension all lines run concurrently.
//
// Transfer.step: the migration phase, counted over all dimensions
// (dimension l's phases follow dimension l-1's).
// Metrics.steps (wu-shu §6): per dimension of size k, k steps for
// collecting and broadcasting load information plus the exchange phases the
// schedule needed (the largest over the dimension's lines).
// Metrics.messages: per line 2(k-1) information messages (scan and
// broadcast), 2(k-1) more for a ring's augmentation (gather flows, broadcast
// the shift), plus one per transfer.
// InvalidArgumentError for a graph or a hypercube with faults, or loads that
// do not match the topology or are negative.
absl::StatusOr<Plan> DdePlan(const Topology& topo, absl::Span<const Load> loads, const DdeOptions& opts = {});

}  // namespace hyperfed::balance
