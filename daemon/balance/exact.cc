#include "daemon/balance/exact.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "daemon/balance/mcwa.h"
#include "daemon/balance/quota.h"

namespace hyperfed::balance {
namespace {

// A site's remaining surplus (> 0) or deficit (< 0), by table index.
struct Imbalance {
  size_t index;
  Load amount;
};

// Matches one-signed lists of opposite sign in order, appending transfers;
// returns what is left (one-signed).
std::vector<Imbalance> MatchInOrder(std::vector<Imbalance> a, std::vector<Imbalance> b, const LoadTable& table,
                                    std::vector<Transfer>* out) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  if ((a.front().amount > 0) == (b.front().amount > 0)) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const Load m = std::min(std::abs(a[i].amount), std::abs(b[j].amount));
    const Imbalance& src = a[i].amount > 0 ? a[i] : b[j];
    const Imbalance& dst = a[i].amount > 0 ? b[j] : a[i];
    const NodeId from = table[src.index].label, to = table[dst.index].label;
    out->push_back({1, from, to, m, __builtin_popcount(static_cast<unsigned>(from ^ to))});
    a[i].amount += a[i].amount > 0 ? -m : m;
    b[j].amount += b[j].amount > 0 ? -m : m;
    if (a[i].amount == 0) ++i;
    if (b[j].amount == 0) ++j;
  }
  std::vector<Imbalance> rest;
  for (; i < a.size(); ++i) rest.push_back(a[i]);
  for (; j < b.size(); ++j) rest.push_back(b[j]);
  return rest;
}

// Rows [lo, hi) share the label bits above `bit`; match inside the halves
// first, then across them.
std::vector<Imbalance> MatchSubcube(const LoadTable& table, const std::vector<Load>& excess, size_t lo, size_t hi,
                                    int bit, std::vector<Transfer>* out) {
  if (hi - lo == 1 || bit < 0) {
    std::vector<Imbalance> v;
    for (size_t i = lo; i < hi; ++i)
      if (excess[i] != 0) v.push_back({i, excess[i]});
    return v;
  }
  size_t mid = lo;
  while (mid < hi && !((table[mid].label >> bit) & 1)) ++mid;
  std::vector<Imbalance> a, b;
  if (mid > lo) a = MatchSubcube(table, excess, lo, mid, bit - 1, out);
  if (hi > mid) b = MatchSubcube(table, excess, mid, hi, bit - 1, out);
  return MatchInOrder(std::move(a), std::move(b), table, out);
}

absl::Status CheckRows(const LoadTable& t, const char* whose) {
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].label < 0) return absl::InvalidArgumentError(absl::StrCat(whose, " rows: negative label"));
    if (i > 0 && t[i].label <= t[i - 1].label)
      return absl::InvalidArgumentError(absl::StrCat(whose, " rows are not sorted by label without repeats"));
    if (t[i].load < 0)
      return absl::InvalidArgumentError(absl::StrCat(whose, " rows: negative load at label ", t[i].label));
    if (!(t[i].capacity >= 0))
      return absl::InvalidArgumentError(absl::StrCat(whose, " rows: negative capacity at label ", t[i].label));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadTable> MergeLoadTables(const LoadTable& mine, const LoadTable& theirs) {
  if (auto st = CheckRows(theirs, "partner"); !st.ok()) return st;
  LoadTable out;
  out.reserve(mine.size() + theirs.size());
  size_t i = 0, j = 0;
  while (i < mine.size() || j < theirs.size()) {
    if (j == theirs.size() || (i < mine.size() && mine[i].label < theirs[j].label)) {
      out.push_back(mine[i++]);
    } else if (i == mine.size() || theirs[j].label < mine[i].label) {
      out.push_back(theirs[j++]);
    } else {
      if (!(mine[i] == theirs[j]))
        return absl::InvalidArgumentError(absl::StrCat("partner reports label ", theirs[j].label, " differently"));
      out.push_back(mine[i]);
      ++i, ++j;
    }
  }
  return out;
}

