#pragma once

#include <cstdint>
#include <string>

#include "sim/paper.h"

namespace hyperfed::sim {

// chau-fu (Chau and Fu): Table 1 (DEM), Table 2 (improved DEM) and the
// weighted two-cluster example (640 tasks on 64 processors, 960 on 32).
absl::StatusOr<PaperReport> PaperChauFu(const PaperOptions& opts);

// Issue 14: other pair rules for the improved DEM's odd task, run with
// equal capacities on an n-cube with loads uniform in [0, 1000]. Variant 0
// is docs/design.md §4.1's rule (the library's); 1 to 3 decide by other label
// bits; 4 reads the printed u_{k+1} most significant bit first; 5 gives
// the odd task to the lighter node. Deterministic for a seed.
struct PairRuleResult {
  double mean_max_diff = 0;
  int64_t over_two = 0;  // trials whose max difference exceeded 2
};
int PairRuleVariantCount();
std::string PairRuleVariantName(int i);
PairRuleResult RunPairRuleVariant(int i, int n, int64_t trials, uint64_t seed);

}  // namespace hyperfed::sim
