#pragma once

// The `sim` adapter: the embedded default scheduler. An in-process batch
// scheduler for a cluster of `cores` cores: a job takes its spec.cores for
// duration_ms / time_scale, and jobs start by FCFS with EASY backfilling on
// their time limits (daemon/balance/easy.h, the one implementation the
// offline replay uses too). A job's time limit, for EASY, is
// time_limit_s * 1000 / time_scale when time_limit_s > 0, else its run time
// (a sim job without a limit is known exactly). A job runs for its duration
// even past its limit (the sim kills nothing); while it does, EASY expects
// it to end at any moment and it keeps its cores, so no instant has more
// cores in use than the cluster. Its queue lives in SQLite at
// <state_dir>/sim-scheduler.db so that it survives a kill -9 and a restart
// of the daemon.
//
// Time is lazy: every call first advances the queue to Env::Now(), event by
// event in time order (at each job end, EasyStartNow over the running jobs
// and the pending queue decides which jobs start then), so no background
// thread is needed and tests drive it with a FakeEnv. Held jobs never start
// and keep no place in the queue; pinned jobs start as any other (a pin only
// stops a move). With 1-core jobs this is exactly the FIFO of `cores` slots.
//
// Every call is one SQLite transaction (the advance included), so a crash at
// any point leaves the queue as it was before or after that call. The EASY
// decisions read only what the rows hold (state, cores, limits, start and
// finish times), so the schema is the one of earlier versions.
//
// Options (the config's scheduler.options, all strings):
//   cores       the cluster's cores, an integer in [1, 1000000] (default 4)
//   slots       the older name of `cores` (giving both is an error)
//   speed       capacity speed factor, > 0                      (default 1.0)
//   time_scale  jobs run time_scale times faster, > 0           (default 1.0)
//   pin_marker  a job whose name starts with it is pinned at submit
//               ("" = off, the default)
// Capacity is {cores, speed}; WidestJob is `cores` and a wider job is
// refused at submit (one already queued wider, from an older version or a
// larger `cores`, takes the whole cluster). Ids are increasing integers
// ("1", "2", ...), never reused, also across restarts.
//
// Pending() forecasts with EasyForecastStarts: O(queue^2) in the worst case,
// about 14 ms for 2,000 pending 1-core jobs on 4 cores (ArrivalStarts the
// same). The queue it forecasts, and the forecast, are kept in memory: the
// queue is read again only after the database changed, the forecast made
// again only then or once a job is expected to end, so a round's Pending,
// FreeCores and Pending again usually forecast once; the forecast is made
// outside the adapter's lock. A plain call (CountMigratable, Hold, Submit,
// ...) replays only the running jobs while every core is busy; the pending
// queue is read only at an event with a free core.
//
// Thread-safety: every method may be called from any thread; calls are
// serialized on one connection.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "daemon/balance/easy.h"
#include "daemon/common/env.h"
#include "daemon/common/sqlite_statements.h"
#include "daemon/scheduler/adapter.h"
#include "daemon/scheduler/registry.h"
#include "daemon/scheduler/sim_options.h"

struct sqlite3;

namespace hyperfed::scheduler {

inline constexpr char kSimAdapterName[] = "sim";
inline constexpr char kSimDbFile[] = "sim-scheduler.db";

// Counts of the jobs by state, for an operator's status page.
struct SimStats {
  int64_t pending = 0;
  int64_t held = 0;
  int64_t running = 0;
  int64_t done = 0;
  int64_t cancelled = 0;
};

class SimAdapter : public SchedulerAdapter {
 public:
  // Parses the options, creates state_dir if missing and opens (or creates)
  // the queue. Bad options are rejected before anything is touched on disk.
  static absl::StatusOr<std::unique_ptr<SimAdapter>> Open(const SimOptions& options, const AdapterContext& ctx);
  // The same with ctx.options parsed first (ParseSimOptions).
  static absl::StatusOr<std::unique_ptr<SimAdapter>> Open(const AdapterContext& ctx);
  ~SimAdapter() override;

  SimAdapter(const SimAdapter&) = delete;
  SimAdapter& operator=(const SimAdapter&) = delete;

