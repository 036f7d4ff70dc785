#pragma once

// The scheduler adapter: where hyperfed meets a site's batch scheduler.
//
// An adapter lists the site's jobs, reads its capacity, holds, releases and
// cancels jobs, exports a job to a portable spec and submits a spec with a
// tag. Adapters know nothing of rounds or peers. Every implementation passes
// the shared contract suite in tests/scheduler/adapter_contract.h.
//
// Thread-safety: every method may be called from any thread; adapters
// serialize internally.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hyperfed::scheduler {

// What is needed to run a job at another site.
struct JobSpec {
  std::string name;
  std::string script;  // the batch script text
  int cores = 1;
  int64_t memory_mb = 0;                   // 0: scheduler default
  int64_t time_limit_s = 0;                // 0: scheduler default
  std::string workdir;                     // working directory policy ("" = submit dir)
  std::map<std::string, std::string> env;  // environment to set
  int64_t duration_ms = 0;                 // sim adapter only: how long the job runs
  double cost = 1.0;                       // cost estimate (e.g. cores x time limit)
  // Federation-wide identity of the job: set when the job first enters the
  // federation, carried unchanged by every migration. Tests check "exactly
  // once" by this key.
  std::string key;
  // The user the job belongs to, as the site it left knew them (a login
  // name, or "" when unknown). Where the receiving site maps users, the job
  // runs as the local user this maps to (docs/adapters.md, "Who moved jobs
  // run as"); it is never trusted for anything else.
  std::string owner;
  // The site the job came from, as this site authenticated it (its
  // certificate): set by the destination's migrator on every job of an
  // incoming Transfer, overwriting whatever the request said, and "" for a
  // job that did not arrive from a peer. Never exported, journaled or sent
  // (spec_codec and the RPC conversion leave it out): a site says only
  // through its certificate who it is. users_map looks up (source_site,
  // owner) (docs/adapters.md, "Who moved jobs run as"; issue 34).
  std::string source_site;

  friend bool operator==(const JobSpec&, const JobSpec&) = default;
};

// Limits every job spec keeps, whichever scheduler: checked by
// SchedulerAdapter::CheckSpec, the one place specs are checked (the server
// and the migrator call it).
inline constexpr size_t kMaxKeyLength = 200;
inline constexpr size_t kMaxNameLength = 200;
inline constexpr size_t kMaxScriptBytes = size_t{4} << 20;
inline constexpr size_t kMaxOwnerLength = 32;
// PATH_MAX less its NUL: Slurm and Grid Engine refuse a longer working
// folder at submit time, so the source keeps such a job from the start.
inline constexpr size_t kMaxWorkdirLength = 4095;

// Why a job's environment may not carry a variable of this name, or "" when
// it may. A job's environment reaches the job only, never a scheduler
// command, but a scheduler, its loader and its shell read some names
// themselves: loader variables (LD_*, DYLD_*, GLIBC_TUNABLES, ...), PATH and
// the shell's own (IFS, ENV, BASH_ENV, SHELL, HOME, ...), Slurm's input
// variables (SLURM_*, SBATCH_*, SALLOC_*, SRUN_*, SPANK_*, PMI*) and sbatch's
// --export keywords (ALL, NONE, NIL). Names must be [A-Za-z_][A-Za-z0-9_]*.
// docs/adapters.md ("Environment") lists them all.
std::string RefusedEnvName(const std::string& name);

// What every adapter needs of a spec, whichever scheduler (the default
// SchedulerAdapter::CheckSpec, which every adapter's calls first):
// InvalidArgument saying what is wrong. A source checks each spec it would
// send with it, so a job no destination takes stays home alone instead of
// failing its whole batch (issue 34, finding 5); a destination checks it
// again through its adapter's CheckSpec.
absl::Status CheckPortableSpec(const JobSpec& spec);

enum class JobState { kPending, kHeld, kRunning, kDone, kCancelled };
const char* JobStateName(JobState s);

struct Job {
  std::string id;  // the scheduler's own id
  JobSpec spec;
  JobState state = JobState::kPending;
  bool pinned = false;       // must not move (pinned by the operator or the site)
  std::string tag;           // the tag it was submitted with ("" if none)
  int64_t queued_at_ms = 0;  // submit time, ms since the epoch
};