DirectPlan PlanDirectTransfers(const LoadTable& table, const PairCost& cost) {
  DirectPlan plan;
  std::vector<double> caps(table.size());
  std::vector<Load> loads(table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    caps[i] = table[i].capacity;
    loads[i] = table[i].load;
  }
  bool any_weight = false;
  for (double c : caps) any_weight = any_weight || CapacityWeight(c) > 0;
  if (!any_weight) {
    plan.quotas = loads;  // every site drained: nothing to balance
    return plan;
  }
  plan.quotas = Apportion(TotalLoad(loads), caps);
  std::vector<Load> excess(table.size());
  for (size_t i = 0; i < table.size(); ++i) excess[i] = loads[i] - plan.quotas[i];

  if (!cost) {
    int top = 0;
    for (const LoadRow& r : table) top = std::max(top, 32 - __builtin_clz(static_cast<unsigned>(r.label) | 1u));
    if (!table.empty()) MatchSubcube(table, excess, 0, table.size(), top - 1, &plan.transfers);
  } else {
    std::vector<size_t> surplus, deficit;
    for (size_t i = 0; i < table.size(); ++i) {
      if (excess[i] > 0) surplus.push_back(i);
      if (excess[i] < 0) deficit.push_back(i);
    }
    std::vector<std::tuple<int64_t, NodeId, NodeId, size_t, size_t>> pairs;
    pairs.reserve(surplus.size() * deficit.size());
    for (size_t s : surplus)
      for (size_t d : deficit)
        pairs.emplace_back(cost(table[s].label, table[d].label), table[s].label, table[d].label, s, d);
    std::sort(pairs.begin(), pairs.end());
    for (const auto& [c, from, to, s, d] : pairs) {
      const Load m = std::min(excess[s], -excess[d]);
      if (m <= 0) continue;
      excess[s] -= m;
      excess[d] += m;
      plan.transfers.push_back({1, from, to, m, __builtin_popcount(static_cast<unsigned>(from ^ to))});
    }
  }
  std::sort(plan.transfers.begin(), plan.transfers.end(),
            [](const Transfer& a, const Transfer& b) { return std::tie(a.from, a.to) < std::tie(b.from, b.to); });
  return plan;
}

std::vector<Transfer> OutgoingTransfers(const DirectPlan& plan, NodeId self) {
  auto lo = std::lower_bound(plan.transfers.begin(), plan.transfers.end(), self,
                             [](const Transfer& t, NodeId s) { return t.from < s; });
  std::vector<Transfer> out;
  for (auto it = lo; it != plan.transfers.end() && it->from == self; ++it) out.push_back(*it);
  return out;
}

