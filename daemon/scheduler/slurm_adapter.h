#pragma once

// The `slurm` adapter: drives a Slurm cluster through Slurm's own commands
// (sbatch, squeue, scontrol, scancel, sinfo --json), each run as a
// child process with a timeout (daemon/scheduler/subprocess.h).
//
// Why the commands and not slurmrestd: the commands are on every Slurm
// submit host and speak to slurmctld with the site's existing munge
// authentication, so the adapter needs no extra daemon, token or TLS set-up
// and runs wherever `sbatch` works. slurmrestd's API version (and its
// plugins) differ between Slurm releases, it must be deployed and secured
// separately (JWT or a local socket), and it refuses to run as root by
// default. The cost of the commands is a process per call, which is
// milliseconds; the adapter reads the whole queue with one `squeue` per call
// or batch (two for Hold and Cancel, which re-check; see docs/adapters.md for
// the count per call), with only the fields it needs (SqueueFormat below:
// `squeue --json` prints 3.1 MB for 1,000 jobs and took 0.11 to 0.15 s a
// read; docs/benchmarks.md, "Slurm to Slurm").
//
// Slurm state -> JobState: see MapSlurmState below (every Slurm 22.05 state
// by name; an unknown one counts as running, so it is never moved, cancelled
// or taken as finished).
// `squeue --states=all` lists jobs in every state while slurmctld keeps them
// in memory (MinJobAge after they end); FindByTag, GetJobs and Export of a
// finished job work for that long. Set MinJobAge well above the time a
// migration takes to settle (see docs/adapters.md).
//
// What hyperfed keeps in a job's comment: "hyperfed1;" followed by
// percent-encoded fields: the tag (t), the job's federation key (k), its cost
// (c), the sim duration (d), an explicit pin (p), "no working directory"
// (w=0) and the environment (e, one per variable). Slurm limits a comment to
// 1024 bytes; a spec that does not fit is refused (InvalidArgument) before
// anything is submitted. A job submitted to Slurm directly has no such
// comment: its key is "<cluster>/<job id>", its cost cores x time limit in
// seconds (cores when unlimited), its tag "" and its environment empty (the
// commands cannot read a job's environment; see env policy below). So has
// a job whose comment is in hyperfed's format without a valid mark (a
// user's own): its k=, c= and d= are ignored, only its e= (its user's own
// variables) and p= count (issue 34, finding 5).
//
// Spec <-> Slurm:
//   name -> --job-name; script -> sbatch's stdin (byte for byte; back with
//   `scontrol write batch_script`); cores -> --cpus-per-task (one task);
//   memory_mb -> --mem; time_limit_s -> --time in minutes, rounded up;
//   workdir -> --chdir; env -> the comment and `--export=NIL
//   --export-file=FILE` (NAME=value records separated by NUL in a 0600 file:
//   the values reach the job only, never sbatch's own environment or
//   argv, and no value is parsed by Slurm's option parser), or --export=NONE
//   when empty; either way the job gets the run-as user's login environment
//   at the destination, not the daemon's; owner -> --uid/--gid of the user
//   it runs as (run_as), and the comment.
//   The script's #SBATCH and #SLURM lines outside a small allow-list and
//   its #PBS/#BSUB ones are neutralised (FilterSbatchDirectives), and
//   sbatch is told --ignore-pbs:
//   where a job runs and with what is the spec's and the site's to say.
//
// Options: slurm_options.h.
// Every command runs with a fixed environment (PATH=kSlurmSafePath or
// bin_dir, LANG=C, LC_ALL=C, SLURM_CONF when set; squeue also
// SQUEUE_FORMAT2 and SLURM_TIME_FORMAT, sbatch --test-only TZ=UTC), never
// the daemon's and never anything of a spec's: issue 12, row 1.
// Capacity is the CPUs of the nodes in the managed partitions that can take
// jobs: nodes DOWN, DRAIN/DRAINED/DRAINING or FAIL/FAILING do not count. A job that a
// spec cannot describe is pinned (see NotPortable), and so is one without a
// batch script (batch_flag false: srun/salloc) or whose script slurmctld
// cannot give (found by Export, which then says so; pinned while it exists).
// Scripts are fetched only by Export/ExportMany: ListJobs, FindByTag and
// GetJobs leave spec.script empty, so one bad script never breaks them.
//
// Idempotent Submit: under the adapter's mutex, the tag is looked up in
// the queue (squeue) and sbatch runs only when no job carries it. The tag is in
// the job record from the moment slurmctld accepts the job, so a crash (or a
// timed-out sbatch) after acceptance leaves a job a retry finds. The window
// that remains is outside this process: two daemons on one cluster with the
// same tags, or a retry later than MinJobAge after the job ended. The
// migrator's journal covers the latter: a COMMITTED transfer answers its
// stored ids and never submits again, and an IN PREPARED record is finished
// at restart, seconds later.
//
// Every command failure is a Status naming the command, its exit code and
// its stderr (kUnavailable), a timeout is kDeadlineExceeded; an sbatch that
// slurmctld answered with a refusal is kInvalidArgument (see Submit in
// adapter.h).
//
// Marks: a job counts as one hyperfed submitted (its tag is believed, it is
// found by FindByTag and by a retried Submit) only when its comment carries
// a valid mark (m=, mark.h) over its tag, key, owner and the user it runs
// as. A local user cannot make one, and cannot reuse another job's (it
// names that job's user). Other "hyperfed1;" comments are a user's own:
// their tag and owner are ignored, their environment is checked like a
// spec's (a refused name pins the job).
//
// Placement window: a job that deploy/slurm/job_submit.lua holds back for a
// few seconds (a begin time ahead, "hyperfed-window=<end>" in its
// AdminComment) is pending with Pending()'s window_end_ms set until the
// daemon ends the window (EndPlacementWindow) or it runs out; docs/adapters.md,
// "Placement at arrival (job_submit.lua)".
//
// Thread-safety: every method may be called from any thread; calls are
// serialized on one mutex (Slurm orders them anyway). Within one batch call,
// the per-job commands run on up to kSlurmParallelCommands threads, joined
// before it returns.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/scheduler/adapter.h"
#include "daemon/scheduler/mark.h"
#include "daemon/scheduler/registry.h"
#include "daemon/scheduler/slurm_options.h"
#include "daemon/scheduler/subprocess.h"

