#include "daemon/balance/modes.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/balance/dem.h"
#include "daemon/balance/mcwa.h"
#include "daemon/balance/quota.h"

namespace hyperfed::balance {
namespace {

std::string Labels(const std::vector<NodeId>& v) { return absl::StrJoin(v, ","); }

std::string FaultWords(const RoundShape& s) {
  return absl::StrCat("positions ", Labels(s.faults), " are failed or empty");
}

// The deepest MCWA tree of the shape (0 without faults, -1 if it has none).
int TreeDepth(const RoundShape& s) {
  if (s.faults.empty()) return 0;
  auto topo = Topology::Hypercube(s.dimension, s.faults);
  if (!topo.ok()) return -1;
  auto subcubes = SelectBalancingSubcubes(*topo);
  if (!subcubes.ok() || subcubes->empty()) return -1;
  int depth = 0;
  for (const BalancingSubcube& bs : *subcubes) depth = std::max(depth, bs.tree_depth);
  return depth;
}

std::string CwaSteps(const RoundShape& s) {
  const int n = s.dimension;
  if (s.faults.empty()) return absl::StrCat("the papers' CWA: 3 log N = ", 3 * n);
  const int t = TreeDepth(s);
  if (t < 0) return "";
  return absl::StrCat("nam's MCWA: 3 log N + T = ", 3 * n + t);
}

// A capacity whose weight is 0 counts as none (quota.h, CapacityWeight).
bool AnyCapacity(const LoadTable& t) {
  for (const LoadRow& r : t)
    if (CapacityWeight(r.capacity) > 0) return true;
  return false;
}

// exact: docs/algorithms.md "exact"; the matching is PlanDirectTransfers.
class ExactMode : public RoundMode {
 public:
  std::string_view name() const override { return "exact"; }
  bool gathers() const override { return true; }
  std::string Describe(const RoundShape& s) const override {
    if (s.faults.empty()) return absl::StrCat("exact on the full ", s.dimension, "-cube");
    return absl::StrCat("exact over the MCWA topology: ", FaultWords(s));
  }
  std::string PaperSteps(const RoundShape& s) const override { return CwaSteps(s); }
  absl::StatusOr<Plan> PlanComponent(const Topology& topo, const LoadTable& component) const override {
    std::vector<Load> w(topo.size(), 0);
    for (const LoadRow& r : component) w[r.label] = r.load;
    PlanRecorder plan(w);
    if (AnyCapacity(component)) {
      for (const Transfer& t : PlanDirectTransfers(component).transfers)
        plan.Move(t.step, t.from, t.to, t.count, t.hops);
    }
    // Full cube: n exchanges + 1 migration; with faults T up + k + T down + 1.
    int64_t steps = topo.dimensions() + 1;
    if (!topo.alive_mask().empty() && !component.empty()) {
      auto subcubes = SelectBalancingSubcubes(topo);
      if (!subcubes.ok()) return subcubes.status();
      for (const BalancingSubcube& bs : *subcubes)
        if (bs.Member(component.front().label)) steps = 2 * bs.tree_depth + bs.dim + 1;
    }
    plan.SetSteps(steps);
    return std::move(plan).Finish();
  }
};

// mcwa: nam Algorithm 3 with capacity-weighted quotas (docs/algorithms.md).
class McwaMode : public RoundMode {
 public:
  std::string_view name() const override { return "mcwa"; }
  bool gathers() const override { return true; }
  std::string Describe(const RoundShape& s) const override {
    if (s.faults.empty()) return absl::StrCat("mcwa on the full ", s.dimension, "-cube, where it is CWA");
    return absl::StrCat("mcwa (nam Algorithm 3) over the balancing subcube and its trees: ", FaultWords(s));
  }
  std::string PaperSteps(const RoundShape& s) const override { return CwaSteps(s); }
  absl::StatusOr<Plan> PlanComponent(const Topology& topo, const LoadTable& component) const override {
    // The library wants capacities > 0: a drained site gets one far below a
    // job's share, so its quota is 0. Positions outside the component keep
    // load 0 and capacity 1: they form components of their own, which the
    // plan balances apart from this one and which have nothing to move.
    constexpr double kDrainedCapacity = 1e-9;
    std::vector<Load> w(topo.size(), 0);
    std::vector<double> p(topo.size(), 1.0);
    for (const LoadRow& r : component) {
      w[r.label] = r.load;
      p[r.label] = r.capacity > 0 ? r.capacity : kDrainedCapacity;
    }
    if (!AnyCapacity(component)) {
      PlanRecorder none(w);
      return std::move(none).Finish();
    }
    return McwaPlan(topo, w, p);
  }
};

// improved-dem: chau-fu Figs. 2 and 5, weighted, as printed.
class ImprovedDemMode : public RoundMode {
 public:
  std::string_view name() const override { return "improved-dem"; }
  bool gathers() const override { return false; }
  std::string Describe(const RoundShape& s) const override {
    if (s.faults.empty()) return absl::StrCat("improved-dem on the full ", s.dimension, "-cube");
    return absl::StrCat("improved-dem, skipping dimensions whose partner is missing: ", FaultWords(s));
  }
  std::string PaperSteps(const RoundShape& s) const override {
    return absl::StrCat("chau-fu's DEM: 3 log N = ", 3 * s.dimension);
  }
  Load PairShare(NodeId u, int k, int n, Load w_u, Load w_v, double p_u, double p_v) const override {
    if (!(p_u + p_v > 0)) return w_u;  // both drained: the pair keeps its loads
    return WeightedImprovedDemShare(u, k, n, w_u, w_v, p_u, p_v);
  }
};

const ExactMode kExact;
const ImprovedDemMode kImprovedDem;
const McwaMode kMcwa;
const RoundMode* const kModes[] = {&kExact, &kImprovedDem, &kMcwa};

}  // namespace

absl::StatusOr<Plan> RoundMode::PlanComponent(const Topology&, const LoadTable&) const {
  return absl::FailedPreconditionError(absl::StrCat("round mode ", std::string(name()), " does not gather tables"));
}

Load RoundMode::PairShare(NodeId, int, int, Load w_u, Load, double, double) const { return w_u; }

const RoundMode* FindRoundMode(std::string_view name) {
  for (const RoundMode* m : kModes)
    if (m->name() == name) return m;
  return nullptr;
}

std::vector<std::string> RoundModeNames() {
  std::vector<std::string> out;
  for (const RoundMode* m : kModes) out.emplace_back(m->name());
  return out;
}

absl::Status CheckRoundMode(std::string_view name) {
  if (FindRoundMode(name)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("unknown round mode \"", std::string(name), "\"; known: ", absl::StrJoin(RoundModeNames(), ", ")));
}

int RoundDepth(const RoundShape& shape) {
  int depth = shape.dimension;
  if (shape.faults.empty()) return depth;
  auto topo = Topology::Hypercube(shape.dimension, shape.faults);
  if (!topo.ok()) return depth;
  auto subcubes = SelectBalancingSubcubes(*topo);
  if (!subcubes.ok()) return depth;
  for (const BalancingSubcube& bs : *subcubes) depth = std::max(depth, bs.tree_depth + bs.dim);
  return depth;
}

absl::StatusOr<std::vector<std::vector<NodeId>>> RoundComponents(const Topology& topo) {
  std::vector<std::vector<NodeId>> out;
  if (topo.alive_mask().empty()) {
    out.emplace_back();
    for (NodeId u = 0; u < topo.size(); ++u) out.back().push_back(u);
    return out;
  }
  auto subcubes = SelectBalancingSubcubes(topo);
  if (!subcubes.ok()) return subcubes.status();
  for (const BalancingSubcube& bs : *subcubes) {
    std::vector<NodeId> members(bs.order.begin(), bs.order.end());
    std::sort(members.begin(), members.end());
    out.push_back(std::move(members));
  }
  return out;
}

absl::StatusOr<Plan> PlanRound(const RoundMode& mode, const RoundShape& shape, const LoadTable& live) {
  auto topo = Topology::Hypercube(shape.dimension, shape.faults);
  if (!topo.ok()) return topo.status();
  const NodeId size = topo->size();
  std::vector<Load> w(size, 0);
  std::vector<double> p(size, 0);
  for (const LoadRow& r : live) {
    if (r.label < 0 || r.label >= size)
      return absl::InvalidArgumentError(absl::StrCat("row label ", r.label, " outside the cube"));
    if (!topo->alive(r.label))
      return absl::InvalidArgumentError(absl::StrCat("a row for label ", r.label, ", which is in the fault set"));
    w[r.label] = r.load;
    p[r.label] = r.capacity;
  }
  PlanRecorder rec(w);
  if (!mode.gathers()) {
    const int n = shape.dimension;
    for (int k = 0; k < n; ++k) {
      const NodeId bit = NodeId{1} << k;
      for (NodeId u = 0; u < size; ++u) {
        if (u & bit) continue;
        const NodeId v = u | bit;
        if (!topo->alive(u) || !topo->alive(v)) continue;
        const Load share = mode.PairShare(u, k, n, rec.load(u), rec.load(v), p[u], p[v]);
        const Load send = rec.load(u) - share;  // > 0: u sends, < 0: v sends
        if (send > 0) rec.Move(k + 1, u, v, send);
        if (send < 0) rec.Move(k + 1, v, u, -send);
      }
    }
    rec.SetSteps(3 * static_cast<int64_t>(n));
    return std::move(rec).Finish();
  }
  auto components = RoundComponents(*topo);
  if (!components.ok()) return components.status();
  int64_t steps = 0;
  for (const std::vector<NodeId>& members : *components) {
    LoadTable table;
    for (NodeId u : members) table.push_back({u, w[u], p[u]});
    auto plan = mode.PlanComponent(*topo, table);
    if (!plan.ok()) return plan.status();
    for (const Transfer& t : plan->transfers) rec.Move(t.step, t.from, t.to, t.count, t.hops);
    steps = std::max(steps, plan->metrics.steps);
  }
  rec.SetSteps(steps);
  return std::move(rec).Finish();
}

}  // namespace hyperfed::balance
