// The daemon replays too (issue 13, item 7): the first N jobs of an SWF
// trace, prepared exactly as `hyperfed-sim replay` prepares them (sim/replay.h:
// MakeWorkload with the same origins, load compression and seed), are
// submitted to a real local federation of hyperfedd processes running the
// `sim` scheduler at an accelerated time scale, each job at its origin site
// at its (compressed) submit time / scale. When every job has ended the
// federation is stopped and each site's sim-scheduler.db is read: per
// federation key, the copy that ran (its site, start and end, scaled back to
// simulated seconds) and the copies cancelled by moves. The same metrics as
// `hyperfed-sim replay` are printed for what the daemons did beside
// ReplayPolicy's prediction for the same input, with the ratio.
//
// Run: build/hyperfed_daemon_replay TRACE [--sites 96,108,48,144,64,8,8]
//   [--origin proportional] [--load L] [--seed S] [--jobs 2000] [--scale 2000]
//   [--interval 60] [--hysteresis 600] [--policy default|arrival+queue[+MODE/CHOICE]|MODE/CHOICE|none]
//   [--estimates trace|exact|factor:F|model] [--margin 60]
//   [--heartbeat-ms MS] [--min-imbalance N] [--timeout S] [--json]
// --min-imbalance is the daemons' balancer.min_imbalance (default 1: a timer
// round is skipped while the movable loads' max share error is below 1);
// the simulator has no such gate, 0 matches it.
// (scripts/replay builds and runs it; figures in docs/benchmarks.md, "Daemon
// replay against the simulator").
//
// Exit codes: 0 every job ran exactly once; 1 a job was lost, ran twice or
// did not end in time (the report says which); 2 bad usage.

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sim/replay.h"
#include "tests/integration/federation_harness.h"

using hyperfed::testing::FederationOptions;
using hyperfed::testing::TestFederation;
namespace sim = hyperfed::sim;
namespace v1 = hyperfed::v1;

namespace {

constexpr char kUsage[] =
    "usage: hyperfed_daemon_replay TRACE.swf [--sites 96,108,48,144,64,8,8]\n"
    "         [--origin proportional|uniform|hot[:SITE]]\n"
    "         [--load L] [--seed S] [--jobs 2000] [--scale 2000] [--interval 60] [--hysteresis 600]\n"
    "         [--policy default|arrival+queue[+MODE/CHOICE]|MODE/CHOICE|none] [--estimates E] [--margin S]\n"
    "         [--heartbeat-ms MS] [--min-imbalance N] [--timeout S] [--json]\n";

int Usage(const std::string& msg) {
  std::fprintf(stderr, "hyperfed_daemon_replay: %s\n%s", msg.c_str(), kUsage);
  return 2;
}

struct Args {
  std::string trace;
  std::vector<int64_t> sites = {96, 108, 48, 144, 64, 8, 8};
  std::string origin = "proportional";
  double load = 0;
  uint64_t seed = 1;
  int64_t jobs = 2000;
  double scale = 2000;
  int64_t interval = 60;     // simulated seconds
  int64_t hysteresis = 600;  // simulated seconds
  std::string policy = "default";  // sim::kDefaultReplayPolicy
  std::string estimates = "trace";
  int64_t margin = 60;  // simulated seconds: balancer.placement_margin
  int64_t heartbeat_ms = 0;  // real; 0: the real interval, within [10, 300] ms
  int min_imbalance = -1;    // balancer.min_imbalance; -1: the daemon's default (1)
  double timeout_s = 0;      // real; 0: the workload's span / scale + 120 s
  bool json = false;
};

// What one copy of a job (one row of a site's sim-scheduler.db) holds.
struct Copy {
  int site = 0;
  int state = 0;  // the adapter's stored codes: 0 pending, 1 held, 2 running, 3 done, 4 cancelled
  int64_t queued_ms = 0;
  int64_t started_ms = -1;
  int64_t finish_ms = -1;
  std::string name;
};
constexpr int kDone = 3, kCancelled = 4;

absl::Status ReadSite(const std::string& path, int site, std::map<std::string, std::vector<Copy>>* by_key) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return absl::NotFoundError(absl::StrCat(path, ": ", msg));
  }
  sqlite3_stmt* st = nullptr;
  const char* sql =
      "SELECT key, state, queued_at_ms, COALESCE(started_at_ms, -1), COALESCE(finish_at_ms, -1), name FROM jobs";
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
    std::string msg = sqlite3_errmsg(db);
    sqlite3_close(db);
    return absl::InternalError(absl::StrCat(path, ": ", msg));
  }
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    Copy c;
    c.site = site;
    c.state = sqlite3_column_int(st, 1);
    c.queued_ms = sqlite3_column_int64(st, 2);
    c.started_ms = sqlite3_column_int64(st, 3);
    c.finish_ms = sqlite3_column_int64(st, 4);
    c.name = reinterpret_cast<const char*>(sqlite3_column_text(st, 5));
    (*by_key)[reinterpret_cast<const char*>(sqlite3_column_text(st, 0))].push_back(std::move(c));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  if (rc != SQLITE_DONE) return absl::InternalError(absl::StrCat(path, ": read failed"));
  return absl::OkStatus();
}