// One pending job as a balancer sees it (SchedulerAdapter::Pending).
struct PendingJob {
  std::string id;
  std::string key;  // JobSpec::key
  int64_t cores = 1;
  int64_t queued_at_ms = 0;  // submit time, ms since the epoch
  int64_t limit_ms = 0;      // its time limit (0: unknown)
  // When the scheduler expects it to start, ms since the epoch; 0 when it
  // does not say (Slurm without a backfill plan for it yet).
  int64_t start_ms = 0;
  // When its placement window ends by itself, ms since the epoch; 0 when it
  // is in none (see EndPlacementWindow). A job in its window is new at this
  // site and not yet placed.
  int64_t window_end_ms = 0;
};

struct Capacity {
  int64_t units = 0;   // processing units (slots, CPUs)
  double speed = 1.0;  // speed factor
  double Value() const { return static_cast<double>(units) * speed; }
};

class SchedulerAdapter {
 public:
  virtual ~SchedulerAdapter() = default;

  // The registry name: "sim", "slurm", "exec".
  virtual std::string Name() const = 0;

  // Every job the scheduler knows that is not done or cancelled: pending,
  // held and running, in queue order (oldest first). Here and in FindByTag
  // and GetJobs an adapter may leave spec.script empty (slurm does: a script
  // costs a command per job and one unreadable script must not hide the
  // queue); Export always fills it.
  virtual absl::StatusOr<std::vector<Job>> ListJobs() = 0;

  virtual absl::StatusOr<Capacity> GetCapacity() = 0;

  // How many jobs could move now: pending (not held, not running) and not
  // pinned. This is a site's load. The default counts ListJobs; adapters with
  // an index override it (the daemon asks every heartbeat).
  virtual absl::StatusOr<int64_t> CountMigratable();

  // ---- What a balancer needs to choose jobs (docs/algorithms.md, "Jobs
  // that gain").
  //
  // Every job that could move now (pending, not held, not pinned), in queue
  // order, with its cores and the scheduler's estimate of its start (sim:
  // its EASY forecast; slurm: squeue --start). The default reads ListJobs
  // and estimates nothing (start_ms 0).
  virtual absl::StatusOr<std::vector<PendingJob>> Pending();
  // The most cores one job can have here (sim: its cores; slurm: the
  // largest node's CPUs; exec: the `widest` command). The default is
  // GetCapacity's units.
  virtual absl::StatusOr<int64_t> WidestJob();
  // For each width, when a job of that many cores submitted now (with no
  // time limit of its own: it would wait behind the whole queue) would
  // start, ms since the epoch; one answer per width, in order.
  // InvalidArgument for a width < 1 or above WidestJob. The default is
  // Unimplemented (the site then publishes no start profile and other sites
  // send it jobs by count alone).
  virtual absl::StatusOr<std::vector<int64_t>> ArrivalStarts(const std::vector<int64_t>& widths);
  // The cores the queue leaves free from now on if every job runs to its
  // time limit: steps (ms since the epoch, free cores from then on), times
  // ascending, the first now. Preferred to ArrivalStarts where an adapter
  // can give it (sim: its EASY forecast), since it shows the holes a short
  // job backfills into. The default is Unimplemented.
  virtual absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> FreeCores();

  // ---- Placement at arrival (docs/design.md, "Placement at arrival").
  //
  // A scheduler may hold a new job back for a short placement window so
  // that the daemon can send it where it starts first before it can start
  // here (Slurm: the project's job_submit.lua gives it a begin time a few
  // seconds ahead). The daemon calls this for the new jobs it keeps: each
  // may start here now. One result per id, in order; a job without a
  // window (or no longer pending) is a no-op, NotFound for an unknown id.
  // With no daemon the window simply ends by itself. The default has no
  // window: every item is OK.
  virtual std::vector<absl::Status> EndPlacementWindow(const std::vector<std::string>& ids);

  // Hold a pending job (it will not start); release a held one. Holding a
  // held job and releasing a pending one are no-ops. NotFound for an unknown
  // id; FailedPrecondition for a running, done or cancelled job.
  virtual absl::Status Hold(const std::string& id) = 0;
  virtual absl::Status Release(const std::string& id) = 0;

