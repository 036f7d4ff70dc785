#pragma once

// Plans, metrics and the recorder every whole-system driver uses.
//
// A plan is what one balancing round does: ordered steps of edge transfers
// (from, to, count), the loads after them, and what it cost. The recorder
// applies transfers to a load vector and refuses any that would make a load
// negative, so no driver can create or lose a task unnoticed.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace hyperfed::balance {

using Load = int64_t;
using NodeId = int32_t;

struct Transfer {
  int step = 0;  // sequential communication step the transfer belongs to
  NodeId from = 0;
  NodeId to = 0;
  Load count = 0;  // tasks moved, always > 0
  int hops = 1;    // links the tasks cross (1 for a neighbour)

  friend bool operator==(const Transfer&, const Transfer&) = default;
};

struct Metrics {
  Load tasks_moved = 0;  // sum of transfer counts
  Load task_hops = 0;    // sum of count x hops
  int64_t messages = 0;  // load/quota information messages plus transfers
  int64_t steps = 0;     // sequential communication steps
};

struct Plan {
  std::vector<Load> initial_loads;
  std::vector<Load> final_loads;
  std::vector<Transfer> transfers;  // ordered by step
  Metrics metrics;
};

// Applies transfers to a load vector and keeps the metrics. Every driver
// builds its plan through one of these.
class PlanRecorder {
 public:
  // With keep_transfers false only loads and metrics are kept (for very
  // large simulated systems, where the transfer list is N log N long).
  explicit PlanRecorder(std::vector<Load> initial, bool keep_transfers = true);

  // Moves `count` tasks from `from` to `to` in `step`. A zero count is
  // ignored; a negative count is a move in the other direction. CHECK-fails
  // if the sender would go negative: that is a broken algorithm invariant.
  void Move(int step, NodeId from, NodeId to, Load count, int hops = 1);

  // Moves counted by SetPairShare, added to the metrics by AddTally. Kept
  // in the caller's loop so that the hot loop's counters stay in registers.
  struct Tally {
    Load moved = 0;
    int64_t transfers = 0;
  };

  // A pair exchange between neighbours u and v in `step`: u ends with
  // `new_u` tasks and v with the rest of their sum. Same checks as Move, with
  // few branches: the hot loop of the dimension exchange drivers. Call
  // AddTally(*tally) when the loop is done.
  inline __attribute__((always_inline)) void SetPairShare(int step, NodeId u, NodeId v, Load new_u, Tally* tally) {
    Load* w = plan_.final_loads.data();
    const Load d = new_u - w[u];  // > 0: v sends d to u
    if (keep_transfers_ && d != 0) RecordPairTransfer(step, u, v, d);
    w[u] = new_u;
    w[v] -= d;
    if ((new_u | w[v]) < 0) BrokenInvariant(step, u, v, d);
    tally->moved += d < 0 ? -d : d;
    tally->transfers += d != 0;
  }
  void AddTally(const Tally& t) {
    plan_.metrics.tasks_moved += t.moved;
    plan_.metrics.task_hops += t.moved;
    transfer_count_ += t.transfers;
  }

  // Counts information messages (load, quota, theta vectors).
  void AddMessages(int64_t n) { plan_.metrics.messages += n; }
  // Sets the number of sequential communication steps.
  void SetSteps(int64_t steps) { plan_.metrics.steps = steps; }
  void AddSteps(int64_t steps) { plan_.metrics.steps += steps; }

  const std::vector<Load>& loads() const { return plan_.final_loads; }
  Load load(NodeId u) const { return plan_.final_loads[u]; }

  // Finishes the plan (transfer messages are counted as messages too).
  Plan Finish() &&;

 private:
  void RecordPairTransfer(int step, NodeId u, NodeId v, Load d);
  [[noreturn]] static void BrokenInvariant(int step, NodeId u, NodeId v, Load d);

  Plan plan_;
  bool keep_transfers_ = true;
  int64_t transfer_count_ = 0;
};

// Sum of loads over nodes where alive[i] (all nodes if alive is empty).
Load TotalLoad(absl::Span<const Load> loads, const std::vector<bool>& alive = {});

// max - min over alive nodes.
Load MaxDiff(absl::Span<const Load> loads, const std::vector<bool>& alive = {});

// docs/design.md §3: max_i |w_i - T*p_i/P| over alive nodes.
double MaxShareError(absl::Span<const Load> loads, absl::Span<const double> capacities,
                     const std::vector<bool>& alive = {});

// Jobs that must move at least: sum over nodes of max(0, w_i - q_i).
Load MinimumMoves(absl::Span<const Load> loads, absl::Span<const Load> quotas);

}  // namespace hyperfed::balance
