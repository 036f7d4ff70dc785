#pragma once

// Cube walking algorithm (CWA), nam §3.3, Algorithm 2 (Nam, Seo, Lee, Kim),
// after Wu and Shu.
//
// Every node learns the load of each subcube containing it by dimension
// exchange (the l vector), derives the quota of each such subcube (q vector)
// and their difference (delta vector), and then, from the highest dimension
// down to 0, the overloaded half of every subcube sends exactly its excess to
// the other half. Each sender splits its half's excess over the members with
// the theta vector of line 18 and ships it along with the tasks so that the
// receiver can update its own vectors without another exchange.
//
// The walk runs on any healthy subcube ("walked cube"): walked dimension j
// is hypercube dimension dims[j]. Full-cube CWA walks dims 0..n-1; MCWA
// (mcwa.h) walks the free dimensions of its balancing subcube. A node's
// `index` in the walked cube has bit j equal to its bit in dims[j].
//
// Quotas are weighted by capacity (docs/design.md §3): the node quotas are
// Apportion(total, capacities) and a subcube's quota is the sum over its
// members. Every node knows every capacity (the roster carries them), so the
// q vector needs no message: a node computes it from the total l^dim and a
// prefix sum of the quotas over walked-cube indices (a j-subcube containing
// index c covers the index range [c with bits < j cleared, + 2^j)).

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"

namespace hyperfed::balance {

// What one node of the walked cube holds. Entry j of l, q and delta refers to
// the j-subcube containing the node (walked dimensions 0..j-1); entry `dim`
// is the whole walked cube.
struct CwaNodeState {
  int index = 0;
  std::vector<Load> l;
  std::vector<Load> q;
  std::vector<Load> delta;
};

// Starts a node: l^0 = its load (for MCWA, the load of its whole tree).
CwaNodeState CwaInit(int index, int dim, Load own_load);

// Algorithm 2 line 4: after exchanging l^j with the partner across walked
// dimension j, l^{j+1} = l^j + partner's l^j.
void CwaReceiveLoad(CwaNodeState& s, int j, Load partner_lj);

// Algorithm 2 lines 8-13, capacity weighted: q^j for j = 0..dim from the
// prefix sums of node quotas over walked-cube indices (prefix[c] = sum of
// quotas of indices < c; size 2^dim + 1).
std::vector<Load> CwaQuotaVector(int index, int dim, absl::Span<const Load> quota_prefix);

// Algorithm 2 line 14: stores q and sets delta = l - q.
void CwaSetQuotas(CwaNodeState& s, std::vector<Load> q);

// A node sends along walked dimension k exactly when its k-subcube is
// overloaded (line 15). Its partner then has delta^k = -delta^k(u).
inline bool CwaIsSender(const CwaNodeState& s, int k) { return s.delta[k] > 0; }

// Lines 16-18 at a sender: theta^j (tasks the node's j-subcube sends across
// walked dimension k) and gamma^j = delta^j - theta^j for j = 0..k. The
// partner's delta^j across walked dimension j, which line 18 needs at nodes
// whose bit j is 1, is local knowledge: delta^{j+1}(u) - delta^j(u).
struct CwaTheta {
  std::vector<Load> theta;
  std::vector<Load> gamma;
};
CwaTheta CwaComputeTheta(const CwaNodeState& s, int k);
// The same into *out, reusing its storage (drivers call it for every node).
void CwaComputeTheta(const CwaNodeState& s, int k, CwaTheta* out);

// Line 20 at the sender (after sending theta^0 tasks and the theta vector)
// and line 22 at the receiver (after receiving them), for j = 0..k.
void CwaAfterSend(CwaNodeState& s, int k, absl::Span<const Load> theta);
void CwaAfterReceive(CwaNodeState& s, int k, absl::Span<const Load> partner_theta);

// Runs the migration half of the walk (lines 6-7) on a walked cube whose
// nodes' l and q are already set (`states[c]` is the node with index c,
// label base | dims deposited). Transfer steps are first_step + (dim-1-k) for
// walked dimension k. A theta vector that travels without tasks is counted
// as an information message. Shared by CwaPlan and McwaPlan.
void CwaMigrate(PlanRecorder& rec, NodeId base, absl::Span<const int> dims, std::vector<CwaNodeState>& states,
                int first_step);

// Whole-system CWA on a full hypercube (faults: InvalidArgumentError).
// capacities: one per node, > 0; empty means all equal. The final loads are
// exactly Apportion(total, capacities).
// Metrics.steps = 3 log N, the paper's count: per dimension a send and a
// receive of l^k (lines 2-3) and one migration step (line 7); the quota
// calculation is local.
// Metrics.messages = N log N load messages + theta vectors sent without
// tasks + one per transfer.
absl::StatusOr<Plan> CwaPlan(const Topology& topo, absl::Span<const Load> loads, absl::Span<const double> capacities);

// Checks shared by the hypercube drivers: sizes, non-negative loads,
// positive capacities on alive nodes. Returns the capacity vector to use
// (all 1.0 when `capacities` is empty).
absl::StatusOr<std::vector<double>> CheckCubeInputs(const Topology& topo, absl::Span<const Load> loads,
                                                    absl::Span<const double> capacities);

// Label of walked-cube index c: base with bit j of c placed at dims[j].
NodeId WalkedLabel(NodeId base, absl::Span<const int> dims, int c);

}  // namespace hyperfed::balance