  // Cancel a pending or held job. Cancelling a cancelled job is a no-op;
  // NotFound for an unknown id; FailedPrecondition for a running or done one.
  virtual absl::Status Cancel(const std::string& id) = 0;

  // The portable spec of a job.
  virtual absl::StatusOr<JobSpec> Export(const std::string& id) = 0;

  // Submit a job, held when `held` is true. Idempotent by tag: a non-empty
  // tag that some job (in any state) already carries returns that job's id
  // and submits nothing.
  //
  // Errors, which the migrator acts on (docs/design.md, the exactly-once
  // move):
  // - InvalidArgument: final. The spec itself was refused, by CheckSpec or by
  //   the scheduler (Slurm: sbatch's "Batch job submission failed: <reason>"
  //   for an invalid partition, QOS, node configuration, time limit, ...;
  //   exec: the submit command's exit 12); the same spec would be refused
  //   again, so the caller gives the job back instead of retrying.
  // - Unavailable, DeadlineExceeded: the scheduler could not be reached or
  //   did not answer in time; nothing is known to be refused and the caller
  //   may retry (the tag keeps that safe).
  // - Internal: the scheduler answered something this adapter cannot read.
  virtual absl::StatusOr<std::string> Submit(const JobSpec& spec, const std::string& tag, bool held = false) = 0;

  // Whether Submit would take this spec, without submitting anything:
  // InvalidArgument saying what this scheduler refuses (a script it cannot
  // run, a name or environment it cannot carry, an owner it will not run
  // as). A site receiving jobs checks every spec of a transfer before it
  // submits any: a refused job fails alone and stays at its source, the
  // rest move (issue 34; docs/design.md §7). Submit refuses what this
  // refuses. The default checks what every adapter needs (cores >= 1; no
  // negative memory, time limit or duration; a finite cost >= 0; every
  // environment name allowed by RefusedEnvName; an owner that is "" or a
  // sane login name, [a-z_][a-z0-9_-]{0,31}); adapters add their own rules
  // and call it first. The default is CheckPortableSpec.
  virtual absl::Status CheckSpec(const JobSpec& spec) const;

  // Jobs (in any state, done and cancelled included) carrying the tag.
  virtual absl::StatusOr<std::vector<Job>> FindByTag(const std::string& tag) = 0;

  // Pin or unpin a job (pinned jobs are never chosen to move).
  virtual absl::Status SetPinned(const std::string& id, bool pinned) = 0;

  // ---- Batch forms, for moving many jobs at once.
  //
  // Each returns one result per input item, in input order, and each item
  // behaves exactly as the single call on it would (the same errors, the same
  // no-ops, the same idempotence by tag; an item of SubmitMany whose tag an
  // earlier item of the same batch carries returns that item's id). A bad
  // item gets its own error and does not stop the others.
  //
  // The defaults loop over the single calls, so every adapter works
  // unchanged; an adapter overrides them when it can do a batch in one step
  // (the sim adapter does each batch in one SQLite transaction). The
  // interface does NOT promise all-or-nothing: after a crash mid-batch any
  // subset of the items may have taken effect, so callers must only use
  // batches of operations that are safe to repeat (holds, cancels and
  // releases are no-ops when repeated; SubmitMany is idempotent by tag).
  // When the adapter cannot do the batch at all (its store fails), every
  // item not done carries that error.
  virtual std::vector<absl::Status> HoldMany(const std::vector<std::string>& ids);
  virtual std::vector<absl::Status> ReleaseMany(const std::vector<std::string>& ids);
  virtual std::vector<absl::Status> CancelMany(const std::vector<std::string>& ids);
  virtual std::vector<absl::StatusOr<JobSpec>> ExportMany(const std::vector<std::string>& ids);
  // The jobs with these ids, in any state. The default looks them up in
  // ListJobs, so there a done or cancelled job is NotFound; adapters that
  // keep finished jobs (sim) answer those too. NotFound for an unknown id.
  virtual std::vector<absl::StatusOr<Job>> GetJobs(const std::vector<std::string>& ids);
  // Every item is submitted held when `held` is true.
  virtual std::vector<absl::StatusOr<std::string>> SubmitMany(
      const std::vector<std::pair<JobSpec, std::string>>& spec_and_tag, bool held = false);
};

}  // namespace hyperfed::scheduler
