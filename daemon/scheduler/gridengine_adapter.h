#pragma once

// The `gridengine` adapter: drives a Grid Engine cluster (Son of Grid
// Engine 8.1, Debian's gridengine-* packages) through its own commands
// (qsub, qhold, qrls, qdel, qalter, qstat -xml), each run as a child process
// with a timeout (daemon/scheduler/subprocess.h), in the same way and with
// the same guarantees as the slurm adapter (slurm_adapter.h; docs/adapters.md,
// "Grid Engine"):
//
// - The mark. What hyperfed keeps of a job rides in the job's context
//   variable "hyperfed" (qsub -ac), in the slurm adapter's comment format
//   (EncodeSlurmComment) with its mark (SlurmMarkMessage over the tag, key,
//   owner and the user the job runs as), plus "M=<MB>" for the memory a spec
//   asked for. Only a context whose mark verifies makes a job one hyperfed
//   submitted.
// - Run as owner. Options run_as, users_map, run_as_account, uid_min,
//   uid_max and deny_users are the slurm adapter's (ResolveRunAs): never
//   root, never the daemon's own account, never a service account
//   (kGridEngineDeniedUsers). qsub has no --uid: it runs as that user
//   (setpriv --reuid --regid --init-groups, util-linux), so Grid Engine
//   records and runs the job as them. Grid Engine itself refuses uids
//   below its min_uid.
// - Directives. Every line of the script that starts with "#$" (after
//   blanks, any case) is rewritten to "# hyperfed removed: <line>"
//   (FilterQsubDirectives), and qsub is told -C "" (no directive prefix) and
//   -clear (no defaults from sge_request files): where a job runs and with
//   what is the spec's and the site's to say.
// - A refused job fails alone: CheckSpec and the qsub answers that are the
//   job's fault (qsub's "Unable to run job", "denied", ...) are
//   InvalidArgument; a qmaster that does not answer is Unavailable.
//
// Spec <-> Grid Engine:
//   name -> -N; script -> qsub's stdin (byte for byte; back from the
//   qmaster's spool, <qmaster_spool_dir>/job_scripts/<id>: the daemon must
//   run on the qmaster host, as root, with classic spooling, which keeps the
//   scripts there); cores -> -pe <pe> N (the option `pe`, a parallel
//   environment with allocation_rule $pe_slots) when N > 1; memory_mb ->
//   -l h_vmem=<MB per slot, rounded up>M, and M= in the context;
//   time_limit_s -> -l h_rt=<s>; workdir -> -wd (or submit_dir when the job
//   has none); env -> -v NAME,... with the values in qsub's own environment
//   (never in argv; -v with a value would split at commas); owner -> the
//   user qsub runs as.
//
// State: qw -> pending; hqw (any hold) -> held; r, t, R, s, S, T, and any
// state not known here -> running (never moved or cancelled); a state with
// E (error) -> held and pinned (it never starts until an operator clears
// it); d (deletion under way) -> cancelled when it is not running; a zombie
// (`qstat -s z`, kept for the last finished_jobs jobs) -> done, or cancelled
// when this adapter cancelled it.
//
// What Grid Engine cannot say, and what the adapter does instead:
// - qstat shows a finished job (a zombie) without its context: the adapter
//   keeps a ledger of the marked jobs it has seen (tag, spec, who runs it;
//   one JSON file per job under <state folder>/gridengine-jobs/<cluster>,
//   the cluster's SGE_ROOT, cell and qmaster port), so that
//   FindByTag finds a job after it ended, and keeps the script of each job
//   it cancels, so that Export still works. A held job hyperfed submits is
//   in the ledger at its first read; the one window left is a crash between
//   qsub and that read of a job submitted unheld that also ends before the
//   next read.
// - Done or cancelled: a zombie says neither; the adapter knows the jobs it
//   cancelled itself. A job a user deleted reads done.
// - Start times: Grid Engine predicts none without advance reservation, so
//   Pending's start_ms is 0 and ArrivalStarts is Unimplemented (the site
//   publishes no start profile; other sites send it jobs by count alone).
//
// Options: gridengine_options.h.
//
// Thread-safety: every method may be called from any thread; calls are
// serialized on one mutex. Within SubmitMany, the qsubs run on up to
// kGridEngineParallelCommands threads, joined before it returns.

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/scheduler/adapter.h"
#include "daemon/scheduler/gridengine_options.h"
#include "daemon/scheduler/mark.h"
#include "daemon/scheduler/registry.h"
#include "daemon/scheduler/slurm_adapter.h"
#include "daemon/scheduler/subprocess.h"

