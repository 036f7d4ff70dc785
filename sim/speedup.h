#pragma once

// Execution model for the nam §6 experiment (Figs. 6 to 9): speedup
// of MCWA, DEM and RID over no balancing on an n-cube with faulty nodes.
//
// The paper's setting: 100 tasks per node; node u's mean task time tau(u)
// is uniform in (0, 2 E[tau]) and each task's time uniform in (0, 2 tau(u));
// faulty nodes are drawn at random and their tasks dealt to the others;
// migrating one task costs 10% of E[tau] and sending load information 1%.
//
// What the paper leaves open, chosen once and identically for all three
// algorithms (E[tau] = 1):
// - Execution: a node runs its tasks one at a time; its load is its count of
//   waiting tasks (the running task does not move); a task keeps its time
//   when it migrates (tau is a property of the task, drawn at its origin).
// - Trigger: a node asks for balancing at a task completion when it has
//   fewer than `threshold` waiting tasks and is armed. threshold = 1, i.e. it
//   asks when it starts its last task: the paper's initiators hold no
//   waiting task (node 100 with load 0 in Fig. 1 and Example 1; "severely
//   underloaded", §2), and RID's "drops below a prespecified
//   threshold" (§3.1) is the same test. After a balancing action every
//   node that took part as a receiver of the answer (all healthy nodes in a
//   synchronous round, the requester in RID) is disarmed if it is still
//   below the threshold (its need has just been answered; otherwise an empty
//   cube would start a round at every completion) and armed otherwise; a
//   node is re-armed as soon as it holds `threshold` waiting tasks again.
// - DEM and MCWA are synchronous (§2: "all nonfaulty nodes perform
//   task migrations in a synchronous manner", after "all nodes reach an
//   agreed-upon synchronization point"): a round stops every healthy node
//   for its information part, (n + info steps) x info_cost, and then each
//   node for its own migrations: the tasks it sends plus receives, times
//   their hops, x migration_cost. n is the request broadcast over the n-cube
//   (§6: "all ... begin when an underloaded node broadcasts a
//   load-balancing request"); info steps are the plan's communication steps
//   minus its migration phases (DEM: 2 log N of 3 log N; MCWA: 2k + 2T of
//   3k + 4T, the paper's 3 log N + T). Charging each node its task-hops
//   follows §3.3 ("the task migration cost is proportional to the
//   total number of tasks to be migrated and the total distance"), so a task
//   relayed over h tree levels or subcube dimensions costs h migrations, and
//   MCWA's deep trees (Fig. 9) show up in the time. MCWA's trees are built
//   once per run (the faults are fixed).
// - A synchronous round gives every node the global load (CWA sends the
//   average down with the quotas; after DEM every load is about the
//   average). When a round leaves fewer than `threshold` waiting tasks per
//   healthy node, no node asks again: without this rule every node would
//   start one more round over the whole cube as it starts its last task,
//   about N rounds that can move almost nothing. RID has no global load and
//   goes on asking.
// - RID is asynchronous (§3.1): only the requester and its healthy
//   neighbours stop: 2 x info_cost each (request, load reply, one
//   communication step each, as for the synchronous steps), plus
//   migration_cost per task each neighbour sends, and per task the requester
//   receives (one task message at a time). Neighbours are asked in
//   one step, so the n requests cost one step, not n.
// - "Severely underloaded" (sections 2 and 7: a synchronous round starts
//   "when the load imbalance progresses to the point where severely
//   underloaded nodes exist"): a node with nothing waiting is severely
//   underloaded only while the others still hold work worth moving. The
//   request broadcast (n steps) is followed by a sum over the cube (n steps,
//   one number per dimension exchange); when the average waiting load per
//   healthy node is below `round_min_average`, the round stops there: every
//   healthy node pays those 2n information steps once, and since the total
//   only falls (no tasks arrive), no synchronous round starts again. 0 turns
//   the check off (the model before issue 14). RID is unchanged: it has no
//   global sum.
// - Who pays for a migration (`charge`): §6 says migrating a task
//   costs 10% of E[tau] and leaves open whether both ends stop for it. The
//   default stops the sender and the receiver for the full cost per task-hop
//   (a task relayed through a tree root costs the root twice); the
//   alternatives halve it at each end, charge the sender only, or charge
//   only net flow (relays free).
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

enum class MigrationCharge {
  kBothEnds = 0,     // sender and receiver each migration_cost per task-hop
  kHalfEachEnd = 1,  // each end migration_cost / 2 per task-hop
  kSenderOnly = 2,   // the sender migration_cost per task-hop, the receiver nothing
  // Relays free (cut-through routing): a node pays migration_cost per task
  // of its net flow in the round, |sent - received| task-hops, so a task
  // passing through a tree root or an intermediate dimension costs it
  // nothing. Not a reading of the paper: the price of its ranking with faults.
  kNetFlow = 3,
};
const char* MigrationChargeName(MigrationCharge c);

struct SpeedupConfig {
  int n = 5;
  int faults = 0;
  int tasks_per_node = 100;
  double migration_cost = 0.10;  // per task, in units of E[tau]
  double info_cost = 0.01;       // per information step, in units of E[tau]
  balance::Load threshold = 1;   // waiting tasks below which a node asks
  // A synchronous round goes past its load sum only while the average
  // waiting load per healthy node is at least this ("severely underloaded").
  double round_min_average = 5.0;
  MigrationCharge charge = MigrationCharge::kBothEnds;
  uint64_t seed = 1;
};

struct SpeedupRun {
  double time_without = 0;                                       // T_nobal
  std::array<double, kSpeedupAlgorithms> time_with{};            // T_bal
  std::array<double, kSpeedupAlgorithms> speedup{};              // T_nobal / T_bal
  std::array<double, kSpeedupAlgorithms> migrations_per_node{};  // task hops / healthy nodes
  std::array<int64_t, kSpeedupAlgorithms> rounds{};              // balancing rounds (RID: requests)
  std::array<int64_t, kSpeedupAlgorithms> skipped{};             // rounds stopped after the load sum
  int mcwa_dim = 0, mcwa_tree_depth = 0;                         // largest component's subcube
};

// One random instance (faults, task times), run without balancing and with
// each algorithm. Deterministic for a given config.
absl::StatusOr<SpeedupRun> RunSpeedup(const SpeedupConfig& config);

}  // namespace hyperfed::sim
