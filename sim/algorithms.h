#pragma once

// The algorithms hyperfed-sim can run, by name. Each entry calls the balance
// library's whole-system driver, which runs the same per-node step functions
// the daemon runs.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"

namespace hyperfed::sim {

struct SubcubeSummary {
  int dim = 0;
  balance::NodeId base = 0;
  balance::NodeId mask = 0;
  int tree_depth = 0;
};

struct AlgorithmResult {
  balance::Plan plan;
  std::optional<SubcubeSummary> subcube;  // mcwa only
};

struct AlgorithmInput {
  const balance::Topology& topology;
  absl::Span<const balance::Load> loads;
  absl::Span<const double> capacities;  // one per node, all > 0
  bool keep_transfers = true;
};

using AlgorithmFn = std::function<absl::StatusOr<AlgorithmResult>(const AlgorithmInput&)>;

struct AlgorithmInfo {
  std::string name;
  std::string summary;
  bool hypercube_only = false;
  bool weighted = false;       // uses capacities
  bool allows_faults = false;  // accepts a hypercube with faulty nodes
  AlgorithmFn run;
};

const std::vector<AlgorithmInfo>& Algorithms();
const AlgorithmInfo* FindAlgorithm(const std::string& name);
std::string AlgorithmNames();  // "dem, dem-fixed, ..."

}  // namespace hyperfed::sim
