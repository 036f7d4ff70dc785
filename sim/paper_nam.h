#pragma once

#include "sim/paper.h"

namespace hyperfed::sim {

// nam (Nam, Seo, Lee, Kim): CWA Example 1 (Tables 2 to 4), MCWA
// Example 2 (balancing subcube, trees, Tables 5 and 6) and the speedup
// experiment of §6 (Figs. 6 to 9) in the execution model of
// sim/speedup.h.
absl::StatusOr<PaperReport> PaperNam(const PaperOptions& opts);

}  // namespace hyperfed::sim
