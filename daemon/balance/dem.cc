#include "daemon/balance/dem.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "daemon/balance/quota.h"

namespace hyperfed::balance {
namespace {

bool Bit(NodeId u, int k) { return (u >> k) & 1; }

// floor(s * pa / (pa + pb)) and whether the division is exact. Integral
// capacities use exact integer arithmetic; others long double.
std::pair<Load, bool> FloorShare(Load s, double pa, double pb) {
  if (pa == std::floor(pa) && pb == std::floor(pb) && pa < 9e15 && pb < 9e15) {
    __int128 num = static_cast<__int128>(s) * static_cast<int64_t>(pa);
    __int128 den = static_cast<int64_t>(pa) + static_cast<int64_t>(pb);
    return {static_cast<Load>(num / den), num % den == 0};
  }
  long double ideal = static_cast<long double>(s) * pa / (static_cast<long double>(pa) + pb);
  long double f = std::floor(ideal + 1e-9L);
  bool exact = std::fabs(static_cast<double>(ideal - f)) < 1e-9;
  return {static_cast<Load>(f), exact};
}

absl::Status CheckInput(const Topology& topo, absl::Span<const Load> loads, absl::Span<const double> caps) {
  if (topo.kind() != TopologyKind::kHypercube)
    return absl::InvalidArgumentError(absl::StrCat("DEM runs on a hypercube, not ", topo.Name()));
  if (loads.size() != static_cast<size_t>(topo.size()))
    return absl::InvalidArgumentError(absl::StrCat(loads.size(), " loads for ", topo.size(), " nodes"));
  for (Load w : loads)
    if (w < 0) return absl::InvalidArgumentError("loads must be non-negative");
  if (!caps.empty()) {
    if (caps.size() != loads.size())
      return absl::InvalidArgumentError(absl::StrCat(caps.size(), " capacities for ", loads.size(), " nodes"));
    for (double p : caps)
      if (!(p > 0)) return absl::InvalidArgumentError("capacities must be > 0");
  }
  return absl::OkStatus();
}

// Runs one sweep over the dimensions with `share(u, k, w_u, w_v)`.
template <typename ShareFn>
Plan Sweep(const Topology& topo, absl::Span<const Load> loads, bool keep, ShareFn share) {
  const int n = topo.dimensions();
  const NodeId size = topo.size();
  PlanRecorder rec(std::vector<Load>(loads.begin(), loads.end()), keep);
  for (int k = 0; k < n; ++k) {
    const NodeId bit = NodeId{1} << k;
    int64_t pairs = 0;
    for (NodeId u = 0; u < size; ++u) {
      if (u & bit) continue;
      const NodeId v = u | bit;
      if (!topo.alive(u) || !topo.alive(v)) continue;
      ++pairs;
      const Load wu = rec.load(u), wv = rec.load(v);
      const Load new_u = share(u, k, wu, wv);
      if (new_u < wu) rec.Move(k + 1, u, v, wu - new_u);
      else if (new_u > wu) rec.Move(k + 1, v, u, new_u - wu);
    }
    rec.AddMessages(2 * pairs);
  }
  rec.SetSteps(3 * static_cast<int64_t>(n));
  return std::move(rec).Finish();
}

}  // namespace

Load DemShare(NodeId u, int k, Load w_u, Load w_v, DemVariant variant) {
  const Load s = w_u + w_v;
  const Load lo = s / 2, hi = s - lo;
  switch (variant) {
    case DemVariant::kHeavierKeepsCeiling:
      return w_u > w_v ? hi : lo;
    case DemVariant::kBitZeroKeepsCeiling:
      return Bit(u, k) ? lo : hi;
  }
  return w_u;
}

Load WeightedImprovedDemShare(NodeId u, int k, int n, Load w_u, Load w_v, double p_u, double p_v) {
  // Evaluate from the bit-k = 0 side ("a") so that u and v agree exactly.
  const bool u_is_a = !Bit(u, k);
  const Load w_a = u_is_a ? w_u : w_v, w_b = u_is_a ? w_v : w_u;
  const double p_a = u_is_a ? p_u : p_v, p_b = u_is_a ? p_v : p_u;
  const Load s = w_a + w_b;
  auto [a_share, exact] = FloorShare(s, p_a, p_b);
  if (!exact) {
    bool a_gets_ceiling;
    if (k < n - 1) {
      a_gets_ceiling = !Bit(u, k + 1);  // both sides share bit k+1
    } else {
      // Higher load per capacity keeps the ceiling: w_a/p_a > w_b/p_b.
      a_gets_ceiling = static_cast<long double>(w_a) * p_b > static_cast<long double>(w_b) * p_a;
    }
    if (a_gets_ceiling) ++a_share;
  }
  return u_is_a ? a_share : s - a_share;
}

Load ImprovedDemShare(NodeId u, int k, int n, Load w_u, Load w_v) {
  return WeightedImprovedDemShare(u, k, n, w_u, w_v, 1, 1);
}

absl::StatusOr<Plan> DemPlan(const Topology& topo, absl::Span<const Load> loads, DemVariant variant,
                             bool keep_transfers) {
  if (auto st = CheckInput(topo, loads, {}); !st.ok()) return st;
  return Sweep(topo, loads, keep_transfers,
               [variant](NodeId u, int k, Load wu, Load wv) { return DemShare(u, k, wu, wv, variant); });
}

absl::StatusOr<Plan> ImprovedDemPlan(const Topology& topo, absl::Span<const Load> loads,
                                     absl::Span<const double> capacities, bool keep_transfers) {
  if (auto st = CheckInput(topo, loads, capacities); !st.ok()) return st;
  const int n = topo.dimensions();
  if (capacities.empty() || EqualCapacities(capacities, topo.alive_mask())) {
    return Sweep(topo, loads, keep_transfers,
                 [n](NodeId u, int k, Load wu, Load wv) { return ImprovedDemShare(u, k, n, wu, wv); });
  }
  return Sweep(topo, loads, keep_transfers, [n, capacities](NodeId u, int k, Load wu, Load wv) {
    return WeightedImprovedDemShare(u, k, n, wu, wv, capacities[u], capacities[u ^ (NodeId{1} << k)]);
  });
}

}  // namespace hyperfed::balance
