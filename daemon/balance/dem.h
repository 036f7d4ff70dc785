#pragma once

// The dimension exchange method (DEM) and Chau and Fu's improved DEM.
//
// chau-fu (Chau and Fu) Figs. 1, 2 and 5, as fixed by docs/design.md §4.1.
// In dimension k node u pairs with v = u ^ 2^k and the pair splits its
// s = w_u + w_v tasks. The per-node step functions below give u's load after
// the exchange; evaluated at u and at v they always sum to s.

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"

namespace hyperfed::balance {

enum class DemVariant {
  // Figure 1: the heavier node keeps the ceiling (no move when |w_u - w_v| <= 1).
  kHeavierKeepsCeiling,
  // The bit-k = 0 side always keeps the ceiling: reproduces chau-fu Table 1.
  kBitZeroKeepsCeiling,
};

// u's load after exchanging with its dimension-k partner (plain DEM).
Load DemShare(NodeId u, int k, Load w_u, Load w_v, DemVariant variant);

// u's load after the dimension-k exchange of the improved DEM in an n-cube.
// k < n-1: an odd extra task goes to the bit-k = 0 side when bit k+1 of the
// pair is 0, else to the bit-k = 1 side. k = n-1: the heavier keeps it.
Load ImprovedDemShare(NodeId u, int k, int n, Load w_u, Load w_v);

// Capacity-weighted form (chau-fu Fig. 5): u's share is s*p_u/(p_u+p_v);
// when that is not an integer the rule above picks who gets the ceiling (in
// the last dimension, the side with the higher load per capacity).
// Capacities must be > 0.
Load WeightedImprovedDemShare(NodeId u, int k, int n, Load w_u, Load w_v, double p_u, double p_v);
// The same for integer capacities (processing units), in exact integer
// arithmetic; WeightedImprovedDemShare calls it when capacities are whole.
Load IntegerWeightedImprovedDemShare(NodeId u, int k, int n, Load w_u, Load w_v, int64_t p_u, int64_t p_v);

// Whole-system drivers over a hypercube. A node whose dimension-k partner is
// faulty skips that dimension (nam §6). Steps: 3 per dimension
// (send load, receive load, migrate), the count wu-shu and nam use.
absl::StatusOr<Plan> DemPlan(const Topology& topo, absl::Span<const Load> loads,
                             DemVariant variant = DemVariant::kHeavierKeepsCeiling, bool keep_transfers = true);

// Improved DEM; weighted when `capacities` is not empty and not all equal.
absl::StatusOr<Plan> ImprovedDemPlan(const Topology& topo, absl::Span<const Load> loads,
                                     absl::Span<const double> capacities = {}, bool keep_transfers = true);

}  // namespace hyperfed::balance
