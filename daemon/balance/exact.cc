#include "daemon/balance/exact.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
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
    if (t[i].load < 0) return absl::InvalidArgumentError(absl::StrCat(whose, " rows: negative load at label ", t[i].label));
    if (!(t[i].capacity > 0))
      return absl::InvalidArgumentError(absl::StrCat(whose, " rows: capacity not > 0 at label ", t[i].label));
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
      for (size_t d : deficit) pairs.emplace_back(cost(table[s].label, table[d].label), table[s].label, table[d].label, s, d);
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

absl::StatusOr<Plan> ExactPlan(const Topology& topo, absl::Span<const Load> loads, absl::Span<const double> capacities,
                               const ExactOptions& opts) {
  if (topo.kind() != TopologyKind::kHypercube)
    return absl::InvalidArgumentError(absl::StrCat("exact runs on a hypercube, not ", topo.Name()));
  const int n = topo.dimensions();
  const NodeId size = topo.size();
  if (loads.size() != static_cast<size_t>(size) || (!capacities.empty() && capacities.size() != loads.size()))
    return absl::InvalidArgumentError("one load and one capacity per node");
  if (!topo.faults().empty())
    return absl::InvalidArgumentError("exact on a cube with faults runs over the MCWA topology: use ExactFaultyPlan");

  // Gather: after dimension k all nodes of a (k+1)-subcube hold the same
  // table, so the simulator keeps one table per subcube and merges blocks.
  std::vector<LoadTable> tables(size);
  for (NodeId u = 0; u < size; ++u) {
    const double p = capacities.empty() ? 1.0 : capacities[u];
    if (loads[u] < 0 || !(p > 0)) return absl::InvalidArgumentError("loads must be >= 0 and capacities > 0");
    tables[u] = {LoadRow{u, loads[u], p}};
  }
  int64_t messages = 0;
  for (int k = 0; k < n; ++k) {
    const NodeId width = NodeId{1} << k;  // current tables cover `width` labels
    std::vector<LoadTable> next(size >> (k + 1));
    for (NodeId b = 0; b < static_cast<NodeId>(next.size()); ++b) {
      auto merged = MergeLoadTables(tables[2 * b], tables[2 * b + 1]);
      if (!merged.ok()) return merged.status();
      next[b] = *std::move(merged);
    }
    messages += 2 * static_cast<int64_t>(size / 2);  // every pair, both ways
    (void)width;
    tables = std::move(next);
  }
  const LoadTable& all = tables.front();

  // Every node holds `all`; the plan is the same at every node, so the
  // simulator derives it once and lets each node pick its own transfers.
  DirectPlan direct = PlanDirectTransfers(all, opts.cost);
  PlanRecorder rec(std::vector<Load>(loads.begin(), loads.end()));
  rec.AddMessages(messages);
  for (NodeId u = 0; u < size; ++u)
    for (const Transfer& t : OutgoingTransfers(direct, u)) rec.Move(t.step, t.from, t.to, t.count, t.hops);
  rec.SetSteps(n + 1);
  return std::move(rec).Finish();
}

}  // namespace hyperfed::balance