namespace {

struct Gathered {
  LoadTable table;       // every row of the component
  int64_t messages = 0;  // gather messages (rows up, exchanges, rows down)
  int64_t steps = 0;     // sequential gather steps
};

LoadRow RowOf(NodeId u, absl::Span<const Load> loads, absl::Span<const double> capacities) {
  return LoadRow{u, loads[u], capacities.empty() ? 1.0 : capacities[u]};
}

// Full cube: the butterfly all-gather. After dimension k all nodes of a
// (k+1)-subcube hold the same table, so the simulator keeps one table per
// subcube and merges blocks with the per-node step.
absl::StatusOr<Gathered> GatherFullCube(const Topology& topo, absl::Span<const Load> loads,
                                        absl::Span<const double> capacities) {
  const NodeId size = topo.size();
  std::vector<LoadTable> tables(size);
  for (NodeId u = 0; u < size; ++u) tables[u] = {RowOf(u, loads, capacities)};
  Gathered g;
  for (int k = 0; k < topo.dimensions(); ++k) {
    std::vector<LoadTable> next(size >> (k + 1));
    for (size_t b = 0; b < next.size(); ++b) {
      auto merged = MergeLoadTables(tables[2 * b], tables[2 * b + 1]);
      if (!merged.ok()) return merged.status();
      next[b] = *std::move(merged);
    }
    g.messages += static_cast<int64_t>(size);  // every pair, both ways
    tables = std::move(next);
  }
  g.table = std::move(tables.front());
  g.steps = topo.dimensions();
  return g;
}

// Faulty cube: rows go up the MCWA trees, the balancing subcube all-gathers
// along its free dimensions, and the table goes back down the trees.
absl::StatusOr<Gathered> GatherOverSubcube(const BalancingSubcube& bs, absl::Span<const Load> loads,
                                           absl::Span<const double> capacities) {
  Gathered g;
  std::vector<LoadTable> subtree(bs.level.size());
  int64_t tree_edges = 0;
  for (auto it = bs.order.rbegin(); it != bs.order.rend(); ++it) {  // deepest first
    const NodeId u = *it;
    LoadTable t{RowOf(u, loads, capacities)};
    for (NodeId c : bs.Children(u)) {
      auto merged = MergeLoadTables(t, subtree[c]);
      if (!merged.ok()) return merged.status();
      t = *std::move(merged);
      LoadTable().swap(subtree[c]);
      ++tree_edges;
    }
    subtree[u] = std::move(t);
  }
  // Walked dimension j: subcube nodes whose walked index agrees above bit j
  // hold the same table afterwards; keep one per group.
  const int k = bs.dim;
  std::vector<LoadTable> groups(size_t{1} << k);
  for (int i = 0; i < (1 << k); ++i) groups[i] = std::move(subtree[bs.Label(i)]);
  for (int j = 0; j < k; ++j) {
    std::vector<LoadTable> next(groups.size() / 2);
    for (size_t b = 0; b < next.size(); ++b) {
      auto merged = MergeLoadTables(groups[2 * b], groups[2 * b + 1]);
      if (!merged.ok()) return merged.status();
      next[b] = *std::move(merged);
    }
    groups = std::move(next);
  }
  g.table = std::move(groups.front());
  g.messages = 2 * tree_edges + static_cast<int64_t>(k) * (int64_t{1} << k);
  g.steps = 2 * static_cast<int64_t>(bs.tree_depth) + k;
  return g;
}

}  // namespace

absl::StatusOr<Plan> ExactPlan(const Topology& topo, absl::Span<const Load> loads, absl::Span<const double> capacities,
                               const ExactOptions& opts) {
  if (topo.kind() != TopologyKind::kHypercube)
    return absl::InvalidArgumentError(absl::StrCat("exact runs on a hypercube, not ", topo.Name()));
  const NodeId size = topo.size();
  if (loads.size() != static_cast<size_t>(size) || (!capacities.empty() && capacities.size() != loads.size()))
    return absl::InvalidArgumentError("one load and one capacity per node");
  for (NodeId u = 0; u < size; ++u)
    if (loads[u] < 0 || (!capacities.empty() && !(capacities[u] > 0)))
      return absl::InvalidArgumentError("loads must be >= 0 and capacities > 0");

  std::vector<Gathered> components;
  std::vector<BalancingSubcube> subcubes;
  if (topo.faults().empty()) {
    auto g = GatherFullCube(topo, loads, capacities);
    if (!g.ok()) return g.status();
    components.push_back(*std::move(g));
  } else {
    auto chosen = SelectBalancingSubcubes(topo);
    if (!chosen.ok()) return chosen.status();
    for (const BalancingSubcube& bs : *chosen) {
      auto g = GatherOverSubcube(bs, loads, capacities);
      if (!g.ok()) return g.status();
      components.push_back(*std::move(g));
    }
  }

  // Every node of a component holds the same table, so every node derives
  // the same plan: the simulator derives it once per component and lets each
  // node pick its own transfers.
  PlanRecorder rec(std::vector<Load>(loads.begin(), loads.end()));
  int64_t steps = 0;
  for (const Gathered& g : components) {
    rec.AddMessages(g.messages);
    steps = std::max(steps, g.steps + 1);
    DirectPlan direct = PlanDirectTransfers(g.table, opts.cost);
    for (const LoadRow& row : g.table)
      for (const Transfer& t : OutgoingTransfers(direct, row.label)) rec.Move(t.step, t.from, t.to, t.count, t.hops);
  }
  rec.SetSteps(steps);
  return std::move(rec).Finish();
}

}  // namespace hyperfed::balance
