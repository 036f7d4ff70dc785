#pragma once

// wu-shu (Wu and Shu): DDE, a direct dimension exchange method for k-ary
// n-cubes. Example 1 (Fig. 4) with both exchange schedules, the ring example
// (19 -> 17 tasks moved), the 4x4 torus bound, and DDE against GDE as in
// §6 (Figs. 12 to 16, Table I).

#include "absl/status/statusor.h"
#include "daemon/balance/plan.h"
#include "sim/paper.h"

namespace hyperfed::sim {

absl::StatusOr<PaperReport> PaperWuShu(const PaperOptions& opts);

// Fraction of all tasks that never leave their first node (wu-shu Fig. 16),
// replaying the plan step by step; a node sends the tasks it received before
// its own (the receive-before-send locality rule of §3).
double LocalTaskFraction(const balance::Plan& plan);

}  // namespace hyperfed::sim
