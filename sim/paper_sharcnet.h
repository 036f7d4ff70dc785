#pragma once

#include "sim/paper.h"

namespace hyperfed::sim {

// sharcnet: the study chau-fu (seed 003) promised, on the SHARCNET
// federation (7 clusters of 96, 108, 48, 144, 64, 8 and 8 processors): the
// Lublin-Feitelson trace replayed at offered loads 0.7 and 0.85, jobs
// submitted proportionally, uniformly or half at the largest site, 3 seeds;
// mean bounded slowdown per policy beside an independent model's figures.
// Reads lublin_256.swf from $HYPERFED_TRACE_DIR (default the repository's
// sim/traces, HYPERFED_TRACE_DIR_DEFAULT from CMake).
absl::StatusOr<PaperReport> PaperSharcnet(const PaperOptions& opts);

}  // namespace hyperfed::sim
