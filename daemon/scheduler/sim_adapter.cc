#include "daemon/scheduler/sim_adapter.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon/balance/easy.h"

namespace hyperfed::scheduler {
namespace {

// Stored state codes. Fixed numbers, not the enum's order, because they live
// on disk.
constexpr int kPendingCode = 0;
constexpr int kHeldCode = 1;
constexpr int kRunningCode = 2;
constexpr int kDoneCode = 3;
constexpr int kCancelledCode = 4;

constexpr int64_t kSchemaVersion = 1;
// Caps run times so that start + run time cannot overflow (about 31,000 years).
constexpr int64_t kMaxRunMs = int64_t{1'000'000'000'000'000};

int StateCode(JobState s) {
  switch (s) {
    case JobState::kPending:
      return kPendingCode;
    case JobState::kHeld:
      return kHeldCode;
    case JobState::kRunning:
      return kRunningCode;
    case JobState::kDone:
      return kDoneCode;
    case JobState::kCancelled:
      return kCancelledCode;
  }
  return kPendingCode;
}

absl::StatusOr<JobState> StateFromCode(int64_t c) {
  switch (c) {
    case kPendingCode:
      return JobState::kPending;
    case kHeldCode:
      return JobState::kHeld;
    case kRunningCode:
      return JobState::kRunning;
    case kDoneCode:
      return JobState::kDone;
    case kCancelledCode:
      return JobState::kCancelled;
  }
  return absl::DataLossError(absl::StrCat("sim scheduler: stored job state ", c, " is unknown"));
}

absl::Status SqliteError(sqlite3* db, absl::string_view what) {
  return absl::InternalError(absl::StrCat("sim scheduler: ", what, ": ", sqlite3_errmsg(db)));
}

// A statement of the connection's cache (prepared once), reset on
// destruction.
class Stmt {
 public:
  Stmt(sqlite3* db, SqliteStatements* cache, absl::string_view sql) : db_(db) {
    stmt_ = cache->Acquire(std::string_view(sql.data(), sql.size()), &owned_);
    rc_ = stmt_ != nullptr ? SQLITE_OK : sqlite3_errcode(db);
    if (rc_ == SQLITE_OK && stmt_ == nullptr) rc_ = SQLITE_ERROR;
  }
  ~Stmt() { SqliteStatements::Return(stmt_, owned_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  absl::Status status() const { return rc_ == SQLITE_OK ? absl::OkStatus() : SqliteError(db_, "prepare"); }
  Stmt& Bind(int i, int64_t v) {
    if (ok()) rc_ = sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, double v) {
    if (ok()) rc_ = sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, absl::string_view v) {
    // Explicit length: strings may hold any byte, NUL included.
    if (ok()) rc_ = sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // true: a row is ready; false: done.
  absl::StatusOr<bool> Step() {
    if (!ok()) return SqliteError(db_, "prepare or bind");
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    rc_ = rc;
    return SqliteError(db_, "step");
  }
  // Steps a statement that returns no rows.
  absl::Status Run() {
    auto r = Step();
    return r.ok() ? absl::OkStatus() : r.status();
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    int n = sqlite3_column_bytes(stmt_, col);
    return p == nullptr ? std::string() : std::string(p, static_cast<size_t>(n));
  }

 private:
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  bool owned_ = false;
  int rc_;
};

absl::Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    absl::Status s = absl::InternalError(absl::StrCat("sim scheduler: ", sql, ": ", err ? err : "?"));
    sqlite3_free(err);
    return s;
  }
  return absl::OkStatus();
}

// One statement without rows (BEGIN, COMMIT, ...), from the cache.
absl::Status Run(sqlite3* db, SqliteStatements* cache, absl::string_view sql) {
  Stmt st(db, cache, sql);
  if (auto s = st.Run(); !s.ok()) return absl::InternalError(absl::StrCat("sim scheduler: ", sql, ": ", s.message()));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> QueryInt(sqlite3* db, SqliteStatements* cache, absl::string_view sql) {
  Stmt st(db, cache, sql);
  if (!st.status().ok()) return st.status();
  auto row = st.Step();
  if (!row.ok()) return row.status();
  if (!*row || st.IsNull(0)) return absl::NotFoundError("no value");
  return st.Int(0);
}

// Ids are canonical positive decimal integers; anything else names no job.
bool ParseId(const std::string& id, int64_t* out) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(id, &n) || n <= 0 || absl::StrCat(n) != id) return false;
  *out = n;
  return true;
}

absl::Status UnknownId(const std::string& id) {
  return absl::NotFoundError(absl::StrCat("sim scheduler: no job \"", id, "\""));
}

// LoadJobs' parameter ?1 (if any).
void BindArg(Stmt&, std::monostate) {}
void BindArg(Stmt& st, int64_t v) { st.Bind(1, v); }
void BindArg(Stmt& st, absl::string_view v) { st.Bind(1, v); }

// The rows of a batch call, bound as ?1 (SqlJsonArray): one statement for
// the whole batch.
constexpr char kIdInList[] = "j.id IN (SELECT value FROM json_each(?1))";

constexpr char kJobColumns[] =
    "j.id, j.name, j.script, j.cores, j.memory_mb, j.time_limit_s, j.workdir, j.duration_ms, "
    "j.cost, j.key, j.state, j.pinned, j.tag, j.queued_at_ms, j.owner";

}  // namespace

absl::StatusOr<std::unique_ptr<SimAdapter>> SimAdapter::Open(const AdapterContext& ctx) {
  auto options = ParseSimOptions(ctx.options);
  if (!options.ok()) return options.status();
  return Open(*options, ctx);
}

absl::StatusOr<std::unique_ptr<SimAdapter>> SimAdapter::Open(const SimOptions& options, const AdapterContext& ctx) {
  if (ctx.state_dir.empty()) return absl::InvalidArgumentError("sim scheduler: state_dir is empty");
  std::error_code ec;
  std::filesystem::create_directories(ctx.state_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("sim scheduler: cannot create state_dir \"", ctx.state_dir, "\": ", ec.message()));
  }
  const std::string path = (std::filesystem::path(ctx.state_dir) / kSimDbFile).string();
  SqliteStatements::BeforeOpen();
  sqlite3* db = nullptr;
  // NOMUTEX: the adapter serializes all use of the connection itself.
  int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status s = absl::FailedPreconditionError(
        absl::StrCat("sim scheduler: cannot open ", path, ": ", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    sqlite3_close(db);
    return s;
  }
  std::unique_ptr<SimAdapter> a(new SimAdapter(options, ctx.clock ? ctx.clock : RealEnv::Get(), db));
  if (auto s = a->InitSchema(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), " (", path, ")"));
  }
  return a;
}

