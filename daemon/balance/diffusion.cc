#include "daemon/balance/diffusion.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <type_traits>

namespace hyperfed::balance {

Load DiffusionTransfer(Load w_i, Load w_j, double alpha) {
  if (w_i <= w_j) return 0;
  return static_cast<Load>(std::floor(alpha * static_cast<double>(w_i - w_j)));
}

Load DiffusionNewLoad(Load w_i, absl::Span<const Load> neighbour_loads, double alpha) {
  Load w = w_i;
  for (Load w_j : neighbour_loads) w += DiffusionTransfer(w_j, w_i, alpha) - DiffusionTransfer(w_i, w_j, alpha);
  return w;
}

double DiffusionNewLoadReal(double w_i, absl::Span<const double> neighbour_loads, double alpha) {
  double w = w_i;
  for (double w_j : neighbour_loads) w += alpha * (w_j - w_i);
  return w;
}

absl::StatusOr<double> DiffusionAlpha(const Topology& topo, ExchangeParameter parameter) {
  if (parameter == ExchangeParameter::kAverage) return 1.0 / (1.0 + topo.MaxDegree());
  const double pi = std::numbers::pi;
  auto [n, k] = internal::GridShape(topo);
  switch (topo.kind()) {
    case TopologyKind::kHypercube:
      return 1.0 / (topo.dimensions() + 1.0);
    case TopologyKind::kTorus:
      // Sizes <= 2 everywhere: a hypercube.
      if (k <= 2) return 1.0 / (n + 1.0);
      return 1.0 / (2.0 * n + 1.0 - std::cos(2 * pi / k));
    case TopologyKind::kMesh:
      return n == 0 ? 0.5 : 1.0 / (2.0 * n);
    case TopologyKind::kGraph:
      break;
  }
  return absl::InvalidArgumentError("ODF: seed 002 gives the optimal alpha for meshes, tori and hypercubes only");
}

namespace {

template <typename T, typename OnMove>
IterativeRun RunDiffusion(const Topology& topo, std::vector<T>& w, double alpha, const IterativeOptions& opts,
                          OnMove on_move, std::vector<double>* trace) {
  constexpr bool kInteger = std::is_integral_v<T>;
  const std::vector<bool>& alive = topo.alive_mask();
  const int n = topo.size();
  std::vector<std::vector<NodeId>> nbrs(n);
  int64_t edges = 0;
  for (NodeId u = 0; u < n; ++u) {
    if (!topo.alive(u)) continue;
    nbrs[u] = topo.Neighbors(u);
    edges += static_cast<int64_t>(nbrs[u].size());
  }
  edges /= 2;
  auto variance = [&] { return WorkloadVarianceOf(w, alive); };
  auto stop = [&] {
    if (opts.stop == StopTest::kVariance) return variance() <= opts.target_variance;
    for (NodeId u = 0; u < n; ++u)
      for (NodeId v : nbrs[u])
        if (w[u] - w[v] > 1) return false;
    return true;
  };
  IterativeRun r;
  if (trace) trace->push_back(variance());
  std::vector<T> next(n), around;
  while (true) {
    if (stop()) {
      r.reached = true;
      break;
    }
    if (r.steps >= opts.max_steps) break;
    bool moves = !kInteger;
    if constexpr (kInteger) {
      for (NodeId u = 0; u < n && !moves; ++u)
        for (NodeId v : nbrs[u]) moves = moves || DiffusionTransfer(w[u], w[v], alpha) > 0;
    }
    if (!moves) break;  // integer fixed point
    ++r.steps;
    for (NodeId u = 0; u < n; ++u) {
      if (!topo.alive(u)) {
        next[u] = w[u];
        continue;
      }
      around.clear();
      for (NodeId v : nbrs[u]) around.push_back(w[v]);
      if constexpr (kInteger) {
        next[u] = DiffusionNewLoad(w[u], around, alpha);
        for (NodeId v : nbrs[u]) on_move(r.steps, u, v, DiffusionTransfer(w[u], w[v], alpha));
      } else {
        next[u] = DiffusionNewLoadReal(w[u], around, alpha);
      }
    }
    w.swap(next);
    r.messages += 2 * edges;
    if (trace) trace->push_back(variance());
  }
  return r;
}

}  // namespace

absl::StatusOr<Plan> DiffusionPlan(const Topology& topo, absl::Span<const Load> loads, const IterativeOptions& opts) {
  const bool negative = std::any_of(loads.begin(), loads.end(), [](Load x) { return x < 0; });
  if (auto s = internal::CheckLoads(topo, loads.size(), negative, "diffusion"); !s.ok()) return s;
  auto alpha = DiffusionAlpha(topo, opts.parameter);
  if (!alpha.ok()) return alpha.status();
  std::vector<Load> w(loads.begin(), loads.end());
  IterativeRecorder rec(w, opts.merge_block);
  IterativeRun r = RunDiffusion<Load>(
      topo, w, *alpha, opts,
      [&](int64_t step, NodeId u, NodeId v, Load t) {
        if (t > 0) rec.Move(step, u, v, t);
      },
      nullptr);
  rec.AddMessages(r.messages);
  return std::move(rec).Finish(r.steps);
}

absl::StatusOr<IterativeTrace> DiffusionTraceReal(const Topology& topo, absl::Span<const double> loads,
                                                  const IterativeOptions& opts, bool keep_variance) {
  const bool negative = std::any_of(loads.begin(), loads.end(), [](double x) { return x < 0; });
  if (auto s = internal::CheckLoads(topo, loads.size(), negative, "diffusion"); !s.ok()) return s;
  auto alpha = DiffusionAlpha(topo, opts.parameter);
  if (!alpha.ok()) return alpha.status();
  IterativeTrace trace;
  std::vector<double> w(loads.begin(), loads.end());
  IterativeRun r = RunDiffusion<double>(
      topo, w, *alpha, opts, [](int64_t, NodeId, NodeId, double) {}, keep_variance ? &trace.variance : nullptr);
  trace.steps = r.steps;
  trace.reached = r.reached;
  trace.final_variance = WorkloadVarianceReal(w, topo.alive_mask());
  trace.final_loads = std::move(w);
  return trace;
}

}  // namespace hyperfed::balance
