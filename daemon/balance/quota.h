#pragma once

// Integer quotas proportional to capacity.

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "daemon/balance/plan.h"

namespace hyperfed::balance {

// Quotas are computed on integer weights, not on the capacities themselves,
// so that a site's prefix sum of weights is exact and the same at every
// site whatever order the weights are added in (docs/algorithms.md,
// "Capacity weights"). A capacity (units x speed, a double >= 0) becomes
// round(min(capacity, kMaxWeightedCapacity) * 2^kWeightFractionBits):
// fixed point with 24 fraction bits (a resolution of 6e-8 of a unit), at
// most 2^62, so any sum of at most 2^63 weights fits in an __int128.
// Capacities that are multiples of 2^-24 (integers, halves, 1.25, ...) are
// represented exactly. Negative, NaN or below 2^-25 gives 0: a drained site.
inline constexpr int kWeightFractionBits = 24;
inline constexpr double kMaxWeightedCapacity = static_cast<double>(int64_t{1} << 38);
int64_t CapacityWeight(double capacity);

// floor(total * part / whole) exactly, for 0 <= total < 2^63 and
// 0 <= part <= whole < 2^126, whole > 0 (no 256-bit product is formed).
__int128 MulDivFloor(int64_t total, __int128 part, __int128 whole);

// Splits `total` tasks over the nodes in proportion to their capacity
// weights w_i = CapacityWeight(capacities[i]), in label order:
//
//   q_i = floor(T * P_{i+1} / W) - floor(T * P_i / W),
//   P_i = sum of w_j over alive j < i,  W = sum of all alive w_j.
//
// The quotas telescope to exactly T and each is within one task of
// T * w_i / W; a node needs only its own prefix P_i, W and T, which a scan
// over the cube gives (prefix_scan.h). When every alive weight is the same
// it is the papers' rule instead: the lowest R = T mod m alive nodes get
// one more (nam Algorithm 2, lines 8-11), which needs only a node's rank
// among the alive ones. Nodes that are not alive (alive[i] false) get 0.
// Capacities must be >= 0 (a drained site has 0 and gets quota 0); when
// every alive weight is 0 there is no proportional split and callers must
// not move anything (the lowest alive node is given the whole total).
std::vector<Load> Apportion(Load total, absl::Span<const double> capacities, const std::vector<bool>& alive = {});

// True when every alive capacity is the same.
bool EqualCapacities(absl::Span<const double> capacities, const std::vector<bool>& alive = {});

}  // namespace hyperfed::balance
