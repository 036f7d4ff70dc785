#include "sim/paper_unit_flow.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "daemon/balance/quota.h"
#include "daemon/balance/unit_flow.h"
#include "sim/spec.h"

namespace hyperfed::sim {
namespace {

using balance::Load;
using balance::NodeId;
using balance::Topology;

// A random connected graph: a random tree plus `extra` chords.
Topology RandomGraph(int n, int extra, std::mt19937_64& rng) {
  std::vector<std::pair<NodeId, NodeId>> e;
  for (int v = 1; v < n; ++v) e.emplace_back(static_cast<NodeId>(UniformInt(rng, 0, v - 1)), v);
  for (int i = 0; i < extra; ++i) {
    NodeId a = static_cast<NodeId>(UniformInt(rng, 0, n - 1)), b = static_cast<NodeId>(UniformInt(rng, 0, n - 1));
    if (a != b) e.emplace_back(a, b);
  }
  return *Topology::Graph(n, e);
}

}  // namespace

std::vector<double> OptimalBalancingFlow(const Topology& topo, const std::vector<double>& excess) {
  const auto edges = topo.Edges();
  const size_t n = excess.size();
  auto laplacian = [&](const std::vector<double>& x) {
    std::vector<double> y(n, 0.0);
    for (auto [u, v] : edges) {
      y[u] += x[u] - x[v];
      y[v] += x[v] - x[u];
    }
    return y;
  };
  auto dot = [](const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
  };
  // Conjugate gradients on L x = excess (L is singular, excess is in its
  // range since it sums to 0).
  std::vector<double> x(n, 0.0), r = excess, p = r;
  double rr = dot(r, r);
  const double stop = 1e-20 * std::max(1.0, rr);
  for (size_t it = 0; it < 10 * n + 100 && rr > stop; ++it) {
    const std::vector<double> lp = laplacian(p);
    const double alpha = rr / dot(p, lp);
    for (size_t i = 0; i < n; ++i) x[i] += alpha * p[i], r[i] -= alpha * lp[i];
    const double next = dot(r, r);
    for (size_t i = 0; i < n; ++i) p[i] = r[i] + next / rr * p[i];
    rr = next;
  }
  std::vector<double> flow;
  for (auto [u, v] : edges) flow.push_back(x[u] - x[v]);
  return flow;
}

std::vector<double> NetEdgeFlow(const Topology& topo, const balance::Plan& plan) {
  const auto edges = topo.Edges();
  std::map<std::pair<NodeId, NodeId>, size_t> index;
  for (size_t i = 0; i < edges.size(); ++i) index[{edges[i].first, edges[i].second}] = i;
  std::vector<double> flow(edges.size(), 0.0);
  for (const auto& t : plan.transfers) {
    if (auto it = index.find({t.from, t.to}); it != index.end()) flow[it->second] += static_cast<double>(t.count);
    if (auto it = index.find({t.to, t.from}); it != index.end()) flow[it->second] -= static_cast<double>(t.count);
  }
  return flow;
}

double L2Norm(const std::vector<double>& flow) {
  double s = 0;
  for (double f : flow) s += f * f;
  return std::sqrt(s);
}

absl::StatusOr<PaperReport> PaperUnitFlow(const PaperOptions& opts) {
  PaperReport r;
  std::mt19937_64 rng(opts.seed);
  const int trials = std::max(10, static_cast<int>(200 * opts.scale));
  absl::StrAppendFormat(&r.text,
                        "Seed 001 claims: unit flows from a fixed vertex give an integer balancing flow on every "
                        "connected graph, in integer arithmetic, using only n-1 edges.\n%d random load vectors "
                        "(uniform in [0, 1000]) per network; capacities equal and uniform in [1, 16].\n\n",
                        trials);
  absl::StrAppend(&r.text,
                  "network          nodes  edges  edges used (max)  exact balance (paper: always)  max share error\n");
  struct Net {
    std::string name;
    std::function<Topology()> make;
  };
  std::vector<Net> nets = {
      {"ring:64", [] { return *Topology::Ring(64); }},
      {"torus:8x8",
       [] {
         return *Topology::Torus({8, 8});
       }},
      {"mesh:8x8",
       [] {
         return *Topology::Mesh({8, 8});
       }},
      {"hypercube:6", [] { return *Topology::Hypercube(6); }},
      {"random graph", [&rng] { return RandomGraph(64, 64, rng); }},
  };
  for (const Net& net : nets) {
    for (bool weighted : {false, true}) {
      int exact = 0, max_edges = 0, edges = 0, nodes = 0;
      double worst = 0;
      for (int t = 0; t < trials; ++t) {
        Topology topo = net.make();
        nodes = topo.size();
        edges = static_cast<int>(topo.Edges().size());
        std::vector<Load> w(nodes);
        std::vector<double> p(nodes, 1.0);
        for (auto& x : w) x = UniformInt(rng, 0, 1000);
        if (weighted)
          for (auto& x : p) x = static_cast<double>(UniformInt(rng, 1, 16));
        auto plan = balance::UnitFlowPlan(topo, w, p);
        if (!plan.ok()) return plan.status();
        if (plan->final_loads == balance::Apportion(balance::TotalLoad(w), p)) ++exact;
        std::set<std::pair<NodeId, NodeId>> used;
        for (const auto& x : plan->transfers) used.insert({std::min(x.from, x.to), std::max(x.from, x.to)});
        max_edges = std::max(max_edges, static_cast<int>(used.size()));
        worst = std::max(worst, balance::MaxShareError(plan->final_loads, p));
      }
      absl::StrAppendFormat(&r.text, "%-13s %s %5d  %5d  %7d (n-1 = %d)  %10d / %d %18.3f\n", net.name,
                            weighted ? "w" : " ", nodes, edges, max_edges, nodes - 1, exact, trials, worst);
    }
  }
  absl::StrAppend(&r.text, "\n(w: capacity-weighted quotas, hyperfed's extension; the paper balances equal loads.)\n");

  // §1: the unit flows are suboptimal in the l2 norm against Hu et
  // al.'s optimal flow, but use far fewer edges.
  absl::StrAppendFormat(&r.text,
                        "\nl2 norm of the balancing flow (section 1: unit flows \"suboptimal compared to Hu et al.\", "
                        "\"far less network edges\"), equal capacities, %d load vectors per network, both flows "
                        "towards the same integer quotas (new random loads); Hu et al.'s flow by conjugate gradients, "
                        "rounded to integers "
                        "as the paper says.\n"
                        "network          l2 unit-flow   l2 optimal (rounded)   ratio mean   ratio max   edges used "
                        "unit / optimal\n",
                        trials);
  for (const Net& net : nets) {
    double l2_unit = 0, l2_opt = 0, ratio = 0, ratio_max = 0, used_unit = 0, used_opt = 0;
    for (int t = 0; t < trials; ++t) {
      Topology topo = net.make();
      std::vector<Load> w(topo.size());
      for (auto& x : w) x = UniformInt(rng, 0, 1000);
      const std::vector<double> p(topo.size(), 1.0);
      auto plan = balance::UnitFlowPlan(topo, w, p);
      if (!plan.ok()) return plan.status();
      const std::vector<Load> quota = balance::Apportion(balance::TotalLoad(w), p);
      std::vector<double> excess(w.size());
      for (size_t i = 0; i < w.size(); ++i) excess[i] = static_cast<double>(w[i] - quota[i]);
      std::vector<double> opt = OptimalBalancingFlow(topo, excess);
      for (double& f : opt) f = std::round(f);
      const std::vector<double> unit = NetEdgeFlow(topo, *plan);
      const double a = L2Norm(unit), b = L2Norm(opt);
      l2_unit += a / trials;
      l2_opt += b / trials;
      ratio += (b > 0 ? a / b : 1.0) / trials;
      ratio_max = std::max(ratio_max, b > 0 ? a / b : 1.0);
      for (double f : unit) used_unit += (f != 0) / static_cast<double>(trials);
      for (double f : opt) used_opt += (f != 0) / static_cast<double>(trials);
    }
    absl::StrAppendFormat(&r.text, "%-13s %15.1f %22.1f %12.3f %11.3f %9.1f / %.1f\n", net.name, l2_unit, l2_opt, ratio,
                          ratio_max, used_unit, used_opt);
  }
  return r;
}

}  // namespace hyperfed::sim