namespace hyperfed::scheduler {

inline constexpr char kSlurmAdapterName[] = "slurm";
// Slurm refuses longer comments.
inline constexpr size_t kSlurmMaxComment = 1024;
// Slurm keeps a time limit in minutes and shows (and, past it, mangles) it
// in seconds as a 32-bit int: 35791394 minutes show as INVALID in squeue.
inline constexpr int64_t kSlurmMaxTimeMinutes = 35791393;
// --mem is in MB and slurmctld works in bytes within 63 bits (the top bit
// flags "per CPU").
inline constexpr int64_t kSlurmMaxMemoryMb = int64_t{1} << 40;
// Jobs per `scontrol hold|release` or `scancel` command (they take lists).
inline constexpr size_t kSlurmChangeBatch = 500;
// The per-job commands of one batch (sbatch, `scontrol write batch_script`)
// that run at once. A command's time is mostly waiting (process start,
// munge, slurmctld's answer), and slurmctld serves RPCs on many threads;
// docs/benchmarks.md, "Slurm to Slurm", has plain sbatch's rate at 1 to 32.
inline constexpr size_t kSlurmParallelCommands = 8;

// Where the commands are looked up when bin_dir is unset.
inline constexpr char kSlurmSafePath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The #SBATCH directives a moved job's script keeps (docs/adapters.md,
// "#SBATCH lines"). Each must stand alone on its line, in exactly this
// form: `#SBATCH --requeue`, `#SBATCH --no-requeue`, `#SBATCH
// --mail-type=V`, `#SBATCH --open-mode=V`, `#SBATCH --signal=V`, with V made
// of [A-Za-z0-9_,:@]. They change how a job is notified, requeued and
// signalled, not where it runs, as whom, with what or where it writes.
// Every other #SBATCH or #SLURM line in the script's header (up to the first
// line that is neither blank nor a comment, where sbatch stops reading
// them) is rewritten to "# hyperfed removed: <line>", and so is every #PBS
// and #BSUB line where sbatch without --ignore-pbs reads them (before the
// 101st line not starting with '#'); other lines are untouched. A prefix in
// any case and after blanks counts, so nothing sbatch might read slips
// through (Slurm 22.05's src/sbatch/opt.c and xlate.c; issue 34).
std::string FilterSbatchDirectives(const std::string& script);

// The local user a moved job runs as (run_as, users_map, run_as_account of
// `o`): never root, the daemon's own account or one in deny_users; for
// run_as owner only uid_min..uid_max. InvalidArgument starting
// "<scheduler>: " saying why not. The one rule for every adapter that runs
// jobs through a scheduler's commands (slurm, gridengine).
struct RunAsUser {
  std::string name;
  uint32_t uid = 0, gid = 0;
};
absl::StatusOr<RunAsUser> ResolveRunAs(const SlurmOptions& o, const JobSpec& spec, const std::string& scheduler);
// What Open checks of run_as_account and users_map's local users, so that a
// site learns at start, not at its first transfer.
absl::Status CheckRunAsOptions(const SlurmOptions& o);

// What hyperfed stores in a job's comment (see the top of this file). Fields
// not set are derived from the Slurm job.
struct SlurmJobMeta {
  std::string tag;
  bool has_key = false;
  std::string key;
  bool has_cost = false;
  double cost = 0;
  int64_t duration_ms = 0;
  int pinned = -1;  // -1 = not stored, else 0/1
  bool no_workdir = false;
  std::map<std::string, std::string> env;
  std::string owner;  // o: the spec's owner
  std::string mark;   // m: SlurmMarkMessage's mark (mark.h)
};
// What a job's mark signs: its tag, key and owner and the user it runs as,
// each length-prefixed.
std::string SlurmMarkMessage(const SlurmJobMeta& m, const std::string& user);
std::string EncodeSlurmComment(const SlurmJobMeta& m);
// nullopt-like: false when the comment is not hyperfed's.
bool DecodeSlurmComment(const std::string& comment, SlurmJobMeta* m);

// Reading the queue: `squeue --noheader --all --states=all` with the
// fields of SlurmQueueJob only, each printed whole (width 0) and followed by
// a separator that ReadQueue makes afresh for every read from 131 random
// bits (SlurmQueueSeparator). A job's name, comment, admin comment and
// working directory may hold any bytes, newlines and '|' included; a
// separator no one can know in advance is one no field can hold. The format
// goes to squeue in SQUEUE_FORMAT2, not on its command line, so other local
// users cannot read it from /proc while the command runs (/proc/PID/environ
// is private to the process's owner). Times are epoch seconds
// (SLURM_TIME_FORMAT=%s): no time zone to guess. Every record must have
// exactly the fields asked for and a numeric job id, or the whole read fails
// (FailedPrecondition naming squeue's output): a job is never guessed.
//
// What squeue prints of one job, as it prints it ("(null)" and "N/A" read
// as "" in the fields a job need not have: array, dependency, requests,
// comments), numbers and times read (0 when squeue prints none).
struct SlurmQueueJob {
  std::string id;          // digits
  std::string array_task;  // ArrayTaskID: "" for a job not of an array
  std::string het_job;     // HetJobID: "" for a job not heterogeneous
  std::string state;       // State: PENDING, RUNNING, ... (job_state_string)
  std::string reason;      // Reason: JobHeldUser, Resources, ...
  int64_t submit_s = 0, start_s = 0, eligible_s = 0;
  std::string partition, user, cluster, name;
  int64_t cpus = 0;
  // MinMemory: what the job asked per node or per CPU (squeue does not say
  // which; 0 = no request); tres_memory_mb: the mem= of tres-alloc, the
  // memory the job is given (or asks for) in all.
  int64_t min_memory_mb = 0, tres_memory_mb = 0;
  int64_t time_limit_s = 0;  // 0 = none (UNLIMITED, NOT_SET)
  std::string workdir;
  bool batch = true;  // BatchFlag
  std::string dependency;
  int64_t tasks = 0, nodes = 0;
  std::string tres_per_job, tres_per_node, tres_per_socket, tres_per_task, licenses, features;
  std::string comment, admin_comment;
};
// A separator for one read: no ',' or ':' (they end a --Format field) and
// no leading digit or '.' (they would be read as the field's width).
std::string SlurmQueueSeparator();
// The --Format (SQUEUE_FORMAT2) value that prints SlurmQueueJob's fields,
// each followed by `sep`.
std::string SqueueFormat(const std::string& sep);
// What squeue printed with SqueueFormat(sep), one record per job;
// FailedPrecondition, quoting the output, when it does not have that shape.
absl::StatusOr<std::vector<SlurmQueueJob>> ParseSqueue(const std::string& out, const std::string& sep);
// "[D-]H:MM:SS" (and "M:SS") in seconds; 0 for UNLIMITED, NOT_SET or
// anything else.
int64_t SlurmDurationSeconds(const std::string& s);
// "300M", "16G", "1.5T", "0" in MB; 0 for anything else.
int64_t SlurmMemoryMb(const std::string& s);

// Why a Slurm job cannot move, or "" when it can: a spec has no field for
// dependencies, arrays, heterogeneous jobs, several tasks or nodes,
// GRES/TRES (GPUs), licenses or node features, so such a job is pinned.
std::string NotPortable(const SlurmQueueJob& job);

// Slurm's state (and pending reason) as a JobState. Held: PENDING/REQUEUED
// with a "held" reason, REQUEUE_HOLD, SPECIAL_EXIT, RESV_DEL_HOLD. Pending:
// PENDING, REQUEUED, REQUEUE_FED. Running: RUNNING, SUSPENDED, STOPPED,
// CONFIGURING, COMPLETING, SIGNALING, STAGE_OUT, RESIZING, and any state not
// known here (never moved, never cancelled). Done: COMPLETED, FAILED,
// TIMEOUT, NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE, OUT_OF_MEMORY.
// Cancelled: CANCELLED.
JobState MapSlurmState(const std::string& state, const std::string& reason);

// The start time (ms since the epoch) in what `sbatch --test-only` prints,
// "sbatch: Job 12 to start at 2024-05-01T10:00:00 using 4 processors on
// nodes n1 in partition debug", the time read as UTC; Internal, quoting the
// output, when it holds none.
absl::StatusOr<int64_t> ParseSbatchTestOnlyStart(const std::string& output);

// The placement window (docs/adapters.md, "Placement at arrival
// (job_submit.lua)"). deploy/slurm/job_submit.lua gives a new job a begin
// time a few seconds ahead and records its end in the job's AdminComment as
// kSlurmWindowToken followed by the end in epoch seconds, a field of its own
// (fields are separated by ';'). Only Slurm administrators and the plugin
// can write an AdminComment, so a user cannot fake a window. When the
// daemon ends the window the field reads kSlurmWindowToken + "kept".
inline constexpr char kSlurmWindowToken[] = "hyperfed-window=";
// The window's end (epoch seconds) an AdminComment records; 0 when it
// records none (no field, "kept", not a number). The last field counts.
int64_t SlurmWindowEnd(const std::string& admin_comment);
// The AdminComment once the window was ended: each window field reads
// "kept", every other field is unchanged.
std::string SlurmWindowKept(const std::string& admin_comment);

class SlurmAdapter : public SchedulerAdapter {
 public:
  // Parses the options; touches nothing (a Slurm that is down fails the
  // first call, not the start).
  static absl::StatusOr<std::unique_ptr<SlurmAdapter>> Open(SlurmOptions options, const AdapterContext& ctx);
  // The same with ctx.options parsed first (ParseSlurmOptions).
  static absl::StatusOr<std::unique_ptr<SlurmAdapter>> Open(const AdapterContext& ctx);

