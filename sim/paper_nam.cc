#include "sim/paper_nam.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/balance/cwa.h"
#include "daemon/balance/mcwa.h"
#include "daemon/balance/quota.h"
#include "sim/speedup.h"
#include "sim/stats.h"

namespace hyperfed::sim {
namespace {

using balance::CwaNodeState;
using balance::CwaTheta;
using balance::Load;
using balance::NodeId;

std::string Bits(NodeId u, int n) {
  std::string s;
  for (int b = n - 1; b >= 0; --b) s += ((u >> b) & 1) ? '1' : '0';
  return s;
}

// Example 1 (§3.3): loads reconstructed from Tables 2 to 4 and the
// text (node 100 holds 0 and initiates; 64 tasks, quota 8).
const std::vector<Load> kExample1 = {19, 11, 2, 9, 0, 9, 10, 4};

struct TableRow {
  NodeId node;
  std::vector<std::array<Load, 4>> cols;  // j = 0..k: l, delta, theta, gamma
};

absl::Status CwaExample(std::string* text) {
  const int n = 3;
  std::vector<CwaNodeState> s(8);
  for (int c = 0; c < 8; ++c) s[c] = balance::CwaInit(c, n, kExample1[c]);
  for (int j = 0; j < n; ++j)
    for (int c = 0; c < 8; ++c) balance::CwaReceiveLoad(s[c], j, s[c ^ (1 << j)].l[j]);
  const std::vector<Load> quota = balance::Apportion(s[0].l[n], std::vector<double>(8, 1.0));
  std::vector<Load> prefix(9, 0);
  for (int c = 0; c < 8; ++c) prefix[c + 1] = prefix[c] + quota[c];
  for (int c = 0; c < 8; ++c) balance::CwaSetQuotas(s[c], balance::CwaQuotaVector(c, n, prefix));
  const std::vector<std::vector<TableRow>> paper = {{{0, {{19, 11, 6, 5}, {30, 14, 9, 5}, {41, 9, 9, 0}}},
                                                     {1, {{11, 3, 3, 0}, {30, 14, 9, 5}, {41, 9, 9, 0}}},
                                                     {2, {{2, -6, 0, -6}, {11, -5, 0, -5}, {41, 9, 9, 0}}},
                                                     {3, {{9, 1, 0, 1}, {11, -5, 0, -5}, {41, 9, 9, 0}}}},
                                                    {{0, {{13, 5, 5, 0}, {21, 5, 5, 0}}},
                                                     {1, {{8, 0, 0, 0}, {21, 5, 5, 0}}},
                                                     {4, {{6, -2, 0, -2}, {18, 2, 2, 0}}},
                                                     {5, {{12, 4, 2, 2}, {18, 2, 2, 0}}}},
                                                    {{3, {{9, 1, 1, 0}}}, {5, {{10, 2, 2, 0}}}, {6, {{10, 2, 2, 0}}}}};
  absl::StrAppend(text,
                  "CWA, Example 1 (3-cube, 64 tasks, initial loads 000..111 = 19 11 2 9 0 9 10 4,\n"
                  "reconstructed from Tables 2-4 and the text). Cells are paper | ours.\n");
  int mismatches = 0;
  for (int k = n - 1; k >= 0; --k) {
    const int table = 2 + (n - 1 - k);
    absl::StrAppendFormat(text, "Table %d (migration along dimension %d)\n  node |", table, k);
    for (int j = 0; j <= k; ++j)
      absl::StrAppendFormat(text, "   l^%d   | delta^%d | theta^%d | gamma^%d |", j, j, j, j);
    absl::StrAppend(text, "\n");
    for (const TableRow& r : paper[n - 1 - k]) {
      CwaTheta t = balance::CwaComputeTheta(s[r.node], k);
      absl::StrAppendFormat(text, "  %s  |", Bits(r.node, n));
      for (int j = 0; j <= k; ++j) {
        const Load ours[4] = {s[r.node].l[j], s[r.node].delta[j], t.theta[j], t.gamma[j]};
        for (int c = 0; c < 4; ++c) {
          absl::StrAppendFormat(text, " %3d|%3d |", r.cols[j][c], ours[c]);
          mismatches += r.cols[j][c] != ours[c];
        }
      }
      absl::StrAppend(text, "\n");
    }
    for (int c = 0; c < 8; ++c)
      if (balance::CwaIsSender(s[c], k)) {
        CwaTheta t = balance::CwaComputeTheta(s[c], k);
        balance::CwaAfterSend(s[c], k, t.theta);
        balance::CwaAfterReceive(s[c ^ (1 << k)], k, t.theta);
      }
  }
  auto topo = balance::Topology::Hypercube(3);
  auto plan = balance::CwaPlan(*topo, kExample1, {});
  if (!plan.ok()) return plan.status();
  absl::StrAppend(text,
                  "Transfers (Fig. 2; paper: 000->100 6, 001->101 3 | 000->010 5, 101->111 2 | "
                  "011->010 1, 101->100 2, 110->111 2)\n  ours:");
  int step = 0;
  for (const auto& t : plan->transfers) {
    absl::StrAppend(text, t.step != step ? (step ? " |" : "") : ",", " ", Bits(t.from, 3), "->", Bits(t.to, 3), " ",
                    t.count);
    step = t.step;
  }
  absl::StrAppendFormat(text,
                        "\n  final max difference: paper 0 (all 8) | ours %d; steps 3 log N = 9 | ours %d; "
                        "table cells differing from the paper: %d\n\n",
                        balance::MaxDiff(plan->final_loads), plan->metrics.steps, mismatches);
  return absl::OkStatus();
}

absl::Status McwaExample(std::string* text) {
  auto topo = balance::Topology::Hypercube(4, {0b0101, 0b0110, 0b1000, 0b1010});
  if (!topo.ok()) return topo.status();
  std::vector<Load> loads(16, 0);
  loads[0b0001] = 4, loads[0b0000] = 6, loads[0b0100] = 2;
  loads[0b0011] = 10, loads[0b0010] = 20, loads[0b0111] = 4;
  loads[0b1001] = 7, loads[0b1101] = 20, loads[0b1100] = 10;
  loads[0b1011] = 5, loads[0b1111] = 18, loads[0b1110] = 14;
  auto sel = balance::SelectBalancingSubcubes(*topo);
  if (!sel.ok()) return sel.status();
  auto paper_bs = balance::BuildBalancingSubcube(*topo, 0b1010, 0b0001);
  if (!paper_bs.ok()) return paper_bs.status();
  auto pattern = [](const balance::BalancingSubcube& b) {
    std::string s;
    for (int d = 3; d >= 0; --d) s += ((b.mask >> d) & 1) ? 'X' : (((b.base >> d) & 1) ? '1' : '0');
    return s;
  };
  absl::StrAppend(text, "MCWA, Example 2 (faults 0101 0110 1000 1010 in a 4-cube)\n");
  absl::StrAppendFormat(text,
                        "  maximum healthy subcubes (paper: XX11 X0X1 1XX1 11XX), tree depths ours: XX11 %d, "
                        "X0X1 %d, 1XX1 %d, 11XX %d\n",
                        balance::BuildBalancingSubcube(*topo, 0b1100, 0b0011)->tree_depth, paper_bs->tree_depth,
                        balance::BuildBalancingSubcube(*topo, 0b0110, 0b1001)->tree_depth,
                        balance::BuildBalancingSubcube(*topo, 0b0011, 0b1100)->tree_depth);
  absl::StrAppendFormat(
      text, "  balancing subcube: paper X0X1 (dim 2, depth 2) | ours %s (dim %d, depth %d, mask %s, base %s)\n",
      pattern((*sel)[0]), (*sel)[0].dim, (*sel)[0].tree_depth, Bits((*sel)[0].mask, 4), Bits((*sel)[0].base, 4));
  absl::StrAppend(text,
                  "  (DESIGN section 5 breaks the depth tie between X0X1 and 1XX1 by the lowest mask, 0110 < 1010;\n"
                  "   the paper tries candidates in the order XX11, X0X1, ... and keeps the first that passes\n"
                  "   Algorithm 4's filter. The rows below run on the paper's X0X1.)\n");
  std::vector<balance::BalancingSubcube> v = {*paper_bs};
  auto plan = balance::McwaPlanOn(*topo, loads, {}, v);
  if (!plan.ok()) return plan.status();
  // Tree loads and quotas, as the nodes compute them.
  std::vector<Load> lt(16, 0);
  for (auto it = paper_bs->order.rbegin(); it != paper_bs->order.rend(); ++it) {
    std::vector<Load> ch;
    for (NodeId c : paper_bs->Children(*it)) ch.push_back(lt[c]);
    lt[*it] = balance::McwaTreeLoad(loads[*it], ch);
  }
  const auto q = balance::McwaQuotaTable(*paper_bs, 120, std::vector<double>(16, 1.0));
  absl::StrAppendFormat(text,
                        "  l_t(1011) 37 | %d, l_t(1111) 32 | %d, l_t(1110) 14 | %d; q_t(1011) 30 | %d, "
                        "q_t(1111) 20 | %d, q_t(1110) 10 | %d\n",
                        lt[0b1011], lt[0b1111], lt[0b1110], q.tree[0b1011], q.tree[0b1111], q.tree[0b1110]);
  absl::StrAppend(text,
                  "  (Fig. 4 is missing: the loads inside the trees of 0001, 0011, 1001 are ours, with the tree\n"
                  "   sums 12, 34, 37 that Tables 5 and 6 imply.)\n");
  absl::StrAppend(text,
                  "  Table 5 (10X1 -> 00X1): paper 1001 and 1011: l^0 37, delta^0 7, theta^0 7, l^1 74, delta^1 14, "
                  "theta^1 14 | ours:");
  for (const auto& t : plan->transfers)
    if (t.step == 3) absl::StrAppend(text, " ", Bits(t.from, 4), "->", Bits(t.to, 4), " ", t.count);
  absl::StrAppend(text, "\n  Table 6 (0011 -> 0001): paper theta^0 11 | ours:");
  for (const auto& t : plan->transfers)
    if (t.step == 4) absl::StrAppend(text, " ", Bits(t.from, 4), "->", Bits(t.to, 4), " ", t.count);
  std::vector<bool> alive = topo->alive_mask();
  absl::StrAppendFormat(text,
                        "\n  final max difference among healthy nodes: paper 0 (fully balanced) | ours %d; "
                        "steps 3 log N + T = 14 | ours %d\n\n",
                        balance::MaxDiff(plan->final_loads, alive), plan->metrics.steps);
  return absl::OkStatus();
}

// One point of Figs. 6 to 8: per-run speedups and migrations of the three
// algorithms on the same instances.
struct Point {
  std::array<std::vector<double>, kSpeedupAlgorithms> sp, mig, rounds, skipped;
  double dim = 0, depth = 0;
};

absl::StatusOr<Point> RunPoint(const PaperOptions& opts, int n, int f, int runs, MigrationCharge charge,
                               double min_average) {
  Point p;
  for (int r = 0; r < runs; ++r) {
    SpeedupConfig c;
    c.n = n;
    c.faults = f;
    c.charge = charge;
    c.round_min_average = min_average;
    c.seed = opts.seed * 1000003 + static_cast<uint64_t>(n * 100000 + f * 1000 + r);
    auto run = RunSpeedup(c);
    if (!run.ok()) return run.status();
    for (int a = 0; a < kSpeedupAlgorithms; ++a) {
      p.sp[a].push_back(run->speedup[a]);
      p.mig[a].push_back(run->migrations_per_node[a]);
      p.rounds[a].push_back(static_cast<double>(run->rounds[a]));
      p.skipped[a].push_back(static_cast<double>(run->skipped[a]));
    }
    p.dim += static_cast<double>(run->mcwa_dim) / runs;
    p.depth += static_cast<double>(run->mcwa_tree_depth) / runs;
  }
  return p;
}

// Our ranking at one point: the algorithms by mean speedup, ">" where the
// paired difference's 95% interval excludes 0, "~" where it does not.
std::string Ranking(const Point& p) {
  std::array<int, kSpeedupAlgorithms> order = {0, 1, 2};
  std::array<double, kSpeedupAlgorithms> mean{};
  for (int a = 0; a < kSpeedupAlgorithms; ++a) mean[a] = Summarise(p.sp[a]).mean;
  std::sort(order.begin(), order.end(), [&](int x, int y) { return mean[x] > mean[y]; });
  std::string s = SpeedupAlgorithmName(static_cast<SpeedupAlgorithm>(order[0]));
  for (int i = 1; i < kSpeedupAlgorithms; ++i) {
    const MeanCi d = Summarise(Differences(p.sp[order[i - 1]], p.sp[order[i]]));
    absl::StrAppend(&s, d.Excludes(0) ? " > " : " ~ ", SpeedupAlgorithmName(static_cast<SpeedupAlgorithm>(order[i])));
  }
  return s;
}

// The paper's ranking in words (§6 and the conclusion): MCWA first
// while the faults stay below the dimension, DEM first beyond it.
std::string PaperRanking(int n, int f) {
  if (f < n) return "MCWA first";
  if (f == n) return "(not stated)";
  return "DEM first";
}

// Whether our point agrees with the paper's ranking: MCWA's paired lead over
// both others excludes 0 below n faults, DEM's over both above n.
bool AgreesWithPaper(const Point& p, int n, int f) {
  auto leads = [&](int a) {
    for (int b = 0; b < kSpeedupAlgorithms; ++b)
      if (b != a) {
        const MeanCi d = Summarise(Differences(p.sp[a], p.sp[b]));
        if (!(d.mean - d.half > 0)) return false;
      }
    return true;
  };
  if (f < n) return leads(0);
  if (f > n) return leads(1);
  return true;
}

std::string Diff(const Point& p, int a, int b) {
  const MeanCi d = Summarise(Differences(p.sp[a], p.sp[b]));
  return absl::StrFormat("%+6.3f +- %5.3f", d.mean, d.half);
}

}  // namespace

absl::StatusOr<PaperReport> PaperNam(const PaperOptions& opts) {
  PaperReport report;
  std::string& text = report.text;
  if (auto s = CwaExample(&text); !s.ok()) return s;
  if (auto s = McwaExample(&text); !s.ok()) return s;

  const int runs = std::max(3, static_cast<int>(std::lround(300 * opts.scale)));
  const int relay_runs = std::max(3, static_cast<int>(std::lround(100 * opts.scale)));
  const int max_faults = 8;
  const char* claims[] = {
      "Fig. 6 (5-cube): MCWA best without faults; degraded beyond about five faults",
      "Fig. 7 (6-cube): MCWA best with few faults; degraded beyond six faults",
      "Fig. 8 (7-cube): MCWA outperforms the others up to seven faults",
  };
  absl::StrAppendFormat(
      &text,
      "Speedup over no balancing (section 6; model in sim/speedup.h: 100 tasks per node, "
      "migration 0.1 E[tau] per task per hop, paid by the node that sends and the node that receives, "
      "load information 0.01 E[tau] per communication step, a node asks when it starts its last "
      "task; a synchronous round (DEM, MCWA) goes on past the request broadcast and a load sum only "
      "while the average waiting load is at least 5 tasks per healthy node (our reading of "
      "\"severely underloaded\"), and stops every healthy node for its information steps; RID stops "
      "only the requester and its neighbours), %d runs per point (paper: 300), mean +- 95%% CI "
      "(Student t). Paired differences are over the same instances.\n"
      "The paper's figures are missing from the text; its words are quoted beside our numbers.\n",
      runs);
  std::vector<Series> mig_series = {{"MCWA (ours)", {}, {}}, {"DEM (ours)", {}, {}}};
  std::array<std::vector<double>, 2> mig7;  // 7-cube means per fault count
  std::string summary = "Ranking against the paper's (section 6: MCWA first while faults < n, DEM first beyond n):\n";
  for (int n = 5; n <= 7; ++n) {
    absl::StrAppendFormat(&text,
                          "%s\n  faults |      MCWA      |      DEM       |      RID       | MCWA k, T | "
                          "migr./node MCWA   DEM   RID | rounds MCWA  DEM   RID\n",
                          claims[n - 5]);
    std::vector<Series> series = {{"MCWA (ours)", {}, {}}, {"DEM (ours)", {}, {}}, {"RID (ours)", {}, {}}};
    std::string ranks = absl::StrFormat(
        "  faults | MCWA - DEM      | MCWA - RID      | DEM - RID       | "
        "ours                | paper\n");
    std::vector<std::string> agree, disagree;
    for (int f = 0; f <= max_faults; ++f) {
      if (opts.progress) opts.progress(absl::StrCat("nam speedup: ", n, "-cube, ", f, " faults"));
      auto p = RunPoint(opts, n, f, runs, MigrationCharge::kBothEnds, 5.0);
      if (!p.ok()) return p.status();
      absl::StrAppendFormat(&text, "  %6d |", f);
      for (int a = 0; a < kSpeedupAlgorithms; ++a) {
        const MeanCi c = Summarise(p->sp[a]);
        absl::StrAppendFormat(&text, " %5.3f +- %4.3f |", c.mean, c.half);
        series[a].x.push_back(f);
        series[a].y.push_back(c.mean);
      }
      absl::StrAppendFormat(&text, " %4.1f, %3.1f |       %5.1f %5.1f %5.1f |   %5.1f %5.1f %5.0f\n", p->dim, p->depth,
                            Summarise(p->mig[0]).mean, Summarise(p->mig[1]).mean, Summarise(p->mig[2]).mean,
                            Summarise(p->rounds[0]).mean, Summarise(p->rounds[1]).mean, Summarise(p->rounds[2]).mean);
      absl::StrAppendFormat(&ranks, "  %6d | %s | %s | %s | %-19s | %s\n", f, Diff(*p, 0, 1), Diff(*p, 0, 2),
                            Diff(*p, 1, 2), Ranking(*p), PaperRanking(n, f));
      if (f != n) (AgreesWithPaper(*p, n, f) ? agree : disagree).push_back(absl::StrCat(f));
      if (n == 7)
        for (int a = 0; a < 2; ++a) {
          mig_series[a].x.push_back(f);
          mig_series[a].y.push_back(Summarise(p->mig[a]).mean);
          mig7[a].push_back(Summarise(p->mig[a]).mean);
        }
    }
    absl::StrAppend(&text, "  Ranking, paired differences in speedup (mean +- 95% CI):\n", ranks);
    absl::StrAppendFormat(&summary,
                          "  %d-cube: paper's ranking (leader's paired lead over both others excludes 0) "
                          "at faults {%s}; not at {%s}\n",
                          n, absl::StrJoin(agree, ","), absl::StrJoin(disagree, ","));
    if (!opts.plot_dir.empty()) {
      auto png = WritePlot(opts.plot_dir, absl::StrCat("nam_fig", n + 1, "_speedup_", n, "cube"),
                           absl::StrCat("Seed 004 Fig. ", n + 1, ": speedup, ", n, "-cube"), "faulty nodes", "speedup",
                           series);
      if (!png.ok()) return png.status();
      report.plots.push_back(*png);
    }
  }
  absl::StrAppend(&text, summary);
  absl::StrAppendFormat(&text,
                        "Fig. 9 (7-cube, task migrations (task-hops) per healthy node; the figure is missing from "
                        "the text):\n  faults:");
  for (int f = 0; f <= max_faults; ++f) absl::StrAppendFormat(&text, " %5d", f);
  absl::StrAppend(&text, "\n  MCWA:  ");
  for (double m : mig7[0]) absl::StrAppendFormat(&text, " %5.1f", m);
  absl::StrAppend(&text, "   paper: escalates beyond about four faults\n  DEM:   ");
  for (double m : mig7[1]) absl::StrAppendFormat(&text, " %5.1f", m);
  absl::StrAppend(&text, "   paper: flat\n");

  // Relay charging: who stops for a migration. Same instances, fewer runs.
  absl::StrAppendFormat(&text,
                        "Relay charging examined (%d runs per point, same trigger): MCWA - DEM paired speedup "
                        "difference, mean +- 95%% CI, per charging rule\n  cube faults |",
                        relay_runs);
  const MigrationCharge charges[] = {MigrationCharge::kBothEnds, MigrationCharge::kHalfEachEnd,
                                     MigrationCharge::kSenderOnly, MigrationCharge::kNetFlow};
  for (MigrationCharge c : charges) absl::StrAppendFormat(&text, " %-22s |", MigrationChargeName(c));
  absl::StrAppend(&text, "\n");
  for (int n = 5; n <= 7; ++n)
    for (int f : {0, 1, n / 2, n - 1, n + 1}) {
      if (opts.progress) opts.progress(absl::StrCat("nam relay charging: ", n, "-cube, ", f, " faults"));
      absl::StrAppendFormat(&text, "  %4d %6d |", n, f);
      for (MigrationCharge c : charges) {
        auto p = RunPoint(opts, n, f, relay_runs, c, 5.0);
        if (!p.ok()) return p.status();
        absl::StrAppendFormat(&text, " %s (%-4s) |", Diff(*p, 0, 1), Ranking(*p).substr(0, 4));
      }
      absl::StrAppend(&text, "\n");
    }
  absl::StrAppend(&text,
                  "  (in brackets: the leader of our ranking under that rule; the last rule is not a reading of "
                  "the paper but a measure of what its ranking with faults would take)\n"
                  "Where we differ: see docs/algorithms.md, seed 004, for what the paper's ranking with faults "
                  "would take.\n");
  if (!opts.plot_dir.empty()) {
    auto png =
        WritePlot(opts.plot_dir, "nam_fig9_migrations_7cube", "Seed 004 Fig. 9: task migrations per node, 7-cube",
                  "faulty nodes", "migrations per node", mig_series);
    if (!png.ok()) return png.status();
    report.plots.push_back(*png);
  }
  return report;
}

}  // namespace hyperfed::sim
