#include "sim/paper_unit_flow.h"

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
      {"torus:8x8", [] { return *Topology::Torus({8, 8}); }},
      {"mesh:8x8", [] { return *Topology::Mesh({8, 8}); }},
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
  return r;
}

}  // namespace hyperfed::sim
