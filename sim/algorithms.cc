#include "sim/algorithms.h"

#include "absl/strings/str_join.h"
#include "daemon/balance/cwa.h"
#include "daemon/balance/dde.h"
#include "daemon/balance/dem.h"
#include "daemon/balance/diffusion.h"
#include "daemon/balance/exact.h"
#include "daemon/balance/gde.h"
#include "daemon/balance/mcwa.h"
#include "daemon/balance/rid.h"
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
  v->push_back({"dem-fixed", "dimension exchange, bit-0 side keeps the ceiling (matches seed 003 Table 1)", true, false,
                true, Wrap([](const AlgorithmInput& in) {
                  return balance::DemPlan(in.topology, in.loads, balance::DemVariant::kBitZeroKeepsCeiling,
                                          in.keep_transfers);
                })});
  v->push_back({"improved-dem", "Chau and Fu's improved DEM, capacity-weighted when capacities differ (seed 003)", true,
                true, true, Wrap([](const AlgorithmInput& in) {
                  return balance::ImprovedDemPlan(in.topology, in.loads, in.capacities, in.keep_transfers);
                })});
  v->push_back({"cwa", "cube walking algorithm, capacity-weighted quotas, full cube (seed 004 Algorithm 2)", true, true,
                false,
                Wrap([](const AlgorithmInput& in) { return balance::CwaPlan(in.topology, in.loads, in.capacities); })});
  v->push_back({"mcwa", "modified cube walking algorithm around faults, capacity-weighted (seed 004 Algorithm 3)", true,
                true, true, [](const AlgorithmInput& in) -> absl::StatusOr<AlgorithmResult> {
                  std::vector<balance::BalancingSubcube> chosen;
                  auto plan = balance::McwaPlan(in.topology, in.loads, in.capacities, &chosen);
                  if (!plan.ok()) return plan.status();
                  AlgorithmResult r{*std::move(plan), std::nullopt};
                  if (!chosen.empty())
                    r.subcube = SubcubeSummary{chosen[0].dim, chosen[0].base, chosen[0].mask, chosen[0].tree_depth};
                  return r;
                }});
  v->push_back({"rid", "receiver initiated diffusion: nodes below the mean load ask their neighbours (seed 004 3.1)",
                true, true, true, Wrap([](const AlgorithmInput& in) {
                  balance::RidOptions o;
                  // The prespecified threshold: the federation's mean load.
                  const auto& alive = in.topology.alive_mask();
                  const int live = in.topology.alive_count();
                  o.threshold = live ? (balance::TotalLoad(in.loads, alive) + live - 1) / live : 0;
                  return balance::RidPlan(in.topology, in.loads, in.capacities, o);
                })});
  v->push_back(
      {"exact", "hyperfed's default round: gathered table, exact weighted quotas, each job moved once, near first",
       true, true, true,
       Wrap([](const AlgorithmInput& in) { return balance::ExactPlan(in.topology, in.loads, in.capacities); })});
  for (bool sbr : {false, true}) {
    v->push_back({sbr ? "dde-sbr" : "dde",
                  sbr ? "direct dimension exchange, send-before-receive task exchange (seed 000 Fig. 6)"
                      : "direct dimension exchange on chain, ring, torus, mesh; receive-before-send (seed 000)",
                  false, false, false, Wrap([sbr](const AlgorithmInput& in) {
                    balance::DdeOptions o;
                    o.schedule = sbr ? balance::ExchangeSchedule::kSendBeforeReceive
                                     : balance::ExchangeSchedule::kReceiveBeforeSend;
                    return balance::DdePlan(in.topology, in.loads, o);
                  })});
  }
  struct Iter {
    const char* name;
    const char* summary;
    bool gde;
    balance::ExchangeParameter parameter;
  };
  for (const Iter& it :
       {Iter{"ade", "generalized dimension exchange, lambda = 1/2 (seed 002)", true,
             balance::ExchangeParameter::kAverage},
        Iter{"ode", "generalized dimension exchange, optimal lambda (seed 002)", true,
             balance::ExchangeParameter::kOptimal},
        Iter{"adf", "diffusion, alpha = 1/(1+d) (seed 002)", false, balance::ExchangeParameter::kAverage},
        Iter{"odf", "diffusion, optimal alpha (seed 002)", false, balance::ExchangeParameter::kOptimal}}) {
    v->push_back({it.name, it.summary, false, false, true, Wrap([it](const AlgorithmInput& in) {
                    balance::IterativeOptions o;
                    o.parameter = it.parameter;
                    // Listing every iteration's transfers is only worth it for
                    // a single detailed run; otherwise net them per 2^30 steps.
                    o.merge_block = in.keep_transfers ? 1 : (int64_t{1} << 30);
                    return it.gde ? balance::GdePlan(in.topology, in.loads, o)
                                  : balance::DiffusionPlan(in.topology, in.loads, o);
                  })});
  }
  v->push_back(
      {"unit-flow", "integer balancing flow from unit flows on a spanning tree, any connected graph (seed 001)", false,
       true, true,
       Wrap([](const AlgorithmInput& in) { return balance::UnitFlowPlan(in.topology, in.loads, in.capacities); })});
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
