// hyperfed-sim: runs hyperfed's balancing algorithms offline and reproduces
// the papers the project is built on.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "daemon/balance/modes.h"
#include "sim/algorithms.h"
#include "sim/federation/federation.h"
#include "sim/compare.h"
#include "sim/paper.h"
#include "sim/replay.h"
#include "sim/runner.h"

namespace {

using hyperfed::sim::Papers;

constexpr int kUsageError = 2;

const char kUsage[] =
    "usage:\n"
    "  hyperfed-sim run --algorithm A --topology T [--loads L] [--capacities C] [--faults F]\n"
    "                   [--trials N] [--seed S] [--json]\n"
    "  hyperfed-sim paper NAME|all [--seed S] [--scale X] [--plot DIR]\n"
    "  hyperfed-sim compare [--dims LO:HI] [--trials N] [--seed S] [--json]\n"
    "  hyperfed-sim replay TRACE.swf [--sites 96,108,48,144,64,8,8] [--origin proportional|uniform|hot[:SITE]]\n"
    "                   [--load L] [--interval S] [--hysteresis S] [--policies P,...|all] [--seed S]\n"
    "                   [--estimates trace|exact|factor:F|model] [--heartbeat S] [--margin S]\n"
    "                   [--publish-on-end] [--records FILE]\n"
    "                   [--jobs N] [--json]\n"
    "  hyperfed-sim federation [--sites N] [--seeds A..B] [--faults none|crash|network|all] [--rounds R]\n"
    "                   [--algorithm A] [--job-choice newest|gain] [--latency-ms MS] [--heartbeat-ms MS]\n"
    "                   [--jobs-per-site N]\n"
    "                   [--state-dir DIR] [--detail] [--trace]\n"
    "  hyperfed-sim list\n"
    "T: hypercube:N, torus:4x4, mesh:8x8, ring:64, chain:8, graph:FILE\n"
    "L: uniform:LO:HI (default uniform:0:1000) or list:a,b,...\n"
    "C: equal (default), uniform:LO:HI or list:a,b,...   F: list:5,6,8,10 or random:K\n";

int UsageError(const std::string& msg) {
  std::cerr << "hyperfed-sim: " << msg << "\n";
  return kUsageError;
}

// A command's flags, name -> value ("true" for a switch), and its positional
// arguments, as CLI11 parsed them.
struct Parsed {
  std::map<std::string, std::string> flags;
  std::vector<std::string> positional;
};

// Adds a command whose flags (`valued`: name and placeholder; `bools`) and
// positional arguments (named `positional`, if any) land in *out.
CLI::App* Command(CLI::App* app, const std::string& name, const std::string& summary,
                  const std::vector<std::pair<std::string, std::string>>& valued, const std::vector<std::string>& bools,
                  const std::string& positional, Parsed* out) {
  CLI::App* c = app->add_subcommand(name, summary);
  for (const auto& [flag, placeholder] : valued)
    c->add_option_function<std::string>("--" + flag, [out, flag = flag](const std::string& v) { out->flags[flag] = v; })
        ->type_name(placeholder);
  for (const std::string& flag : bools)
    c->add_flag_callback("--" + flag, [out, flag] { out->flags[flag] = "true"; });
  if (!positional.empty()) c->add_option(positional, out->positional);
  return c;
}

bool StderrIsTerminal() { return isatty(fileno(stderr)); }

int Run(std::map<std::string, std::string> f) {
  if (!f.count("algorithm")) return UsageError("run needs --algorithm");
  if (!f.count("topology")) return UsageError("run needs --topology");
  hyperfed::sim::RunConfig c;
  c.algorithm = f["algorithm"];
  c.topology = f["topology"];
  if (f.count("loads")) c.loads = f["loads"];
  if (f.count("capacities")) c.capacities = f["capacities"];
  if (f.count("faults")) c.faults = f["faults"];
  if (f.count("trials") && (!absl::SimpleAtoi(f["trials"], &c.trials) || c.trials < 1))
    return UsageError(absl::StrCat("bad --trials '", f["trials"], "': expected an integer >= 1"));
  if (f.count("seed") && !absl::SimpleAtoi(f["seed"], &c.seed))
    return UsageError(absl::StrCat("bad --seed '", f["seed"], "': expected a non-negative integer"));
  std::function<void(int64_t, int64_t)> progress;
  if (StderrIsTerminal() && c.trials >= 1000)
    progress = [](int64_t done, int64_t total) {
      std::fprintf(stderr, "\rtrial %lld/%lld", static_cast<long long>(done), static_cast<long long>(total));
      if (done == total) std::fprintf(stderr, "\n");
    };
  auto s = hyperfed::sim::RunTrials(c, progress);
  if (!s.ok()) {
    if (s.status().code() == absl::StatusCode::kInvalidArgument) return UsageError(std::string(s.status().message()));
    std::cerr << "hyperfed-sim: " << s.status().message() << "\n";
    return 1;
  }
  std::cout << (f.count("json") ? hyperfed::sim::SummaryJson(*s) : hyperfed::sim::SummaryText(*s));
  return 0;
}

int Paper(std::map<std::string, std::string> f, const std::vector<std::string>& pos) {
  std::vector<std::string> names;
  for (const auto& p : Papers()) names.push_back(p.name);
  if (pos.size() != 1) return UsageError(absl::StrCat("paper needs one NAME: all, ", absl::StrJoin(names, ", ")));
  hyperfed::sim::PaperOptions o;
  if (f.count("seed") && !absl::SimpleAtoi(f["seed"], &o.seed))
    return UsageError(absl::StrCat("bad --seed '", f["seed"], "': expected a non-negative integer"));
  if (f.count("scale") && (!absl::SimpleAtod(f["scale"], &o.scale) || !(o.scale > 0) || o.scale > 100))
    return UsageError(absl::StrCat("bad --scale '", f["scale"], "': expected a number in (0, 100]"));
  if (f.count("plot")) o.plot_dir = f["plot"];
  if (StderrIsTerminal())
    o.progress = [](const std::string& line) { std::fprintf(stderr, "\r\033[K%s", line.c_str()); };
  bool found = false;
  for (const auto& p : Papers()) {
    if (pos[0] != "all" && pos[0] != p.name) continue;
    found = true;
    std::cout << "=== " << p.name << " (seed " << p.seed << "): " << p.summary << "\n" << std::flush;
    auto r = p.run(o);
    if (o.progress) std::fprintf(stderr, "\r\033[K");
    if (!r.ok()) {
      std::cerr << "hyperfed-sim: paper " << p.name << ": " << r.status().message() << "\n";
      return 1;
    }
    std::cout << r->text << "\n";
    for (const auto& png : r->plots) std::cout << "wrote " << png << "\n";
    std::cout << std::flush;
  }
  if (!found)
    return UsageError(absl::StrCat("bad paper name '", pos[0], "': expected all, ", absl::StrJoin(names, ", ")));
  return 0;
}

int CompareCmd(std::map<std::string, std::string> f) {
  hyperfed::sim::CompareConfig c;
  if (f.count("dims")) {
    std::vector<std::string> p = absl::StrSplit(f["dims"], ':');
    if (p.size() != 2 || !absl::SimpleAtoi(p[0], &c.min_dim) || !absl::SimpleAtoi(p[1], &c.max_dim) || c.min_dim < 1 ||
        c.max_dim < c.min_dim || c.max_dim > 16)
      return UsageError(absl::StrCat("bad --dims '", f["dims"], "': expected LO:HI with 1 <= LO <= HI <= 16"));
  }
  if (f.count("trials") && (!absl::SimpleAtoi(f["trials"], &c.trials) || c.trials < 1))
    return UsageError(absl::StrCat("bad --trials '", f["trials"], "': expected an integer >= 1"));
  if (f.count("seed") && !absl::SimpleAtoi(f["seed"], &c.seed))
    return UsageError(absl::StrCat("bad --seed '", f["seed"], "': expected a non-negative integer"));
  std::function<void(const std::string&)> progress;
  if (StderrIsTerminal()) progress = [](const std::string& line) { std::fprintf(stderr, "\r\033[K%s", line.c_str()); };
  auto rows = hyperfed::sim::Compare(c, progress);
  if (progress) std::fprintf(stderr, "\r\033[K");
  if (!rows.ok()) {
    std::cerr << "hyperfed-sim: " << rows.status().message() << "\n";
    return 1;
  }
  std::cout << (f.count("json") ? hyperfed::sim::CompareJson(c, *rows) : hyperfed::sim::CompareText(c, *rows));
  return 0;
}

int Replay(std::map<std::string, std::string> f, const std::vector<std::string>& pos) {
  if (pos.size() != 1) return UsageError("replay needs one TRACE (an SWF file)");
  std::vector<int64_t> sites;
  const std::string site_list = f.count("sites") ? f["sites"] : "96,108,48,144,64,8,8";
  for (absl::string_view s : absl::StrSplit(site_list, ',')) {
    int64_t c;
    if (!absl::SimpleAtoi(s, &c) || c < 1 || c > (int64_t{1} << 30))
      return UsageError(absl::StrCat("bad --sites '", site_list, "': expected cores per site, e.g. 96,108,48"));
    sites.push_back(c);
  }
  if (sites.size() > 1024) return UsageError("bad --sites: at most 1024 sites");
  hyperfed::sim::WorkloadOptions wo;
  auto origin = hyperfed::sim::ParseOrigin(f.count("origin") ? f["origin"] : "proportional", sites);
  if (!origin.ok()) return UsageError(std::string(origin.status().message()));
  wo.origin = *origin;
  if (f.count("load") && (!absl::SimpleAtod(f["load"], &wo.load) || !(wo.load > 0) || wo.load > 100))
    return UsageError(absl::StrCat("bad --load '", f["load"], "': expected an offered load in (0, 100]"));
  if (f.count("seed") && !absl::SimpleAtoi(f["seed"], &wo.seed))
    return UsageError(absl::StrCat("bad --seed '", f["seed"], "': expected a non-negative integer"));
  if (f.count("jobs") && (!absl::SimpleAtoi(f["jobs"], &wo.max_jobs) || wo.max_jobs < 1))
    return UsageError(absl::StrCat("bad --jobs '", f["jobs"], "': expected an integer >= 1"));
  if (f.count("estimates")) {
    auto e = hyperfed::sim::ParseEstimates(f["estimates"]);
    if (!e.ok()) return UsageError(std::string(e.status().message()));
    wo.estimates = *e;
  }
  hyperfed::sim::ReplayOptions ro;
  if (f.count("heartbeat") && (!absl::SimpleAtoi(f["heartbeat"], &ro.heartbeat) || ro.heartbeat < 0))
    return UsageError(absl::StrCat("bad --heartbeat '", f["heartbeat"], "': expected seconds >= 0"));
  if (f.count("margin") && (!absl::SimpleAtoi(f["margin"], &ro.margin) || ro.margin < 1))
    return UsageError(absl::StrCat("bad --margin '", f["margin"], "': expected seconds >= 1"));
  ro.publish_on_end = f.count("publish-on-end") > 0;
  ro.keep_records = f.count("records") > 0;
  if (f.count("interval") && (!absl::SimpleAtoi(f["interval"], &ro.interval) || ro.interval < 1))
    return UsageError(absl::StrCat("bad --interval '", f["interval"], "': expected seconds >= 1"));
  if (f.count("hysteresis") && (!absl::SimpleAtoi(f["hysteresis"], &ro.hysteresis) || ro.hysteresis < 0))
    return UsageError(absl::StrCat("bad --hysteresis '", f["hysteresis"], "': expected seconds >= 0"));
  std::vector<std::string> policies = hyperfed::sim::ReplayPolicyNames();
  if (f.count("policies") && f["policies"] != "all") {
    policies = absl::StrSplit(f["policies"], ',');
    for (std::string& p : policies)
      if (p == "default") p = std::string(hyperfed::sim::kDefaultReplayPolicy);
    for (const std::string& p : policies)
      if (auto st = hyperfed::sim::CheckReplayPolicy(p); !st.ok())
        return UsageError(absl::StrCat("bad --policies: ", st.message()));
  }
  auto trace = hyperfed::sim::ReadSwf(pos[0]);
  if (!trace.ok()) {
    if (trace.status().code() == absl::StatusCode::kInvalidArgument)
      return UsageError(std::string(trace.status().message()));
    std::cerr << "hyperfed-sim: " << trace.status().message() << "\n";
    return 1;
  }
  auto w = hyperfed::sim::MakeWorkload(*trace, sites, wo);
  if (!w.ok()) return UsageError(absl::StrCat(pos[0], ": ", w.status().message()));
  hyperfed::sim::ReplayRun run;
  run.trace = pos[0];
  run.origin = hyperfed::sim::OriginName(wo.origin);
  run.seed = wo.seed;
  run.estimates = hyperfed::sim::EstimatesName(wo.estimates);
  run.options = ro;
  for (const std::string& p : policies) {
    if (StderrIsTerminal()) std::fprintf(stderr, "\r\033[Kreplaying %s", p.c_str());
    auto r = hyperfed::sim::ReplayPolicy(*w, p, ro);
    if (!r.ok()) {
      std::cerr << "\nhyperfed-sim: replay " << p << ": " << r.status().message() << "\n";
      return 1;
    }
    run.results.push_back(std::move(*r));
  }
  if (StderrIsTerminal()) std::fprintf(stderr, "\r\033[K");
  if (ro.keep_records) {
    // One line a job and policy, for breakdowns by job class.
    std::ofstream out(f["records"]);
    out << "policy,job,submit,run,limit,cores,origin,site,start,moves\n";
    for (const auto& r : run.results)
      for (size_t j = 0; j < r.records.size(); ++j) {
        const auto& job = w->jobs[j];
        out << r.policy << "," << j << "," << job.submit << "," << job.run << "," << job.limit << "," << job.cores
            << "," << w->origin[j] << "," << r.records[j].site << "," << r.records[j].start << ","
            << r.records[j].moves << "\n";
      }
    if (!out) {
      std::cerr << "hyperfed-sim: cannot write " << f["records"] << "\n";
      return 1;
    }
  }
  std::cout << (f.count("json") ? hyperfed::sim::ReplayJson(*w, run) : hyperfed::sim::ReplayText(*w, run));
  return 0;
}

int List() {
  std::cout << "algorithms:\n";
  for (const auto& a : hyperfed::sim::Algorithms()) std::cout << "  " << a.name << "  " << a.summary << "\n";
  std::cout << "papers:\n";
  for (const auto& p : Papers()) std::cout << "  " << p.name << "  (seed " << p.seed << ") " << p.summary << "\n";
  return 0;
}

}  // namespace

