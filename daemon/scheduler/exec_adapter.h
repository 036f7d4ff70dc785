#pragma once

// The `exec` adapter: a site's scheduler (PBS, LSF, HTCondor, anything) as a
// set of operator-written commands, one per operation. Each command gets its
// arguments on argv, the job spec (submit only) as JSON on stdin, and prints
// JSON on stdout; its exit code says success, "no such job" or "wrong state".
// docs/adapters.md ("exec") is the full contract and how to write the commands;
// tests/scheduler/exec_sched/ is a worked example that passes the shared
// adapter contract suite.
//
// Options (the config's scheduler.options, all strings):
//   command              a command line; operation OP runs it with OP
//                        appended as one more argument
//   OP_command           the command line for OP alone (overrides `command`),
//                        OP one of list, capacity, hold, release, cancel,
//                        export, submit, find_by_tag, pin, and the optional
//                        widest and arrival
//   extra_operations     comma-separated optional operations (widest,
//                        arrival) that `command` also answers
// An optional operation runs only when it has a command (OP_command, or
// `command` with the operation in extra_operations); without one the
// interface's default applies (WidestJob: capacity's units; ArrivalStarts:
// Unimplemented). A `list` job may carry start_ms (a pending job's expected
// start); Pending reports it, 0 when absent.
//   timeout_ms           how long one command may run before its process
//                        group is killed, in [1, 3600000]      (default 30000)
//   pass_env             comma-separated names of the daemon's environment
//                        variables the commands get; they get nothing else
//                        of it: PATH is kExecSafePath (unless passed), LANG
//                        and LC_ALL are C (issue 12, row 1)
// Every operation needs a command from one of the first two. Command lines
// are split into words without a shell (see SplitCommandLine).
//
// JSON: there is no JSON library among the project's dependencies, and
// protobuf is one already; its JSON parser (proto/hyperfed/exec/v1) checks
// every field name and type of the commands' output, so a misspelt field is
// an error naming it instead of a silent default. What the adapter writes
// (the spec on submit) it writes itself, so that 64-bit integers are JSON
// numbers (protobuf would print them as strings) and scripts can use them
// as numbers.
//
// Thread-safety: every method may be called from any thread; the adapter
// runs one command at a time, so the operator's commands never race each
// other (and a tagged submit's look-up and submit are one step).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/scheduler/adapter.h"
#include "daemon/scheduler/exec_options.h"
#include "daemon/scheduler/registry.h"
#include "daemon/scheduler/subprocess.h"

namespace hyperfed::scheduler {

inline constexpr char kExecAdapterName[] = "exec";

// Exit codes of an operator's command with a meaning of their own (for the
// operations on one job: hold, release, cancel, export, pin). Every other
// non-zero exit is a failure of the command (Unavailable).
inline constexpr int kExecExitNotFound = 10;    // no such job -> NotFound
inline constexpr int kExecExitWrongState = 11;  // job in the wrong state -> FailedPrecondition
// For submit: the scheduler refused the spec itself (a queue it does not
// have, more cores than any node, ...) and would refuse it again ->
// InvalidArgument, which is final (adapter.h, Submit).
inline constexpr int kExecExitRefused = 12;
// The PATH commands are looked up in and run with, unless pass_env passes
// the daemon's.
inline constexpr char kExecSafePath[] = "/usr/local/bin:/usr/bin:/bin";
// The JSON the adapter writes on a submit command's stdin.
// InvalidArgument when a string is not valid UTF-8, cores < 1, a size or
// time is negative, or cost is negative or not finite.
absl::StatusOr<std::string> JobSpecToJson(const JobSpec& spec);

// What a command that exited 0 printed, and how to name it in errors.
struct CommandOutput {
  std::string what;  // "exec scheduler: OP command `ARGV`"
  CommandResult result;
};

class ExecAdapter : public SchedulerAdapter {
 public:
  // Parses the options; runs nothing.
  static absl::StatusOr<std::unique_ptr<ExecAdapter>> Create(ExecOptions options);
  // The same with ctx.options parsed first (ParseExecOptions).
  static absl::StatusOr<std::unique_ptr<ExecAdapter>> Create(const AdapterContext& ctx);

  std::string Name() const override { return kExecAdapterName; }
  absl::StatusOr<std::vector<Job>> ListJobs() override;
  absl::StatusOr<Capacity> GetCapacity() override;
  absl::Status Hold(const std::string& id) override;
  absl::Status Release(const std::string& id) override;
  absl::Status Cancel(const std::string& id) override;
  absl::StatusOr<JobSpec> Export(const std::string& id) override;
  // A tagged submit first runs find_by_tag and returns the job found there,
  // so the submit command itself is run at most once per tag as long as
  // find_by_tag sees what submit queued.
  absl::StatusOr<std::string> Submit(const JobSpec& spec, const std::string& tag, bool held = false) override;
  // The common rules and what JSON can carry (valid UTF-8).
  absl::Status CheckSpec(const JobSpec& spec) const override;
  absl::StatusOr<std::vector<Job>> FindByTag(const std::string& tag) override;
  absl::Status SetPinned(const std::string& id, bool pinned) override;
  // From `list` (its jobs' start_ms), `widest` and `arrival` (one argument
  // per width); see the options above for when they run.
  absl::StatusOr<std::vector<PendingJob>> Pending() override;
  absl::StatusOr<int64_t> WidestJob() override;
  absl::StatusOr<std::vector<int64_t>> ArrivalStarts(const std::vector<int64_t>& widths) override;

 private:
  absl::StatusOr<int64_t> WidestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Capacity> CapacityLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  explicit ExecAdapter(ExecOptions options) : options_(std::move(options)) {}

  // Runs operation `op` with `args` appended; Ok only for exit 0. With
  // `job_op`, exits 10 and 11 become NotFound and FailedPrecondition.
  absl::StatusOr<CommandOutput> Run(const std::string& op, const std::vector<std::string>& args,
                                    const std::string& input, bool job_op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RunOnJob(const std::string& op, const std::string& id, std::vector<std::string> more_args);
  absl::StatusOr<std::vector<Job>> FindByTagLocked(const std::string& tag) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ExecOptions options_;
  absl::Mutex mu_;  // held while a command runs
};

// "exec" in the registry: ExecOptions, ExecAdapter::Create.
class ExecAdapterFactory final : public TypedAdapterFactory<ExecOptions> {
 public:
  std::string Name() const override { return kExecAdapterName; }

 protected:
  absl::StatusOr<ExecOptions> Parse(const std::map<std::string, std::string>& options) const override;
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> Make(const ExecOptions& options,
                                                         const AdapterContext& ctx) const override;
};

}  // namespace hyperfed::scheduler
