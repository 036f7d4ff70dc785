#include "sim/runner.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/balance/quota.h"
#include "sim/spec.h"

namespace hyperfed::sim {
namespace {

struct Acc {
  double sum = 0, max = 0;
  int64_t n = 0;
  void Add(double v) {
    sum += v;
    max = n == 0 ? v : std::max(max, v);
    ++n;
  }
  Stat Get() const { return {n ? sum / n : 0, max}; }
};

std::string Num(double v) { return absl::StrFormat("%.6g", v); }

}  // namespace

absl::StatusOr<RunSummary> RunTrials(const RunConfig& config, const std::function<void(int64_t, int64_t)>& progress) {
  const AlgorithmInfo* algo = FindAlgorithm(config.algorithm);
  if (algo == nullptr)
    return absl::InvalidArgumentError(
        absl::StrCat("bad --algorithm '", config.algorithm, "': expected one of ", AlgorithmNames()));
  auto topo = ParseTopology(config.topology);
  if (!topo.ok()) return topo.status();
  auto loads_spec = ParseLoads(config.loads);
  if (!loads_spec.ok()) return loads_spec.status();
  auto caps_spec = ParseCapacities(config.capacities);
  if (!caps_spec.ok()) return caps_spec.status();
  auto fault_spec = ParseFaults(config.faults);
  if (!fault_spec.ok()) return fault_spec.status();
  if (config.trials < 1)
    return absl::InvalidArgumentError(absl::StrCat("bad --trials '", config.trials, "': must be >= 1"));
  if (algo->hypercube_only && topo->kind() != balance::TopologyKind::kHypercube)
    return absl::InvalidArgumentError(
        absl::StrCat("bad --topology '", config.topology, "': ", algo->name, " runs on a hypercube"));
  const bool has_faults =
      fault_spec->kind != FaultSpec::kNone && !(fault_spec->kind == FaultSpec::kRandom && fault_spec->count == 0);
  if (has_faults && topo->kind() != balance::TopologyKind::kHypercube)
    return absl::InvalidArgumentError("bad --faults: faults apply to a hypercube topology only");
  if (has_faults && !algo->allows_faults)
    return absl::InvalidArgumentError(
        absl::StrCat("bad --faults: ", algo->name, " needs a full hypercube (use mcwa for faulty cubes)"));

  const int n = topo->size();
  const bool detail = config.trials == 1 && loads_spec->kind == LoadSpec::kList;
  std::mt19937_64 rng(config.seed);
  RunSummary out;
  out.config = config;
  out.topology_name = topo->Name();
  Acc diff, share, moved, hops, msgs, steps, minimum;
  for (int64_t t = 0; t < config.trials; ++t) {
    balance::Topology trial_topo = *topo;
    std::vector<balance::NodeId> faults;
    if (has_faults) {
      auto f = DrawFaults(*fault_spec, n, rng);
      if (!f.ok()) return f.status();
      faults = *f;
      auto ft = balance::Topology::Hypercube(topo->dimensions(), faults);
      if (!ft.ok()) return absl::InvalidArgumentError(absl::StrCat("bad --faults: ", ft.status().message()));
      trial_topo = *std::move(ft);
    }
    auto loads = DrawLoads(*loads_spec, n, rng);
    if (!loads.ok()) return loads.status();
    auto caps = DrawCapacities(*caps_spec, n, rng);
    if (!caps.ok()) return caps.status();
    // A failed or empty position holds no load in the simulator.
    for (balance::NodeId f : faults) (*loads)[f] = 0;

    AlgorithmInput in{trial_topo, *loads, *caps, detail};
    auto r = algo->run(in);
    if (!r.ok()) return r.status();
    const balance::Plan& plan = r->plan;
    const auto& alive = trial_topo.alive_mask();
    const int64_t d = balance::MaxDiff(plan.final_loads, alive);
    diff.Add(static_cast<double>(d));
    out.max_diff_histogram[d]++;
    share.Add(balance::MaxShareError(plan.final_loads, *caps, alive));
    moved.Add(static_cast<double>(plan.metrics.tasks_moved));
    hops.Add(static_cast<double>(plan.metrics.task_hops));
    msgs.Add(static_cast<double>(plan.metrics.messages));
    steps.Add(static_cast<double>(plan.metrics.steps));
    auto quotas = balance::Apportion(balance::TotalLoad(*loads, alive), *caps, alive);
    minimum.Add(static_cast<double>(balance::MinimumMoves(*loads, quotas)));
    if (detail) {
      out.initial_loads = plan.initial_loads;
      out.final_loads = plan.final_loads;
      out.transfers = plan.transfers;
      out.subcube = r->subcube;
    }
    if (progress && ((t + 1) % 256 == 0 || t + 1 == config.trials)) progress(t + 1, config.trials);
  }
  out.max_diff = diff.Get();
  out.max_share_error = share.Get();
  out.tasks_moved = moved.Get();
  out.task_hops = hops.Get();
  out.messages = msgs.Get();
  out.steps = steps.Get();
  out.minimum_moves = minimum.Get();
  return out;
}

std::string SummaryJson(const RunSummary& s) {
  std::vector<std::string> hist;
  for (auto [k, v] : s.max_diff_histogram) hist.push_back(absl::StrCat("\"", k, "\": ", v));
  std::string j = absl::StrCat(
      "{\"algorithm\": \"", s.config.algorithm, "\", \"topology\": \"", s.topology_name,
      "\", \"trials\": ", s.config.trials, ", \"seed\": ", s.config.seed,
      ", \"max_diff\": {\"mean\": ", Num(s.max_diff.mean), ", \"max\": ", Num(s.max_diff.max), ", \"histogram\": {",
      absl::StrJoin(hist, ", "), "}}, \"max_share_error\": {\"mean\": ", Num(s.max_share_error.mean),
      ", \"max\": ", Num(s.max_share_error.max), "}, \"tasks_moved\": {\"mean\": ", Num(s.tasks_moved.mean),
      "}, \"minimum_moves\": {\"mean\": ", Num(s.minimum_moves.mean),
      "}, \"task_hops\": {\"mean\": ", Num(s.task_hops.mean), "}, \"messages\": {\"mean\": ", Num(s.messages.mean),
      "}, \"steps\": {\"mean\": ", Num(s.steps.mean), "}");
  if (s.initial_loads) absl::StrAppend(&j, ", \"initial_loads\": [", absl::StrJoin(*s.initial_loads, ", "), "]");
  if (s.final_loads) absl::StrAppend(&j, ", \"final_loads\": [", absl::StrJoin(*s.final_loads, ", "), "]");
  if (s.transfers) {
    std::vector<std::string> ts;
    for (const auto& t : *s.transfers)
      ts.push_back(absl::StrCat("{\"step\": ", t.step, ", \"from\": ", t.from, ", \"to\": ", t.to,
                                ", \"count\": ", t.count, "}"));
    absl::StrAppend(&j, ", \"transfers\": [", absl::StrJoin(ts, ", "), "]");
  }
  if (s.subcube)
    absl::StrAppend(&j, ", \"balancing_subcube\": {\"dim\": ", s.subcube->dim, ", \"base\": ", s.subcube->base,
                    ", \"mask\": ", s.subcube->mask, ", \"tree_depth\": ", s.subcube->tree_depth, "}");
  j += "}\n";
  return j;
}

std::string SummaryText(const RunSummary& s) {
  std::string t = absl::StrFormat("algorithm %s on %s, %d trial(s), seed %d\n", s.config.algorithm, s.topology_name,
                                  s.config.trials, s.config.seed);
  absl::StrAppendFormat(&t, "  max difference    mean %.4f  max %g\n", s.max_diff.mean, s.max_diff.max);
  std::vector<std::string> hist;
  for (auto [k, v] : s.max_diff_histogram) hist.push_back(absl::StrCat(k, ":", v));
  if (hist.size() <= 16) {
    absl::StrAppendFormat(&t, "  histogram         %s\n", absl::StrJoin(hist, " "));
  } else {
    absl::StrAppendFormat(&t, "  histogram         %d distinct values (--json lists them)\n", hist.size());
  }
  absl::StrAppendFormat(&t, "  max share error   mean %.4f  max %.4f\n", s.max_share_error.mean, s.max_share_error.max);
  absl::StrAppendFormat(&t, "  tasks moved       mean %.2f  (minimum that must move: %.2f)\n", s.tasks_moved.mean,
                        s.minimum_moves.mean);
  absl::StrAppendFormat(&t,
                        "  task-hops         mean %.2f\n  messages          mean %.2f\n  steps             mean %.2f\n",
                        s.task_hops.mean, s.messages.mean, s.steps.mean);
  if (s.subcube)
    absl::StrAppendFormat(&t, "  balancing subcube dim %d base %d mask %d tree depth %d\n", s.subcube->dim,
                          s.subcube->base, s.subcube->mask, s.subcube->tree_depth);
  if (s.initial_loads) absl::StrAppend(&t, "  initial loads     ", absl::StrJoin(*s.initial_loads, " "), "\n");
  if (s.final_loads) absl::StrAppend(&t, "  final loads       ", absl::StrJoin(*s.final_loads, " "), "\n");
  if (s.transfers)
    for (const auto& x : *s.transfers)
      absl::StrAppendFormat(&t, "  step %d: %d -> %d  %d task(s)\n", x.step, x.from, x.to, x.count);
  return t;
}

}  // namespace hyperfed::sim