  std::string Name() const override { return kSlurmAdapterName; }
  absl::StatusOr<std::vector<Job>> ListJobs() override;
  absl::StatusOr<Capacity> GetCapacity() override;
  absl::StatusOr<int64_t> CountMigratable() override;
  // The managed pending jobs that could move, in queue order, with their
  // CPUs and Slurm's expected start: the job record's start_time, which is
  // what `squeue --start` prints (set by the backfill scheduler's pass; 0,
  // unknown, until one has planned the job; a job in its placement window:
  // the window's end), and window_end_ms for a job in its window (see
  // EndPlacementWindow). Read from the same squeue as ListJobs.
  absl::StatusOr<std::vector<PendingJob>> Pending() override;
  // The CPUs of the largest node of the submit partition (the sinfo lookup
  // CheckSpec uses, cached for a minute); Unavailable while sinfo fails.
  absl::StatusOr<int64_t> WidestJob() override;
  // One `sbatch --test-only` per width (a one-task job of `width` CPUs per
  // task, --wrap=true, no time limit of its own, the submit partition and
  // account of real submissions, a comment in hyperfed's format so that
  // job_submit.lua gives it no placement window, as it gives none to a job
  // that arrives), whose "Job N to start at <time>" is read
  // as UTC (the command runs with TZ=UTC). InvalidArgument for a width < 1
  // or above WidestJob; Internal when sbatch's answer cannot be read.
  absl::StatusOr<std::vector<int64_t>> ArrivalStarts(const std::vector<int64_t>& widths) override;
  absl::Status Hold(const std::string& id) override;
  absl::Status Release(const std::string& id) override;
  absl::Status Cancel(const std::string& id) override;
  absl::StatusOr<JobSpec> Export(const std::string& id) override;
  // Besides the contract: InvalidArgument (nothing submitted) for what
  // CheckSpec refuses, and for what sbatch refuses (slurmctld's "Batch job
  // submission failed: ...", an invalid partition, ...); Unavailable when
  // slurmctld could not be reached. Runs sbatch as the run_as user
  // (--uid/--gid), which needs root or SlurmUser.
  absl::StatusOr<std::string> Submit(const JobSpec& spec, const std::string& tag, bool held = false) override;
  // The common rules, a script starting with "#!", a user to run it as
  // (run_as; never root or the daemon's own account), a time limit and
  // memory Slurm can hold, cores and memory within the largest node of the
  // submit partition (sinfo, cached for a minute; skipped while sinfo
  // fails), and a comment (with room for the longest migration tag and the
  // mark) within Slurm's limit.
  absl::Status CheckSpec(const JobSpec& spec) const override;
  absl::StatusOr<std::vector<Job>> FindByTag(const std::string& tag) override;
  // FailedPrecondition for a done or cancelled job (Slurm no longer updates
  // it), and for unpinning a job that must stay pinned (pinned partition,
  // not portable, no or unreadable batch script), saying why. Replaces a
  // comment that is not hyperfed's.
  absl::Status SetPinned(const std::string& id, bool pinned) override;

