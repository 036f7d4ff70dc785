#include "sim/paper_xu.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "daemon/balance/diffusion.h"
#include "daemon/balance/gde.h"
#include "sim/stats.h"
#include "sim/xu_dynamic.h"

namespace hyperfed::sim {
namespace {

using balance::ExchangeParameter;
using balance::IterativeOptions;
using balance::Topology;

enum class Algo { kOde, kAde, kOdf, kAdf };
constexpr Algo kAlgos[] = {Algo::kOde, Algo::kAde, Algo::kOdf, Algo::kAdf};
const char* Name(Algo a) {
  switch (a) {
    case Algo::kOde:
      return "ODE";
    case Algo::kAde:
      return "ADE";
    case Algo::kOdf:
      return "ODF";
    case Algo::kAdf:
      return "ADF";
  }
  return "";
}

// §6: loads uniform in [0, 1000], real-valued (the paper treats load
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

int Trials(const PaperOptions& opts, int base) { return std::max(1, static_cast<int>(std::lround(base * opts.scale))); }

// Theorem 4.1, case 1: the closed forms of its proof for one invoker and
// its d neighbours, beside the measurement, on the ring of 64 (d = 2) and the
// 16x16 torus (d = 4).
absl::Status Theorem41(const PaperOptions& opts, std::string* out) {
  const int runs = Trials(opts, 20000);
  const double s0 = 1000.0 * 1000.0 / 12.0;
  absl::StrAppendFormat(out,
                        "Theorem 4.1, case 1 (one invoker and its d neighbours, loads uniform in [0, 1000], one "
                        "operation): X / sigma0^2, closed form of the proof | measured (%d draws)\n"
                        "  network      d |   ADF (Eq. 9)   |   ODF (Eq. 9)   | ADE one-port (13) | ODE one-port  "
                        "  | ADE all-port    | ODE all-port\n",
                        runs);
  for (auto [name, shape, torus_kind] :
       {std::tuple{"ring 64", std::vector<int>{64}, true}, std::tuple{"torus 16x16", std::vector<int>{16, 16}, true}}) {
    auto topo = Topology::Torus(shape);
    if (!topo.ok()) return topo.status();
    const int d = static_cast<int>(topo->Neighbors(0).size()), n = topo->size();
    auto adf = balance::DiffusionAlpha(*topo, ExchangeParameter::kAverage);
    auto odf = balance::DiffusionAlpha(*topo, ExchangeParameter::kOptimal);
    auto ade = balance::GdeLambda(*topo, ExchangeParameter::kAverage);
    auto ode = balance::GdeLambda(*topo, ExchangeParameter::kOptimal);
    if (!adf.ok() || !odf.ok() || !ade.ok() || !ode.ok()) return absl::InternalError("xu: parameters");
    const auto ma = XuTheorem41Measured(*topo, *adf, *ade, runs, opts.seed * 101 + d);
    const auto mo = XuTheorem41Measured(*topo, *odf, *ode, runs, opts.seed * 101 + d);
    absl::StrAppendFormat(
        out,
        "  %-11s %d | %6.3f | %6.3f | %6.3f | %6.3f | %6.3f | %6.3f   | %6.3f | %6.3f | %6.3f | %6.3f"
        " | %6.3f | %6.3f\n",
        name, d, XuTheorem41Df(d, *adf, n, s0) / s0, ma[0] / s0, XuTheorem41Df(d, *odf, n, s0) / s0, mo[0] / s0,
        XuTheorem41DeOnePort(d, *ade, n, s0) / s0, ma[1] / s0, XuTheorem41DeOnePort(d, *ode, n, s0) / s0, mo[1] / s0,
        XuTheorem41DeAllPort(d, *ade, n, s0) / s0, ma[2] / s0, XuTheorem41DeAllPort(d, *ode, n, s0) / s0, mo[2] / s0);
    (void)torus_kind;
  }
  absl::StrAppend(out,
                  "  (paper: one-port ADE <= DF; all-port DF <= ADE <= ODE; ADF <= ODF when d = 2, ODF <= ADF when "
                  "d >= 4)\n");
  return absl::OkStatus();
}

// Figs. 7 to 10: the dynamic experiments, with Tables 3 and 4's dynamic
// columns and Theorem 4.1's orderings checked on the measured variances.
absl::Status DynamicExperiments(const PaperOptions& opts, std::string* out,
                                std::vector<std::pair<std::string, std::vector<Series>>>* plots) {
  const int runs = Trials(opts, 20);
  struct Experiment {
    const char* fig;
    const char* what;
    Topology topo;
    bool synchronous;
  };
  auto ring = Topology::Ring(64);
  auto mesh = Topology::Mesh({16, 16});
  auto torus = Topology::Torus({16, 16});
  if (!ring.ok() || !mesh.ok() || !torus.ok()) return absl::InternalError("xu: topology");
  const std::vector<Experiment> experiments = {
      {"Fig. 7", "ring of 64, asynchronous (a node balances when its load leaves [200, 800])", *ring, false},
      {"Fig. 8", "16x16 mesh, asynchronous (a node balances when its load leaves [200, 800])", *mesh, false},
      {"Fig. 9", "16x16 torus, synchronous (every node, every step)", *torus, true},
      {"Fig. 10", "16x16 mesh, synchronous (every node, every step)", *mesh, true},
  };
  absl::StrAppendFormat(out,
                        "Dynamic experiments (section 6, Figs. 7 to 10; the figures are missing from the text). Model "
                        "in sim/xu_dynamic.h: one step = one diffusion operation = one DE colour class; per step each "
                        "node generates Normal(100, variance 30) and consumes 100; initial loads uniform in [0, 1000]. "
                        "Workload variance sum (w - mean)^2, mean of %d runs (paper: 20).\n",
                        runs);
  const std::vector<int> shown = {0, 1, 2, 5, 10, 20, 50, 100, 150, 200};
  std::vector<std::array<double, 4>> avg(experiments.size()), first(experiments.size());
  for (size_t e = 0; e < experiments.size(); ++e) {
    const Experiment& ex = experiments[e];
    if (opts.progress) opts.progress(absl::StrCat("xu dynamic: ", ex.fig));
    std::vector<std::vector<double>> mean(4, std::vector<double>(201, 0.0));
    for (int a = 0; a < 4; ++a)
      for (int r = 0; r < runs; ++r) {
        XuDynamicConfig c;
        c.synchronous = ex.synchronous;
        c.seed = opts.seed * 7777 + static_cast<uint64_t>(e * 1000 + r);  // same loads for all four
        auto nu = XuDynamicRun(ex.topo, static_cast<XuAlgo>(a), c);
        if (!nu.ok()) return nu.status();
        for (int t = 0; t <= 200; ++t) mean[a][t] += (*nu)[t] / runs;
      }
    absl::StrAppendFormat(out, "%s: %s\n  %5s %12s %12s %12s %12s\n", ex.fig, ex.what, "step", "ODE", "ADE", "ODF",
                          "ADF");
    for (int t : shown) {
      absl::StrAppendFormat(out, "  %5d", t);
      for (int a = 0; a < 4; ++a) absl::StrAppendFormat(out, " %12.4g", mean[a][t]);
      absl::StrAppend(out, "\n");
    }
    std::vector<Series> series(4);
    for (int a = 0; a < 4; ++a) {
      series[a].title = XuAlgoName(static_cast<XuAlgo>(a));
      double sum = 0;
      for (int t = 1; t <= 200; ++t) {
        sum += mean[a][t];
        series[a].x.push_back(t);
        series[a].y.push_back(std::max(mean[a][t], 1e-3));
      }
      avg[e][a] = sum / 200;
      first[e][a] = mean[a][1];
    }
    absl::StrAppendFormat(out, "  %5s", "avg");
    for (int a = 0; a < 4; ++a) absl::StrAppendFormat(out, " %12.4g", avg[e][a]);
    absl::StrAppend(out, "   (mean over steps 1..200)\n");
    plots->push_back(
        {absl::StrCat("xu_fig", 7 + e, "_dynamic|Seed 002 ", ex.fig, ": workload variance, ", ex.what), series});
  }
  // Claims: "a > b" holds when a's mean variance over steps 1..200 is lower.
  auto claim = [&](size_t e, int a, int b) {
    return absl::StrFormat("%s > %s %s", XuAlgoName(static_cast<XuAlgo>(a)), XuAlgoName(static_cast<XuAlgo>(b)),
                           avg[e][a] < avg[e][b] ? "holds" : "FAILS");
  };
  const int ode = 0, ade = 1, odf = 2, adf = 3;
  absl::StrAppend(out, "Table 4 (all-port), dynamic columns (a > b: a's mean variance over steps 1..200 is lower):\n");
  for (size_t e : {2u, 3u})
    absl::StrAppendFormat(out, "  synchronous, %s: paper ADE > ADF, ADE > ODE, ADF > ODF | ours %s; %s; %s\n",
                          experiments[e].fig, claim(e, ade, adf), claim(e, ade, ode), claim(e, adf, odf));
  absl::StrAppendFormat(
      out, "  asynchronous, %s (n = 1): paper {ADF, ODF} > ADE > ODE, ADF > ODF | ours %s; %s; %s; %s\n",
      experiments[0].fig, claim(0, adf, ade), claim(0, odf, ade), claim(0, ade, ode), claim(0, adf, odf));
  absl::StrAppendFormat(
      out, "  asynchronous, %s (n = 2): paper {ADF, ODF} > ADE > ODE, ODF > ADF | ours %s; %s; %s; %s\n",
      experiments[1].fig, claim(1, adf, ade), claim(1, odf, ade), claim(1, ade, ode), claim(1, odf, adf));
  auto step1 = [&](size_t e, int a, int b) {
    return absl::StrFormat("E[nu1] %s %.4g %s %s %.4g", XuAlgoName(static_cast<XuAlgo>(a)), first[e][a],
                           first[e][a] <= first[e][b] ? "<=" : ">", XuAlgoName(static_cast<XuAlgo>(b)), first[e][b]);
  };
  if (auto st = Theorem41(opts, out); !st.ok()) return st;
  absl::StrAppendFormat(out,
                        "Theorem 4.1 (all-port, after one asynchronous step): paper DF <= ADE, ADE <= ODE; ring ADF <= "
                        "ODF; mesh ODF <= ADF\n  ring: %s; %s; %s; %s\n  mesh: %s; %s; %s; %s\n"
                        "Table 3 (one-port), dynamic: not simulated (a one-port diffusion operation takes d steps; "
                        "the runs above are all-port, as the paper's).\n\n",
                        step1(0, adf, ade), step1(0, odf, ade), step1(0, ade, ode), step1(0, adf, odf),
                        step1(1, adf, ade), step1(1, odf, ade), step1(1, ade, ode), step1(1, odf, adf));
  return absl::OkStatus();
}

// Lemmas 5.1 and 5.2 on the 16x16 torus (d = 4, N = 256): the closed forms
// as printed beside the mean of runs of their own linear model.
absl::Status ClosedForms(const PaperOptions& opts, std::string* out) {
  auto torus = Topology::Torus({16, 16});
  if (!torus.ok()) return torus.status();
  const int runs = Trials(opts, 200), max_t = 50, n = 256, d = 4;
  const double s0 = 1000.0 * 1000.0 / 12.0, s = 30.0;
  absl::StrAppendFormat(out,
                        "Lemmas 5.1 and 5.2, 16x16 torus (d = 4, N = 256), sigma0^2 = 1000^2/12, sigma^2 = 30, no "
                        "consumption: E[nu^t] closed form as printed | measured (mean of %d runs of the lemma's model: "
                        "t+1 diffusion operations, or t+1 rounds of 4 pairwise steps, each followed by generation)\n",
                        runs);
  struct Row {
    const char* name;
    bool diffusion;
    balance::ExchangeParameter p;
    bool from_proof;
  };
  const Row rows[] = {{"ADF (Eq. 27)", true, balance::ExchangeParameter::kAverage, false},
                      {"ODF (Eq. 27)", true, balance::ExchangeParameter::kOptimal, false},
                      {"ADE (Eq. 29)", false, balance::ExchangeParameter::kAverage, false},
                      {"ODE (Eq. 29)", false, balance::ExchangeParameter::kOptimal, false},
                      {"ADE (proof)", false, balance::ExchangeParameter::kAverage, true},
                      {"ODE (proof)", false, balance::ExchangeParameter::kOptimal, true}};
  const int ts[] = {0, 1, 2, 5, 10, 20, 50};
  absl::StrAppendFormat(out, "  %-13s %6s", "", "param");
  for (int t : ts) absl::StrAppendFormat(out, " |      t = %-2d       ", t);
  absl::StrAppend(out, "\n");
  for (const Row& r : rows) {
    if (opts.progress) opts.progress(absl::StrCat("xu closed forms: ", r.name));
    auto param = r.diffusion ? balance::DiffusionAlpha(*torus, r.p) : balance::GdeLambda(*torus, r.p);
    if (!param.ok()) return param.status();
    auto measured = XuLemmaMeasured(*torus, r.diffusion, *param, max_t, runs, opts.seed * 31 + (r.diffusion ? 1 : 2));
    if (!measured.ok()) return measured.status();
    absl::StrAppendFormat(out, "  %-13s %6.4f", r.name, *param);
    for (int t : ts) {
      const double f = r.diffusion    ? XuLemma51(t, n, d, *param, s0, s)
                       : r.from_proof ? XuLemma52FromProof(t, n, d, *param, s0, s)
                                      : XuLemma52(t, n, d, *param, s0, s);
      absl::StrAppendFormat(out, " | %8.4g %8.4g", f, (*measured)[t]);
    }
    absl::StrAppend(out, "\n");
  }
  absl::StrAppend(out,
                  "  (\"proof\": Eq. 29 with (b^{td+d} N - 1) sigma0^2, as its proof derives, in place of the printed "
                  "s b^{td+d} N sigma0^2. The closed forms hold at t = 0 and then fall below the measurement and "
                  "below zero: they assume the components combined by t+1 operations are all distinct, which on a "
                  "torus fails from the second operation on; see docs/algorithms.md)\n\n");
  return absl::OkStatus();
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
  const int trials = Trials(opts, 100);
  progress("xu: ring of 64");
  auto ring64 = Topology::Ring(64);
  if (!ring64.ok()) return ring64.status();
  std::vector<std::vector<double>> per_trial(4);
  for (int t = 0; t < trials; ++t) {
    const std::vector<double> w = RandomLoads(64, rng);
    for (int a = 0; a < 4; ++a) {
      auto r = Run(kAlgos[a], *ring64, w);
      if (!r.ok()) return r.status();
      per_trial[a].push_back(static_cast<double>(r->steps));
    }
  }
  std::vector<double> steps64(4);
  const double paper64[] = {98, 1305, 1305, 1684};
  absl::StrAppendFormat(&out, "Ring of 64, mean over %d random loads +- 95%% CI (paper: 20 runs)\n", trials);
  absl::StrAppendFormat(&out, "%-6s %8s %8s %8s %7s\n", "algo", "paper", "ours", "+-", "ratio");
  for (int a = 0; a < 4; ++a) {
    const MeanCi c = Summarise(per_trial[a]);
    steps64[a] = c.mean;
    absl::StrAppendFormat(&out, "%-6s %8.0f %8.1f %8.1f %7.3f\n", Name(kAlgos[a]), paper64[a], c.mean, c.half,
                          c.mean / paper64[a]);
  }
  absl::StrAppendFormat(&out, "ODE improvement over ADE: paper 92.5%%, ours %.1f%%\n",
                        100.0 * (1.0 - steps64[0] / steps64[1]));
  out += "(the paper gives ADE and ODF together as \"about 1305\")\n";
  // Tables 3 and 4, static synchronous column, from the ring of 64. One-port:
  // a diffusion iteration needs d = 2 communication steps (one per port).
  absl::StrAppendFormat(
      &out,
      "Table 4 (all-port), static synchronous: paper ODE > ADE ~ ODF ~ ADF | ours (steps, fewer is "
      "better) ODE %.0f, ADE %.0f, ODF %.0f, ADF %.0f\n"
      "Table 3 (one-port), static synchronous: paper ODE > ADE > ODF ~ ADF | ours (diffusion x d = 2) "
      "ODE %.0f, ADE %.0f, ODF %.0f, ADF %.0f\n\n",
      steps64[0], steps64[1], steps64[2], steps64[3], steps64[0], steps64[1], 2 * steps64[2], 2 * steps64[3]);

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
    absl::StrAppendFormat(&out,
                          "16x4 vs 16x16 mesh (paper: T depends on the larger dimension only): "
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
  out += "\n";
  std::vector<std::pair<std::string, std::vector<Series>>> dynamic_plots;
  if (auto st = DynamicExperiments(opts, &out, &dynamic_plots); !st.ok()) return st;
  if (auto st = ClosedForms(opts, &out); !st.ok()) return st;

  if (!opts.plot_dir.empty()) {
    for (auto [name, title, xl, series, logy] :
         {std::tuple{"xu_fig4_ring", "Seed 002 Fig. 4: steps to variance <= 1, ring", "ring size N", ring_series, true},
          std::tuple{"xu_fig5_mesh", "Seed 002 Fig. 5: steps to variance <= 1, k x k mesh", "k", mesh_series, true},
          std::tuple{"xu_fig6_decay", "Seed 002 Fig. 6: variance, ring of 32", "step", decay, true}}) {
      auto png =
          WritePlot(opts.plot_dir, name, title, xl,
                    std::string(name) == "xu_fig6_decay" ? "workload variance" : "communication steps", series, logy);
      if (!png.ok()) return png.status();
      report.plots.push_back(*png);
    }
    for (const auto& [key, series] : dynamic_plots) {
      const size_t bar = key.find('|');
      auto png =
          WritePlot(opts.plot_dir, key.substr(0, bar), key.substr(bar + 1), "step", "workload variance", series, true);
      if (!png.ok()) return png.status();
      report.plots.push_back(*png);
    }
  }
  return report;
}

}  // namespace hyperfed::sim