namespace hyperfed::scheduler {

inline constexpr char kGridEngineAdapterName[] = "gridengine";
// The context variable that carries hyperfed's record of a job.
inline constexpr char kGridEngineContextVar[] = "hyperfed";
// The qsubs of one SubmitMany that run at once (subprocess.h, RunParallel).
// A qsub's time is mostly waiting (process start, setpriv, the qmaster's
// answer), and the qmaster takes submissions on several threads;
// docs/benchmarks.md, "Grid Engine to Grid Engine, Slurm to Grid Engine",
// has plain qsub's rate at 1 to 16.
inline constexpr size_t kGridEngineParallelCommands = 8;
// The most bytes hyperfed's record of a job (tag, key, owner, environment;
// kGridEngineContextVar) may take. It is one argument of qsub (-ac), and
// the environment's values are in qsub's environment too: the kernel
// takes 128 KiB for one (MAX_ARG_STRLEN), and a qsub that cannot start
// (E2BIG) would look like a qmaster that does not answer, retried for ever.
// Grid Engine itself takes 127 KiB.
inline constexpr size_t kGridEngineMaxContext = size_t{64} << 10;

// Every line whose first non-blank characters are "#$" becomes
// "# hyperfed removed: <line>"; other lines are untouched.
std::string FilterQsubDirectives(const std::string& script);

// A small XML tree, enough for qstat -xml: elements, attributes, text (the
// five entities and &#N; decoded). No DTD, no namespaces.
struct XmlNode {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // the text directly inside (not of children)
  std::vector<XmlNode> children;
  // The first child named `n`, or nullptr.
  const XmlNode* Child(const std::string& n) const;
  // The text of the first child named `n` ("" when none).
  std::string ChildText(const std::string& n) const;
};
// The document's root element; InvalidArgument saying where it is malformed.
absl::StatusOr<XmlNode> ParseXml(const std::string& text);

// Grid Engine's state letters as a JobState ("z" is done).
JobState MapGridEngineState(const std::string& state);

// What the adapter reads of one job (qstat -j, or the ledger).
struct GridEngineJobFacts {
  std::string id, user, name, context, cwd;
  int64_t submit_s = 0;
  int cores = 1;
  int64_t memory_mb = 0;  // h_vmem x slots, MB (0: none)
  int64_t time_s = 0;     // h_rt (0: none)
  std::string fixed_pin;  // what a spec cannot carry ("" = nothing)
};

class GridEngineAdapter : public SchedulerAdapter {
 public:
  // Parses the options and reads the cell's bootstrap for the script
  // folder; runs no command.
  static absl::StatusOr<std::unique_ptr<GridEngineAdapter>> Open(GridEngineOptions options, const AdapterContext& ctx);
  // The same with ctx.options parsed first (ParseGridEngineOptions).
  static absl::StatusOr<std::unique_ptr<GridEngineAdapter>> Open(const AdapterContext& ctx);

  std::string Name() const override { return kGridEngineAdapterName; }
  absl::StatusOr<std::vector<Job>> ListJobs() override;
  absl::StatusOr<Capacity> GetCapacity() override;
  // The slots of the largest queue instance of `queue`.
  absl::StatusOr<int64_t> WidestJob() override;
  absl::Status Hold(const std::string& id) override;
  absl::Status Release(const std::string& id) override;
  absl::Status Cancel(const std::string& id) override;
  absl::StatusOr<JobSpec> Export(const std::string& id) override;
  absl::StatusOr<std::string> Submit(const JobSpec& spec, const std::string& tag, bool held = false) override;
  // The common rules, a script starting with "#!", a user to run it as, a
  // name qsub takes, no environment variable Grid Engine reads itself
  // (SGE_*, QRSH_*, ...), cores within the widest queue instance, a record
  // within kGridEngineMaxContext.
  absl::Status CheckSpec(const JobSpec& spec) const override;
  absl::StatusOr<std::vector<Job>> FindByTag(const std::string& tag) override;
  absl::Status SetPinned(const std::string& id, bool pinned) override;
  // One queue read per batch (two for holds and cancels, before and after)
  // and one command for all its jobs; SubmitMany runs its qsubs
  // kGridEngineParallelCommands at a time, each job with its own result
  // (after a qsub times out, the items not yet started get that error
  // without trying).
  std::vector<absl::Status> HoldMany(const std::vector<std::string>& ids) override;
  std::vector<absl::Status> ReleaseMany(const std::vector<std::string>& ids) override;
  std::vector<absl::Status> CancelMany(const std::vector<std::string>& ids) override;
  std::vector<absl::StatusOr<JobSpec>> ExportMany(const std::vector<std::string>& ids) override;
  std::vector<absl::StatusOr<Job>> GetJobs(const std::vector<std::string>& ids) override;
  std::vector<absl::StatusOr<std::string>> SubmitMany(const std::vector<std::pair<JobSpec, std::string>>& spec_and_tag,
                                                      bool held = false) override;