  std::string Name() const override { return kSimAdapterName; }
  absl::StatusOr<std::vector<Job>> ListJobs() override;
  absl::StatusOr<Capacity> GetCapacity() override;
  // Pending: in queue order, each with its EASY forecast start (every job
  // running to its time limit, nothing else arriving). WidestJob: `cores`.
  // ArrivalStarts: TailStart of that forecast (daemon/balance/easy.h).
  absl::StatusOr<std::vector<PendingJob>> Pending() override;
  absl::StatusOr<int64_t> WidestJob() override;
  absl::StatusOr<std::vector<int64_t>> ArrivalStarts(const std::vector<int64_t>& widths) override;
  // The forecast's free cores (EasyForecast::free_cores), in ms.
  absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> FreeCores() override;
  // Besides the common rules: InvalidArgument for a job wider than `cores`.
  absl::Status CheckSpec(const JobSpec& spec) const override;
  absl::Status Hold(const std::string& id) override;
  absl::Status Release(const std::string& id) override;
  absl::Status Cancel(const std::string& id) override;
  absl::StatusOr<JobSpec> Export(const std::string& id) override;
  // Besides the contract: InvalidArgument (and nothing submitted) for what
  // CheckSpec refuses (cores < 1 or above `cores`, a negative memory_mb,
  // time_limit_s or duration_ms, a negative or non-finite cost, ...).
  absl::StatusOr<std::string> Submit(const JobSpec& spec, const std::string& tag, bool held = false) override;
  // InvalidArgument for an empty tag (it means "no tag").
  absl::StatusOr<std::vector<Job>> FindByTag(const std::string& tag) override;
  absl::Status SetPinned(const std::string& id, bool pinned) override;

  // Each batch is one transaction: after a crash, all of it or none of it.
  // Per-item errors as the single calls; an invalid spec in SubmitMany gets
  // InvalidArgument and the others are submitted. A store failure rolls the
  // batch back and every item carries it.
  std::vector<absl::Status> HoldMany(const std::vector<std::string>& ids) override;
  std::vector<absl::Status> ReleaseMany(const std::vector<std::string>& ids) override;
  std::vector<absl::Status> CancelMany(const std::vector<std::string>& ids) override;
  std::vector<absl::StatusOr<JobSpec>> ExportMany(const std::vector<std::string>& ids) override;
  std::vector<absl::StatusOr<Job>> GetJobs(const std::vector<std::string>& ids) override;
  absl::StatusOr<int64_t> CountMigratable() override;
  std::vector<absl::StatusOr<std::string>> SubmitMany(const std::vector<std::pair<JobSpec, std::string>>& spec_and_tag,
                                                      bool held = false) override;

  // Advances the queue to the clock's now (every other call does this too).
  absl::Status Tick();

  // Every job, done and cancelled included (the federation simulation
  // counts them: sim/federation).
  absl::StatusOr<std::vector<Job>> ListAllJobs();

  // Any job by id, done and cancelled included. NotFound for an unknown id.
  absl::StatusOr<Job> GetJob(const std::string& id);

  absl::StatusOr<SimStats> Stats();
  absl::StatusOr<int64_t> CountDone();

  const SimOptions& options() const { return options_; }

  // Tests only: called with a point name ("submit:job-row",
  // "submit:before-commit", "advance:before-commit", ...) inside the
  // transactions, so a test can kill the process mid-transaction.
  void SetCrashHookForTesting(std::function<void(absl::string_view)> hook);

 private:
  SimAdapter(SimOptions options, const Env* clock, sqlite3* db);