  // Hold and Cancel read the queue again afterwards: a job still pending (or,
  // for Cancel, held) is Unavailable, so the caller retries; one that started
  // or ended meanwhile is FailedPrecondition.
  //
  // One squeue per batch instead of one per item (two for Hold and
  // Cancel: before and after). Holds, releases and cancels take one command
  // per kSlurmChangeBatch jobs; SubmitMany and ExportMany run their per-job
  // commands (sbatch, `scontrol write batch_script`) kSlurmParallelCommands
  // at a time, each job with its own result. After a command of the batch
  // times out, the items not yet started get that error without trying
  // (each would wait as long again).
  std::vector<absl::Status> HoldMany(const std::vector<std::string>& ids) override;
  std::vector<absl::Status> ReleaseMany(const std::vector<std::string>& ids) override;
  std::vector<absl::Status> CancelMany(const std::vector<std::string>& ids) override;
  std::vector<absl::StatusOr<JobSpec>> ExportMany(const std::vector<std::string>& ids) override;
  std::vector<absl::StatusOr<Job>> GetJobs(const std::vector<std::string>& ids) override;
  std::vector<absl::StatusOr<std::string>> SubmitMany(const std::vector<std::pair<JobSpec, std::string>>& spec_and_tag,
                                                      bool held = false) override;
  // A job is in its window while it is pending or held, its AdminComment
  // records a window's end (SlurmWindowEnd) and its begin time (squeue's
  // eligible_time) is still that end and in the future: the user has not
  // moved it since. Such jobs get `scontrol update JobId=<list>
  // StartTime=now AdminComment=<SlurmWindowKept>`, one command per
  // kSlurmChangeBatch jobs with the same new AdminComment (nearly always
  // one); any other known job is a no-op. NotFound for an unknown id. When
  // a command fails, the queue is read again: a job no longer in its window
  // (it started, or its window ran out) is OK, else the command's error.
  // Needs an administrator of Slurm (root, SlurmUser or AdminLevel=Admin):
  // only they may change an AdminComment.
  std::vector<absl::Status> EndPlacementWindow(const std::vector<std::string>& ids) override;

