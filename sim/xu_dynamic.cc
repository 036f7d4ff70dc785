#include "sim/xu_dynamic.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "daemon/balance/diffusion.h"
#include "daemon/balance/gde.h"
#include "daemon/balance/iterative.h"

namespace hyperfed::sim {

using balance::NodeId;
using balance::Topology;

const char* XuAlgoName(XuAlgo a) {
  switch (a) {
    case XuAlgo::kOde:
      return "ODE";
    case XuAlgo::kAde:
      return "ADE";
    case XuAlgo::kOdf:
      return "ODF";
    case XuAlgo::kAdf:
      return "ADF";
  }
  return "?";
}

namespace {

bool IsDe(XuAlgo a) { return a == XuAlgo::kOde || a == XuAlgo::kAde; }

absl::StatusOr<double> Parameter(const Topology& topo, XuAlgo a) {
  const auto p = (a == XuAlgo::kOde || a == XuAlgo::kOdf) ? balance::ExchangeParameter::kOptimal
                                                          : balance::ExchangeParameter::kAverage;
  return IsDe(a) ? balance::GdeLambda(topo, p) : balance::DiffusionAlpha(topo, p);
}

// Every edge once (u < v).
std::vector<std::pair<NodeId, NodeId>> Edges(const Topology& topo) {
  std::vector<std::pair<NodeId, NodeId>> e;
  for (NodeId u = 0; u < topo.size(); ++u)
    for (NodeId v : topo.Neighbors(u))
      if (u < v) e.push_back({u, v});
  return e;
}

}  // namespace

absl::StatusOr<std::vector<double>> XuDynamicRun(const Topology& topo, XuAlgo algo, const XuDynamicConfig& cfg) {
  auto param = Parameter(topo, algo);
  if (!param.ok()) return param.status();
  const auto classes = balance::EdgeColoring(topo);
  const auto edges = Edges(topo);
  std::mt19937_64 rng(cfg.seed);
  std::uniform_real_distribution<double> init(0.0, cfg.initial_max);
  std::normal_distribution<double> gen(cfg.gen_mean, std::sqrt(cfg.gen_variance));
  std::vector<double> w(topo.size());
  for (double& x : w) x = init(rng);
  std::vector<double> nu = {balance::WorkloadVarianceReal(w)};
  std::vector<double> delta(w.size());
  std::vector<bool> invoker(w.size(), true);
  for (int t = 0; t < cfg.steps; ++t) {
    if (!cfg.synchronous)
      for (size_t i = 0; i < w.size(); ++i) invoker[i] = w[i] < cfg.low || w[i] > cfg.high;
    std::fill(delta.begin(), delta.end(), 0.0);
    const auto& active = IsDe(algo) ? classes[t % classes.size()] : edges;
    for (auto [u, v] : active) {
      if (!invoker[u] && !invoker[v]) continue;
      const double f = *param * (w[u] - w[v]);  // u to v
      delta[u] -= f;
      delta[v] += f;
    }
    for (size_t i = 0; i < w.size(); ++i) {
      w[i] += delta[i] + gen(rng) - cfg.consumption;
      if (cfg.clamp_at_zero) w[i] = std::max(0.0, w[i]);
    }
    nu.push_back(balance::WorkloadVarianceReal(w));
  }
  return nu;
}

double XuLemma51(int t, int n_nodes, int degree, double alpha, double s0, double s) {
  const double a = (1 - degree * alpha) * (1 - degree * alpha) + degree * alpha * alpha;
  const double at = std::pow(a, t + 1);
  return (at * s0 + (1 - at) / (1 - a) * s) * n_nodes - (t + 1) * s - s0;
}

double XuLemma52(int t, int n_nodes, int degree, double lambda, double s0, double s) {
  const double b = (1 - lambda) * (1 - lambda) + lambda * lambda;
  double sum = 0;
  for (int i = 0; i < degree; ++i) sum += std::pow(b, i);
  const double bt = std::pow(b, t * degree + degree), bd = std::pow(b, degree);
  return (sum * bt * s0 + sum * (1 - bt) / (1 - bd) * s) * n_nodes - (t + 1) * degree * s - s0;
}

double XuLemma52FromProof(int t, int n_nodes, int degree, double lambda, double s0, double s) {
  const double b = (1 - lambda) * (1 - lambda) + lambda * lambda;
  double sum = 0;
  for (int i = 0; i < degree; ++i) sum += std::pow(b, i);
  const double bt = std::pow(b, t * degree + degree), bd = std::pow(b, degree);
  return (bt * s0 + sum * (1 - bt) / (1 - bd) * s) * n_nodes - (t + 1) * degree * s - s0;
}

absl::StatusOr<std::vector<double>> XuLemmaMeasured(const Topology& topo, bool diffusion, double parameter, int max_t,
                                                    int runs, uint64_t seed) {
  const auto classes = balance::EdgeColoring(topo);
  const auto edges = Edges(topo);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> init(0.0, 1000.0);
  std::normal_distribution<double> gen(0.0, std::sqrt(30.0));
  std::vector<double> mean(max_t + 1, 0.0);
  std::vector<double> w(topo.size()), delta(topo.size());
  auto apply = [&](const std::vector<std::pair<NodeId, NodeId>>& active) {
    std::fill(delta.begin(), delta.end(), 0.0);
    for (auto [u, v] : active) {
      const double f = parameter * (w[u] - w[v]);
      delta[u] -= f;
      delta[v] += f;
    }
    for (size_t i = 0; i < w.size(); ++i) w[i] += delta[i] + gen(rng);
  };
  for (int r = 0; r < runs; ++r) {
    for (double& x : w) x = init(rng);
    for (int t = 0; t <= max_t; ++t) {
      if (diffusion) {
        apply(edges);
      } else {
        for (const auto& c : classes) apply(c);
      }
      mean[t] += balance::WorkloadVarianceReal(w) / runs;
    }
  }
  return mean;
}

double XuTheorem41Df(int d, double a, int n_nodes, double s0) {
  return (d * d * a * a + 3 * d * a * a - 4 * d * a + d + 1 - (d + 1.0) / n_nodes) * s0;
}

double XuTheorem41DeOnePort(int d, double l, int n_nodes, double s0) {
  const double q = (1 - l) * (1 - l);  // (1 - lambda)^2
  const double tail = d - 1 - q * (1 - std::pow(q, d - 1)) / (1 - q);
  return (d * q + 2 * l * l * (1 - std::pow(q, d)) / (1 - q) + std::pow(l, 4) * tail / (1 - q) + std::pow(q, d) -
          (d + 1.0) / n_nodes) *
         s0;
}

double XuTheorem41DeAllPort(int d, double l, int n_nodes, double s0) {
  return (2 * ((1 - l) * (1 - l) + l * l - 1.0 / n_nodes) + (d - 1) * (1 - 1.0 / n_nodes)) * s0;
}

std::array<double, 3> XuTheorem41Measured(const Topology& topo, double alpha, double lambda, int runs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> init(0.0, 1000.0);
  const std::vector<NodeId> nbrs = topo.Neighbors(0);
  std::vector<double> w(topo.size());
  std::array<double, 3> x{};
  for (int r = 0; r < runs; ++r) {
    double mean = 0;
    for (double& v : w) v = init(rng), mean += v;
    mean /= static_cast<double>(w.size());
    auto domain_variance = [&](const std::vector<double>& v) {
      double s = (v[0] - mean) * (v[0] - mean);
      for (NodeId j : nbrs) s += (v[j] - mean) * (v[j] - mean);
      return s;
    };
    std::vector<double> df = w, one = w, all = w;
    for (NodeId j : nbrs) {  // Eq. (8), from the loads at the start
      const double f = alpha * (w[0] - w[j]);
      df[0] -= f;
      df[j] += f;
    }
    for (NodeId j : nbrs) {  // Eq. (12): with each neighbour in turn
      const double f = lambda * (one[0] - one[j]);
      one[0] -= f;
      one[j] += f;
    }
    const double f = lambda * (all[0] - all[nbrs[0]]);  // one neighbour
    all[0] -= f;
    all[nbrs[0]] += f;
    x[0] += domain_variance(df) / runs;
    x[1] += domain_variance(one) / runs;
    x[2] += domain_variance(all) / runs;
  }
  return x;
}

}  // namespace hyperfed::sim
