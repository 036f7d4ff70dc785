#pragma once

// `hyperfed-sim run`: many random trials of one algorithm, summarised.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/algorithms.h"

namespace hyperfed::sim {

struct RunConfig {
  std::string algorithm;
  std::string topology;
  std::string loads = "uniform:0:1000";
  std::string capacities = "equal";
  std::string faults;  // empty: none
  int64_t trials = 1;
  uint64_t seed = 1;
};

struct Stat {
  double mean = 0;
  double max = 0;
};

struct RunSummary {
  RunConfig config;
  std::string topology_name;
  Stat max_diff;
  std::map<int64_t, int64_t> max_diff_histogram;
  Stat max_share_error;
  Stat tasks_moved, task_hops, messages, steps;
  Stat minimum_moves;  // jobs that had to move at least (quota excess)
  // With one trial and list: loads.
  std::optional<std::vector<balance::Load>> initial_loads, final_loads;
  std::optional<std::vector<balance::Transfer>> transfers;
  std::optional<SubcubeSummary> subcube;
};

// Validates the whole configuration before the first trial; a bad value
// gives InvalidArgumentError naming it. `progress(done, total)` is called now
// and then when set.
absl::StatusOr<RunSummary> RunTrials(const RunConfig& config,
                                     const std::function<void(int64_t, int64_t)>& progress = {});

std::string SummaryJson(const RunSummary& s);
std::string SummaryText(const RunSummary& s);

}  // namespace hyperfed::sim
