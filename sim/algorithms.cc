#include "sim/algorithms.h"

#include "absl/strings/str_join.h"
#include "daemon/balance/dem.h"
#include "daemon/balance/unit_flow.h"

namespace hyperfed::sim {
namespace {

using balance::Plan;

AlgorithmFn Wrap(std::function<absl::StatusOr<Plan>(const AlgorithmInput&)> f) {
  return [f](const AlgorithmInput& in) -> absl::StatusOr<AlgorithmResult> {
    absl::StatusOr<Plan> p = f(in);
    if (!p.ok()) return p.status();
    return AlgorithmResult{*std::move(p), std::nullopt};
  };
}

std::vector<AlgorithmInfo>* Build() {
  auto* v = new std::vector<AlgorithmInfo>;
  v->push_back({"dem", "dimension exchange, heavier keeps the ceiling (seed 003 Fig. 1)", true, false, true,
                Wrap([](const AlgorithmInput& in) {
                  return balance::DemPlan(in.topology, in.loads, balance::DemVariant::kHeavierKeepsCeiling,
                                          in.keep_transfers);
                })});
  v->push_back({"dem-fixed", "dimension exchange, bit-0 side keeps the ceiling (matches seed 003 Table 1)", true,
                false, true, Wrap([](const AlgorithmInput& in) {
                  return balance::DemPlan(in.topology, in.loads, balance::DemVariant::kBitZeroKeepsCeiling,
                                          in.keep_transfers);
                })});
  v->push_back({"improved-dem", "Chau and Fu's improved DEM, capacity-weighted when capacities differ (seed 003)",
                true, true, true, Wrap([](const AlgorithmInput& in) {
                  return balance::ImprovedDemPlan(in.topology, in.loads, in.capacities, in.keep_transfers);
                })});
  v->push_back({"unit-flow", "integer balancing flow from unit flows on a spanning tree, any connected graph (seed 001)",
                false, true, true, Wrap([](const AlgorithmInput& in) {
                  return balance::UnitFlowPlan(in.topology, in.loads, in.capacities);
                })});
  return v;
}

}  // namespace

const std::vector<AlgorithmInfo>& Algorithms() {
  static const std::vector<AlgorithmInfo>* algorithms = Build();
  return *algorithms;
}

const AlgorithmInfo* FindAlgorithm(const std::string& name) {
  for (const AlgorithmInfo& a : Algorithms())
    if (a.name == name) return &a;
  return nullptr;
}

std::string AlgorithmNames() {
  std::vector<std::string> names;
  for (const AlgorithmInfo& a : Algorithms()) names.push_back(a.name);
  return absl::StrJoin(names, ", ");
}

}  // namespace hyperfed::sim