  const SlurmOptions& options() const { return options_; }

 private:
  SlurmAdapter(SlurmOptions options, MarkKey mark, std::string env_dir)
      : options_(std::move(options)), mark_(std::move(mark)), env_dir_(std::move(env_dir)) {}

  // Never root, the daemon, deny_users; for run_as owner only uid_min..uid_max
  // (WhyNotRunAs in slurm_adapter.cc; issue 34).
  absl::StatusOr<RunAsUser> RunAs(const JobSpec& spec) const;
  // The largest node of the submit partition (or of the managed ones);
  // nullopt-like units = 0 when sinfo cannot say.
  struct NodeLimits {
    int64_t cpus = 0;
    int64_t memory_mb = 0;
  };
  NodeLimits Limits() const;

  // A job as squeue shows it, with what the adapter needs beyond Job.
  struct Entry {
    Job job;  // spec.script not filled (Export fetches it)
    std::string partition;
    std::string comment;
    bool has_meta = false;
    SlurmJobMeta meta;
    bool managed = true;    // in `partitions` and `users` (when set)
    bool marked = false;    // its comment's mark verifies: hyperfed submitted it
    std::string user;       // the user it runs as
    bool batch = true;      // has a batch script (not srun/salloc)
    std::string fixed_pin;  // why it is pinned whatever SetPinned says ("" = it is not)
    int64_t start_ms = 0;   // pending: Slurm's expected start (0 = none yet)
    std::string admin_comment;
    int64_t window_end_s = 0;  // SlurmWindowEnd(admin_comment)
    int64_t eligible_s = 0;    // the begin time: squeue's eligible_time
    // In its placement window at `now_s` (see EndPlacementWindow).
    bool InWindow(int64_t now_s) const {
      return (job.state == JobState::kPending || job.state == JobState::kHeld) && window_end_s > 0 &&
             eligible_s == window_end_s && eligible_s > now_s;
    }
    // Jobs hyperfed submitted (tagged) are reachable by id and tag even
    // outside `partitions`/`users`; ListJobs and CountMigratable show only
    // managed ones.
    bool Visible() const { return managed || (marked && !meta.tag.empty()); }
  };
  using Queue = std::map<std::string, Entry>;  // by id
  // A job id with its submit time (ms): ids are reused once slurmctld starts
  // afresh (-c), so the id alone may name another job than the one cached.
  using JobKey = std::pair<std::string, int64_t>;