// `federation`: the daemon's own code for every site in one deterministic
// world (sim/federation/federation.h, docs/design.md §10).
int Federation(std::map<std::string, std::string> f) {
  hyperfed::fedsim::FederationOptions o;
  auto count = [&](const char* flag, int lo, int hi, int* out) {
    if (!f.count(flag)) return true;
    return absl::SimpleAtoi(f[flag], out) && *out >= lo && *out <= hi;
  };
  if (!count("sites", 2, 1 << 16, &o.sites)) return UsageError("bad --sites: expected an integer in [2, 65536]");
  if (!count("rounds", 1, 10000, &o.rounds)) return UsageError("bad --rounds: expected an integer in [1, 10000]");
  if (!count("jobs-per-site", 0, 100000, &o.jobs_per_site))
    return UsageError("bad --jobs-per-site: expected an integer in [0, 100000]");
  int latency_ms = 2;
  if (!count("latency-ms", 0, 60000, &latency_ms)) return UsageError("bad --latency-ms: expected 0..60000");
  o.latency = absl::Milliseconds(latency_ms);
  int heartbeat_ms = 0;
  if (!count("heartbeat-ms", 0, 600000, &heartbeat_ms)) return UsageError("bad --heartbeat-ms: expected 0..600000");
  o.heartbeat = absl::Milliseconds(heartbeat_ms);
  uint64_t first = 1, last = 1;
  if (f.count("seeds")) {
    std::vector<std::string> ab = absl::StrSplit(f["seeds"], absl::MaxSplits("..", 1));
    if (!absl::SimpleAtoi(ab[0], &first) || !absl::SimpleAtoi(ab.size() > 1 ? ab[1] : ab[0], &last) || last < first)
      return UsageError(absl::StrCat("bad --seeds '", f["seeds"], "': expected N or A..B with A <= B"));
  }
  if (f.count("faults")) o.faults = f["faults"];
  const std::vector<std::string> profiles = hyperfed::fedsim::FaultProfiles();
  if (std::find(profiles.begin(), profiles.end(), o.faults) == profiles.end())
    return UsageError(absl::StrCat("bad --faults '", o.faults, "': one of ", absl::StrJoin(profiles, ", ")));
  if (f.count("algorithm")) o.algorithm = f["algorithm"];
  if (auto st = hyperfed::balance::CheckRoundMode(o.algorithm); !st.ok()) return UsageError(std::string(st.message()));
  if (f.count("job-choice")) {
    auto choice = hyperfed::balance::ParseJobChoice(f["job-choice"]);
    if (!choice.ok()) return UsageError(absl::StrCat("bad --job-choice: ", choice.status().message()));
    o.job_choice = *choice;
  }
  o.full_trace = f.count("trace") > 0;
  // Every site keeps its journal and queue in SQLite: in memory-backed
  // /dev/shm when there is one.
  // A directory of this run's own under DIR (removed at the end; DIR stays).
  std::string dir = f.count("state-dir") ? f["state-dir"] : "";
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (tmp && *tmp ? tmp : "/tmp");
  }
  dir = absl::StrCat(dir, "/hyperfed-sim-", getpid());
  o.state_root = dir;
  const bool detail = f.count("detail") || last - first < 3;
  int64_t violations = 0, seeds = 0;
  hyperfed::fedsim::RunSeeds(o, first, last, [&](hyperfed::fedsim::SeedResult r) {
    ++seeds;
    violations += static_cast<int64_t>(r.violations.size());
    int finished = 0;
    int64_t moved = 0, messages = 0, bytes = 0;
    double longest = 0, longest_deadline = 0;
    for (const auto& x : r.rounds) {
      finished += x.end == "finished";
      if (x.seconds >= longest) {
        longest = x.seconds;
        longest_deadline = x.deadline_seconds;
      }
      moved += x.moved;
      messages += x.messages;
      bytes += x.bytes;
    }
    const size_t n = std::max<size_t>(1, r.rounds.size());
    std::printf(
        "seed %llu: %d sites of a %d-cube (%d positions), %zu rounds (%d finished), %.0f messages and %.1f KiB a "
        "round, moved %lld jobs, longest round %.1f s simulated (deadline %.0f s); %lld crashes, %lld restarts, %lld "
        "pauses, %lld partitions, %lld drains, %lld jobs submitted mid-round; %.1f s simulated in %.2f s CPU; %zu "
        "violations; trace hash %016llx\n",
        static_cast<unsigned long long>(r.seed), r.sites, r.dimension, r.positions, r.rounds.size(), finished,
        static_cast<double>(messages) / n, static_cast<double>(bytes) / n / 1024, static_cast<long long>(moved),
        longest, longest_deadline, static_cast<long long>(r.crashes), static_cast<long long>(r.restarts),
        static_cast<long long>(r.pauses), static_cast<long long>(r.partitions), static_cast<long long>(r.drains),
        static_cast<long long>(r.submitted), r.simulated_seconds, r.cpu_seconds, r.violations.size(),
        static_cast<unsigned long long>(r.trace_hash));
    // What the membership costs and how fast it sees a crash (docs/design.md
    // §10): a site's bytes are what it sent and received.
    double site_round = 0, max_site_round = 0, site_heartbeat = 0, max_site_heartbeat = 0;
    for (const auto& x : r.rounds) {
      site_round += x.site_round_bytes / n;
      max_site_round += static_cast<double>(x.max_site_round_bytes) / n;
      site_heartbeat += x.site_heartbeat_bytes / n;
      max_site_heartbeat += static_cast<double>(x.max_site_heartbeat_bytes) / n;
    }
    double known_mean = 0, known_max = 0;
    for (double k : r.known_after) {
      known_mean += k / static_cast<double>(r.known_after.size());
      known_max = std::max(known_max, k);
    }
    double near_mean = 0, near_max = 0;
    for (double k : r.neighbours_after) {
      near_mean += k / static_cast<double>(r.neighbours_after.size());
      near_max = std::max(near_max, k);
    }
    std::string known = r.known_after.empty()
                            ? std::string("no crash known to every live site")
                            : absl::StrFormat("%zu crashes known to every live site after %.2f s (mean), %.2f s (most)",
                                              r.known_after.size(), known_mean, known_max);
    if (!r.neighbours_after.empty())
      absl::StrAppend(&known, absl::StrFormat(", to its live cube neighbours after %.2f s (mean), %.2f s (most)",
                                              near_mean, near_max));
    std::printf(
        "  membership: %.1f heartbeats a site a second; a site's bytes a round (sent and received, mean of "
        "rounds): round messages %.1f KiB (most of any site %.1f KiB), heartbeats %.1f KiB (most %.1f KiB); %s, "
        "%lld restarted first; %lld false downs (of %lld downs)\n",
        r.HeartbeatsPerSiteSecond(), site_round / 1024, max_site_round / 1024, site_heartbeat / 1024,
        max_site_heartbeat / 1024, known.c_str(), static_cast<long long>(r.crashes_unknown),
        static_cast<long long>(r.false_downs), static_cast<long long>(r.downs));
    if (detail)
      for (const auto& x : r.rounds)
        std::printf(
            "  round %d %s: %s; %d live sites, %lld messages (nN = %d x %d = %d), %.1f KiB, largest %.1f "
            "KiB, %lld heartbeats (%.1f KiB); per site %.1f KiB round messages (most %.1f KiB), %.1f KiB "
            "heartbeats (most %.1f KiB); %.3f s simulated at %d ms a message (deadline %.0f s); share "
            "error %.2f -> %.2f, moved %lld\n",
            x.number, x.id.empty() ? "-" : x.id.c_str(), x.end.c_str(), x.live_sites,
            static_cast<long long>(x.messages), r.dimension, r.sites, r.dimension * r.sites,
            static_cast<double>(x.bytes) / 1024, static_cast<double>(x.largest) / 1024,
            static_cast<long long>(x.heartbeats), static_cast<double>(x.heartbeat_bytes) / 1024,
            x.site_round_bytes / 1024, static_cast<double>(x.max_site_round_bytes) / 1024,
            x.site_heartbeat_bytes / 1024, static_cast<double>(x.max_site_heartbeat_bytes) / 1024, x.seconds,
            latency_ms, x.deadline_seconds, x.share_error_before, x.share_error_after, static_cast<long long>(x.moved));
    for (const std::string& v : r.violations) std::printf("  VIOLATION %s\n", v.c_str());
    if (!r.violations.empty() || o.full_trace) {
      std::printf("  trace of seed %llu (%s; hash of every line %016llx):\n", static_cast<unsigned long long>(r.seed),
                  o.full_trace ? "every line" : "its last lines", static_cast<unsigned long long>(r.trace_hash));
      for (const std::string& t : r.trace) std::printf("    %s\n", t.c_str());
      std::printf(
          "  replay: hyperfed-sim federation --sites %d --seeds %llu..%llu --faults %s --rounds %d "
          "--algorithm %s --job-choice %s --latency-ms %d --heartbeat-ms %d --jobs-per-site %d --trace\n",
          o.sites, static_cast<unsigned long long>(r.seed), static_cast<unsigned long long>(r.seed), o.faults.c_str(),
          o.rounds, o.algorithm.c_str(), std::string(hyperfed::balance::JobChoiceName(o.job_choice)).c_str(),
          latency_ms, heartbeat_ms, o.jobs_per_site);
    }
    std::fflush(stdout);
  });
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::printf("federation: %lld violations in %lld seeds\n", static_cast<long long>(violations),
              static_cast<long long>(seeds));
  return violations > 0 ? 1 : 0;
}