// PolicyResult from per-job starts, ends and moves: the same formulas as
// sim/replay.cc's Replayer::Result (waits from the trace's submit times).
// `submit` per job: the trace's (compressed) submit times, or when the
// origin actually queued the job.
double Ratio(double a, double b) { return b != 0 ? a / b : (a == 0 ? 1.0 : NAN); }

std::string Num(double v) { return std::isnan(v) ? "null" : absl::StrFormat("%.6g", v); }

struct Row {
  const char* name;
  double daemon, prediction;
};
std::vector<Row> Rows(const sim::PolicyResult& d, const sim::PolicyResult& p) {
  return {{"mean_wait", d.mean_wait, p.mean_wait},
          {"median_wait", d.median_wait, p.median_wait},
          {"p95_wait", d.p95_wait, p.p95_wait},
          {"mean_bounded_slowdown", d.mean_bounded_slowdown, p.mean_bounded_slowdown},
          {"utilisation", d.utilisation, p.utilisation},
          {"jobs_moved", static_cast<double>(d.jobs_moved), static_cast<double>(p.jobs_moved)},
          {"jobs_moved_pct", d.jobs_moved_pct, p.jobs_moved_pct},
          {"moves", static_cast<double>(d.moves), static_cast<double>(p.moves)},
          {"moves_per_moved_job", d.moves_per_moved_job, p.moves_per_moved_job}};
}

