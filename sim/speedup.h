#pragma once

// Execution model for seed 004's section 6 experiment (Figs. 6 to 9): speedup
// of MCWA, DEM and RID over no balancing on an n-cube with faulty nodes.
//
// The paper's setting: 100 tasks per node; node u's mean task time tau(u)
// is uniform in (0, 2 E[tau]) and each task's time uniform in (0, 2 tau(u));
// faulty nodes are drawn at random and their tasks dealt to the others;
// migrating one task costs 10% of E[tau] and sending load information 1%.
//
// What the paper leaves open, and how we fill it:
// - A node runs its tasks one at a time; its load is its count of waiting
//   tasks (the running task does not move). A task keeps its time when it
//   migrates.
// - A node asks for balancing when, at a task completion, its waiting count
//   falls below `threshold` (edge triggered: again only after it has been at
//   or above the threshold) or it has just run out of work.
// - DEM and MCWA are synchronous: a request starts a round on all healthy
//   nodes, which all pause for D = info_steps x info_cost + sum over the
//   round's migration phases of (largest number of tasks a node sends plus
//   receives in that phase) x migration_cost. info_steps is the plan's step
//   count minus its migration phases (DEM: 2n of 3n; MCWA: 2k + 2T of
//   3k + 4T). MCWA's trees are built once per run (the faults are fixed).
// - RID is asynchronous: the requester pauses 2 x info_cost plus
//   migration_cost per task received; each asked neighbour pauses info_cost
//   plus migration_cost per task it sends.
// - The balanced run ends when the last task finishes; speedup = time
//   without balancing (the largest per-node sum) / that time.

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "daemon/balance/plan.h"

namespace hyperfed::sim {

enum class SpeedupAlgorithm { kMcwa = 0, kDem = 1, kRid = 2 };
inline constexpr int kSpeedupAlgorithms = 3;
const char* SpeedupAlgorithmName(SpeedupAlgorithm a);

struct SpeedupConfig {
  int n = 5;
  int faults = 0;
  int tasks_per_node = 100;
  double migration_cost = 0.10;  // per task, in units of E[tau]
  double info_cost = 0.01;       // per information step, in units of E[tau]
  balance::Load threshold = 3;   // waiting tasks below which a node asks
  uint64_t seed = 1;
};

struct SpeedupRun {
  double time_without = 0;                                // T_nobal
  std::array<double, kSpeedupAlgorithms> time_with{};     // T_bal
  std::array<double, kSpeedupAlgorithms> speedup{};       // T_nobal / T_bal
  std::array<double, kSpeedupAlgorithms> migrations_per_node{};  // task hops / healthy nodes
  std::array<int64_t, kSpeedupAlgorithms> rounds{};       // balancing rounds (RID: requests)
  int mcwa_dim = 0, mcwa_tree_depth = 0;                  // largest component's subcube
};

// One random instance (faults, task times), run without balancing and with
// each algorithm. Deterministic for a given config.
absl::StatusOr<SpeedupRun> RunSpeedup(const SpeedupConfig& config);

}  // namespace hyperfed::sim