int main(int argc, char** argv) {
  CLI::App app("runs hyperfed's balancing algorithms offline and reproduces the papers", "hyperfed-sim");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->disable_flag_override();
  app.allow_extras()->require_subcommand(0, 1);  // words nobody takes are reported below
  app.set_help_flag("-h,--help", "print usage");
  Parsed p;
  CLI::App* run = Command(&app, "run", "run an algorithm over random or given loads",
                          {{"algorithm", "A"}, {"topology", "T"}, {"loads", "L"}, {"capacities", "C"},
                           {"faults", "F"}, {"trials", "N"}, {"seed", "S"}},
                          {"json"}, "", &p);
  CLI::App* paper =
      Command(&app, "paper", "reproduce a paper's tables", {{"seed", "S"}, {"scale", "X"}, {"plot", "DIR"}}, {},
              "NAME", &p);
  CLI::App* compare = Command(&app, "compare", "every algorithm on hypercubes of growing dimension",
                              {{"dims", "LO:HI"}, {"trials", "N"}, {"seed", "S"}}, {"json"}, "", &p);
  CLI::App* replay = Command(&app, "replay", "replay an SWF trace under every balancing policy",
                             {{"sites", "LIST"}, {"origin", "O"}, {"load", "L"}, {"interval", "S"},
                              {"hysteresis", "S"}, {"policies", "P"}, {"seed", "S"}, {"jobs", "N"},
                              {"estimates", "E"}, {"heartbeat", "S"}, {"margin", "S"}, {"records", "FILE"}},
                             {"json", "publish-on-end"}, "TRACE", &p);
  CLI::App* federation = Command(
      &app, "federation", "every site's own daemon code under simulated time, network and faults",
      {{"sites", "N"}, {"seeds", "A..B"}, {"faults", "PROFILE"}, {"rounds", "R"}, {"algorithm", "A"},
       {"job-choice", "C"}, {"latency-ms", "MS"}, {"heartbeat-ms", "MS"}, {"jobs-per-site", "N"}, {"state-dir", "DIR"}},
      {"detail", "trace"}, "", &p);
  CLI::App* list = Command(&app, "list", "the algorithms and papers", {}, {}, "", &p);
  CLI::App* help = Command(&app, "help", "print usage", {}, {}, "", &p);
  std::string error;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << kUsage;
    return 0;
  } catch (const CLI::ParseError& e) {
    error = e.what();
  }
  const auto parsed = app.get_subcommands();
  if (auto extra = app.remaining(true); !extra.empty()) {
    const std::string& w = extra.front();
    if (absl::StartsWith(w, "-")) return UsageError(absl::StrCat("unknown flag ", w.substr(0, w.find('='))));
    if (parsed.empty()) return UsageError(absl::StrCat("unknown command '", w, "'\n", kUsage));
    return UsageError(absl::StrCat("unexpected argument '", w, "'"));
  }
  if (!error.empty()) return UsageError(error);
  if (parsed.empty()) {
    std::cerr << kUsage;
    return kUsageError;
  }
  const CLI::App* cmd = parsed.front();
  if (cmd == run) return Run(p.flags);
  if (cmd == paper) return Paper(p.flags, p.positional);
  if (cmd == compare) return CompareCmd(p.flags);
  if (cmd == replay) return Replay(p.flags, p.positional);
  if (cmd == federation) return Federation(p.flags);
  if (cmd == list) return List();
  if (cmd == help) std::cout << kUsage;
  return 0;
}
