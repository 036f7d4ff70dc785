#pragma once

#include "sim/paper.h"

namespace hyperfed::sim {

// Seed 001: integer balancing flows from unit flows on any connected graph.
absl::StatusOr<PaperReport> PaperUnitFlow(const PaperOptions& opts);

}  // namespace hyperfed::sim
