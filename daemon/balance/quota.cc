#include "daemon/balance/quota.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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

std::vector<Load> Apportion(Load total, absl::Span<const double> capacities, const std::vector<bool>& alive) {
  const size_t n = capacities.size();
  std::vector<Load> q(n, 0);
  std::vector<size_t> live;
  for (size_t i = 0; i < n; ++i)
    if (IsAlive(alive, i)) live.push_back(i);
  if (live.empty()) return q;
  long double cap_sum = 0;
  for (size_t i : live) cap_sum += capacities[i];
  if (!(cap_sum > 0)) {
    // No capacity anywhere (every site drained): nothing can be balanced;
    // the lowest alive node is charged with everything so the sum holds.
    q[live.front()] = total;
    return q;
  }
  if (EqualCapacities(capacities, alive)) {
    // Exact integer arithmetic: the lowest R alive nodes get one more.
    const Load m = static_cast<Load>(live.size());
    const Load avg = total / m, r = total % m;
    for (size_t j = 0; j < live.size(); ++j) q[live[j]] = avg + (static_cast<Load>(j) < r ? 1 : 0);
    return q;
  }
  long double cap = 0;
  for (size_t i : live) cap += capacities[i];
  std::vector<long double> frac(n, 0);
  Load given = 0;
  for (size_t i : live) {
    long double ideal = static_cast<long double>(total) * capacities[i] / cap;
    Load f = static_cast<Load>(std::floor(ideal));
    q[i] = f;
    frac[i] = ideal - f;
    given += f;
  }
  Load rest = total - given;
  std::vector<size_t> order = live;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (std::fabs(static_cast<double>(frac[a] - frac[b])) > 1e-12) return frac[a] > frac[b];
    return a < b;
  });
  // rest is in [0, live.size()) up to rounding; the modulo keeps it safe.
  for (Load j = 0; j < rest; ++j) q[order[static_cast<size_t>(j) % order.size()]] += 1;
  return q;
}

}  // namespace hyperfed::balance
