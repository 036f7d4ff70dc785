#pragma once

// Shared pieces of the iterative nearest-neighbour methods of xu (Xu,
// Monien, Lueling, Lau): generalized dimension exchange (gde.h) and diffusion
// (diffusion.h). Both repeat local exchanges until the system workload
// variance is small (xu §6) or a step budget runs out.

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"

namespace hyperfed::balance {

// Which parameter (lambda for GDE, alpha for diffusion) to use.
enum class ExchangeParameter {
  kAverage,  // ADE lambda = 1/2, ADF alpha = 1/(1+d)
  kOptimal,  // ODE / ODF: the paper's optimum for the topology
};

// When to stop.
enum class StopTest {
  // xu §6: the system workload variance sum_i (w_i - mean)^2
  // is at most target_variance, tested after every communication step.
  kVariance,
  // wu-shu §2 (its GDE): every pair of neighbours differs by at
  // most one task, tested after every complete sweep.
  kNeighborDifference,
};

struct IterativeOptions {
  ExchangeParameter parameter = ExchangeParameter::kAverage;
  // Communication steps at most (see the drivers for what a step is).
  int64_t max_steps = 100000;
  double target_variance = 1.0;
  StopTest stop = StopTest::kVariance;
  // Transfers are recorded per communication step when 1. When larger, the
  // transfers between a pair of nodes within each block of `merge_block`
  // consecutive steps are netted into one transfer whose Transfer.step is
  // the block number; the metrics stay those of the step-by-step run.
  int64_t merge_block = 1;
};

// Result of a real-valued run (infinitely divisible load, as xu
// assumes in its analysis and simulation).
struct IterativeTrace {
  int64_t steps = 0;     // communication steps executed
  bool reached = false;  // the stop test held
  double final_variance = 0;
  std::vector<double> variance;  // after 0, 1, 2, ... steps (when asked for)
  std::vector<double> final_loads;
};

// xu §2: sum over alive nodes of (w_i - mean)^2 (not divided
// by N).
double WorkloadVariance(absl::Span<const Load> loads, const std::vector<bool>& alive = {});
double WorkloadVarianceReal(absl::Span<const double> loads, const std::vector<bool>& alive = {});

// WorkloadVariance for Load or double loads (the integer and the
// real-valued forms of GDE and diffusion share their loops).
template <typename T>
double WorkloadVarianceOf(const std::vector<T>& w, const std::vector<bool>& alive) {
  if constexpr (std::is_integral_v<T>)
    return WorkloadVariance(w, alive);
  else
    return WorkloadVarianceReal(w, alive);
}

// What one iterative run did.
struct IterativeRun {
  int64_t steps = 0;
  bool reached = false;  // the stop test held
  int64_t messages = 0;
};

// Largest |w_u - w_v| over the edges of the topology.
Load MaxNeighborDifference(const Topology& topo, absl::Span<const Load> loads);
double MaxNeighborDifferenceReal(const Topology& topo, absl::Span<const double> loads);

// Edge colouring: classes of edges, each a matching, in the order a sweep
// visits them. Torus and mesh: per dimension, the edges (c, c+1) with c
// even, then those with c odd; in a ring of odd size k the end-round edge
// (k-1, 0) would meet edge (0, 1) and gets a third class of its own; a
// dimension of size 2 has one class. Hypercube: one class per dimension
// (edges between alive nodes). Graph: greedy colouring in Edges() order
// (at most 2d-1 classes).
std::vector<std::vector<std::pair<NodeId, NodeId>>> EdgeColoring(const Topology& topo);

// Records the transfers of an iterative run through a PlanRecorder, netting
// them per pair within blocks of steps when asked, and keeps the exact
// step-by-step metrics.
class IterativeRecorder {
 public:
  IterativeRecorder(std::vector<Load> initial, int64_t merge_block);

  // `count` tasks from `from` to `to` in communication step `step` (1-based,
  // non-decreasing between calls).
  void Move(int64_t step, NodeId from, NodeId to, Load count);
  void AddMessages(int64_t n) { info_messages_ += n; }
  // Exact loads after every Move so far.
  const std::vector<Load>& loads() const { return loads_; }
  Load load(NodeId u) const { return loads_[u]; }

  Plan Finish(int64_t steps) &&;

 private:
  void Flush();

  PlanRecorder rec_;
  std::vector<Load> loads_;
  int64_t merge_block_;
  int64_t block_ = 0;                            // block of the pending netted flows
  absl::flat_hash_map<uint64_t, Load> pending_;  // key lo<<32|hi, flow lo->hi
  Load tasks_moved_ = 0;
  int64_t transfers_ = 0;
  int64_t info_messages_ = 0;
};

namespace internal {
// Torus/mesh: the number of dimensions of size >= 2 and the largest size.
std::pair<int, int> GridShape(const Topology& topo);
// InvalidArgumentError when the load count does not match or a load is < 0.
absl::Status CheckLoads(const Topology& topo, size_t count, bool any_negative, const char* who);
}  // namespace internal

}  // namespace hyperfed::balance
