#include "daemon/balance/quota.h"

#include <algorithm>
#include <cmath>

namespace hyperfed::balance {

static bool IsAlive(const std::vector<bool>& alive, size_t i) { return alive.empty() || alive[i]; }

bool EqualCapacities(absl::Span<const double> capacities, const std::vector<bool>& alive) {
  bool seen = false;
  double first = 0;
  for (size_t i = 0; i < capacities.size(); ++i) {
    if (!IsAlive(alive, i)) continue;
    if (!seen) {
      first = capacities[i];
      seen = true;
    } else if (capacities[i] != first) {
      return false;
    }
  }
  return true;
}

int64_t CapacityWeight(double capacity) {
  if (!(capacity > 0)) return 0;  // also NaN
  // Scaling by a power of two is exact in binary floating point, and
  // llround is correctly rounded, so every site gets the same integer.
  return std::llround(std::ldexp(std::min(capacity, kMaxWeightedCapacity), kWeightFractionBits));
}

__int128 MulDivFloor(int64_t total, __int128 part, __int128 whole) {
  if (part < (__int128{1} << 63)) return (static_cast<__int128>(total) * part) / whole;  // < 2^126: no overflow
  // Long multiplication modulo `whole`, one bit of `total` at a time:
  // q * whole + r = (the bits of total seen so far) * part, 0 <= r < whole.
  __int128 q = 0, r = 0;
  for (int bit = 62; bit >= 0; --bit) {
    q <<= 1;
    r <<= 1;
    if (r >= whole) r -= whole, ++q;
    if ((total >> bit) & 1) {
      r += part;
      if (r >= whole) r -= whole, ++q;
    }
  }
  return q;
}

std::vector<Load> Apportion(Load total, absl::Span<const double> capacities, const std::vector<bool>& alive) {
  const size_t n = capacities.size();
  std::vector<Load> q(n, 0);
  std::vector<size_t> live;
  std::vector<int64_t> w(n, 0);
  __int128 whole = 0;
  bool equal = true;
  for (size_t i = 0; i < n; ++i) {
    if (!IsAlive(alive, i)) continue;
    w[i] = CapacityWeight(capacities[i]);
    if (!live.empty() && w[i] != w[live.front()]) equal = false;
    live.push_back(i);
    whole += w[i];
  }
  if (live.empty()) return q;
  if (whole == 0) {
    // No capacity anywhere (every site drained): nothing can be balanced;
    // the lowest alive node is charged with everything so the sum holds.
    q[live.front()] = total;
    return q;
  }
  if (equal) {
    // The papers' rule: the lowest R alive nodes get one more.
    const Load m = static_cast<Load>(live.size());
    const Load avg = total / m, r = total % m;
    for (size_t j = 0; j < live.size(); ++j) q[live[j]] = avg + (static_cast<Load>(j) < r ? 1 : 0);
    return q;
  }
  // Prefix floors: q_i = floor(T P_{i+1} / W) - floor(T P_i / W).
  __int128 prefix = 0, below = 0;  // P_i and floor(T P_i / W)
  for (size_t i : live) {
    prefix += w[i];
    const __int128 upto = MulDivFloor(total, prefix, whole);
    q[i] = static_cast<Load>(upto - below);
    below = upto;
  }
  return q;
}

}  // namespace hyperfed::balance
