#include "sim/paper_xu.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "daemon/balance/diffusion.h"
#include "daemon/balance/gde.h"

namespace hyperfed::sim {
namespace {

using balance::ExchangeParameter;
using balance::IterativeOptions;
using balance::Topology;

enum class Algo { kOde, kAde, kOdf, kAdf };
constexpr Algo kAlgos[] = {Algo::kOde, Algo::kAde, Algo::kOdf, Algo::kAdf};
const char* Name(Algo a) {
  switch (a) {
    case Algo::kOde: return "ODE";
    case Algo::kAde: return "ADE";
    case Algo::kOdf: return "ODF";
    case Algo::kAdf: return "ADF";
  }
  return "";
}

// Section 6: loads uniform in [0, 1000], real-valued (the paper treats load
// as infinitely divisible), all-port: a DE colour step and a diffusion
// iteration are one communication step each; stop when sum (w - mean)^2 <= 1.
absl::StatusOr<balance::IterativeTrace> Run(Algo a, const Topology& topo, const std::vector<double>& w,
                                            bool keep_variance = false, int64_t max_steps = 2000000) {
  IterativeOptions o;
  o.parameter = (a == Algo::kOde || a == Algo::kOdf) ? ExchangeParameter::kOptimal : ExchangeParameter::kAverage;
  o.max_steps = max_steps;
  o.target_variance = 1.0;
  if (a == Algo::kOde || a == Algo::kAde) return balance::GdeTraceReal(topo, w, o, keep_variance);
  return balance::DiffusionTraceReal(topo, w, o, keep_variance);
}

std::vector<double> RandomLoads(int n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1000.0);
  std::vector<double> w(n);
  for (double& x : w) x = u(rng);
  return w;
}

// Mean steps of each algorithm over `trials` random load vectors.
absl::StatusOr<std::vector<double>> MeanSteps(const Topology& topo, int trials, std::mt19937_64& rng) {
  std::vector<double> sum(4, 0.0);
  for (int t = 0; t < trials; ++t) {
    const std::vector<double> w = RandomLoads(topo.size(), rng);
    for (int a = 0; a < 4; ++a) {
      auto r = Run(kAlgos[a], topo, w);
      if (!r.ok()) return r.status();
      sum[a] += static_cast<double>(r->steps);
    }
  }
  for (double& s : sum) s /= trials;
  return sum;
}

int Trials(const PaperOptions& opts, int base) {
  return std::max(1, static_cast<int>(std::lround(base * opts.scale)));
}

}  // namespace

