#pragma once

// `hyperfed-sim compare`: every hypercube algorithm on the same random
// federations, one table (the exact-balance issue's comparison).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/runner.h"

namespace hyperfed::sim {

struct CompareConfig {
  int min_dim = 3, max_dim = 10;
  int64_t trials = 200;
  uint64_t seed = 1;
};

struct CompareRow {
  std::string capacities;  // "equal" or "uniform:1:16"
  int faults = 0;          // random faults per federation
  int n = 0;
  RunSummary summary;
};

// Runs each algorithm on the same federations (same seed per block).
absl::StatusOr<std::vector<CompareRow>> Compare(const CompareConfig& c,
                                                const std::function<void(const std::string&)>& progress = {});

std::string CompareText(const CompareConfig& c, const std::vector<CompareRow>& rows);
std::string CompareJson(const CompareConfig& c, const std::vector<CompareRow>& rows);

}  // namespace hyperfed::sim
