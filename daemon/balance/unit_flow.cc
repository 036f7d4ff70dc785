#include "daemon/balance/unit_flow.h"

#include <deque>

#include "absl/strings/str_cat.h"
#include "daemon/balance/quota.h"

namespace hyperfed::balance {

absl::StatusOr<SpanningTree> BreadthFirstTree(const Topology& topo, NodeId root) {
  if (root < 0 || root >= topo.size() || !topo.alive(root))
    return absl::InvalidArgumentError(absl::StrCat("root ", root, " is not an alive node"));
  SpanningTree t;
  t.root = root;
  t.parent.assign(topo.size(), -1);
  std::vector<int> depth(topo.size(), -1);
  depth[root] = 0;
  std::deque<NodeId> q{root};
  while (!q.empty()) {
    NodeId u = q.front();
    q.pop_front();
    t.order.push_back(u);
    t.depth = std::max(t.depth, depth[u]);
    std::vector<NodeId> nb = topo.Neighbors(u);
    std::sort(nb.begin(), nb.end());
    for (NodeId v : nb) {
      if (depth[v] >= 0) continue;
      depth[v] = depth[u] + 1;
      t.parent[v] = u;
      q.push_back(v);
    }
  }
  if (static_cast<int>(t.order.size()) != topo.alive_count())
    return absl::InvalidArgumentError("the alive nodes are not connected");
  return t;
}

Load UnitFlowToParent(Load own_excess, absl::Span<const Load> child_flows) {
  Load f = own_excess;
  for (Load c : child_flows) f += c;
  return f;
}

absl::StatusOr<Plan> UnitFlowPlan(const Topology& topo, absl::Span<const Load> loads,
                                  absl::Span<const double> capacities, NodeId root) {
  const int n = topo.size();
  if (static_cast<int>(loads.size()) != n)
    return absl::InvalidArgumentError(absl::StrCat(loads.size(), " loads for ", n, " nodes"));
  for (Load w : loads)
    if (w < 0) return absl::InvalidArgumentError("loads must be non-negative");
  std::vector<double> caps(capacities.begin(), capacities.end());
  if (caps.empty()) caps.assign(n, 1.0);
  if (static_cast<int>(caps.size()) != n) return absl::InvalidArgumentError("one capacity per node");
  for (double p : caps)
    if (!(p > 0)) return absl::InvalidArgumentError("capacities must be > 0");
  if (root == -1)
    for (NodeId u = topo.size() - 1; u >= 0; --u)
      if (topo.alive(u)) root = u;
  auto tree = BreadthFirstTree(topo, root);
  if (!tree.ok()) return tree.status();

  const auto& alive = topo.alive_mask();
  std::vector<Load> quota = Apportion(TotalLoad(loads, alive), caps, alive);
  // Excess sums travel up the tree (reverse breadth-first order).
  std::vector<std::vector<Load>> from_children(n);
  std::vector<Load> up(n, 0);  // flow from node to its parent
  for (auto it = tree->order.rbegin(); it != tree->order.rend(); ++it) {
    NodeId u = *it;
    up[u] = UnitFlowToParent(loads[u] - quota[u], from_children[u]);
    if (tree->parent[u] >= 0) from_children[tree->parent[u]].push_back(up[u]);
  }

  PlanRecorder rec(std::vector<Load>(loads.begin(), loads.end()));
  rec.AddMessages(2 * (static_cast<int64_t>(tree->order.size()) - 1));  // sums up, quotas down
  // Owed flow per tree edge, keyed by the child; positive: child -> parent.
  std::vector<Load> owed = up;
  owed[tree->root] = 0;
  int phase = 0, last_busy_phase = 0;
  bool pending = true;
  while (pending) {
    pending = false;
    ++phase;
    std::vector<Load> start = rec.loads();  // what each node holds as the phase begins
    for (NodeId c : tree->order) {
      if (owed[c] == 0) continue;
      const NodeId p = tree->parent[c];
      const NodeId from = owed[c] > 0 ? c : p, to = owed[c] > 0 ? p : c;
      const Load amount = std::min<Load>(std::abs(owed[c]), start[from]);
      if (amount > 0) {
        start[from] -= amount;
        rec.Move(phase, from, to, amount);
        last_busy_phase = phase;
        owed[c] += owed[c] > 0 ? -amount : amount;
      }
      if (owed[c] != 0) pending = true;
    }
    if (phase > 4 * n + 4) return absl::InternalError("unit flow schedule did not finish");
  }
  rec.SetSteps(2 * static_cast<int64_t>(tree->depth) + last_busy_phase);
  return std::move(rec).Finish();
}

}  // namespace hyperfed::balance
