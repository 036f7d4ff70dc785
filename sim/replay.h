#pragma once

// `hyperfed-sim replay`: a workload trace (Standard Workload Format) replayed
// on a federation of clusters, each running FCFS with EASY backfilling, under
// each balancing policy (docs/algorithms.md, "Jobs that gain").
//
// The replay runs the library code the daemons run: EASY from
// daemon/balance/easy.h at every cluster, the round modes of
// daemon/balance/modes.h for the quotas, MovableLoad, ProfileFromForecast
// and ChooseJobs from daemon/balance/choice.h for which jobs move. Time is in
// seconds. Deterministic for a given seed.

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sim/estimates.h"

namespace hyperfed::sim {

// One usable job of a trace.
struct SwfJob {
  int64_t id = 0;      // field 1
  int64_t submit = 0;  // field 2, seconds
  int64_t run = 0;     // field 4, seconds, >= 0
  int64_t cores = 1;   // field 8 if > 0, else field 5; > 0
  int64_t limit = 1;   // what schedulers plan with: field 9 if > 0 (at least run), else run; --estimates
  int64_t user = -1;   // field 12; -1: unknown, the job is its own user
  int line = 0;        // line number in the file, from 1
};

struct SwfTrace {
  std::vector<SwfJob> jobs;  // in file order
  int64_t skipped = 0;       // data lines with run time < 0 or processors <= 0
};

// Parses SWF text: lines starting with ';' and blank lines are ignored; a
// data line has 18 whitespace-separated integer fields. InvalidArgument
// naming `name`:LINE and what is wrong for a malformed data line.
absl::StatusOr<SwfTrace> ParseSwf(std::string_view text, std::string_view name);
absl::StatusOr<SwfTrace> ReadSwf(const std::string& path);

// A uniform double in [0, 1) from the generator, the same on every platform
// (std::uniform_*_distribution are not): origins and modelled limits.
double Unit(std::mt19937_64& rng);

// sum(cores * run) / (total_cores * (last submit - first submit)); 0 when
// the submit times span nothing.
double OfferedLoad(const std::vector<SwfJob>& jobs, int64_t total_cores);
// Submit times become first + (submit - first) * OfferedLoad / load, rounded
// to the second, so that the offered load is `load`. Jobs unchanged when the
// span is 0.
void CompressToLoad(std::vector<SwfJob>* jobs, int64_t total_cores, double load);

// Where jobs are submitted. Every user (SwfJob::user; -1: each such job its
// own user) gets one origin among the sites its widest job fits.
//  proportional: probability proportional to cores;
//  uniform: equal probability;
//  hot: users are taken in a seeded random order and put at `hot_site` while
//       that brings its job count nearer half of all jobs; the others go
//       uniformly to the other sites (to `hot_site` only if it is the only
//       one they fit).
struct OriginSpec {
  enum Kind { kProportional, kUniform, kHot } kind = kProportional;
  int hot_site = -1;  // kHot: index into the sites
};
// "proportional", "uniform", "hot" (the largest site, the first of equals) or
// "hot:SITE" (SITE an index from 0 into the sites).
absl::StatusOr<OriginSpec> ParseOrigin(std::string_view s, const std::vector<int64_t>& sites);
std::string OriginName(const OriginSpec& o);
// The origin (site index) of every job. Every job fits its origin, given that
// no job is wider than the widest site.
std::vector<int> AssignOrigins(const std::vector<SwfJob>& jobs, const std::vector<int64_t>& sites,
                               const OriginSpec& spec, uint64_t seed);

// A trace made ready for replay on `sites`.
struct Workload {
  std::vector<int64_t> sites;  // cores per site; site i sits at cube position i
  std::vector<SwfJob> jobs;    // submit order (stable), compressed when asked
  std::vector<int> origin;     // per job
  int64_t skipped = 0;         // unusable lines (SwfTrace::skipped)
  int64_t dropped_wide = 0;    // jobs wider than the widest site, not replayed
  double load_before = 0;      // offered load on `sites` before compression
  double load = 0;             // offered load replayed
};
struct WorkloadOptions {
  int64_t max_jobs = 0;  // > 0: only the first max_jobs usable jobs
  double load = 0;       // > 0: compress to this offered load
  OriginSpec origin;
  EstimateSpec estimates;  // the jobs' time limits (ApplyEstimates, seeded by `seed`)
  uint64_t seed = 1;
};
// InvalidArgument for no sites, a site without cores or no job left.
absl::StatusOr<Workload> MakeWorkload(const SwfTrace& trace, const std::vector<int64_t>& sites,
                                      const WorkloadOptions& o);

// Policy names: "none", "pooled", "earliest-start", "siblings", then
// MODE/CHOICE for every round mode (RoundModeNames order) and choice
// "newest", "gain", then "arrival" (placement at arrival, no rounds) and
// "arrival+MODE/CHOICE" (placement at arrival plus rounds) for each.
//  siblings: Slurm federation's race (src/slurmctld/fed_mgr.c): a copy of
//    each job is queued at every site wide enough; the first site whose EASY
//    starts a copy runs the job and every other copy is withdrawn at that
//    instant (ties at one instant: the origin, then the lower index).
//  earliest-start: each job is placed at arrival where EASY, knowing every
//    site's queue exactly, starts it first (an oracle; sbatch -M's will_run).
//  arrival: each origin places its arriving jobs with balance::Placer on the
//    start profiles its peers published at the last heartbeat and its ledger.
//  fit, fit+queue, fit+queue+exact/gain: arrival, arrival+queue and
//    arrival+queue+exact/gain with balance::FitRule (best fit among
//    near-ties, the slack scaled by how close finished jobs' run times came
//    to their limits); ReplayOptions::fit_* set it.
std::vector<std::string> ReplayPolicyNames();
// The policy the daemon runs by default (placement at arrival plus exact
// rounds choosing by gain); `--json` marks it "default": true.
inline constexpr std::string_view kDefaultReplayPolicy = "arrival+queue+exact/gain";
// InvalidArgument naming the known policies.
absl::Status CheckReplayPolicy(std::string_view name);

struct ReplayOptions {
  int64_t interval = 60;      // seconds between balancing rounds
  int64_t hysteresis = 600;   // a job moved less than this ago is chosen only for a gain of `margin`
  // arrival: peers publish their start profiles this often. 0: always
  // fresh; arrival+queue then places waiting jobs again at every instant
  // anything changed.
  int64_t heartbeat = 5;
  // arrival+queue (issue 29, an experiment): a site publishes its profile the
  // moment one of its jobs ends, and every site places its waiting jobs again
  // at once, as a sibling copy reacts; other changes wait for the heartbeat.
  bool publish_on_end = false;
  int64_t margin = 60;        // arrival: a job moves only to start at least this much sooner
  bool keep_records = false;  // fill PolicyResult::records
  // fit policies: balance::FitRule's alpha, exponent and home_first (tried
  // on the replay matrix, issue 29: a slack of 2 x the expected run time,
  // gone once limits are far above run times; a job stays while home is a
  // near-tie, for fewer moves).
  double fit_alpha = 2;
  double fit_exponent = 8;
  bool fit_home_first = true;
};

// What happened to one job.
struct JobRecord {
  int site = 0;  // where it ran (0 for pooled)
  int64_t start = 0;
  int64_t end = 0;
  int moves = 0;
  std::vector<int64_t> move_times;  // one per move
};

struct PolicyResult {
  std::string policy;
  int64_t jobs = 0;
  double mean_wait = 0, median_wait = 0, p95_wait = 0;  // seconds
  double mean_bounded_slowdown = 0;                     // tau 10 s
  double utilisation = 0;
  int64_t jobs_moved = 0;  // jobs that moved at least once
  double jobs_moved_pct = 0;
  int64_t moves = 0;
  double moves_per_moved_job = 0;
  int64_t rounds = 0;      // rounds that planned (not skipped as unchanged)
  // Times a job entered a site's queue: one per job, one per move, and for
  // siblings one per copy; peak_queued: the most queue entries at one time.
  int64_t queue_entries = 0;
  int64_t peak_queued = 0;
  double seconds = 0;      // wall time of the replay
  std::vector<JobRecord> records;  // by job index, when keep_records
};

inline constexpr int64_t kSlowdownTau = 10;

// The metrics of a replay from each job's submit, start and end time
// (seconds) and move count, indexed like w.jobs: the one rule for the
// simulator's and the daemon replay's figures (policy, rounds and records
// are left to the caller).
PolicyResult JobMetrics(const Workload& w, absl::Span<const double> submit, absl::Span<const double> start,
                        absl::Span<const double> end, absl::Span<const int> moves);

absl::StatusOr<PolicyResult> ReplayPolicy(const Workload& w, std::string_view policy, const ReplayOptions& o);

// Output of `hyperfed-sim replay`: a table, or one JSON object (keys in
// docs/algorithms.md, "Jobs that gain").
struct ReplayRun {
  std::string trace;
  std::string origin;
  uint64_t seed = 1;
  std::string estimates = "trace";
  ReplayOptions options;
  std::vector<PolicyResult> results;
};
std::string ReplayText(const Workload& w, const ReplayRun& r);
std::string ReplayJson(const Workload& w, const ReplayRun& r);

}  // namespace hyperfed::sim