  absl::Status InitSchema();
  // Runs `body` in one IMMEDIATE transaction that first advances the queue
  // to now (and again after body, so that a job submitted or released now
  // starts now); commits when body returns OK, rolls back otherwise.
  absl::Status InTransaction(absl::string_view op, const std::function<absl::Status()>& body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A pending or running job as EASY sees it.
  struct QueueJob {
    int64_t id = 0;
    int64_t cores = 1;       // clamped to [1, options_.cores]
    int64_t spec_cores = 1;  // as submitted
    int64_t limit_ms = 0;    // its EASY time limit (scaled)
    int64_t run_ms = 0;      // how long it runs (scaled)
    int64_t started_ms = 0;  // running jobs only
    int64_t finish_ms = 0;   // running jobs only
    bool pinned = false;
    std::string key;
    int64_t queued_at_ms = 0;
  };
  struct Queue {
    std::vector<QueueJob> running;
    std::vector<QueueJob> waiting;  // pending (not held), queue order
    bool waiting_loaded = false;    // false: `waiting` was not read (empty)
    std::vector<balance::RunningJob> Running(int64_t at_ms) const;
    std::vector<balance::QueuedJob> Waiting() const;
  };
  int64_t ScaledMs(double ms) const;
  int64_t RunMs(int64_t duration_ms) const;
  int64_t LimitMs(int64_t time_limit_s, int64_t duration_ms) const;
  // The running jobs and, with `with_waiting`, the pending ones.
  absl::Status LoadQueue(Queue* q, bool with_waiting) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Replays starts and finishes from `from_ms` to `to_ms`, in time order;
  // reads the pending queue only when a core is free at an event.
  absl::Status Advance(int64_t from_ms, int64_t to_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts what EASY starts at `at_ms` (rows and *q).
  absl::Status StartJobs(int64_t at_ms, Queue* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The pending and running jobs as of the transaction's now: QueueCache's,
  // read again from the rows only when the database changed.
  absl::StatusOr<std::shared_ptr<const Queue>> QueueNow() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The queue as of now and its EASY forecast (kept in QueueCache when it
  // can be). Takes mu_ only to read the queue: the forecast is made
  // without it.
  struct Forecast {
    std::shared_ptr<const Queue> queue;
    std::shared_ptr<const balance::EasyForecast> forecast;
  };
  absl::StatusOr<Forecast> ForecastNow() ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<Job> LoadJob(int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The jobs LoadJobs finds, in one transaction of their own.
  absl::StatusOr<std::vector<Job>> ListWhere(const std::string& where_sql) ABSL_LOCKS_EXCLUDED(mu_);
  // The value of ?1 in where_sql, if it has one.
  using SqlArg = std::variant<std::monostate, int64_t, absl::string_view>;
  // In id order; *rows (if given) gets each job's id as a number.
  // `expected`: how many jobs the caller expects (room is made for them).
  absl::StatusOr<std::vector<Job>> LoadJobs(absl::string_view where_sql, const SqlArg& bind,
                                            std::vector<int64_t>* rows = nullptr, size_t expected = 0)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<JobState> StateOf(const std::string& id, int64_t* row_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status SetState(int64_t row_id, JobState s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  enum class StateChange { kHold, kRelease, kCancel };
  struct StateRule;
  static StateRule RuleFor(StateChange change);
  // One job's step inside a transaction: the job's own outcome goes to
  // *item, a store failure is returned (and rolls the transaction back).
  absl::Status ChangeStateIn(const StateRule& rule, const std::string& id, absl::Status* item)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hold/Release/Cancel of every id in one transaction: the jobs that can
  // change in one UPDATE, the others judged one by one by ChangeStateIn.
  std::vector<absl::Status> ChangeStateMany(StateChange change, const std::vector<std::string>& ids)
      ABSL_LOCKS_EXCLUDED(mu_);
  // tag -> id of the jobs carrying these tags (an empty tag carries none):
  // one statement (row by row when a tag holds a NUL byte).
  absl::StatusOr<std::unordered_map<std::string, int64_t>> JobsByTag(const std::vector<std::string>& tags)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Inserts a validated spec as a new job; its id.
  absl::StatusOr<int64_t> InsertJob(const JobSpec& spec, const std::string& tag, bool held)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CrashPoint(absl::string_view point) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t NowMs() const;

  const SimOptions options_;
  const Env* const clock_;
  absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);
  // Every statement, prepared once.
  SqliteStatements statements_ ABSL_GUARDED_BY(mu_);
  std::function<void(absl::string_view)> crash_hook_ ABSL_GUARDED_BY(mu_);
  int64_t now_ms_ ABSL_GUARDED_BY(mu_) = 0;  // the running transaction's now
  // The queue and forecast of QueueNow and ForecastNow. The queue is read
  // from the rows again only when the database changed since: a write by
  // this connection (sqlite3_total_changes64) or a commit by another (PRAGMA
  // data_version); `valid` is cleared by a rolled-back transaction (its
  // writes are undone without moving either counter). A queue once read is
  // never changed (the next read makes a new one), so a forecast can be made
  // from it outside the lock. The forecast of an unchanged queue is the same
  // from any later now before `forecast_until`, the first end it expects,
  // when no job starts at the now it was made for: the EASY steps then begin
  // at that end either way (daemon/balance/easy.h); only `now`, the first
  // free-cores step and an empty last start move.
  struct QueueCache {
    std::shared_ptr<const Queue> queue;
    int64_t data_version = 0;
    int64_t changes = 0;
    bool valid = false;
    std::shared_ptr<const balance::EasyForecast> forecast;  // of `queue`, or null
    int64_t forecast_until = 0;                             // exclusive
  };
  QueueCache queue_cache_ ABSL_GUARDED_BY(mu_);
};

// "sim" in the registry: SimOptions, SimAdapter::Open.
class SimAdapterFactory final : public TypedAdapterFactory<SimOptions> {
 public:
  std::string Name() const override { return kSimAdapterName; }

 protected:
  absl::StatusOr<SimOptions> Parse(const std::map<std::string, std::string>& options) const override;
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> Make(const SimOptions& options,
                                                         const AdapterContext& ctx) const override;
};

}  // namespace hyperfed::scheduler