SimAdapter::SimAdapter(SimOptions options, const Env* clock, sqlite3* db)
    : options_(std::move(options)), clock_(clock), db_(db), statements_(db) {}

SimAdapter::~SimAdapter() {
  absl::MutexLock l(&mu_);
  statements_.Clear();
  sqlite3_close_v2(db_);
}

absl::Status SimAdapter::InitSchema() {
  absl::MutexLock l(&mu_);
  // Another process (a second daemon by mistake, a test) may hold the write
  // lock for a moment; wait rather than fail.
  sqlite3_busy_timeout(db_, 5000);
  {
    Stmt st(db_, &statements_, "PRAGMA journal_mode=WAL");
    if (!st.status().ok()) return st.status();
    auto row = st.Step();
    if (!row.ok()) return row.status();
    if (!*row || st.Text(0) != "wal") {
      return absl::FailedPreconditionError("sim scheduler: cannot switch the queue to WAL mode");
    }
  }
  // synchronous=FULL: every commit is fsynced to the WAL before the call
  // returns. NORMAL with WAL would already survive kill -9 (the WAL is in the
  // OS page cache), but after a power loss or kernel crash it can drop the
  // last commits. A Submit answered to a migrating peer (which then cancels
  // its copy) must never be lost, so we pay one fsync per call.
  if (auto s = Exec(db_, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"); !s.ok()) return s;
  if (auto s = Exec(db_, "BEGIN IMMEDIATE"); !s.ok()) return s;
  absl::Status s = Exec(db_,
                        "CREATE TABLE IF NOT EXISTS meta("
                        "  key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
                        "CREATE TABLE IF NOT EXISTS jobs("
                        "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
                        "  name TEXT NOT NULL, script TEXT NOT NULL, cores INTEGER NOT NULL,"
                        "  memory_mb INTEGER NOT NULL, time_limit_s INTEGER NOT NULL,"
                        "  workdir TEXT NOT NULL, duration_ms INTEGER NOT NULL, cost REAL NOT NULL,"
                        "  key TEXT NOT NULL,"
                        "  state INTEGER NOT NULL CHECK(state BETWEEN 0 AND 4),"
                        "  pinned INTEGER NOT NULL, tag TEXT NOT NULL, queued_at_ms INTEGER NOT NULL,"
                        "  started_at_ms INTEGER, finish_at_ms INTEGER, owner TEXT NOT NULL DEFAULT '');"
                        "CREATE UNIQUE INDEX IF NOT EXISTS jobs_by_tag ON jobs(tag) WHERE tag <> '';"
                        "CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state, id);"
                        "CREATE TABLE IF NOT EXISTS job_env("
                        "  job_id INTEGER NOT NULL REFERENCES jobs(id), name TEXT NOT NULL,"
                        "  value TEXT NOT NULL, PRIMARY KEY(job_id, name)) WITHOUT ROWID;"
                        "INSERT OR IGNORE INTO meta VALUES('schema_version', 1);"
                        "INSERT OR IGNORE INTO meta VALUES('last_tick_ms', 0);");
  if (s.ok()) {
    // A queue made before jobs had an owner: the column is added, empty.
    auto has_owner = QueryInt(db_, &statements_, "SELECT COUNT(*) FROM pragma_table_info('jobs') WHERE name='owner'");
    if (!has_owner.ok()) {
      s = has_owner.status();
    } else if (*has_owner == 0) {
      s = Exec(db_, "ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT ''");
    }
  }
  if (s.ok()) {
    auto v = QueryInt(db_, &statements_, "SELECT value FROM meta WHERE key='schema_version'");
    if (!v.ok()) {
      s = v.status();
    } else if (*v != kSchemaVersion) {
      s = absl::FailedPreconditionError(
          absl::StrCat("sim scheduler: queue schema version ", *v, ", this build reads ", kSchemaVersion));
    }
  }
  if (s.ok()) s = Exec(db_, "COMMIT");
  if (!s.ok()) Exec(db_, "ROLLBACK").IgnoreError();
  return s;
}

int64_t SimAdapter::NowMs() const { return absl::ToUnixMillis(clock_->Now()); }

void SimAdapter::CrashPoint(absl::string_view point) {
  if (crash_hook_) crash_hook_(point);
}

void SimAdapter::SetCrashHookForTesting(std::function<void(absl::string_view)> hook) {
  absl::MutexLock l(&mu_);
  crash_hook_ = std::move(hook);
}

absl::Status SimAdapter::InTransaction(absl::string_view op, const std::function<absl::Status()>& body) {
  // IMMEDIATE: take the write lock up front, so a concurrent writer on
  // another connection waits at BEGIN instead of failing at the first write.
  if (auto s = Run(db_, &statements_, "BEGIN IMMEDIATE"); !s.ok()) return s;
  const int64_t changes_before = sqlite3_total_changes64(db_);
  absl::Status s;
  int64_t now = NowMs();
  auto last = QueryInt(db_, &statements_, "SELECT value FROM meta WHERE key='last_tick_ms'");
  if (!last.ok()) {
    s = last.status();
  } else {
    // The wall clock may step back; the queue's time never does.
    now = std::max(now, *last);
    now_ms_ = now;
    s = Advance(*last, now);
  }
  if (s.ok()) s = body();
  if (s.ok()) s = Advance(now, now);
  // The queue is now right as of `now`. Record that only if something was
  // written: a pure read then commits without a write (and without an
  // fsync), and replaying the unchanged queue from the older tick next time
  // gives the same result.
  if (s.ok() && sqlite3_total_changes64(db_) != changes_before) {
    Stmt st(db_, &statements_, "UPDATE meta SET value=?1 WHERE key='last_tick_ms'");
    st.Bind(1, now);
    s = st.Run();
  }
  if (s.ok()) {
    CrashPoint(absl::StrCat(op, ":before-commit"));
    s = Run(db_, &statements_, "COMMIT");
  }
  if (!s.ok()) {
    Run(db_, &statements_, "ROLLBACK").IgnoreError();
    queue_cache_.valid = false;
  }
  return s;
}

int64_t SimAdapter::ScaledMs(double ms) const {
  const double scaled = std::ceil(ms / options_.time_scale);
  return scaled >= static_cast<double>(kMaxRunMs) ? kMaxRunMs : static_cast<int64_t>(scaled);
}

int64_t SimAdapter::RunMs(int64_t duration_ms) const { return ScaledMs(static_cast<double>(duration_ms)); }

int64_t SimAdapter::LimitMs(int64_t time_limit_s, int64_t duration_ms) const {
  // A job without a limit is known exactly: its run time is its limit.
  return time_limit_s > 0 ? ScaledMs(static_cast<double>(time_limit_s) * 1000.0) : RunMs(duration_ms);
}

absl::Status SimAdapter::LoadQueue(Queue* q, bool with_waiting) {
  q->running.clear();
  q->waiting.clear();
  q->waiting_loaded = with_waiting;
  // One state at a time: jobs_by_state(state, id) gives each list in id
  // order, with no sort (both states at once would sort the whole queue).
  for (int code : {kRunningCode, kPendingCode}) {
    if (code == kPendingCode && !with_waiting) break;
    Stmt st(db_, &statements_,
            absl::StrCat("SELECT id, cores, time_limit_s, duration_ms, started_at_ms, finish_at_ms, pinned, key,"
                         " queued_at_ms FROM jobs WHERE state = ",
                         code, " ORDER BY id"));
    std::vector<QueueJob>& list = code == kRunningCode ? q->running : q->waiting;
    for (;;) {
      auto row = st.Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      QueueJob j;
      j.id = st.Int(0);
      // A job queued wider than the cluster (by an older version, which gave
      // every job one slot, or before `cores` shrank) takes the whole cluster
      // rather than waiting for ever; Submit refuses new ones.
      j.cores = std::clamp<int64_t>(st.Int(1), 1, options_.cores);
      j.limit_ms = LimitMs(st.Int(2), st.Int(3));
      j.run_ms = RunMs(st.Int(3));
      j.started_ms = st.Int(4);
      j.finish_ms = st.Int(5);
      j.pinned = st.Int(6) != 0;
      j.key = st.Text(7);
      j.queued_at_ms = st.Int(8);
      j.spec_cores = st.Int(1);
      list.push_back(std::move(j));
    }
  }
  return absl::OkStatus();
}

std::vector<balance::RunningJob> SimAdapter::Queue::Running(int64_t at_ms) const {
  std::vector<balance::RunningJob> out;
  out.reserve(running.size());
  // A job still running past its time limit (a sim job runs for its
  // duration whatever its limit) is expected to end at any moment: it keeps
  // its cores, so no instant has more cores in use than the cluster.
  for (const QueueJob& r : running)
    out.push_back({.cores = r.cores, .end = std::max(r.started_ms + std::max<int64_t>(r.limit_ms, 1), at_ms + 1)});
  return out;
}

std::vector<balance::QueuedJob> SimAdapter::Queue::Waiting() const {
  std::vector<balance::QueuedJob> out;
  out.reserve(waiting.size());
  for (const QueueJob& w : waiting) out.push_back({.cores = w.cores, .limit = std::max<int64_t>(w.limit_ms, 1)});
  return out;
}

absl::Status SimAdapter::StartJobs(int64_t at_ms, Queue* q) {
  // No free core: EASY starts nothing (every job takes at least one), so
  // the pending queue, the long list, is not even read.
  int64_t free = options_.cores;
  for (const QueueJob& r : q->running) free -= r.cores;
  if (free <= 0) return absl::OkStatus();
  if (!q->waiting_loaded) {
    if (auto s = LoadQueue(q, true); !s.ok()) return s;
  }
  if (q->waiting.empty()) return absl::OkStatus();
  const std::vector<size_t> go = balance::EasyStartNow(options_.cores, at_ms, q->Running(at_ms), q->Waiting());
  if (go.empty()) return absl::OkStatus();
  std::vector<bool> started(q->waiting.size(), false);
  for (size_t i : go) {
    QueueJob& j = q->waiting[i];
    j.started_ms = at_ms;
    j.finish_ms = at_ms + j.run_ms;
    Stmt st(db_, &statements_,
            absl::StrCat("UPDATE jobs SET state=", kRunningCode, ", started_at_ms=?1, finish_at_ms=?2 WHERE id=?3"));
    st.Bind(1, at_ms).Bind(2, j.finish_ms).Bind(3, j.id);
    if (auto s = st.Run(); !s.ok()) return s;
    CrashPoint("fill:job-started");
    started[i] = true;
    q->running.push_back(j);
  }
  std::vector<QueueJob> left;
  left.reserve(q->waiting.size() - go.size());
  for (size_t i = 0; i < q->waiting.size(); ++i)
    if (!started[i]) left.push_back(std::move(q->waiting[i]));
  q->waiting.swap(left);
  return absl::OkStatus();
}

absl::Status SimAdapter::Advance(int64_t from_ms, int64_t to_ms) {
  // Event by event, exactly as if we had been watching: at each job end
  // (and at from_ms) EASY decides which pending jobs start then
  // (daemon/balance/easy.h). The queue is read once and kept in step with
  // the rows written.
  Queue q;
  if (auto s = LoadQueue(&q, false); !s.ok()) return s;
  int64_t cursor = from_ms;
  for (;;) {
    if (auto s = StartJobs(cursor, &q); !s.ok()) return s;
    int64_t next = std::numeric_limits<int64_t>::max();
    for (const QueueJob& r : q.running) next = std::min(next, r.finish_ms);
    if (next > to_ms) return absl::OkStatus();
    // A job that ended before from_ms (a queue written by a crashed call
    // cannot hold one, but the clock is not ours to trust) ends now.
    cursor = std::max(cursor, next);
    Stmt done(db_, &statements_, absl::StrCat("UPDATE jobs SET state=", kDoneCode, " WHERE state=", kRunningCode,
                                " AND finish_at_ms<=?1"));
    done.Bind(1, cursor);
    if (auto s = done.Run(); !s.ok()) return s;
    std::erase_if(q.running, [cursor](const QueueJob& r) { return r.finish_ms <= cursor; });
  }
}

absl::StatusOr<std::vector<Job>> SimAdapter::LoadJobs(absl::string_view where_sql, const SqlArg& bind,
                                                       std::vector<int64_t>* rows_out, size_t expected) {
  std::vector<Job> jobs;
  std::vector<int64_t> rows;  // jobs[i]'s id; ascending (ORDER BY j.id)
  jobs.reserve(expected);
  rows.reserve(expected);
  {
    Stmt st(db_, &statements_, absl::StrCat("SELECT ", kJobColumns, " FROM jobs j WHERE ", where_sql, " ORDER BY j.id"));
    std::visit([&st](const auto& v) { BindArg(st, v); }, bind);
    for (;;) {
      auto row = st.Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      Job j;
      j.id = absl::StrCat(st.Int(0));
      j.spec.name = st.Text(1);
      j.spec.script = st.Text(2);
      j.spec.cores = static_cast<int>(st.Int(3));
      j.spec.memory_mb = st.Int(4);
      j.spec.time_limit_s = st.Int(5);
      j.spec.workdir = st.Text(6);
      j.spec.duration_ms = st.Int(7);
      j.spec.cost = st.Double(8);
      j.spec.key = st.Text(9);
      auto state = StateFromCode(st.Int(10));
      if (!state.ok()) return state.status();
      j.state = *state;
      j.pinned = st.Int(11) != 0;
      j.tag = st.Text(12);
      j.queued_at_ms = st.Int(13);
      j.spec.owner = st.Text(14);
      rows.push_back(st.Int(0));
      jobs.push_back(std::move(j));
    }
  }
  if (jobs.empty()) {
    if (rows_out != nullptr) rows_out->clear();
    return jobs;
  }
  Stmt st(db_, &statements_, absl::StrCat("SELECT e.job_id, e.name, e.value FROM job_env e JOIN jobs j ON j.id = e.job_id"
                            " WHERE ",
                            where_sql));
  std::visit([&st](const auto& v) { BindArg(st, v); }, bind);
  for (;;) {
    auto row = st.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    auto it = std::lower_bound(rows.begin(), rows.end(), st.Int(0));
    if (it != rows.end() && *it == st.Int(0)) jobs[it - rows.begin()].spec.env[st.Text(1)] = st.Text(2);
  }
  if (rows_out != nullptr) *rows_out = std::move(rows);
  return jobs;
}

absl::StatusOr<Job> SimAdapter::LoadJob(int64_t id) {
  auto jobs = LoadJobs("j.id=?1", id);
  if (!jobs.ok()) return jobs.status();
  if (jobs->empty()) return UnknownId(absl::StrCat(id));
  return std::move(jobs->front());
}

absl::StatusOr<JobState> SimAdapter::StateOf(const std::string& id, int64_t* row_id) {
  if (!ParseId(id, row_id)) return UnknownId(id);
  Stmt st(db_, &statements_, "SELECT state FROM jobs WHERE id=?1");
  st.Bind(1, *row_id);
  auto row = st.Step();
  if (!row.ok()) return row.status();
  if (!*row) return UnknownId(id);
  return StateFromCode(st.Int(0));
}

absl::Status SimAdapter::SetState(int64_t row_id, JobState s) {
  Stmt st(db_, &statements_, "UPDATE jobs SET state=?1 WHERE id=?2");
  st.Bind(1, int64_t{StateCode(s)}).Bind(2, row_id);
  return st.Run();
}

absl::StatusOr<std::vector<Job>> SimAdapter::ListJobs() {
  return ListWhere(absl::StrCat("j.state IN (", kPendingCode, ",", kHeldCode, ",", kRunningCode, ")"));
}

absl::StatusOr<std::vector<Job>> SimAdapter::ListAllJobs() { return ListWhere("1"); }

absl::StatusOr<std::vector<Job>> SimAdapter::ListWhere(const std::string& where_sql) {
  absl::MutexLock l(&mu_);
  std::vector<Job> jobs;
  absl::Status s = InTransaction("list", [&]() -> absl::Status {
    auto r = LoadJobs(where_sql, std::monostate());
    if (!r.ok()) return r.status();
    jobs = *std::move(r);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return jobs;
}

absl::StatusOr<int64_t> SimAdapter::CountMigratable() {
  absl::MutexLock l(&mu_);
  int64_t n = 0;
  absl::Status s = InTransaction("count", [&]() -> absl::Status {
    auto r = QueryInt(db_, &statements_, absl::StrCat("SELECT COUNT(*) FROM jobs WHERE state = ", kPendingCode, " AND pinned = 0"));
    if (!r.ok()) return r.status();
    n = *r;
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return n;
}

absl::StatusOr<Capacity> SimAdapter::GetCapacity() {
  return Capacity{.units = options_.cores, .speed = options_.speed};
}

// Hold, Release and Cancel: the state a job goes to and the states it may
// leave for it (a job already in `target` is a no-op).
struct SimAdapter::StateRule {
  const char* verb;
  JobState target;
  std::vector<JobState> from;
};

SimAdapter::StateRule SimAdapter::RuleFor(StateChange change) {
  switch (change) {
    case StateChange::kHold:
      return {"hold", JobState::kHeld, {JobState::kPending}};
    case StateChange::kRelease:
      return {"release", JobState::kPending, {JobState::kHeld}};
    case StateChange::kCancel:
      break;
  }
  return {"cancel", JobState::kCancelled, {JobState::kPending, JobState::kHeld}};
}

// One job inside a transaction. The job's own outcome (NotFound,
// FailedPrecondition) goes to *item; the return value is a failure of the
// store, which rolls the whole transaction back.
absl::Status SimAdapter::ChangeStateIn(const StateRule& rule, const std::string& id, absl::Status* item) {
  int64_t row = 0;
  auto state = StateOf(id, &row);
  if (!state.ok()) {
    // StateOf says NotFound only for an unknown id; anything else is the store.
    if (!absl::IsNotFound(state.status())) return state.status();
    *item = state.status();
    return absl::OkStatus();
  }
  *item = absl::OkStatus();
  if (*state == rule.target) return absl::OkStatus();
  if (std::find(rule.from.begin(), rule.from.end(), *state) == rule.from.end()) {
    *item = absl::FailedPreconditionError(
        absl::StrCat("sim scheduler: cannot ", rule.verb, " job ", id, ": it is ", JobStateName(*state)));
    return absl::OkStatus();
  }
  return SetState(row, rule.target);
}

std::vector<absl::Status> SimAdapter::ChangeStateMany(StateChange change, const std::vector<std::string>& ids) {
  const StateRule rule = RuleFor(change);
  std::vector<absl::Status> out(ids.size());
  std::vector<int64_t> rows;
  rows.reserve(ids.size());
  for (const std::string& id : ids) {
    int64_t row = 0;
    if (ParseId(id, &row)) rows.push_back(row);
  }
  std::string from_codes;
  for (JobState f : rule.from) absl::StrAppend(&from_codes, from_codes.empty() ? "" : ",", StateCode(f));
  absl::MutexLock l(&mu_);
  absl::Status s = InTransaction(rule.verb, [&]() -> absl::Status {
    // Every job that can change changes in one statement; the rest (no-ops,
    // refusals, unknown ids: rare in a batch) are judged one by one.
    std::vector<int64_t> changed;
    if (!rows.empty()) {
      // `+state`: each job is found by its id, not looked up in
      // jobs_by_state once per state it may leave.
      Stmt st(db_, &statements_,
              absl::StrCat("UPDATE jobs AS j SET state=", StateCode(rule.target), " WHERE ", kIdInList,
                           " AND +state IN (", from_codes, ") RETURNING id"));
      st.Bind(1, SqlJsonArray(rows));
      for (;;) {
        auto row = st.Step();
        if (!row.ok()) return row.status();
        if (!*row) break;
        changed.push_back(st.Int(0));
      }
      std::sort(changed.begin(), changed.end());
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      int64_t row = 0;
      if (ParseId(ids[i], &row) && std::binary_search(changed.begin(), changed.end(), row)) continue;  // OK
      if (absl::Status st = ChangeStateIn(rule, ids[i], &out[i]); !st.ok()) return st;
    }
    return absl::OkStatus();
  });
  // Rolled back: no item took effect.
  if (!s.ok()) std::fill(out.begin(), out.end(), s);
  return out;
}

absl::Status SimAdapter::Hold(const std::string& id) { return ChangeStateMany(StateChange::kHold, {id})[0]; }

absl::Status SimAdapter::Release(const std::string& id) { return ChangeStateMany(StateChange::kRelease, {id})[0]; }

absl::Status SimAdapter::Cancel(const std::string& id) { return ChangeStateMany(StateChange::kCancel, {id})[0]; }

std::vector<absl::Status> SimAdapter::HoldMany(const std::vector<std::string>& ids) {
  return ChangeStateMany(StateChange::kHold, ids);
}

std::vector<absl::Status> SimAdapter::ReleaseMany(const std::vector<std::string>& ids) {
  return ChangeStateMany(StateChange::kRelease, ids);
}

std::vector<absl::Status> SimAdapter::CancelMany(const std::vector<std::string>& ids) {
  return ChangeStateMany(StateChange::kCancel, ids);
}

absl::StatusOr<JobSpec> SimAdapter::Export(const std::string& id) { return std::move(ExportMany({id})[0]); }

std::vector<absl::StatusOr<JobSpec>> SimAdapter::ExportMany(const std::vector<std::string>& ids) {
  std::vector<absl::StatusOr<JobSpec>> out;
  out.reserve(ids.size());
  for (absl::StatusOr<Job>& job : GetJobs(ids))
    out.push_back(job.ok() ? absl::StatusOr<JobSpec>(std::move(job->spec)) : absl::StatusOr<JobSpec>(job.status()));
  return out;
}

std::vector<absl::StatusOr<Job>> SimAdapter::GetJobs(const std::vector<std::string>& ids) {
  std::vector<absl::StatusOr<Job>> out(ids.size(), absl::UnknownError("not read"));
  // (row, item) of every well-formed id, by row: the jobs come back by row,
  // so each goes to its items in one merge.
  std::vector<std::pair<int64_t, size_t>> wanted;
  wanted.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t row = 0;
    if (ParseId(ids[i], &row)) {
      wanted.emplace_back(row, i);
    } else {
      out[i] = UnknownId(ids[i]);
    }
  }
  std::sort(wanted.begin(), wanted.end());
  std::vector<int64_t> rows;
  rows.reserve(wanted.size());
  for (const auto& [row, i] : wanted) rows.push_back(row);
  absl::MutexLock l(&mu_);
  absl::Status s = InTransaction("get", [&]() -> absl::Status {
    // Every job of the batch in one statement (and its environment in one
    // more), not two statements per job.
    std::vector<Job> jobs;
    std::vector<int64_t> found;  // jobs[k]'s row, ascending
    if (!rows.empty()) {
      auto loaded = LoadJobs(kIdInList, SqlJsonArray(rows), &found, rows.size());
      if (!loaded.ok()) return loaded.status();
      jobs = *std::move(loaded);
    }
    size_t next = 0;
    for (size_t w = 0; w < wanted.size(); ++w) {
      const auto [row, i] = wanted[w];
      while (next < found.size() && found[next] < row) ++next;
      if (next < found.size() && found[next] == row) {
        // A repeated id copies the job; its last item takes it.
        const bool last = w + 1 == wanted.size() || wanted[w + 1].first != row;
        out[i] = last ? std::move(jobs[next]) : jobs[next];
      } else {
        out[i] = UnknownId(ids[i]);
      }
    }
    return absl::OkStatus();
  });
  if (!s.ok()) std::fill(out.begin(), out.end(), absl::StatusOr<Job>(s));
  return out;
}

absl::StatusOr<Job> SimAdapter::GetJob(const std::string& id) {
  absl::MutexLock l(&mu_);
  Job job;
  absl::Status s = InTransaction("get", [&]() -> absl::Status {
    int64_t row = 0;
    if (!ParseId(id, &row)) return UnknownId(id);
    auto r = LoadJob(row);
    if (!r.ok()) return r.status();
    job = *std::move(r);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return job;
}

absl::StatusOr<std::unordered_map<std::string, int64_t>> SimAdapter::JobsByTag(const std::vector<std::string>& tags) {
  std::unordered_map<std::string, int64_t> found;
  if (tags.empty()) return found;
  // The `tag <> ''` terms let SQLite use the partial unique index.
  if (std::optional<std::string> json = SqlJsonArray(tags); json.has_value()) {
    Stmt st(db_, &statements_, "SELECT tag, id FROM jobs WHERE tag IN (SELECT value FROM json_each(?1)) AND tag <> ''");
    st.Bind(1, *json);
    for (;;) {
      auto row = st.Step();
      if (!row.ok()) return row.status();
      if (!*row) return found;
      found.emplace(st.Text(0), st.Int(1));
    }
  }
  for (const std::string& tag : tags) {
    Stmt st(db_, &statements_, "SELECT id FROM jobs WHERE tag=?1 AND tag <> ''");
    st.Bind(1, tag);
    auto row = st.Step();
    if (!row.ok()) return row.status();
    if (*row) found.emplace(tag, st.Int(0));
  }
  return found;
}

absl::StatusOr<int64_t> SimAdapter::InsertJob(const JobSpec& spec, const std::string& tag, bool held) {
  const bool pinned = !options_.pin_marker.empty() && absl::StartsWith(spec.name, options_.pin_marker);
  Stmt ins(db_, &statements_,
           "INSERT INTO jobs(name, script, cores, memory_mb, time_limit_s, workdir, duration_ms, cost,"
           " key, state, pinned, tag, queued_at_ms, owner) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)");
  ins.Bind(1, spec.name)
      .Bind(2, spec.script)
      .Bind(3, int64_t{spec.cores})
      .Bind(4, spec.memory_mb)
      .Bind(5, spec.time_limit_s)
      .Bind(6, spec.workdir)
      .Bind(7, spec.duration_ms)
      .Bind(8, spec.cost)
      .Bind(9, spec.key)
      .Bind(10, int64_t{held ? kHeldCode : kPendingCode})
      .Bind(11, int64_t{pinned ? 1 : 0})
      .Bind(12, tag)
      .Bind(13, NowMs())
      .Bind(14, spec.owner);
  if (auto s = ins.Run(); !s.ok()) return s;
  const int64_t row = sqlite3_last_insert_rowid(db_);
  CrashPoint("submit:job-row");
  for (const auto& [k, v] : spec.env) {
    Stmt e(db_, &statements_, "INSERT INTO job_env(job_id, name, value) VALUES(?1, ?2, ?3)");
    e.Bind(1, row).Bind(2, k).Bind(3, v);
    if (auto s = e.Run(); !s.ok()) return s;
  }
  return row;
}

absl::StatusOr<std::string> SimAdapter::Submit(const JobSpec& spec, const std::string& tag, bool held) {
  return std::move(SubmitMany({{spec, tag}}, held)[0]);
}

std::vector<absl::StatusOr<std::string>> SimAdapter::SubmitMany(
    const std::vector<std::pair<JobSpec, std::string>>& spec_and_tag, bool held) {
  std::vector<absl::StatusOr<std::string>> out(spec_and_tag.size(), absl::UnknownError("not submitted"));
  // Invalid specs are refused one by one, before the transaction.
  std::vector<bool> valid(spec_and_tag.size());
  std::vector<std::string> tags;
  for (size_t i = 0; i < spec_and_tag.size(); ++i) {
    absl::Status v = CheckSpec(spec_and_tag[i].first);
    valid[i] = v.ok();
    if (!v.ok()) out[i] = v;
    if (v.ok() && !spec_and_tag[i].second.empty()) tags.push_back(spec_and_tag[i].second);
  }
  absl::MutexLock l(&mu_);
  absl::Status s = InTransaction("submit", [&]() -> absl::Status {
    // Idempotent by tag: the batch's known tags are looked up in one
    // statement, then each new job is one insert.
    auto known = JobsByTag(tags);
    if (!known.ok()) return known.status();
    for (size_t i = 0; i < spec_and_tag.size(); ++i) {
      if (!valid[i]) continue;
      const auto& [spec, tag] = spec_and_tag[i];
      if (!tag.empty()) {
        if (auto it = known->find(tag); it != known->end()) {
          out[i] = absl::StrCat(it->second);
          continue;
        }
      }
      auto row = InsertJob(spec, tag, held);
      if (!row.ok()) return row.status();
      if (!tag.empty()) known->emplace(tag, *row);  // a tag met again later in this batch: the same job
      out[i] = absl::StrCat(*row);
    }
    return absl::OkStatus();
  });
  if (!s.ok()) {
    // Rolled back: nothing of the batch was submitted.
    for (size_t i = 0; i < out.size(); ++i) {
      if (valid[i]) out[i] = s;
    }
  }
  return out;
}

absl::StatusOr<std::vector<Job>> SimAdapter::FindByTag(const std::string& tag) {
  if (tag.empty()) return absl::InvalidArgumentError("sim scheduler: FindByTag needs a non-empty tag");
  absl::MutexLock l(&mu_);
  std::vector<Job> jobs;
  absl::Status s = InTransaction("find", [&]() -> absl::Status {
    auto r = LoadJobs("j.tag=?1 AND j.tag <> ''", tag);
    if (!r.ok()) return r.status();
    jobs = *std::move(r);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return jobs;
}

absl::Status SimAdapter::SetPinned(const std::string& id, bool pinned) {
  absl::MutexLock l(&mu_);
  return InTransaction("pin", [&]() -> absl::Status {
    int64_t row = 0;
    auto state = StateOf(id, &row);
    if (!state.ok()) return state.status();
    Stmt st(db_, &statements_, "UPDATE jobs SET pinned=?1 WHERE id=?2");
    st.Bind(1, int64_t{pinned ? 1 : 0}).Bind(2, row);
    return st.Run();
  });
}

absl::Status SimAdapter::CheckSpec(const JobSpec& spec) const {
  if (auto s = SchedulerAdapter::CheckSpec(spec); !s.ok()) return s;
  if (spec.cores > options_.cores) {
    return absl::InvalidArgumentError(absl::StrCat("sim scheduler: job spec wants ", spec.cores,
                                                   " cores, the cluster has ", options_.cores));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const SimAdapter::Queue>> SimAdapter::QueueNow() {
  QueueCache& c = queue_cache_;
  // PRAGMA data_version moves with every other connection's commit,
  // total_changes with every write of this one.
  auto data_version = QueryInt(db_, &statements_, "PRAGMA data_version");
  if (!data_version.ok()) return data_version.status();
  const int64_t changes = sqlite3_total_changes64(db_);
  if (!c.valid || c.data_version != *data_version || c.changes != changes) {
    c.valid = false;
    auto q = std::make_shared<Queue>();
    if (auto s = LoadQueue(q.get(), true); !s.ok()) return s;
    c.queue = std::move(q);
    c.forecast.reset();
    c.valid = true;
    c.data_version = *data_version;
    c.changes = changes;
  }
  return c.queue;
}

absl::StatusOr<SimAdapter::Forecast> SimAdapter::ForecastNow() {
  Forecast out;
  int64_t now = 0;
  std::shared_ptr<const balance::EasyForecast> kept;
  int64_t kept_until = 0;
  {
    absl::MutexLock l(&mu_);
    absl::Status s = InTransaction("forecast", [&]() -> absl::Status {
      auto q = QueueNow();
      if (!q.ok()) return q.status();
      out.queue = *std::move(q);
      now = now_ms_;
      kept = queue_cache_.forecast;
      kept_until = queue_cache_.forecast_until;
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
  }
  // The forecast is made outside the lock (on the queue as read, which
  // nobody changes): the scheduler's other calls do not wait for it.
  if (kept != nullptr && now >= kept->now && now < kept_until) {
    // Nothing happened since the kept forecast was made (see QueueCache):
    // the same steps from a later now.
    auto f = std::make_shared<balance::EasyForecast>(*kept);
    if (f->last_start == f->now) f->last_start = now;  // no job starts
    f->now = now;
    f->free_cores.front().first = now;
    out.forecast = std::move(f);
    return out;
  }
  const std::vector<balance::RunningJob> running = out.queue->Running(now);
  auto f = std::make_shared<const balance::EasyForecast>(
      balance::EasyForecastStarts(options_.cores, now, running, out.queue->Waiting()));
  // Valid until the first end it expects, unless a job starts right now (a
  // start at now depends on now: what backfills then; the Advance to now has
  // started those already, so this is a guard).
  int64_t until = std::numeric_limits<int64_t>::max();
  for (const balance::RunningJob& r : running) until = std::min(until, r.end);
  for (int64_t start : f->starts)
    if (start == now) until = 0;
  {
    absl::MutexLock l(&mu_);
    QueueCache& c = queue_cache_;
    if (c.valid && c.queue == out.queue && (c.forecast == nullptr || c.forecast->now <= now)) {
      c.forecast = f;
      c.forecast_until = until;
    }
  }
  out.forecast = std::move(f);
  return out;
}

absl::StatusOr<std::vector<PendingJob>> SimAdapter::Pending() {
  auto f = ForecastNow();
  if (!f.ok()) return f.status();
  const Queue& q = *f->queue;
  std::vector<PendingJob> out;
  out.reserve(q.waiting.size());
  for (size_t i = 0; i < q.waiting.size(); ++i) {
    const QueueJob& j = q.waiting[i];
    // Pinned jobs keep their place in the queue (and in the forecast) but
    // cannot move.
    if (j.pinned) continue;
    const int64_t start = f->forecast->starts[i];
    out.push_back({.id = absl::StrCat(j.id),
                   .key = j.key,
                   .cores = j.spec_cores,
                   .queued_at_ms = j.queued_at_ms,
                   .limit_ms = j.limit_ms,
                   .start_ms = start == balance::kNeverStarts ? 0 : start});
  }
  return out;
}

absl::StatusOr<int64_t> SimAdapter::WidestJob() { return options_.cores; }

absl::StatusOr<std::vector<int64_t>> SimAdapter::ArrivalStarts(const std::vector<int64_t>& widths) {
  for (int64_t w : widths) {
    if (w < 1 || w > options_.cores) {
      return absl::InvalidArgumentError(
          absl::StrCat("sim scheduler: no job of ", w, " cores can run here (1 to ", options_.cores, " cores)"));
    }
  }
  auto f = ForecastNow();
  if (!f.ok()) return f.status();
  std::vector<int64_t> out;
  for (int64_t w : widths) out.push_back(balance::TailStart(*f->forecast, w));
  return out;
}

absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> SimAdapter::FreeCores() {
  auto f = ForecastNow();
  if (!f.ok()) return f.status();
  return f->forecast->free_cores;
}

absl::Status SimAdapter::Tick() {
  absl::MutexLock l(&mu_);
  return InTransaction("tick", [] { return absl::OkStatus(); });
}

absl::StatusOr<SimStats> SimAdapter::Stats() {
  absl::MutexLock l(&mu_);
  SimStats stats;
  absl::Status s = InTransaction("stats", [&]() -> absl::Status {
    Stmt st(db_, &statements_, "SELECT state, COUNT(*) FROM jobs GROUP BY state");
    for (;;) {
      auto row = st.Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      auto state = StateFromCode(st.Int(0));
      if (!state.ok()) return state.status();
      const int64_t n = st.Int(1);
      switch (*state) {
        case JobState::kPending:
          stats.pending = n;
          break;
        case JobState::kHeld:
          stats.held = n;
          break;
        case JobState::kRunning:
          stats.running = n;
          break;
        case JobState::kDone:
          stats.done = n;
          break;
        case JobState::kCancelled:
          stats.cancelled = n;
          break;
      }
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return stats;
}

absl::StatusOr<int64_t> SimAdapter::CountDone() {
  auto stats = Stats();
  if (!stats.ok()) return stats.status();
  return stats->done;
}

absl::StatusOr<SimOptions> SimAdapterFactory::Parse(const std::map<std::string, std::string>& options) const {
  return ParseSimOptions(options);
}

absl::StatusOr<std::unique_ptr<SchedulerAdapter>> SimAdapterFactory::Make(const SimOptions& options,
                                                                          const AdapterContext& ctx) const {
  auto a = SimAdapter::Open(options, ctx);
  if (!a.ok()) return a.status();
  return std::unique_ptr<SchedulerAdapter>(*std::move(a));
}

}  // namespace hyperfed::scheduler