absl::StatusOr<PaperReport> PaperXu(const PaperOptions& opts) {
  PaperReport report;
  std::mt19937_64 rng(opts.seed);
  auto progress = [&](const std::string& s) {
    if (opts.progress) opts.progress(s);
  };
  std::string& out = report.text;
  out += "Seed 002 (Xu, Monien, Lueling, Lau), section 6: static synchronous balancing, all-port.\n";
  out += "Loads uniform in [0, 1000], real-valued; steps until sum_i (w_i - mean)^2 <= 1.\n";
  out += "A DE colour step and a diffusion iteration are one communication step each.\n";
  out += "DE sweeps visit even edges, then odd edges (the paper leaves the order open).\n\n";

  // ---- Ring of 64 ----
  const int trials = Trials(opts, 20);
  progress("xu: ring of 64");
  auto ring64 = Topology::Ring(64);
  if (!ring64.ok()) return ring64.status();
  auto steps64 = MeanSteps(*ring64, trials, rng);
  if (!steps64.ok()) return steps64.status();
  const double paper64[] = {98, 1305, 1305, 1684};
  absl::StrAppendFormat(&out, "Ring of 64, mean over %d random loads (paper: 20 runs)\n", trials);
  absl::StrAppendFormat(&out, "%-6s %8s %8s %7s\n", "algo", "paper", "ours", "ratio");
  for (int a = 0; a < 4; ++a)
    absl::StrAppendFormat(&out, "%-6s %8.0f %8.1f %7.3f\n", Name(kAlgos[a]), paper64[a], (*steps64)[a],
                          (*steps64)[a] / paper64[a]);
  absl::StrAppendFormat(&out, "ODE improvement over ADE: paper 92.5%%, ours %.1f%%\n",
                        100.0 * (1.0 - (*steps64)[0] / (*steps64)[1]));
  out += "(the paper gives ADE and ODF together as \"about 1305\")\n\n";

  // ---- 64x64 torus, ODE ----
  progress("xu: 64x64 torus ODE");
  {
    auto torus = Topology::Torus({64, 64});
    if (!torus.ok()) return torus.status();
    const int t_trials = Trials(opts, 5);
    double sum = 0;
    for (int t = 0; t < t_trials; ++t) {
      auto r = Run(Algo::kOde, *torus, RandomLoads(torus->size(), rng));
      if (!r.ok()) return r.status();
      sum += static_cast<double>(r->steps);
    }
    absl::StrAppendFormat(&out, "64-ary 2-cube (64x64 torus), ODE: paper about 196, ours %.1f (mean of %d)\n\n",
                          sum / t_trials, t_trials);
  }

  // ---- Fig. 4: rings of 4 .. 128 ----
  const int curve_trials = Trials(opts, 20);
  std::vector<Series> ring_series(4), mesh_series(4);
  for (int a = 0; a < 4; ++a) ring_series[a].title = mesh_series[a].title = Name(kAlgos[a]);
  absl::StrAppendFormat(&out, "Fig. 4: rings, mean steps over %d random loads (paper: plot only; ring 64 above)\n",
                        curve_trials);
  absl::StrAppendFormat(&out, "%6s %8s %8s %8s %8s\n", "N", "ODE", "ADE", "ODF", "ADF");
  for (int n : {4, 8, 16, 32, 64, 128}) {
    progress(absl::StrCat("xu: ring of ", n));
    auto topo = Topology::Ring(n);
    if (!topo.ok()) return topo.status();
    auto s = MeanSteps(*topo, curve_trials, rng);
    if (!s.ok()) return s.status();
    absl::StrAppendFormat(&out, "%6d %8.1f %8.1f %8.1f %8.1f\n", n, (*s)[0], (*s)[1], (*s)[2], (*s)[3]);
    for (int a = 0; a < 4; ++a) {
      ring_series[a].x.push_back(n);
      ring_series[a].y.push_back((*s)[a]);
    }
  }
  out += "\n";

  // ---- Fig. 5: square 2-D meshes ----
  absl::StrAppendFormat(&out, "Fig. 5: k x k meshes, mean steps over %d random loads (paper: plot only)\n",
                        curve_trials);
  absl::StrAppendFormat(&out, "%6s %8s %8s %8s %8s\n", "k", "ODE", "ADE", "ODF", "ADF");
  for (int k : {2, 4, 8, 16, 32}) {
    progress(absl::StrCat("xu: mesh ", k, "x", k));
    auto topo = Topology::Mesh({k, k});
    if (!topo.ok()) return topo.status();
    auto s = MeanSteps(*topo, k >= 32 ? std::max(1, curve_trials / 2) : curve_trials, rng);
    if (!s.ok()) return s.status();
    absl::StrAppendFormat(&out, "%6d %8.1f %8.1f %8.1f %8.1f\n", k, (*s)[0], (*s)[1], (*s)[2], (*s)[3]);
    for (int a = 0; a < 4; ++a) {
      mesh_series[a].x.push_back(k);
      mesh_series[a].y.push_back((*s)[a]);
    }
  }
  // The paper: T depends on the larger dimension only.
  {
    auto wide = Topology::Mesh({16, 4});
    auto square = Topology::Mesh({16, 16});
    auto a = MeanSteps(*wide, curve_trials, rng);
    auto b = MeanSteps(*square, curve_trials, rng);
    if (!a.ok()) return a.status();
    if (!b.ok()) return b.status();
    absl::StrAppendFormat(&out, "16x4 vs 16x16 mesh (paper: T depends on the larger dimension only): "
                                "ODE %.1f vs %.1f, ADE %.1f vs %.1f, ODF %.1f vs %.1f, ADF %.1f vs %.1f\n\n",
                          (*a)[0], (*b)[0], (*a)[1], (*b)[1], (*a)[2], (*b)[2], (*a)[3], (*b)[3]);
  }

  // ---- Fig. 6: variance decay in a ring of 32 ----
  progress("xu: ring of 32 variance");
  std::vector<Series> decay(4);
  {
    auto topo = Topology::Ring(32);
    const std::vector<double> w = RandomLoads(32, rng);
    out += "Fig. 6: ring of 32, workload variance after t steps (one random load vector)\n";
    absl::StrAppendFormat(&out, "%6s %12s %12s %12s %12s\n", "t", "ODE", "ADE", "ODF", "ADF");
    std::vector<std::vector<double>> v(4);
    for (int a = 0; a < 4; ++a) {
      auto r = Run(kAlgos[a], *topo, w, /*keep_variance=*/true, /*max_steps=*/100);
      if (!r.ok()) return r.status();
      v[a] = r->variance;
      decay[a].title = Name(kAlgos[a]);
      for (size_t t = 0; t < v[a].size(); ++t) {
        decay[a].x.push_back(static_cast<double>(t));
        decay[a].y.push_back(std::max(v[a][t], 1e-3));
      }
    }
    for (int t : {0, 10, 25, 50, 100}) {
      absl::StrAppendFormat(&out, "%6d", t);
      for (int a = 0; a < 4; ++a) {
        const double x = t < static_cast<int>(v[a].size()) ? v[a][t] : v[a].back();
        absl::StrAppendFormat(&out, " %12.4g", x);
      }
      out += "\n";
    }
    out += "(paper: ODE ends far lowest although ADE reduces faster at first; likewise ODF vs ADF)\n";
  }
  out += "\nNot reproduced: the dynamic experiments (Figs. 7 to 10).\n";

  if (!opts.plot_dir.empty()) {
    for (auto [name, title, xl, series, logy] :
         {std::tuple{"xu_fig4_ring", "Seed 002 Fig. 4: steps to variance <= 1, ring", "ring size N", ring_series, true},
          std::tuple{"xu_fig5_mesh", "Seed 002 Fig. 5: steps to variance <= 1, k x k mesh", "k", mesh_series, true},
          std::tuple{"xu_fig6_decay", "Seed 002 Fig. 6: variance, ring of 32", "step", decay, true}}) {
      auto png = WritePlot(opts.plot_dir, name, title, xl,
                           std::string(name) == "xu_fig6_decay" ? "workload variance" : "communication steps",
                           series, logy);
      if (!png.ok()) return png.status();
      report.plots.push_back(*png);
    }
  }
  return report;
}

}  // namespace hyperfed::sim
