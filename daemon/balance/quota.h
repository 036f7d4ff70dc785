#pragma once

// Integer quotas proportional to capacity.

#include <vector>

#include "absl/types/span.h"
#include "daemon/balance/plan.h"

namespace hyperfed::balance {

// Splits `total` tasks over the nodes in proportion to `capacities` (all > 0)
// by largest remainder: every node gets floor(T*p_i/P), and the R tasks left
// go one each to the nodes with the largest fractional parts, ties to the
// lowest node number. With equal capacities this is the papers' rule "node i
// gets one more when i < R" (nam Algorithm 2, lines 8-11). Nodes that
// are not alive (alive[i] false) get 0. |q_i - T*p_i/P| < 1 for every node.
// Capacities must be >= 0 (a drained site has 0 and gets quota 0); when
// they are all 0 there is no proportional split and callers must not move
// anything (the lowest alive node is given the whole total).
std::vector<Load> Apportion(Load total, absl::Span<const double> capacities, const std::vector<bool>& alive = {});

// True when every alive capacity is the same.
bool EqualCapacities(absl::Span<const double> capacities, const std::vector<bool>& alive = {});

}  // namespace hyperfed::balance