  // Runs a Slurm command in the fixed environment: kUnavailable for a
  // non-zero exit, with its stderr. RunRaw leaves the exit code to the caller.
  absl::StatusOr<CommandResult> Run(std::vector<std::string> argv, std::string stdin_text = "", std::string cwd = "",
                                    const std::map<std::string, std::string>& extra_env = {}) const;
  absl::StatusOr<CommandResult> RunRaw(std::vector<std::string>* argv, std::string stdin_text, std::string cwd,
                                       const std::map<std::string, std::string>& extra_env = {}) const;
  // Every job slurmctld holds, in every state, managed or not.
  absl::StatusOr<Queue> ReadQueue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job's batch script as slurmctld gives it; FailedPrecondition when it
  // has none to give. Touches no member state (ExportMany runs it on
  // several threads and keeps the scripts in scripts_).
  absl::StatusOr<std::string> FetchScript(const std::string& id) const;
  enum class Change { kHold, kRelease, kCancel };
  // What the queue `q` already answers for job `id` (not found, already so,
  // cannot be changed), or nullopt when the job needs the command.
  std::optional<absl::Status> ChangeIn(const Queue& q, Change c, const std::string& id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The command that makes the change for a list of jobs.
  static std::vector<std::string> ChangeCommand(Change c, const std::vector<std::string>& ids);
  // One job's result: `command` is its batch command's status, `after` the
  // queue read after every batch (nullptr: not read, for a release whose
  // command succeeded).
  static absl::Status Judge(Change c, const std::string& id, const absl::Status& command,
                            const absl::StatusOr<Queue>* after);
  // Hold, release or cancel: one command per kSlurmChangeBatch jobs.
  std::vector<absl::Status> ChangeMany(Change c, const std::vector<std::string>& ids);
  // CheckSpec with the node limits given.
  absl::Status CheckSpecWithin(const JobSpec& spec, const NodeLimits& limits) const;
  // One sbatch. Touches no member state: SubmitMany runs it on several
  // threads while it holds mu_ (so the tags it looked up stay true).
  absl::StatusOr<std::string> SubmitIn(const JobSpec& spec, const std::string& tag, bool held,
                                       const NodeLimits& limits) const;
  // The queue entry of a job Export can give, or why it cannot (unknown,
  // no batch script, a refused environment variable).
  static absl::StatusOr<const Entry*> ExportableIn(const Queue& q, const std::string& id);
  // Drops cached scripts of jobs no longer in the queue.
  void TrimScripts(const Queue& q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SlurmOptions options_;
  const MarkKey mark_;
  const std::string env_dir_;  // where --export-file files are written (0600, removed after sbatch)
  mutable absl::Mutex limits_mu_;
  mutable NodeLimits limits_ ABSL_GUARDED_BY(limits_mu_);
  mutable absl::Time limits_at_ ABSL_GUARDED_BY(limits_mu_) = absl::InfinitePast();
  absl::Mutex mu_;
  // Batch scripts fetched (a Slurm job's script never changes).
  std::map<JobKey, std::string> scripts_ ABSL_GUARDED_BY(mu_);
  // Jobs whose script slurmctld could not give: pinned while they exist.
  std::set<JobKey> unreadable_ ABSL_GUARDED_BY(mu_);
};

// "slurm" in the registry: SlurmOptions, SlurmAdapter::Open.
class SlurmAdapterFactory final : public TypedAdapterFactory<SlurmOptions> {
 public:
  std::string Name() const override { return kSlurmAdapterName; }

 protected:
  absl::StatusOr<SlurmOptions> Parse(const std::map<std::string, std::string>& options) const override;
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> Make(const SlurmOptions& options,
                                                         const AdapterContext& ctx) const override;
};

}  // namespace hyperfed::scheduler
