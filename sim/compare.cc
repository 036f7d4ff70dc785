#include "sim/compare.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace hyperfed::sim {
namespace {

// Full cube: every hypercube algorithm; with faults, those that run around
// them (CWA needs a full cube).
const std::vector<std::string> kFullCube = {"dem", "dem-fixed", "improved-dem", "rid", "cwa", "unit-flow", "exact"};
const std::vector<std::string> kFaulty = {"dem", "dem-fixed", "improved-dem", "rid", "mcwa", "unit-flow", "exact"};

// Fewer faults than dimensions keep the healthy nodes connected (an n-cube
// stays connected after removing any n - 1 nodes), so every algorithm that
// needs a connected network can run.
int FaultsFor(int n) { return std::max(1, n / 2); }

}  // namespace

absl::StatusOr<std::vector<CompareRow>> Compare(const CompareConfig& c,
                                                const std::function<void(const std::string&)>& progress) {
  std::vector<CompareRow> rows;
  for (const char* caps : {"equal", "uniform:1:16"}) {
    for (bool faulty : {false, true}) {
      for (int n = c.min_dim; n <= c.max_dim; ++n) {
        const int f = faulty ? FaultsFor(n) : 0;
        for (const std::string& algo : faulty ? kFaulty : kFullCube) {
          if (progress) progress(absl::StrFormat("compare: %s capacities, %d faults, n = %d, %s", caps, f, n, algo));
          RunConfig rc;
          rc.algorithm = algo;
          rc.topology = absl::StrCat("hypercube:", n);
          rc.capacities = caps;
          rc.faults = f ? absl::StrCat("random:", f) : "";
          rc.trials = c.trials;
          rc.seed = c.seed * 1000003 + n * 17 + f;  // the same federations for every algorithm
          auto s = RunTrials(rc);
          if (!s.ok()) return s.status();
          rows.push_back({caps, f, n, *std::move(s)});
        }
      }
    }
  }
  return rows;
}

std::string CompareText(const CompareConfig& c, const std::vector<CompareRow>& rows) {
  std::string t = absl::StrFormat(
      "Every hypercube algorithm on the same random federations: %d per row, loads uniform in [0, 1000],\n"
      "seed %d. share err: max_share_error (DESIGN section 3; < 1 is exact). moved/min: jobs moved over the\n"
      "minimum that must move (sum of max(0, load - quota)). hops: task-hops on the cube. msgs: messages.\n"
      "steps: sequential communication steps.\n",
      c.trials, c.seed);
  std::string block;
  for (const CompareRow& r : rows) {
    const std::string key = absl::StrCat(r.capacities, "/", r.faults > 0);
    if (key != block) {
      block = key;
      absl::StrAppendFormat(&t, "\ncapacities %s, %s\n", r.capacities == "equal" ? "equal" : "uniform in [1, 16]",
                            r.faults ? "faults: floor(n/2) random failed sites (at least 1)" : "full cube");
      absl::StrAppend(&t, "  n  algorithm      share err mean    max   moved/min     hops      msgs   steps\n");
    }
    const RunSummary& s = r.summary;
    const double ratio = s.minimum_moves.mean > 0 ? s.tasks_moved.mean / s.minimum_moves.mean : 1.0;
    absl::StrAppendFormat(&t, " %2d  %-13s %10.3f %9.3f %9.3f %10.0f %9.0f %7.1f\n", r.n, s.config.algorithm,
                          s.max_share_error.mean, s.max_share_error.max, ratio, s.task_hops.mean, s.messages.mean,
                          s.steps.mean);
  }
  return t;
}

std::string CompareJson(const CompareConfig& c, const std::vector<CompareRow>& rows) {
  std::vector<std::string> out;
  for (const CompareRow& r : rows) {
    const RunSummary& s = r.summary;
    out.push_back(absl::StrFormat(
        "{\"capacities\": \"%s\", \"faults\": %d, \"n\": %d, \"algorithm\": \"%s\", \"max_share_error\": "
        "{\"mean\": %.6g, \"max\": %.6g}, \"tasks_moved\": {\"mean\": %.6g}, \"minimum_moves\": {\"mean\": %.6g}, "
        "\"task_hops\": {\"mean\": %.6g}, \"messages\": {\"mean\": %.6g}, \"steps\": {\"mean\": %.6g}}",
        r.capacities, r.faults, r.n, s.config.algorithm, s.max_share_error.mean, s.max_share_error.max,
        s.tasks_moved.mean, s.minimum_moves.mean, s.task_hops.mean, s.messages.mean, s.steps.mean));
  }
  return absl::StrCat("{\"trials\": ", c.trials, ", \"seed\": ", c.seed, ", \"rows\": [\n  ",
                      absl::StrJoin(out, ",\n  "), "\n]}\n");
}

}  // namespace hyperfed::sim
