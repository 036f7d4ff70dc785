#include "daemon/balance/dem.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "daemon/balance/quota.h"

namespace hyperfed::balance {
namespace {

bool Bit(NodeId u, int k) { return (u >> k) & 1; }

// floor(s * pa / (pa + pb)) and whether it is exact, for integer capacities.
inline std::pair<Load, bool> FloorShareInt(Load s, int64_t ia, int64_t ib) {
  if (s < (int64_t{1} << 31) && ia < (int64_t{1} << 31) && ib < (int64_t{1} << 31)) {
    const int64_t num = s * ia, den = ia + ib;
    // A double division, corrected to the exact floor with integer
    // products: several times faster than a 64-bit integer division.
    int64_t q = static_cast<int64_t>(static_cast<double>(num) / static_cast<double>(den));
    while (q * den > num) --q;
    while ((q + 1) * den <= num) ++q;
    return {q, q * den == num};
  }
  __int128 num = static_cast<__int128>(s) * ia;
  __int128 den = static_cast<__int128>(ia) + ib;
  return {static_cast<Load>(num / den), num % den == 0};
}

// floor(s * pa / (pa + pb)) and whether the division is exact. Integral
// capacities use exact integer arithmetic; others long double.
std::pair<Load, bool> FloorShare(Load s, double pa, double pb) {
  if (pa == std::floor(pa) && pb == std::floor(pb) && pa < 9e15 && pb < 9e15)
    return FloorShareInt(s, static_cast<int64_t>(pa), static_cast<int64_t>(pb));
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
  const bool full = topo.alive_mask().empty();
  for (int k = 0; k < n; ++k) {
    const NodeId bit = NodeId{1} << k;
    int64_t pairs = 0;
    PlanRecorder::Tally tally;
    // The nodes with bit k clear, block by block.
    for (NodeId block = 0; block < size; block += 2 * bit) {
      for (NodeId u = block; u < block + bit; ++u) {
        const NodeId v = u | bit;
        if (!full && (!topo.alive(u) || !topo.alive(v))) continue;
        ++pairs;
        rec.SetPairShare(k + 1, u, v, share(u, k, rec.load(u), rec.load(v)), &tally);
      }
    }
    rec.AddTally(tally);
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

namespace {

// The improved DEM pair rule; FloorShareFn gives the bit-0 side's floor share
// and whether it is exact.
template <typename Cap, typename FloorShareFn>
inline Load PairRule(NodeId u, int k, int n, Load w_u, Load w_v, Cap p_u, Cap p_v, FloorShareFn floor_share) {
  // Evaluate from the bit-k = 0 side ("a") so that u and v agree exactly.
  const bool u_is_a = !Bit(u, k);
  const Load w_a = u_is_a ? w_u : w_v, w_b = u_is_a ? w_v : w_u;
  const Cap p_a = u_is_a ? p_u : p_v, p_b = u_is_a ? p_v : p_u;
  const Load s = w_a + w_b;
  auto [a_share, exact] = floor_share(s, p_a, p_b);
  bool a_gets_ceiling;
  if (k < n - 1) {
    a_gets_ceiling = !Bit(u, k + 1);  // both sides share bit k+1
  } else {
    // Higher load per capacity keeps the ceiling: w_a/p_a > w_b/p_b.
    a_gets_ceiling = static_cast<long double>(w_a) * p_b > static_cast<long double>(w_b) * p_a;
  }
  a_share += (!exact && a_gets_ceiling) ? 1 : 0;
  return u_is_a ? a_share : s - a_share;
}

}  // namespace

Load WeightedImprovedDemShare(NodeId u, int k, int n, Load w_u, Load w_v, double p_u, double p_v) {
  return PairRule<double>(u, k, n, w_u, w_v, p_u, p_v, FloorShare);
}

Load IntegerWeightedImprovedDemShare(NodeId u, int k, int n, Load w_u, Load w_v, int64_t p_u, int64_t p_v) {
  return PairRule<int64_t>(u, k, n, w_u, w_v, p_u, p_v, FloorShareInt);
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
  bool integral = true;
  for (double p : capacities) integral = integral && p == std::floor(p) && p < 2e9;
  if (integral) {
    // 32-bit copies: half the memory traffic of the sweep's capacity reads.
    std::vector<int32_t> icaps(capacities.begin(), capacities.end());
    return Sweep(topo, loads, keep_transfers, [n, &icaps](NodeId u, int k, Load wu, Load wv) {
      return IntegerWeightedImprovedDemShare(u, k, n, wu, wv, icaps[u], icaps[u ^ (NodeId{1} << k)]);
    });
  }
  return Sweep(topo, loads, keep_transfers, [n, capacities](NodeId u, int k, Load wu, Load wv) {
    return WeightedImprovedDemShare(u, k, n, wu, wv, capacities[u], capacities[u ^ (NodeId{1} << k)]);
  });
}

}  // namespace hyperfed::balance
