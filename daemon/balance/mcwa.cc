#include "daemon/balance/mcwa.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/balance/quota.h"

namespace hyperfed::balance {
namespace {

int Popcount(uint32_t x) { return std::popcount(x); }

// Healthy-node components of a hypercube, numbered by lowest label.
struct Components {
  std::vector<int> id;                     // per label, -1 for faulty
  std::vector<std::vector<NodeId>> nodes;  // ascending labels
};

Components FindComponents(const Topology& topo) {
  const int n = topo.dimensions(), size = topo.size();
  Components c;
  c.id.assign(size, -1);
  std::vector<NodeId> queue;
  int count = 0;
  for (NodeId s = 0; s < size; ++s) {
    if (!topo.alive(s) || c.id[s] >= 0) continue;
    const int cid = count++;
    queue.assign(1, s);
    c.id[s] = cid;
    for (size_t h = 0; h < queue.size(); ++h) {
      const NodeId u = queue[h];
      for (int d = 0; d < n; ++d) {
        const NodeId v = u ^ (NodeId{1} << d);
        if (topo.alive(v) && c.id[v] < 0) {
          c.id[v] = cid;
          queue.push_back(v);
        }
      }
    }
  }
  c.nodes.resize(count);
  for (NodeId u = 0; u < size; ++u)  // one ascending pass keeps every list sorted
    if (c.id[u] >= 0) c.nodes[c.id[u]].push_back(u);
  return c;
}

// Multi-source BFS from the subcube (mask, base) through healthy nodes.
// Fills level (must be all -1 on entry for the nodes it may reach) and
// returns the depth, or `cutoff` as soon as a level would reach `cutoff`
// (the caller then resets `touched`).
int SubcubeBfs(const Topology& topo, NodeId mask, NodeId base, int cutoff, std::vector<int>& level,
               std::vector<NodeId>& touched) {
  const int n = topo.dimensions();
  touched.clear();
  NodeId s = 0;
  do {
    level[base | s] = 0;
    touched.push_back(base | s);
    s = (s - mask) & mask;
  } while (s != 0);
  int depth = 0;
  for (size_t h = 0; h < touched.size(); ++h) {
    const NodeId u = touched[h];
    const int next = level[u] + 1;
    for (int d = 0; d < n; ++d) {
      const NodeId v = u ^ (NodeId{1} << d);
      if (level[v] >= 0 || !topo.alive(v)) continue;
      if (next >= cutoff) return cutoff;
      level[v] = next;
      depth = next;
      touched.push_back(v);
    }
  }
  return depth;
}

// Trees from the BFS levels: parent = lowest-label neighbour one level up.
BalancingSubcube MakeTrees(const Topology& topo, NodeId mask, NodeId base) {
  const int n = topo.dimensions(), size = topo.size();
  BalancingSubcube bs;
  bs.dim = Popcount(static_cast<uint32_t>(mask));
  bs.mask = mask;
  bs.base = base;
  bs.level.assign(size, -1);
  bs.parent.assign(size, -1);
  std::vector<NodeId> touched;
  bs.tree_depth = SubcubeBfs(topo, mask, base, std::numeric_limits<int>::max(), bs.level, touched);
  // Order by (level, label) with a counting sort: one ascending label pass.
  std::vector<size_t> at(bs.tree_depth + 2, 0);
  for (NodeId u : touched) ++at[bs.level[u] + 1];
  for (int d = 0; d <= bs.tree_depth; ++d) at[d + 1] += at[d];
  bs.order.assign(touched.size(), 0);
  for (NodeId u = 0; u < size; ++u)
    if (bs.level[u] >= 0) bs.order[at[bs.level[u]]++] = u;
  bs.child_begin.assign(size + 1, 0);
  for (NodeId u : bs.order) {
    if (bs.level[u] == 0) continue;
    for (int d = 0; d < n; ++d) {
      const NodeId v = u ^ (NodeId{1} << d);
      if (bs.level[v] == bs.level[u] - 1 && (bs.parent[u] < 0 || v < bs.parent[u])) bs.parent[u] = v;
    }
    ++bs.child_begin[bs.parent[u] + 1];
  }
  for (int u = 0; u < size; ++u) bs.child_begin[u + 1] += bs.child_begin[u];
  bs.child_list.assign(bs.child_begin[size], 0);
  std::vector<int> fill(bs.child_begin.begin(), bs.child_begin.end() - 1);
  for (NodeId u = 0; u < size; ++u)  // ascending labels: children come out sorted
    if (bs.parent[u] >= 0) bs.child_list[fill[bs.parent[u]]++] = u;
  return bs;
}

struct Candidate {
  NodeId mask, base;
  int lower_bound;
};

// Maximum-size healthy subcubes inside component `cid`, in (mask, base)
// order, with their depth lower bounds.
std::vector<Candidate> MaxHealthySubcubes(const Topology& topo, const Components& comps, int cid,
                                          const std::vector<NodeId>& faults, bool whole) {
  const int n = topo.dimensions();
  const uint32_t full = static_cast<uint32_t>(topo.size() - 1);
  const std::vector<NodeId>& members = comps.nodes[cid];
  const int64_t csize = static_cast<int64_t>(members.size());
  int kmax = 0;
  while (kmax < n && (int64_t{1} << (kmax + 1)) <= csize) ++kmax;
  std::vector<Candidate> out;
  std::vector<NodeId> killed, bases;
  for (int k = kmax; k >= 0 && out.empty(); --k) {
    uint64_t mask = (uint64_t{1} << k) - 1;
    while (mask <= full) {
      const uint32_t inv = full & ~static_cast<uint32_t>(mask);
      killed.clear();
      for (NodeId f : faults) killed.push_back(static_cast<NodeId>(f & inv));
      std::sort(killed.begin(), killed.end());
      bases.clear();
      if ((int64_t{1} << (n - k)) <= csize) {
        uint32_t b = 0;
        do {
          bases.push_back(static_cast<NodeId>(b));
          b = (b - inv) & inv;
        } while (b != 0);
      } else {
        for (NodeId v : members) bases.push_back(static_cast<NodeId>(v & inv));
        std::sort(bases.begin(), bases.end());
        bases.erase(std::unique(bases.begin(), bases.end()), bases.end());
      }
      for (NodeId b : bases) {
        if (std::binary_search(killed.begin(), killed.end(), b) || comps.id[b] != cid) continue;
        // Lower bound on the tree depth: the farthest healthy node of the
        // component. With the whole healthy set as component, any healthy
        // node of the antipodal subcube is at n - k.
        const NodeId anti = static_cast<NodeId>(b ^ inv);
        const auto [lo, hi] = std::equal_range(killed.begin(), killed.end(), anti);
        int lb = 0;
        if (whole && (hi - lo) < (int64_t{1} << k)) {
          lb = n - k;
        } else {
          for (NodeId v : members) lb = std::max(lb, Popcount(static_cast<uint32_t>((v ^ b) & inv)));
        }
        out.push_back({static_cast<NodeId>(mask), b, lb});
      }
      if (mask == 0) break;
      const uint64_t c = mask & (~mask + 1), r = mask + c;
      mask = (((r ^ mask) >> 2) / c) | r;
    }
  }
  return out;
}

}  // namespace

std::vector<int> BalancingSubcube::Dims() const {
  std::vector<int> d;
  for (int b = 0; b < 31; ++b)
    if ((mask >> b) & 1) d.push_back(b);
  return d;
}

int BalancingSubcube::Index(NodeId u) const {
  int c = 0, j = 0;
  for (int b = 0; b < 31; ++b)
    if ((mask >> b) & 1) c |= ((u >> b) & 1) << j++;
  return c;
}

NodeId BalancingSubcube::Label(int index) const { return WalkedLabel(base, Dims(), index); }

absl::StatusOr<BalancingSubcube> BuildBalancingSubcube(const Topology& topo, NodeId mask, NodeId base) {
  if (topo.kind() != TopologyKind::kHypercube) return absl::InvalidArgumentError("MCWA needs a hypercube");
  const NodeId full = topo.size() - 1;
  if ((mask & ~full) != 0 || (base & ~full) != 0 || (base & mask) != 0)
    return absl::InvalidArgumentError(absl::StrCat("bad subcube mask ", mask, " base ", base));
  NodeId s = 0;
  do {
    if (!topo.alive(base | s))
      return absl::InvalidArgumentError(absl::StrCat("subcube contains faulty node ", base | s));
    s = (s - mask) & mask;
  } while (s != 0);
  return MakeTrees(topo, mask, base);
}

absl::StatusOr<std::vector<BalancingSubcube>> SelectBalancingSubcubes(const Topology& topo) {
  if (topo.kind() != TopologyKind::kHypercube) return absl::InvalidArgumentError("MCWA needs a hypercube");
  const Components comps = FindComponents(topo);
  const std::vector<NodeId> faults = topo.faults();
  const int healthy = topo.alive_count();
  std::vector<BalancingSubcube> result;
  std::vector<int> level(topo.size(), -1);
  std::vector<NodeId> touched;
  for (int cid = 0; cid < static_cast<int>(comps.nodes.size()); ++cid) {
    const bool whole = static_cast<int>(comps.nodes[cid].size()) == healthy;
    std::vector<Candidate> cands = MaxHealthySubcubes(topo, comps, cid, faults, whole);
    int least = std::numeric_limits<int>::max();
    for (const Candidate& c : cands) least = std::min(least, c.lower_bound);
    int best_depth = std::numeric_limits<int>::max();
    const Candidate* best = nullptr;
    for (const Candidate& c : cands) {
      if (c.lower_bound >= best_depth) continue;  // cannot beat an earlier one
      const int depth = SubcubeBfs(topo, c.mask, c.base, best_depth, level, touched);
      for (NodeId u : touched) level[u] = -1;
      if (depth < best_depth) {
        best_depth = depth;
        best = &c;
        if (best_depth == least) break;  // docs/design.md §4.2: early stop
      }
    }
    result.push_back(MakeTrees(topo, best->mask, best->base));
  }
  return result;
}

bool PaperFilterAccepts(const Topology& topo, NodeId mask, NodeId base) {
  const int n = topo.dimensions();
  const NodeId inv = (topo.size() - 1) & ~mask;
  const int k = Popcount(static_cast<uint32_t>(mask));
  std::vector<std::pair<int, NodeId>> groups;  // (distance j, free bits)
  for (NodeId f : topo.faults()) {
    const int j = Popcount(static_cast<uint32_t>((f ^ base) & inv));
    if (j >= 1 && j <= n - k) groups.push_back({j, f & mask});
  }
  std::sort(groups.begin(), groups.end());
  for (size_t i = 0; i < groups.size();) {
    size_t e = i;
    while (e < groups.size() && groups[e] == groups[i]) ++e;
    if (static_cast<int>(e - i) > groups[i].first) return false;
    i = e;
  }
  return true;
}

McwaQuotas McwaQuotaTable(const BalancingSubcube& bs, Load total, absl::Span<const double> capacities) {
  const size_t size = bs.level.size();
  std::vector<bool> member(size);
  for (size_t u = 0; u < size; ++u) member[u] = bs.level[u] >= 0;
  McwaQuotas q;
  q.node = Apportion(total, capacities, member);
  q.tree = q.node;
  for (auto it = bs.order.rbegin(); it != bs.order.rend(); ++it)
    if (bs.parent[*it] >= 0) q.tree[bs.parent[*it]] += q.tree[*it];
  const std::vector<int> dims = bs.Dims();
  const int count = 1 << bs.dim;
  q.cube_prefix.assign(count + 1, 0);
  for (int c = 0; c < count; ++c) q.cube_prefix[c + 1] = q.cube_prefix[c] + q.tree[WalkedLabel(bs.base, dims, c)];
  return q;
}

Load McwaTreeLoad(Load own, absl::Span<const Load> child_tree_loads) {
  Load t = own;
  for (Load c : child_tree_loads) t += c;
  return t;
}

McwaTreeFlows McwaNodeFlows(bool in_subcube, Load tree_load, Load tree_quota, absl::Span<const Load> child_tree_loads,
                            absl::Span<const Load> child_tree_quotas) {
  McwaTreeFlows f;
  McwaNodeFlows(in_subcube, tree_load, tree_quota, child_tree_loads, child_tree_quotas, &f);
  return f;
}

void McwaNodeFlows(bool in_subcube, Load tree_load, Load tree_quota, absl::Span<const Load> child_tree_loads,
                   absl::Span<const Load> child_tree_quotas, McwaTreeFlows* out) {
  McwaTreeFlows& f = *out;
  f.to_parent = in_subcube ? 0 : tree_load - tree_quota;
  f.from_children.clear();
  f.to_children.clear();
  for (size_t j = 0; j < child_tree_loads.size(); ++j) {
    const Load d = child_tree_loads[j] - child_tree_quotas[j];
    f.from_children.push_back(std::max<Load>(d, 0));
    f.to_children.push_back(std::max<Load>(-d, 0));
  }
}

absl::StatusOr<Plan> McwaPlanOn(const Topology& topo, absl::Span<const Load> loads, absl::Span<const double> capacities,
                                absl::Span<const BalancingSubcube> subcubes) {
  auto caps = CheckCubeInputs(topo, loads, capacities);
  if (!caps.ok()) return caps.status();
  const int size = topo.size();
  for (const BalancingSubcube& bs : subcubes)
    if (static_cast<int>(bs.level.size()) != size || static_cast<int>(bs.parent.size()) != size ||
        static_cast<int>(bs.child_begin.size()) != size + 1)
      return absl::InvalidArgumentError("balancing subcube built for another topology");

  PlanRecorder rec(std::vector<Load>(loads.begin(), loads.end()));
  std::vector<Load> tree_load(size, 0);
  std::vector<Load> child_loads, child_quotas;
  int64_t steps = 0;
  for (const BalancingSubcube& bs : subcubes) {
    const int k = bs.dim, depth = bs.tree_depth, count = 1 << k;
    const std::vector<int> dims = bs.Dims();
    // 1. Tree loads up, deepest first (lines 2-4, 19-22).
    for (auto it = bs.order.rbegin(); it != bs.order.rend(); ++it) {
      const NodeId u = *it;
      child_loads.clear();
      for (NodeId c : bs.Children(u)) child_loads.push_back(tree_load[c]);
      tree_load[u] = McwaTreeLoad(loads[u], child_loads);
      if (bs.parent[u] >= 0) rec.AddMessages(1);
    }
    // 2. CWA load exchange in the subcube on tree loads (lines 5-8).
    std::vector<CwaNodeState> states(count);
    for (int c = 0; c < count; ++c) states[c] = CwaInit(c, k, tree_load[WalkedLabel(bs.base, dims, c)]);
    for (int j = 0; j < k; ++j) {
      for (int c = 0; c < count; ++c) CwaReceiveLoad(states[c], j, states[c ^ (1 << j)].l[j]);
      rec.AddMessages(count);
    }
    // 3. Quotas (line 9) and q_t down the trees (lines 10-11, 23-26). Every
    // subcube node holds the same total; tree nodes receive it with q_t.
    const McwaQuotas quotas = McwaQuotaTable(bs, states[0].l[k], *caps);
    for (int c = 0; c < count; ++c) CwaSetQuotas(states[c], CwaQuotaVector(c, k, quotas.cube_prefix));
    rec.AddMessages(static_cast<int64_t>(bs.order.size()) - count);
    // Per-node flows for the tree phases: what goes up to the parent (by
    // position in `order`) and down to each child (aligned with child_list).
    std::vector<Load> up(bs.order.size()), down(bs.child_list.size());
    McwaTreeFlows f;
    for (size_t i = 0; i < bs.order.size(); ++i) {
      const NodeId u = bs.order[i];
      child_loads.clear();
      child_quotas.clear();
      for (NodeId c : bs.Children(u)) {
        child_loads.push_back(tree_load[c]);
        child_quotas.push_back(quotas.tree[c]);
      }
      McwaNodeFlows(bs.InSubcube(u), tree_load[u], quotas.tree[u], child_loads, child_quotas, &f);
      up[i] = f.to_parent;
      std::copy(f.to_children.begin(), f.to_children.end(), down.begin() + bs.child_begin[u]);
    }
    // 4. Excess up, deepest level first (lines 12-13, 27-29): step T - d + 1.
    for (size_t i = bs.order.size(); i-- > 0;) {
      const NodeId u = bs.order[i];
      if (up[i] > 0) rec.Move(depth - bs.level[u] + 1, u, bs.parent[u], up[i]);
    }
    // 5. CWA migration in the subcube (lines 14-15).
    CwaMigrate(rec, bs.base, dims, states, depth + 1);
    // 6. Deficits down, level 1 first (lines 16-17, 30-32).
    for (const NodeId u : bs.order)
      for (int e = bs.child_begin[u]; e < bs.child_begin[u + 1]; ++e)
        rec.Move(depth + k + bs.level[u] + 1, u, bs.child_list[e], down[e]);
    steps = std::max<int64_t>(steps, 3 * k + 4 * depth);
  }
  rec.SetSteps(steps);
  return std::move(rec).Finish();
}

absl::StatusOr<Plan> McwaPlan(const Topology& topo, absl::Span<const Load> loads, absl::Span<const double> capacities,
                              std::vector<BalancingSubcube>* chosen) {
  auto caps = CheckCubeInputs(topo, loads, capacities);
  if (!caps.ok()) return caps.status();
  auto subcubes = SelectBalancingSubcubes(topo);
  if (!subcubes.ok()) return subcubes.status();
  auto plan = McwaPlanOn(topo, loads, capacities, *subcubes);
  if (plan.ok() && chosen != nullptr) *chosen = std::move(*subcubes);
  return plan;
}

}  // namespace hyperfed::balance
