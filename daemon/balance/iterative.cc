#include "daemon/balance/iterative.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"

namespace hyperfed::balance {
namespace {

bool IsAlive(const std::vector<bool>& alive, size_t i) { return alive.empty() || alive[i]; }

template <typename T>
double Variance(absl::Span<const T> loads, const std::vector<bool>& alive) {
  double sum = 0;
  int64_t n = 0;
  for (size_t i = 0; i < loads.size(); ++i) {
    if (!IsAlive(alive, i)) continue;
    sum += static_cast<double>(loads[i]);
    ++n;
  }
  if (n == 0) return 0;
  const double mean = sum / static_cast<double>(n);
  double v = 0;
  for (size_t i = 0; i < loads.size(); ++i) {
    if (!IsAlive(alive, i)) continue;
    const double d = static_cast<double>(loads[i]) - mean;
    v += d * d;
  }
  return v;
}

template <typename T>
T MaxEdgeDiff(const Topology& topo, absl::Span<const T> loads) {
  T worst = 0;
  for (auto [u, v] : topo.Edges()) {
    T d = loads[u] - loads[v];
    if (d < 0) d = -d;
    worst = std::max(worst, d);
  }
  return worst;
}

}  // namespace

double WorkloadVariance(absl::Span<const Load> loads, const std::vector<bool>& alive) { return Variance(loads, alive); }
double WorkloadVarianceReal(absl::Span<const double> loads, const std::vector<bool>& alive) {
  return Variance(loads, alive);
}
Load MaxNeighborDifference(const Topology& topo, absl::Span<const Load> loads) { return MaxEdgeDiff(topo, loads); }
double MaxNeighborDifferenceReal(const Topology& topo, absl::Span<const double> loads) {
  return MaxEdgeDiff(topo, loads);
}

std::vector<std::vector<std::pair<NodeId, NodeId>>> EdgeColoring(const Topology& topo) {
  using Edge = std::pair<NodeId, NodeId>;
  std::vector<std::vector<Edge>> classes;
  auto ordered = [](NodeId a, NodeId b) { return a < b ? Edge{a, b} : Edge{b, a}; };
  switch (topo.kind()) {
    case TopologyKind::kTorus:
    case TopologyKind::kMesh: {
      const bool torus = topo.kind() == TopologyKind::kTorus;
      int64_t stride = 1;
      for (int k : topo.sizes()) {
        if (k >= 2) {
          std::vector<Edge> even, odd, wrap;
          for (NodeId base = 0; base < topo.size(); ++base) {
            if ((base / stride) % k != 0) continue;
            auto node = [&](int p) { return static_cast<NodeId>(base + p * stride); };
            for (int p = 0; p + 1 < k; ++p) (p % 2 == 0 ? even : odd).push_back(ordered(node(p), node(p + 1)));
            if (torus && k >= 3) (k % 2 == 0 ? odd : wrap).push_back(ordered(node(k - 1), node(0)));
          }
          for (auto* c : {&even, &odd, &wrap})
            if (!c->empty()) classes.push_back(std::move(*c));
        }
        stride *= k;
      }
      break;
    }
    case TopologyKind::kHypercube:
      for (int d = 0; d < topo.dimensions(); ++d) {
        std::vector<Edge> c;
        for (NodeId u = 0; u < topo.size(); ++u) {
          const NodeId v = u ^ (NodeId{1} << d);
          if (u < v && topo.alive(u) && topo.alive(v)) c.emplace_back(u, v);
        }
        if (!c.empty()) classes.push_back(std::move(c));
      }
      break;
    case TopologyKind::kGraph: {
      std::vector<std::vector<bool>> used(topo.size());
      for (auto [u, v] : topo.Edges()) {
        size_t c = 0;
        while ((c < used[u].size() && used[u][c]) || (c < used[v].size() && used[v][c])) ++c;
        for (NodeId x : {u, v}) {
          if (used[x].size() <= c) used[x].resize(c + 1, false);
          used[x][c] = true;
        }
        if (classes.size() <= c) classes.resize(c + 1);
        classes[c].emplace_back(u, v);
      }
      break;
    }
  }
  return classes;
}

IterativeRecorder::IterativeRecorder(std::vector<Load> initial, int64_t merge_block)
    : rec_(initial), loads_(std::move(initial)), merge_block_(std::max<int64_t>(1, merge_block)) {}

void IterativeRecorder::Move(int64_t step, NodeId from, NodeId to, Load count) {
  if (count == 0) return;
  if (count < 0) {
    std::swap(from, to);
    count = -count;
  }
  if (loads_[from] < count) {
    std::cerr << "iterative balance invariant broken: step " << step << " moves " << count << " from " << from
              << " (load " << loads_[from] << ")\n";
    std::abort();
  }
  loads_[from] -= count;
  loads_[to] += count;
  tasks_moved_ += count;
  ++transfers_;
  if (merge_block_ == 1) {
    rec_.Move(static_cast<int>(step), from, to, count);
    return;
  }
  const int64_t block = (step - 1) / merge_block_ + 1;
  if (block != block_) {
    Flush();
    block_ = block;
  }
  const NodeId lo = std::min(from, to), hi = std::max(from, to);
  const uint64_t key = (static_cast<uint64_t>(lo) << 32) | static_cast<uint32_t>(hi);
  pending_[key] += from == lo ? count : -count;
}

void IterativeRecorder::Flush() {
  struct Pending {
    NodeId from, to;
    Load count;
  };
  std::vector<Pending> todo;
  for (const auto& [key, flow] : pending_) {
    if (flow == 0) continue;
    const NodeId lo = static_cast<NodeId>(key >> 32), hi = static_cast<NodeId>(key & 0xffffffffu);
    todo.push_back(flow > 0 ? Pending{lo, hi, flow} : Pending{hi, lo, -flow});
  }
  pending_.clear();
  // Deterministic order whatever the hash map did.
  std::sort(todo.begin(), todo.end(),
            [](const Pending& a, const Pending& b) { return std::pair(a.from, a.to) < std::pair(b.from, b.to); });
  // The netted block ends with non-negative loads, but applying its transfers
  // one by one can need a node to pass on tasks before it has received them.
  // Apply every transfer whose sender can cover it; when none can, the stuck
  // senders all wait on each other, so they contain a cycle of transfers:
  // cancel it (net loads unchanged) and go on.
  while (!todo.empty()) {
    bool progress = false;
    for (Pending& p : todo) {
      if (p.count > 0 && rec_.load(p.from) >= p.count) {
        rec_.Move(static_cast<int>(block_), p.from, p.to, p.count);
        p.count = 0;
        progress = true;
      }
    }
    std::erase_if(todo, [](const Pending& p) { return p.count == 0; });
    if (progress || todo.empty()) continue;
    absl::flat_hash_map<NodeId, size_t> incoming;  // node -> a pending transfer into it
    for (size_t i = 0; i < todo.size(); ++i) incoming.try_emplace(todo[i].to, i);
    absl::flat_hash_map<NodeId, size_t> seen;  // node -> position on the walk
    std::vector<size_t> walk;
    NodeId cur = todo[0].from;
    while (!seen.contains(cur)) {
      seen[cur] = walk.size();
      auto it = incoming.find(cur);
      if (it == incoming.end()) {
        std::cerr << "iterative balance: netted block cannot be applied\n";
        std::abort();
      }
      walk.push_back(it->second);
      cur = todo[it->second].from;
    }
    Load least = todo[walk[seen[cur]]].count;
    for (size_t i = seen[cur]; i < walk.size(); ++i) least = std::min(least, todo[walk[i]].count);
    for (size_t i = seen[cur]; i < walk.size(); ++i) todo[walk[i]].count -= least;
    std::erase_if(todo, [](const Pending& p) { return p.count == 0; });
  }
}

Plan IterativeRecorder::Finish(int64_t steps) && {
  Flush();
  rec_.SetSteps(steps);
  Plan plan = std::move(rec_).Finish();
  // Exact step-by-step figures (netting may have listed fewer tasks).
  plan.metrics.tasks_moved = tasks_moved_;
  plan.metrics.task_hops = tasks_moved_;
  plan.metrics.messages = info_messages_ + transfers_;
  return plan;
}

namespace internal {

std::pair<int, int> GridShape(const Topology& topo) {
  int n = 0, k = 1;
  for (int s : topo.sizes()) {
    if (s >= 2) ++n;
    k = std::max(k, s);
  }
  return {n, k};
}

absl::Status CheckLoads(const Topology& topo, size_t count, bool any_negative, const char* who) {
  if (static_cast<int>(count) != topo.size())
    return absl::InvalidArgumentError(absl::StrCat(who, ": ", count, " loads for ", topo.size(), " nodes"));
  if (any_negative) return absl::InvalidArgumentError(absl::StrCat(who, ": negative load"));
  return absl::OkStatus();
}

}  // namespace internal

}  // namespace hyperfed::balance
