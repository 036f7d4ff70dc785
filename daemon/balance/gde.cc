#include "daemon/balance/gde.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <type_traits>

#include "absl/strings/str_cat.h"

namespace hyperfed::balance {

Load GdeTransfer(Load w_i, Load w_j, double lambda) {
  const Load d = w_i - w_j;
  if (d > 1) return static_cast<Load>(std::floor(lambda * static_cast<double>(d)));
  if (d < -1) return -static_cast<Load>(std::floor(lambda * static_cast<double>(-d)));
  return 0;
}

Load GdeNewLoad(Load w_i, Load w_j, double lambda) { return w_i - GdeTransfer(w_i, w_j, lambda); }

double GdeTransferReal(double w_i, double w_j, double lambda) { return lambda * (w_i - w_j); }

namespace {

// The sweep loop shared by the integer and the real-valued forms; T is Load
// or double. on_move(step, u, v, t): u sends t to v (t may be negative).
template <typename T, typename OnMove>
IterativeRun RunGde(const Topology& topo, std::vector<T>& w, double lambda, const IterativeOptions& opts,
                    OnMove on_move, std::vector<double>* trace) {
  constexpr bool kInteger = std::is_integral_v<T>;
  const auto classes = EdgeColoring(topo);
  const std::vector<bool>& alive = topo.alive_mask();
  auto transfer = [&](T a, T b) -> T {
    if constexpr (kInteger)
      return GdeTransfer(a, b, lambda);
    else
      return GdeTransferReal(a, b, lambda);
  };
  auto variance = [&] { return WorkloadVarianceOf(w, alive); };
  auto neighbours_balanced = [&] {
    for (const auto& c : classes)
      for (auto [u, v] : c)
        if (w[u] - w[v] > 1 || w[v] - w[u] > 1) return false;
    return true;
  };
  IterativeRun r;
  if (trace) trace->push_back(variance());
  while (true) {
    // Stop tests at a sweep boundary.
    if (opts.stop == StopTest::kVariance ? variance() <= opts.target_variance : neighbours_balanced()) {
      r.reached = true;
      break;
    }
    if (r.steps >= opts.max_steps) break;
    if constexpr (kInteger) {
      bool moves = false;
      for (const auto& c : classes)
        for (auto [u, v] : c) moves = moves || transfer(w[u], w[v]) != 0;
      if (!moves) break;  // integer fixed point
    }
    for (const auto& c : classes) {
      if (r.steps >= opts.max_steps) break;
      ++r.steps;
      for (auto [u, v] : c) {
        const T t = transfer(w[u], w[v]);
        if (t == 0) continue;
        on_move(r.steps, u, v, t);
        // Both ends apply the same pair function (per-node step).
        T new_u, new_v;
        if constexpr (kInteger) {
          new_u = GdeNewLoad(w[u], w[v], lambda);
          new_v = GdeNewLoad(w[v], w[u], lambda);
        } else {
          new_u = w[u] - GdeTransferReal(w[u], w[v], lambda);
          new_v = w[v] - GdeTransferReal(w[v], w[u], lambda);
        }
        w[u] = new_u;
        w[v] = new_v;
      }
      r.messages += 2 * static_cast<int64_t>(c.size());
      if (trace) trace->push_back(variance());
      if (opts.stop == StopTest::kVariance && variance() <= opts.target_variance) {
        r.reached = true;
        return r;
      }
    }
  }
  return r;
}

}  // namespace

absl::StatusOr<double> GdeLambda(const Topology& topo, ExchangeParameter parameter) {
  if (parameter == ExchangeParameter::kAverage) return 0.5;
  const double pi = std::numbers::pi;
  auto [n, k] = internal::GridShape(topo);
  switch (topo.kind()) {
    case TopologyKind::kHypercube:
      return 0.5;
    case TopologyKind::kTorus:
      // A torus whose dimensions all have size <= 2 is a hypercube.
      return k <= 2 ? 0.5 : 1.0 / (1.0 + std::sin(2 * pi / k));
    case TopologyKind::kMesh:
      return k <= 1 ? 0.5 : 1.0 / (1.0 + std::sin(pi / k));
    case TopologyKind::kGraph:
      break;
  }
  return absl::InvalidArgumentError("ODE: seed 002 gives the optimal lambda for meshes, tori and hypercubes only");
}

absl::StatusOr<Plan> GdePlan(const Topology& topo, absl::Span<const Load> loads, const IterativeOptions& opts) {
  const bool negative = std::any_of(loads.begin(), loads.end(), [](Load x) { return x < 0; });
  if (auto s = internal::CheckLoads(topo, loads.size(), negative, "GDE"); !s.ok()) return s;
  auto lambda = GdeLambda(topo, opts.parameter);
  if (!lambda.ok()) return lambda.status();
  std::vector<Load> w(loads.begin(), loads.end());
  IterativeRecorder rec(w, opts.merge_block);
  IterativeRun r = RunGde<Load>(
      topo, w, *lambda, opts, [&](int64_t step, NodeId u, NodeId v, Load t) { rec.Move(step, u, v, t); }, nullptr);
  rec.AddMessages(r.messages);
  return std::move(rec).Finish(r.steps);
}

absl::StatusOr<IterativeTrace> GdeTraceReal(const Topology& topo, absl::Span<const double> loads,
                                            const IterativeOptions& opts, bool keep_variance) {
  const bool negative = std::any_of(loads.begin(), loads.end(), [](double x) { return x < 0; });
  if (auto s = internal::CheckLoads(topo, loads.size(), negative, "GDE"); !s.ok()) return s;
  auto lambda = GdeLambda(topo, opts.parameter);
  if (!lambda.ok()) return lambda.status();
  IterativeTrace trace;
  std::vector<double> w(loads.begin(), loads.end());
  IterativeRun r = RunGde<double>(
      topo, w, *lambda, opts, [](int64_t, NodeId, NodeId, double) {}, keep_variance ? &trace.variance : nullptr);
  trace.steps = r.steps;
  trace.reached = r.reached;
  trace.final_variance = WorkloadVarianceReal(w, topo.alive_mask());
  trace.final_loads = std::move(w);
  return trace;
}

}  // namespace hyperfed::balance
