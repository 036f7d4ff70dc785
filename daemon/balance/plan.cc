#include "daemon/balance/plan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>

namespace hyperfed::balance {

PlanRecorder::PlanRecorder(std::vector<Load> initial, bool keep_transfers) : keep_transfers_(keep_transfers) {
  plan_.initial_loads = initial;
  plan_.final_loads = std::move(initial);
}

void PlanRecorder::Move(int step, NodeId from, NodeId to, Load count, int hops) {
  if (count == 0) return;
  if (count < 0) {
    std::swap(from, to);
    count = -count;
  }
  Load& src = plan_.final_loads[from];
  if (src < count || from == to) {
    std::cerr << "balance invariant broken: step " << step << " moves " << count << " from " << from << " (load " << src
              << ") to " << to << "\n";
    std::abort();
  }
  src -= count;
  plan_.final_loads[to] += count;
  if (keep_transfers_) plan_.transfers.push_back({step, from, to, count, hops});
  ++transfer_count_;
  plan_.metrics.tasks_moved += count;
  plan_.metrics.task_hops += count * hops;
}

void PlanRecorder::RecordPairTransfer(int step, NodeId u, NodeId v, Load d) {
  plan_.transfers.push_back(d > 0 ? Transfer{step, v, u, d, 1} : Transfer{step, u, v, -d, 1});
}

void PlanRecorder::BrokenInvariant(int step, NodeId u, NodeId v, Load d) {
  std::cerr << "balance invariant broken: step " << step << " pair " << u << "/" << v << " exchange of " << d
            << " makes a load negative\n";
  std::abort();
}

Plan PlanRecorder::Finish() && {
  plan_.metrics.messages += transfer_count_;
  std::stable_sort(plan_.transfers.begin(), plan_.transfers.end(),
                   [](const Transfer& a, const Transfer& b) { return a.step < b.step; });
  return std::move(plan_);
}

static bool Alive(const std::vector<bool>& alive, size_t i) { return alive.empty() || alive[i]; }

Load TotalLoad(absl::Span<const Load> loads, const std::vector<bool>& alive) {
  Load t = 0;
  for (size_t i = 0; i < loads.size(); ++i)
    if (Alive(alive, i)) t += loads[i];
  return t;
}

Load MaxDiff(absl::Span<const Load> loads, const std::vector<bool>& alive) {
  Load lo = std::numeric_limits<Load>::max(), hi = std::numeric_limits<Load>::min();
  for (size_t i = 0; i < loads.size(); ++i) {
    if (!Alive(alive, i)) continue;
    lo = std::min(lo, loads[i]);
    hi = std::max(hi, loads[i]);
  }
  return hi < lo ? 0 : hi - lo;
}

double MaxShareError(absl::Span<const Load> loads, absl::Span<const double> capacities,
                     const std::vector<bool>& alive) {
  double total = 0, cap = 0;
  for (size_t i = 0; i < loads.size(); ++i) {
    if (!Alive(alive, i)) continue;
    total += static_cast<double>(loads[i]);
    cap += capacities[i];
  }
  double worst = 0;
  if (cap <= 0) return 0;
  for (size_t i = 0; i < loads.size(); ++i) {
    if (!Alive(alive, i)) continue;
    worst = std::max(worst, std::fabs(static_cast<double>(loads[i]) - total * capacities[i] / cap));
  }
  return worst;
}

Load MinimumMoves(absl::Span<const Load> loads, absl::Span<const Load> quotas) {
  Load m = 0;
  for (size_t i = 0; i < loads.size(); ++i) m += std::max<Load>(0, loads[i] - quotas[i]);
  return m;
}

}  // namespace hyperfed::balance