 private:
  GridEngineAdapter(GridEngineOptions options, MarkKey mark, std::string ledger_dir, std::string cluster)
      : options_(std::move(options)),
        mark_(std::move(mark)),
        ledger_dir_(std::move(ledger_dir)),
        cluster_(std::move(cluster)) {}

  struct Entry {
    Job job;
    std::string user;
    bool marked = false;
    bool managed = true;
    GridEngineJobFacts raw;
    std::string fixed_pin;  // why it stays pinned whatever SetPinned says
    bool Visible() const { return managed || (marked && !job.tag.empty()); }
  };
  using Queue = std::map<std::string, Entry>;
  // What the ledger keeps of a marked job.
  struct Ledgered {
    GridEngineJobFacts raw;
    bool cancelled = false;  // this adapter cancelled it
    bool has_script = false;
    std::string script;
  };

  absl::StatusOr<CommandResult> RunRaw(std::vector<std::string> argv, std::string stdin_text, std::string cwd,
                                       const std::map<std::string, std::string>& extra_env) const;
  // A Grid Engine command (argv[0] from bin_dir when set); Unavailable for a
  // non-zero exit.
  absl::StatusOr<CommandResult> Run(std::vector<std::string> argv) const;
  Entry MakeEntry(const GridEngineJobFacts& raw, JobState state) const;
  // Every job: pending and running from qstat, zombies, and the ledger's.
  absl::StatusOr<Queue> ReadQueue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::string> ReadScript(const std::string& id) const;
  void LoadLedger() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the record (0600, atomically) and keeps it in ledger_.
  void Remember(const Ledgered& l) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the record only (one file per job id: any thread may write one).
  void WriteLedgerRecord(const Ledgered& l) const;
  enum class Change { kHold, kRelease, kCancel };
  // Hold, release or cancel: one queue read, one command for every job
  // that needs it, one read after (a job that started meanwhile is
  // FailedPrecondition, one still pending Unavailable).
  std::vector<absl::Status> ChangeMany(Change c, const std::vector<std::string>& ids);
  absl::Status CheckSpecWithin(const JobSpec& spec, int64_t widest) const;
  absl::StatusOr<std::string> SubmitIn(const JobSpec& spec, const std::string& tag, bool held, int64_t widest) const;
  // The slots of the widest queue instance of `queue` (0: unknown), cached
  // for a minute.
  int64_t Widest() const;

  const GridEngineOptions options_;
  const MarkKey mark_;
  const std::string ledger_dir_;
  const std::string cluster_;  // the cluster's name: keys of jobs hyperfed did not submit
  mutable absl::Mutex widest_mu_;
  mutable int64_t widest_ ABSL_GUARDED_BY(widest_mu_) = 0;
  mutable absl::Time widest_at_ ABSL_GUARDED_BY(widest_mu_) = absl::InfinitePast();
  absl::Mutex mu_;
  bool ledger_loaded_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Ledgered> ledger_ ABSL_GUARDED_BY(mu_);  // by job id
};

// "gridengine" in the registry: GridEngineOptions, GridEngineAdapter::Open.
class GridEngineAdapterFactory final : public TypedAdapterFactory<GridEngineOptions> {
 public:
  std::string Name() const override { return kGridEngineAdapterName; }

 protected:
  absl::StatusOr<GridEngineOptions> Parse(const std::map<std::string, std::string>& options) const override;
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> Make(const GridEngineOptions& options,
                                                         const AdapterContext& ctx) const override;
};

}  // namespace hyperfed::scheduler
