#pragma once

#include "sim/paper.h"

namespace hyperfed::sim {

// Seed 003 (Chau and Fu): Table 1 (DEM), Table 2 (improved DEM) and the
// weighted two-cluster example (640 tasks on 64 processors, 960 on 32).
absl::StatusOr<PaperReport> PaperChauFu(const PaperOptions& opts);

}  // namespace hyperfed::sim