absl::StatusOr<Args> Parse(int argc, char** argv) {
  Args a;
  std::vector<std::string> pos;
  CLI::App app("the daemon replay", "hyperfed_daemon_replay");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.allow_extras();  // a word nobody takes is reported below
  app.set_help_flag();  // the usage comes with every usage error
  app.add_option("TRACE", pos);
  // A valued flag; `set` stores the value, or says what it expected.
  auto flag = [&app](const std::string& name, const std::string& placeholder,
                     std::function<std::string(const std::string&)> set) {
    app.add_option_function<std::string>(name, [name, set](const std::string& v) {
         if (std::string want = set(v); !want.empty())
           throw CLI::ValidationError(absl::StrCat("bad ", name, " '", v, "': ", want));
       })->type_name(placeholder);
  };
  flag("--sites", "LIST", [&a](const std::string& v) -> std::string {
    a.sites.clear();
    for (absl::string_view s : absl::StrSplit(v, ',')) {
      int64_t c;
      if (!absl::SimpleAtoi(s, &c) || c < 1 || c > 100000) return "expected cores per site, e.g. 96,108,48";
      a.sites.push_back(c);
    }
    return a.sites.size() > 32 ? "at most 32 sites" : "";
  });
  flag("--origin", "O", [&a](const std::string& v) { return a.origin = v, ""; });
  flag("--load", "L", [&a](const std::string& v) {
    return absl::SimpleAtod(v, &a.load) && a.load > 0 && a.load <= 100 ? "" : "expected a load in (0, 100]";
  });
  flag("--seed", "S",
       [&a](const std::string& v) { return absl::SimpleAtoi(v, &a.seed) ? "" : "expected a non-negative integer"; });
  flag("--estimates", "E", [&a](const std::string& v) {
    auto e = sim::ParseEstimates(v);
    return e.ok() ? (a.estimates = v, std::string()) : std::string(e.status().message());
  });
  flag("--margin", "S",
       [&a](const std::string& v) { return absl::SimpleAtoi(v, &a.margin) && a.margin >= 1 ? "" : "expected seconds >= 1"; });
  flag("--jobs", "N",
       [&a](const std::string& v) { return absl::SimpleAtoi(v, &a.jobs) && a.jobs >= 1 ? "" : "expected an integer >= 1"; });
  flag("--scale", "X", [&a](const std::string& v) {
    return absl::SimpleAtod(v, &a.scale) && a.scale >= 1 && a.scale <= 1e6 ? "" : "expected 1..1000000";
  });
  flag("--interval", "S", [&a](const std::string& v) {
    return absl::SimpleAtoi(v, &a.interval) && a.interval >= 1 ? "" : "expected seconds >= 1";
  });
  flag("--hysteresis", "S", [&a](const std::string& v) {
    return absl::SimpleAtoi(v, &a.hysteresis) && a.hysteresis >= 0 ? "" : "expected seconds >= 0";
  });
  flag("--policy", "P", [&a](const std::string& v) { return a.policy = v, ""; });
  flag("--heartbeat-ms", "MS", [&a](const std::string& v) {
    return absl::SimpleAtoi(v, &a.heartbeat_ms) && a.heartbeat_ms >= 1 ? "" : "expected milliseconds >= 1";
  });
  flag("--min-imbalance", "N", [&a](const std::string& v) {
    return absl::SimpleAtoi(v, &a.min_imbalance) && a.min_imbalance >= 0 ? "" : "expected an integer >= 0";
  });
  flag("--timeout", "S", [&a](const std::string& v) {
    return absl::SimpleAtod(v, &a.timeout_s) && a.timeout_s > 0 ? "" : "expected seconds > 0";
  });
  app.add_flag("--json", a.json);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(e.what());
  }
  // TRACE takes every positional, so what is left is a flag nobody knows.
  if (auto extra = app.remaining(); !extra.empty()) return absl::InvalidArgumentError("unknown flag " + extra.front());
  if (pos.size() != 1) return absl::InvalidArgumentError("needs one TRACE (an SWF file)");
  a.trace = pos[0];
  if (a.policy == "default") a.policy = std::string(sim::kDefaultReplayPolicy);
  if (a.policy != "none") {
    if (auto st = sim::CheckReplayPolicy(a.policy); !st.ok()) return st;
    // The daemon's placement pass places new and waiting jobs alike
    // (arrival+queue); rounds are MODE/CHOICE.
    const bool daemon_policy =
        a.policy.find("arrival") == std::string::npos || absl::StartsWith(a.policy, "arrival+queue");
    if (a.policy == "pooled" || a.policy == "earliest-start" || a.policy == "siblings" || !daemon_policy)
      return absl::InvalidArgumentError(absl::StrCat("--policy ", a.policy,
                                                     " is the simulator's yardstick, not a daemon policy; use "
                                                     "none, MODE/CHOICE, arrival+queue or arrival+queue+MODE/CHOICE"));
  }
  return a;
}

std::string Ms(double ms) { return absl::StrCat(static_cast<int64_t>(std::max(1.0, std::round(ms))), "ms"); }

}  // namespace

int main(int argc, char** argv) {
  auto args = Parse(argc, argv);
  if (!args.ok()) return Usage(std::string(args.status().message()));
  const Args& a = *args;

  // ---- the same input as hyperfed-sim replay
  auto trace = sim::ReadSwf(a.trace);
  if (!trace.ok()) return Usage(std::string(trace.status().message()));
  sim::WorkloadOptions wo;
  auto origin = sim::ParseOrigin(a.origin, a.sites);
  if (!origin.ok()) return Usage(std::string(origin.status().message()));
  wo.origin = *origin;
  wo.load = a.load;
  wo.seed = a.seed;
  wo.max_jobs = a.jobs;
  wo.estimates = *sim::ParseEstimates(a.estimates);  // checked by Parse
  auto wl = sim::MakeWorkload(*trace, a.sites, wo);
  if (!wl.ok()) return Usage(absl::StrCat(a.trace, ": ", wl.status().message()));
  sim::Workload& w = *wl;
  const size_t n = w.jobs.size();
  const int sites = static_cast<int>(w.sites.size());
  const int64_t first = w.jobs[0].submit;
  int64_t last_submit = first, longest = 0;
  for (const sim::SwfJob& j : w.jobs) {
    last_submit = std::max(last_submit, j.submit);
    longest = std::max(longest, j.run);
  }

  // The real heartbeat (below) in simulated seconds: how often the sites
  // publish profiles and the placement pass runs.
  const double interval_real_ms = a.interval * 1000.0 / a.scale;
  // The timer looks for a due round once per heartbeat, so the heartbeat is
  // the interval (at least 10 ms: 7 daemons on 2 cores), at most 300 ms.
  const int64_t hb_ms =
      a.heartbeat_ms > 0 ? a.heartbeat_ms : std::clamp<int64_t>(std::llround(interval_real_ms), 10, 300);
  const bool placing = absl::StartsWith(a.policy, "arrival");
  sim::ReplayOptions ro;
  ro.interval = a.interval;
  ro.hysteresis = a.hysteresis;
  ro.margin = a.margin;
  ro.heartbeat = std::max<int64_t>(1, std::llround(hb_ms * a.scale / 1000.0));
  const absl::Time t_pred = absl::Now();
  auto pred = sim::ReplayPolicy(w, a.policy, ro);
  if (!pred.ok()) {
    std::fprintf(stderr, "hyperfed_daemon_replay: prediction: %s\n", std::string(pred.status().message()).c_str());
    return 1;
  }
  const double pred_s = absl::ToDoubleSeconds(absl::Now() - t_pred);

  // ---- the federation
  const double hysteresis_real_ms = a.hysteresis * 1000.0 / a.scale;
  FederationOptions fo;
  fo.sites = sites;
  for (int64_t c : w.sites) fo.slots.push_back(static_cast<int>(c));
  fo.heartbeat = absl::StrCat(hb_ms, "ms");
  fo.peer_timeout = absl::StrCat(std::max<int64_t>(2000, 10 * hb_ms), "ms");
  fo.step_timeout = "10s";
  fo.time_scale = absl::StrFormat("%.17g", a.scale);
  fo.min_imbalance = a.min_imbalance;
  fo.placement = placing;
  fo.placement_margin = Ms(a.margin * 1000.0 / a.scale);
  fo.hysteresis = a.hysteresis == 0 ? "0s" : Ms(hysteresis_real_ms);
  std::string rounds_policy = a.policy;
  if (placing) rounds_policy = a.policy == "arrival+queue" ? "none" : a.policy.substr(std::string("arrival+queue+").size());
  if (rounds_policy == "none") {
    fo.interval = "0s";
  } else {
    const std::vector<std::string> mc = absl::StrSplit(rounds_policy, '/');
    fo.algorithm = mc[0];
    fo.job_choice = mc[1];
    fo.interval = Ms(interval_real_ms);
  }
  std::fprintf(stderr,
               "daemon replay: %zu jobs on %d sites, scale %g (interval %s, hysteresis %s, heartbeat %lld ms real); "
               "submits span %.0f s real\n",
               n, sites, a.scale, fo.interval.c_str(), fo.hysteresis.c_str(), static_cast<long long>(hb_ms),
               (last_submit - first) / a.scale);
  auto fed = TestFederation::Start(fo);
  if (!fed.ok()) {
    std::fprintf(stderr, "hyperfed_daemon_replay: cannot start the federation: %s\n",
                 std::string(fed.status().message()).c_str());
    return 1;
  }
  TestFederation& f = **fed;
  std::vector<std::unique_ptr<v1::Admin::Stub>> admin;
  for (int i = 0; i < sites; ++i) admin.push_back(f.Admin(i));

  // ---- submit each job at its time, at its origin
  std::vector<std::string> key_of(n);
  int64_t submit_failures = 0;
  const double epoch_ms = absl::ToUnixMicros(absl::Now() + absl::Milliseconds(500)) / 1000.0;
  auto real_ms = [&](double sim_s) { return epoch_ms + (sim_s - first) * 1000.0 / a.scale; };
  auto sim_s = [&](double ms) { return first + (ms - epoch_ms) * a.scale / 1000.0; };
  double max_late_ms = 0;
  for (size_t j = 0; j < n; ++j) {
    const sim::SwfJob& job = w.jobs[j];
    const double due = real_ms(static_cast<double>(job.submit));
    const double now = absl::ToUnixMicros(absl::Now()) / 1000.0;
    if (due > now) absl::SleepFor(absl::Microseconds(static_cast<int64_t>((due - now) * 1000)));
    max_late_ms = std::max(max_late_ms, absl::ToUnixMicros(absl::Now()) / 1000.0 - due);
    v1::SubmitRequest req;
    req.set_site(f.SiteId(w.origin[j]));
    req.set_count(1);
    req.set_cores(static_cast<int32_t>(job.cores));
    req.set_duration_ms(job.run * 1000);  // the sim divides by time_scale itself
    // The limit EASY plans with, as in the prediction (SwfJob::limit).
    req.set_time_limit_ms(job.limit * 1000);
    req.set_name(absl::StrCat("swf-", job.id));
    bool ok = false;
    for (int attempt = 0; attempt < 3 && !ok; ++attempt) {
      v1::SubmitReply reply;
      auto ctx = f.Context(absl::Seconds(10));
      grpc::Status st = admin[w.origin[j]]->Submit(ctx.get(), req, &reply);
      if (st.ok() && reply.keys_size() == 1) {
        key_of[j] = reply.keys(0);
        ok = true;
      } else if (attempt == 2) {
        std::fprintf(stderr, "submit of job %lld failed: %s\n", static_cast<long long>(job.id),
                     st.error_message().c_str());
      }
    }
    if (!ok) ++submit_failures;
    if (!a.json && (j + 1) % 250 == 0) std::fprintf(stderr, "  submitted %zu of %zu\n", j + 1, n);
  }

  // ---- wait until every job has ended (the sim advances on every call)
  // By default half as long again as the predicted makespan (from its
  // utilisation: work / (cores x makespan)), plus two minutes.
  double work = 0;
  int64_t total_cores = 0;
  for (const sim::SwfJob& j : w.jobs) work += static_cast<double>(j.cores) * static_cast<double>(j.run);
  for (int64_t c : w.sites) total_cores += c;
  const double makespan = std::max<double>(last_submit - first + longest,
                                           pred->utilisation > 0 ? work / (total_cores * pred->utilisation) : 0);
  const double timeout_s = a.timeout_s > 0 ? a.timeout_s : 1.5 * makespan / a.scale + 120.0;
  const absl::Time deadline = absl::FromUnixMicros(static_cast<int64_t>(epoch_ms * 1000)) + absl::Seconds(timeout_s);
  // Admin.Jobs lists the pending, held and running jobs. A moving job keeps
  // a copy in one of those states until its new copy is submitted (the
  // exactly-once move: hold, submit at the destination, cancel), so no job
  // listed anywhere means every job has ended.
  bool all_ended = false;
  while (absl::Now() < deadline) {
    int64_t open = 0;
    bool answered = true;
    for (int i = 0; i < sites; ++i) {
      v1::JobsReply reply;
      auto ctx = f.Context(absl::Seconds(20));
      if (!admin[i]->Jobs(ctx.get(), v1::JobsRequest(), &reply).ok()) {
        answered = false;
        break;
      }
      open += reply.jobs_size();
    }
    if (answered && open == 0) {
      all_ended = true;
      break;
    }
    absl::SleepFor(absl::Seconds(1));
  }
  const double run_s = absl::ToDoubleSeconds(absl::Now() - absl::FromUnixMicros(static_cast<int64_t>(epoch_ms * 1000)));
  for (int i = 0; i < sites; ++i) f.Stop(i);

  // ---- what the daemons did
  std::map<std::string, std::vector<Copy>> by_key;
  for (int i = 0; i < sites; ++i) {
    const std::string db = absl::StrCat(f.dir(), "/state/site-", i, "/sim-scheduler.db");
    if (auto st = ReadSite(db, i, &by_key); !st.ok()) {
      std::fprintf(stderr, "hyperfed_daemon_replay: %s\n", std::string(st.message()).c_str());
      return 1;
    }
  }
  std::vector<double> start(n, 0), end(n, 0);
  std::vector<int> moves(n, 0);
  int64_t lost = 0, twice = 0, unfinished = 0;
  std::vector<double> due(n), queued(n);
  for (size_t j = 0; j < n; ++j) due[j] = queued[j] = static_cast<double>(w.jobs[j].submit);
  double sum_lag_ms = 0, max_lag_ms = 0;
  int64_t lagged = 0;
  // Real ms from a job's arrival at its origin to its arrival at the site
  // where it ran, for the jobs that ran away from their origin.
  std::vector<double> to_chosen_ms;
  std::vector<std::string> problems;
  for (size_t j = 0; j < n; ++j) {
    auto it = by_key.find(key_of[j]);
    if (key_of[j].empty() || it == by_key.end()) {
      ++lost;
      problems.push_back(absl::StrCat("job ", w.jobs[j].id, ": no copy at any site"));
      continue;
    }
    const std::vector<Copy>& copies = it->second;
    const Copy* ran = nullptr;
    int live = 0;
    double origin_queued = 1e300;
    for (const Copy& c : copies) {
      if (c.state != kCancelled) ++live;
      if (c.state == kDone && !ran) ran = &c;
      if (c.site == w.origin[j]) origin_queued = std::min(origin_queued, static_cast<double>(c.queued_ms));
    }
    moves[j] = static_cast<int>(copies.size()) - 1;
    if (live > 1) {
      ++twice;
      problems.push_back(absl::StrCat("job ", w.jobs[j].id, ": ", live, " copies not cancelled"));
    }
    if (!ran) {
      ++unfinished;
      problems.push_back(absl::StrCat("job ", w.jobs[j].id, ": did not end"));
      start[j] = end[j] = sim_s(run_s * 1000 + epoch_ms);
      continue;
    }
    start[j] = sim_s(static_cast<double>(ran->started_ms));
    end[j] = sim_s(static_cast<double>(ran->finish_ms));
    if (ran->site != w.origin[j] && origin_queued < 1e300)
      to_chosen_ms.push_back(static_cast<double>(ran->queued_ms) - origin_queued);
    if (origin_queued < 1e300) {
      const double lag = origin_queued - real_ms(static_cast<double>(w.jobs[j].submit));
      sum_lag_ms += lag;
      max_lag_ms = std::max(max_lag_ms, lag);
      ++lagged;
      queued[j] = sim_s(origin_queued);
    }
  }
  sim::PolicyResult d = sim::JobMetrics(w, due, start, end, moves);
  d.policy = a.policy;
  // The same with waits from when the origin queued each job: what the
  // daemons did once a job had arrived, without the submit lag.
  const sim::PolicyResult dq = sim::JobMetrics(w, queued, start, end, moves);
  // Rounds, from the sites' logs (the coordinator logs each one).
  int64_t rounds = 0, rounds_moving = 0, rounds_early = 0;
  for (int i = 0; i < sites; ++i) {
    const std::string log = hyperfed::testing::ReadFile(absl::StrCat(f.dir(), "/site-", i, ".log"));
    for (absl::string_view line : absl::StrSplit(log, '\n')) {
      if (absl::StrContains(line, ": starting round ")) ++rounds;
      if (absl::StrContains(line, " ended early: ")) ++rounds_early;
      if ((absl::StrContains(line, " finished: moved ") || absl::StrContains(line, " ended early: moved ")) &&
          !absl::StrContains(line, ": moved 0 jobs"))
        ++rounds_moving;
    }
  }
  const bool conserved = lost == 0 && twice == 0 && unfinished == 0 && all_ended && submit_failures == 0;
  std::sort(to_chosen_ms.begin(), to_chosen_ms.end());
  auto pct = [&](double q) {
    return to_chosen_ms.empty() ? 0.0 : to_chosen_ms[std::min(to_chosen_ms.size() - 1,
                                                              static_cast<size_t>(std::ceil(q * to_chosen_ms.size())) - 1)];
  };
  const double mean_lag_ms = lagged ? sum_lag_ms / lagged : 0;

  // ---- report
  const std::vector<Row> rows = Rows(d, *pred);
  if (a.json) {
    std::string out = "{\n";
    absl::StrAppend(&out, "  \"trace\": \"", a.trace, "\", \"policy\": \"", a.policy, "\", \"origin\": \"",
                    sim::OriginName(wo.origin), "\", \"seed\": ", a.seed, ",\n");
    absl::StrAppend(&out, "  \"sites\": [", absl::StrJoin(w.sites, ", "), "], \"jobs\": ", n,
                    ", \"load\": ", Num(w.load), ", \"scale\": ", Num(a.scale), ", \"interval\": ", a.interval,
                    ", \"hysteresis\": ", a.hysteresis, ", \"heartbeat_ms\": ", hb_ms,
                    ", \"min_imbalance\": ", a.min_imbalance, ",\n");
    absl::StrAppend(&out, "  \"submit_lag_ms\": {\"mean\": ", Num(mean_lag_ms), ", \"max\": ", Num(max_lag_ms),
                    "}, \"wall_seconds\": ", Num(run_s), ", \"prediction_seconds\": ", Num(pred_s), ",\n");
    absl::StrAppend(&out, "  \"estimates\": \"", a.estimates, "\", \"margin\": ", a.margin,
                    ", \"to_chosen_site_ms\": {\"jobs\": ", to_chosen_ms.size(), ", \"p50\": ", Num(pct(0.5)),
                    ", \"p99\": ", Num(pct(0.99)), "},\n");
    absl::StrAppend(&out, "  \"rounds\": {\"daemon\": ", rounds, ", \"daemon_moving\": ", rounds_moving,
                    ", \"daemon_ended_early\": ", rounds_early, ", \"prediction_planned\": ", pred->rounds, "},\n");
    absl::StrAppend(&out, "  \"daemon_from_queued\": {\"mean_wait\": ", Num(dq.mean_wait), ", \"median_wait\": ",
                    Num(dq.median_wait), ", \"p95_wait\": ", Num(dq.p95_wait), ", \"mean_bounded_slowdown\": ",
                    Num(dq.mean_bounded_slowdown), "},\n");
    absl::StrAppend(&out, "  \"conservation\": {\"ok\": ", conserved ? "true" : "false", ", \"lost\": ", lost,
                    ", \"twice\": ", twice, ", \"unfinished\": ", unfinished, ", \"submit_failures\": ",
                    submit_failures, "},\n");
    for (const char* side : {"daemon", "prediction", "ratio"}) {
      std::vector<std::string> kv;
      for (const Row& r : rows) {
        const double v = side[0] == 'd' ? r.daemon : side[0] == 'p' ? r.prediction : Ratio(r.daemon, r.prediction);
        kv.push_back(absl::StrCat("\"", r.name, "\": ", Num(v)));
      }
      absl::StrAppend(&out, "  \"", side, "\": {", absl::StrJoin(kv, ", "), "}", side[0] == 'r' ? "\n" : ",\n");
    }
    out += "}\n";
    std::fputs(out.c_str(), stdout);
  } else {
    std::printf("daemon replay of %s: %zu jobs, sites %s, origin %s, seed %llu, load %.3f, policy %s\n",
                a.trace.c_str(), n, absl::StrJoin(w.sites, ",").c_str(), sim::OriginName(wo.origin).c_str(),
                static_cast<unsigned long long>(a.seed), w.load, a.policy.c_str());
    std::printf("scale %g: %.1f s real; interval %lld s, hysteresis %lld s simulated; heartbeat %lld ms real\n",
                a.scale, run_s, static_cast<long long>(a.interval), static_cast<long long>(a.hysteresis),
                static_cast<long long>(hb_ms));
    std::printf("submit lag (origin's queued time - due time): mean %.2f ms, max %.2f ms real\n", mean_lag_ms,
                max_lag_ms);
    std::printf("limits %s, placement margin %lld s; from arrival at the origin to arrival where it ran (%zu jobs "
                "away from their origin): p50 %.1f ms, p99 %.1f ms real\n",
                a.estimates.c_str(), static_cast<long long>(a.margin), to_chosen_ms.size(), pct(0.5), pct(0.99));
    std::printf("%-22s %14s %14s %8s\n", "", "daemons", "prediction", "ratio");
    for (const Row& r : rows) {
      const double q = Ratio(r.daemon, r.prediction);
      std::printf("%-22s %14.3f %14.3f %8s\n", r.name, r.daemon, r.prediction,
                  std::isnan(q) ? "-" : absl::StrFormat("%.3f", q).c_str());
    }
    std::printf("wait in seconds (simulated); bounded slowdown tau %lld s\n",
                static_cast<long long>(sim::kSlowdownTau));
    std::printf("daemons, waits from the origin's queued time: mean %.3f, median %.3f, p95 %.3f, bsld %.3f\n",
                dq.mean_wait, dq.median_wait, dq.p95_wait, dq.mean_bounded_slowdown);
    std::printf("rounds: daemons %lld started (%lld moved jobs, %lld ended early); prediction %lld planned\n",
                static_cast<long long>(rounds), static_cast<long long>(rounds_moving),
                static_cast<long long>(rounds_early), static_cast<long long>(pred->rounds));
    std::printf("conservation: %s (lost %lld, twice %lld, unfinished %lld, submit failures %lld)\n",
                conserved ? "every job ran exactly once" : "FAILED", static_cast<long long>(lost),
                static_cast<long long>(twice), static_cast<long long>(unfinished),
                static_cast<long long>(submit_failures));
  }
  for (size_t i = 0; i < problems.size() && i < 10; ++i) std::fprintf(stderr, "  %s\n", problems[i].c_str());
  if (!all_ended) std::fprintf(stderr, "not every job ended within %.0f s\n", timeout_s);
  return conserved ? 0 : 1;
}
