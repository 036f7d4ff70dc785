#include "daemon/migration/journal.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/migration/spec_codec.h"

namespace hyperfed::migration {
namespace {

constexpr int64_t kSchemaVersion = 1;

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta(name, value) VALUES ('schema_version', 1), ('next_sequence', 1);
CREATE TABLE IF NOT EXISTS migrations(
  direction TEXT NOT NULL CHECK (direction IN ('out', 'in')),
  id TEXT NOT NULL,
  peer TEXT NOT NULL,
  state TEXT NOT NULL,
  round_id TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  note TEXT NOT NULL,
  PRIMARY KEY (direction, id));
CREATE INDEX IF NOT EXISTS migrations_state ON migrations(state);
CREATE INDEX IF NOT EXISTS migrations_created ON migrations(created_ms);
CREATE TABLE IF NOT EXISTS migration_jobs(
  direction TEXT NOT NULL,
  migration_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  job_key TEXT NOT NULL,
  source_id TEXT NOT NULL,
  dest_id TEXT NOT NULL,
  spec BLOB NOT NULL,
  PRIMARY KEY (direction, migration_id, idx),
  FOREIGN KEY (direction, migration_id) REFERENCES migrations(direction, id));
CREATE INDEX IF NOT EXISTS migration_jobs_key ON migration_jobs(job_key);
CREATE VIEW IF NOT EXISTS aborted_ids AS
  SELECT id, peer, updated_ms FROM migrations WHERE direction = 'in' AND state = 'ABORTED';
)sql";

// The states that end a record (IsTerminal), in SQL.
constexpr char kUnsettled[] = "state NOT IN ('COMMITTED', 'ABORTED', 'FORCED')";

// A statement of the connection's cache (prepared once), reset on scope
// exit.
class Stmt {
 public:
  Stmt(SqliteStatements* cache, std::string_view sql) { stmt_ = cache->Acquire(sql, &owned_); }
  ~Stmt() { SqliteStatements::Return(stmt_, owned_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return stmt_ != nullptr; }
  Stmt& Bind(int i, std::string_view s) {
    if (ok()) sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, int64_t v) {
    if (ok()) sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return ok() ? sqlite3_step(stmt_) : SQLITE_ERROR; }
  void Reset() {
    if (!ok()) return;
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string Text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), n) : std::string();
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  bool owned_ = false;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back unless Commit() succeeded.
class Transaction {
 public:
  explicit Transaction(SqliteStatements* cache) : cache_(cache) { began_ = Run("BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (began_ && !done_) Run("ROLLBACK");
  }
  bool began() const { return began_; }
  // False (and the destructor rolls back) when COMMIT fails.
  bool Commit() {
    done_ = Run("COMMIT");
    return done_;
  }

 private:
  bool Run(const char* sql) { return Stmt(cache_, sql).Step() == SQLITE_DONE; }
  SqliteStatements* cache_;
  bool began_ = false;
  bool done_ = false;
};

std::optional<MigrationState> ParseState(const std::string& s) {
  for (MigrationState st : {MigrationState::kPreparing, MigrationState::kPrepared, MigrationState::kAborting,
                            MigrationState::kCommitted, MigrationState::kAborted, MigrationState::kForced}) {
    if (s == MigrationStateName(st)) return st;
  }
  return std::nullopt;
}

int64_t ToMs(absl::Time t) { return absl::ToUnixMillis(t); }

}  // namespace

const char* DirectionName(Direction d) { return d == Direction::kOut ? "out" : "in"; }

const char* MigrationStateName(MigrationState s) {
  switch (s) {
    case MigrationState::kPreparing:
      return "PREPARING";
    case MigrationState::kPrepared:
      return "PREPARED";
    case MigrationState::kAborting:
      return "ABORTING";
    case MigrationState::kCommitted:
      return "COMMITTED";
    case MigrationState::kAborted:
      return "ABORTED";
    case MigrationState::kForced:
      return "FORCED";
  }
  return "?";
}

bool IsTerminal(MigrationState s) {
  return s == MigrationState::kCommitted || s == MigrationState::kAborted || s == MigrationState::kForced;
}

absl::StatusOr<std::unique_ptr<Journal>> Journal::Open(const std::string& path) {
  // The journal holds job specs (scripts, environments): this account's
  // alone, whatever the umask (docs/operations.md, "Secure"). SQLite gives
  // its -wal and -shm files the database file's mode.
  if (!path.empty() && path != ":memory:" && path.rfind("file:", 0) != 0) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || ::fchmod(fd, 0600) != 0) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      return absl::UnavailableError(absl::StrCat("journal: cannot create ", path, " mode 0600: ", std::strerror(err)));
    }
    ::close(fd);
  }
  SqliteStatements::BeforeOpen();
  sqlite3* db = nullptr;
  // NOMUTEX: every use of the connection holds mu_.
  int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return absl::UnavailableError(absl::StrCat("journal: cannot open ", path, ": ", msg));
  }
  std::unique_ptr<Journal> j(new Journal(db));
  // FULL: a committed state change survives a power cut too, not only a
  // process crash; the protocol's promises rest on it.
  if (absl::Status s = j->Exec("PRAGMA busy_timeout=5000"); !s.ok()) return s;
  {
    Stmt wal(&j->statements_, "PRAGMA journal_mode=WAL");
    if (!wal.ok() || wal.Step() != SQLITE_ROW || wal.Text(0) != "wal") {
      return absl::FailedPreconditionError(absl::StrCat("journal: ", path, ": cannot switch to WAL mode"));
    }
  }
  for (const char* sql : {"PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON", kSchema}) {
    if (absl::Status s = j->Exec(sql); !s.ok()) return s;
  }
  Stmt v(&j->statements_, "SELECT value FROM meta WHERE name = 'schema_version'");
  if (!v.ok() || v.Step() != SQLITE_ROW) return j->SqlError("read schema version");
  if (v.Int(0) != kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("journal: ", path, " has schema version ", v.Int(0), "; this build reads ", kSchemaVersion));
  }
  return j;
}

Journal::~Journal() {
  statements_.Clear();
  sqlite3_close(db_);
}

absl::Status Journal::Failure(absl::Status s) const {
  errors_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

absl::Status Journal::SqlError(const std::string& what) const {
  return Failure(absl::InternalError(absl::StrCat("journal: ", what, ": ", sqlite3_errmsg(db_))));
}

absl::Status Journal::Exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    absl::Status s = Failure(absl::InternalError(absl::StrCat("journal: ", err ? err : "error")));
    sqlite3_free(err);
    return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Journal::NextSequence(int64_t n) {
  if (n < 1) return absl::InvalidArgumentError(absl::StrCat("journal: cannot reserve ", n, " sequence numbers"));
  std::lock_guard<std::mutex> l(mu_);
  Transaction tx(&statements_);
  if (!tx.began()) return SqlError("begin");
  Stmt get(&statements_, "SELECT value FROM meta WHERE name = 'next_sequence'");
  if (!get.ok() || get.Step() != SQLITE_ROW) return SqlError("read sequence");
  int64_t v = get.Int(0);
  Stmt put(&statements_, "UPDATE meta SET value = ?1 WHERE name = 'next_sequence'");
  if (!put.ok() || put.Bind(1, v + n).Step() != SQLITE_DONE) return SqlError("bump sequence");
  if (!tx.Commit()) return SqlError("commit");
  return v;
}

absl::Status Journal::InsertJobs(Direction d, const std::string& id, const std::vector<JournalJob>& jobs) {
  Stmt ins(&statements_,
           "INSERT INTO migration_jobs(direction, migration_id, idx, job_key, source_id, dest_id, spec) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  if (!ins.ok()) return SqlError("prepare job insert");
  // A PREPARING record's jobs have no spec yet: that encoding is made once.
  static const scheduler::JobSpec kNoSpec;
  static const std::string kNoSpecEncoded = EncodeSpec(kNoSpec);
  std::string encoded;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const bool none = jobs[i].spec == kNoSpec;
    if (!none) encoded = EncodeSpec(jobs[i].spec);
    ins.Reset();
    ins.Bind(1, DirectionName(d)).Bind(2, id).Bind(3, static_cast<int64_t>(i)).Bind(4, jobs[i].key);
    ins.Bind(5, jobs[i].source_id).Bind(6, jobs[i].dest_id).Bind(7, none ? kNoSpecEncoded : encoded);
    if (ins.Step() != SQLITE_DONE) return SqlError("insert job");
  }
  return absl::OkStatus();
}

absl::Status Journal::RecordEarlyAbort(const MigrationRecord& r, int64_t cap) {
  std::lock_guard<std::mutex> l(mu_);
  Transaction tx(&statements_);
  if (!tx.began()) return SqlError("begin");
  if (absl::Status s = InsertLocked(r); !s.ok()) return s;
  // The peer's records of aborts before any Transfer: aborted, incoming,
  // without jobs (a record that had a Transfer has its jobs).
  Stmt q(&statements_,
         "SELECT id FROM migrations m WHERE direction = 'in' AND peer = ?1 AND state = 'ABORTED' AND NOT EXISTS "
         "(SELECT 1 FROM migration_jobs j WHERE j.direction = 'in' AND j.migration_id = m.id)");
  if (!q.ok()) return SqlError("prepare early aborts");
  q.Bind(1, r.peer);
  std::vector<std::pair<int64_t, std::string>> early;
  for (int rc = q.Step(); rc != SQLITE_DONE; rc = q.Step()) {
    if (rc != SQLITE_ROW) return SqlError("read early aborts");
    std::string id = q.Text(0);
    int64_t n = 0;
    // Every such id passed the migrator's check ("<peer>:<n>"); one that
    // does not parse sorts first and goes first.
    const size_t colon = id.rfind(':');
    if (colon == std::string::npos || !absl::SimpleAtoi(id.substr(colon + 1), &n)) n = 0;
    early.emplace_back(n, std::move(id));
  }
  if (static_cast<int64_t>(early.size()) <= cap) return tx.Commit() ? absl::OkStatus() : SqlError("commit");
  std::sort(early.begin(), early.end());
  const size_t drop = early.size() - static_cast<size_t>(std::max<int64_t>(cap, 0));
  Stmt del(&statements_, "DELETE FROM migrations WHERE direction = 'in' AND id = ?1");
  if (!del.ok()) return SqlError("prepare drop early abort");
  for (size_t i = 0; i < drop; ++i) {
    del.Reset();
    if (del.Bind(1, early[i].second).Step() != SQLITE_DONE) return SqlError("drop early abort");
  }
  Stmt floor(&statements_,
             "INSERT INTO meta(name, value) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET value = "
             "max(value, excluded.value)");
  if (!floor.ok()) return SqlError("prepare floor");
  if (floor.Bind(1, "early_abort_floor:" + r.peer).Bind(2, early[drop - 1].first).Step() != SQLITE_DONE)
    return SqlError("raise floor");
  return tx.Commit() ? absl::OkStatus() : SqlError("commit");
}

absl::StatusOr<int64_t> Journal::EarlyAbortFloor(const std::string& peer) const {
  std::lock_guard<std::mutex> l(mu_);
  Stmt q(&statements_, "SELECT value FROM meta WHERE name = ?1");
  if (!q.ok()) return SqlError("prepare floor");
  q.Bind(1, "early_abort_floor:" + peer);
  const int rc = q.Step();
  if (rc == SQLITE_DONE) return int64_t{0};
  if (rc != SQLITE_ROW) return SqlError("read floor");
  return q.Int(0);
}

absl::Status Journal::Insert(const MigrationRecord& r) { return InsertAll({r}); }

absl::Status Journal::InsertAll(const std::vector<MigrationRecord>& rs) {
  std::lock_guard<std::mutex> l(mu_);
  Transaction tx(&statements_);
  if (!tx.began()) return SqlError("begin");
  for (const MigrationRecord& r : rs) {
    if (absl::Status s = InsertLocked(r); !s.ok()) return s;
  }
  return tx.Commit() ? absl::OkStatus() : SqlError("commit");
}

absl::Status Journal::InsertLocked(const MigrationRecord& r) {
  Stmt ins(&statements_,
           "INSERT INTO migrations(direction, id, peer, state, round_id, created_ms, updated_ms, note) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  if (!ins.ok()) return SqlError("prepare insert");
  ins.Bind(1, DirectionName(r.direction)).Bind(2, r.id).Bind(3, r.peer).Bind(4, MigrationStateName(r.state));
  ins.Bind(5, r.round_id).Bind(6, ToMs(r.created)).Bind(7, ToMs(r.updated)).Bind(8, r.note);
  int rc = ins.Step();
  if (rc == SQLITE_CONSTRAINT) {
    return absl::AlreadyExistsError(
        absl::StrCat("journal: ", DirectionName(r.direction), " migration ", r.id, " already exists"));
  }
  if (rc != SQLITE_DONE) return SqlError("insert migration");
  return InsertJobs(r.direction, r.id, r.jobs);
}

absl::Status Journal::UpdateLocked(Direction d, const std::string& id, MigrationState state, const std::string& note,
                                   absl::Time now) {
  Stmt up(&statements_,
          "UPDATE migrations SET state = ?3, updated_ms = ?4, "
          "note = CASE WHEN ?5 = '' THEN note WHEN note = '' THEN ?5 ELSE note || '; ' || ?5 END "
          "WHERE direction = ?1 AND id = ?2");
  if (!up.ok()) return SqlError("prepare update");
  up.Bind(1, DirectionName(d)).Bind(2, id).Bind(3, MigrationStateName(state)).Bind(4, ToMs(now)).Bind(5, note);
  if (up.Step() != SQLITE_DONE) return SqlError("update migration");
  if (sqlite3_changes(db_) != 1) {
    return absl::NotFoundError(absl::StrCat("journal: no ", DirectionName(d), " migration ", id));
  }
  return absl::OkStatus();
}

absl::Status Journal::Update(Direction d, const std::string& id, MigrationState state, const std::string& note,
                             absl::Time now, const std::vector<std::string>* dest_ids) {
  std::lock_guard<std::mutex> l(mu_);
  Transaction tx(&statements_);
  if (!tx.began()) return SqlError("begin");
  if (absl::Status s = UpdateLocked(d, id, state, note, now); !s.ok()) return s;
  if (dest_ids != nullptr) {
    Stmt count(&statements_, "SELECT COUNT(*) FROM migration_jobs WHERE direction = ?1 AND migration_id = ?2");
    if (!count.ok() || count.Bind(1, DirectionName(d)).Bind(2, id).Step() != SQLITE_ROW) {
      return SqlError("count jobs");
    }
    if (count.Int(0) != static_cast<int64_t>(dest_ids->size())) {
      return absl::InvalidArgumentError(absl::StrCat("journal: migration ", id, " has ", count.Int(0), " jobs, got ",
                                                     dest_ids->size(), " destination ids"));
    }
    if (absl::Status s = SetDestIds(d, id, *dest_ids); !s.ok()) return s;
  }
  return tx.Commit() ? absl::OkStatus() : SqlError("commit");
}

absl::Status Journal::SetDestIds(Direction d, const std::string& id, const std::vector<std::string>& dest_ids) {
  if (std::optional<std::string> json = SqlJsonArray(dest_ids); json.has_value()) {
    // Every row in one statement. MATERIALIZED: the ids are read once and
    // each row is found by its key (without it SQLite scans the array once
    // per row).
    Stmt set(&statements_,
             "WITH d(idx, dest_id) AS MATERIALIZED (SELECT key, value FROM json_each(?3)) "
             "UPDATE migration_jobs SET dest_id = d.dest_id FROM d "
             "WHERE direction = ?1 AND migration_id = ?2 AND migration_jobs.idx = d.idx");
    if (!set.ok() || set.Bind(1, DirectionName(d)).Bind(2, id).Bind(3, *json).Step() != SQLITE_DONE) {
      return SqlError("set dest ids");
    }
    return absl::OkStatus();
  }
  Stmt set(&statements_,
           "UPDATE migration_jobs SET dest_id = ?4 WHERE direction = ?1 AND migration_id = ?2 AND idx = ?3");
  if (!set.ok()) return SqlError("prepare dest id update");
  for (size_t i = 0; i < dest_ids.size(); ++i) {
    set.Reset();
    set.Bind(1, DirectionName(d)).Bind(2, id).Bind(3, static_cast<int64_t>(i)).Bind(4, dest_ids[i]);
    if (set.Step() != SQLITE_DONE) return SqlError("set dest id");
  }
  return absl::OkStatus();
}

absl::Status Journal::UpdateWithJobs(Direction d, const std::string& id, MigrationState state, const std::string& note,
                                     absl::Time now, const std::vector<JournalJob>& jobs) {
  std::lock_guard<std::mutex> l(mu_);
  Transaction tx(&statements_);
  if (!tx.began()) return SqlError("begin");
  if (absl::Status s = UpdateLocked(d, id, state, note, now); !s.ok()) return s;
  // Usually `jobs` are the record's own rows, in order, with their specs
  // (PREPARING -> PREPARED, nothing dropped, or dropped only at the end):
  // each row is then rewritten in place, which touches no index. Else the
  // rows are replaced.
  bool in_place = true;
  {
    Stmt set(&statements_,
             "UPDATE migration_jobs SET dest_id = ?6, spec = ?7 "
             "WHERE direction = ?1 AND migration_id = ?2 AND idx = ?3 AND job_key = ?4 AND source_id = ?5");
    if (!set.ok()) return SqlError("prepare job update");
    for (size_t i = 0; i < jobs.size() && in_place; ++i) {
      set.Reset();
      set.Bind(1, DirectionName(d)).Bind(2, id).Bind(3, static_cast<int64_t>(i)).Bind(4, jobs[i].key);
      set.Bind(5, jobs[i].source_id).Bind(6, jobs[i].dest_id).Bind(7, EncodeSpec(jobs[i].spec));
      if (set.Step() != SQLITE_DONE) return SqlError("update job");
      in_place = sqlite3_changes(db_) == 1;
    }
  }
  Stmt del(&statements_, "DELETE FROM migration_jobs WHERE direction = ?1 AND migration_id = ?2 AND idx >= ?3");
  const int64_t keep = in_place ? static_cast<int64_t>(jobs.size()) : 0;
  if (!del.ok() || del.Bind(1, DirectionName(d)).Bind(2, id).Bind(3, keep).Step() != SQLITE_DONE) {
    return SqlError("delete jobs");
  }
  if (!in_place) {
    if (absl::Status s = InsertJobs(d, id, jobs); !s.ok()) return s;
  }
  return tx.Commit() ? absl::OkStatus() : SqlError("commit");
}

absl::Status Journal::LoadJobs(MigrationRecord* r, bool with_specs) const {
  Stmt q(&statements_,
         "SELECT job_key, source_id, dest_id, spec FROM migration_jobs "
         "WHERE direction = ?1 AND migration_id = ?2 ORDER BY idx");
  if (!q.ok()) return SqlError("prepare job query");
  q.Bind(1, DirectionName(r->direction)).Bind(2, r->id);
  int rc;
  while ((rc = q.Step()) == SQLITE_ROW) {
    JournalJob j;
    j.key = q.Text(0);
    j.source_id = q.Text(1);
    j.dest_id = q.Text(2);
    if (with_specs) {
      absl::StatusOr<scheduler::JobSpec> spec = DecodeSpec(q.Text(3));
      if (!spec.ok()) {
        return Failure(absl::DataLossError(absl::StrCat("journal: migration ", r->id, ": ", spec.status().message())));
      }
      j.spec = *std::move(spec);
    }
    r->jobs.push_back(std::move(j));
  }
  if (rc != SQLITE_DONE) return SqlError("read jobs");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<MigrationRecord>> Journal::Query(const std::string& where_sql, const std::string& order_sql,
                                                            const std::vector<std::string>& args, int limit,
                                                            bool with_specs) const {
  std::string sql =
      absl::StrCat("SELECT direction, id, peer, state, round_id, created_ms, updated_ms, note FROM migrations m WHERE ",
                   where_sql, " ORDER BY ", order_sql, " LIMIT ?", args.size() + 1);
  Stmt q(&statements_, sql);
  if (!q.ok()) return SqlError("prepare query");
  for (size_t i = 0; i < args.size(); ++i) q.Bind(static_cast<int>(i + 1), args[i]);
  q.Bind(static_cast<int>(args.size() + 1), static_cast<int64_t>(limit));
  std::vector<MigrationRecord> out;
  int rc;
  while ((rc = q.Step()) == SQLITE_ROW) {
    MigrationRecord r;
    r.direction = q.Text(0) == "out" ? Direction::kOut : Direction::kIn;
    r.id = q.Text(1);
    r.peer = q.Text(2);
    std::optional<MigrationState> st = ParseState(q.Text(3));
    if (!st) return Failure(absl::DataLossError(absl::StrCat("journal: migration ", r.id, ": bad state ", q.Text(3))));
    r.state = *st;
    r.round_id = q.Text(4);
    r.created = absl::FromUnixMillis(q.Int(5));
    r.updated = absl::FromUnixMillis(q.Int(6));
    r.note = q.Text(7);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return SqlError("query migrations");
  for (MigrationRecord& r : out) {
    if (absl::Status s = LoadJobs(&r, with_specs); !s.ok()) return s;
  }
  return out;
}

absl::StatusOr<std::optional<MigrationRecord>> Journal::Get(Direction d, const std::string& id, bool with_specs) const {
  std::lock_guard<std::mutex> l(mu_);
  absl::StatusOr<std::vector<MigrationRecord>> rs =
      Query("direction = ?1 AND id = ?2", "id", {DirectionName(d), id}, 1, with_specs);
  if (!rs.ok()) return rs.status();
  if (rs->empty()) return std::nullopt;
  return std::move(rs->front());
}

absl::StatusOr<std::vector<MigrationRecord>> Journal::ListActive(Direction d) const {
  std::lock_guard<std::mutex> l(mu_);
  return Query(absl::StrCat("direction = ?1 AND ", kUnsettled), "created_ms, id", {DirectionName(d)}, -1, true);
}

absl::StatusOr<std::vector<MigrationRecord>> Journal::ListRecent(int limit) const {
  if (limit <= 0) return std::vector<MigrationRecord>{};
  std::lock_guard<std::mutex> l(mu_);
  return Query("1", "created_ms DESC, rowid DESC", {}, limit, false);
}

absl::StatusOr<std::vector<MigrationRecord>> Journal::OfRound(Direction d, const std::string& round_id) const {
  std::lock_guard<std::mutex> l(mu_);
  return Query("direction = ?1 AND round_id = ?2", "created_ms, rowid", {DirectionName(d), round_id}, -1, false);
}

absl::StatusOr<std::vector<MigrationRecord>> Journal::HistoryOfJob(const std::string& job_key) const {
  std::lock_guard<std::mutex> l(mu_);
  return Query(
      "EXISTS (SELECT 1 FROM migration_jobs j WHERE j.direction = m.direction AND j.migration_id = m.id "
      "AND j.job_key = ?1)",
      "created_ms, rowid", {job_key}, -1, false);
}

absl::StatusOr<std::set<std::string>> Journal::ActiveOutJobIds() const {
  std::lock_guard<std::mutex> l(mu_);
  const std::string sql = absl::StrCat(
      "SELECT j.source_id FROM migration_jobs j JOIN migrations m ON m.direction = j.direction AND "
      "m.id = j.migration_id WHERE m.direction = 'out' AND m.",
      kUnsettled);
  Stmt q(&statements_, sql);
  if (!q.ok()) return SqlError("prepare active jobs query");
  std::set<std::string> ids;
  int rc;
  while ((rc = q.Step()) == SQLITE_ROW) ids.insert(q.Text(0));
  if (rc != SQLITE_DONE) return SqlError("read active jobs");
  return ids;
}

absl::StatusOr<std::set<std::string>> Journal::ArrivedSince(absl::Time since, const std::string& except_round) const {
  std::lock_guard<std::mutex> l(mu_);
  Stmt q(&statements_,
         "SELECT j.job_key FROM migration_jobs j JOIN migrations m ON m.direction = j.direction AND "
         "m.id = j.migration_id WHERE m.direction = 'in' AND m.state = 'COMMITTED' AND m.created_ms >= ?1 AND "
         "m.round_id != ?2");
  if (!q.ok()) return SqlError("prepare arrivals query");
  q.Bind(1, ToMs(since)).Bind(2, except_round);
  std::set<std::string> keys;
  int rc;
  while ((rc = q.Step()) == SQLITE_ROW) keys.insert(q.Text(0));
  if (rc != SQLITE_DONE) return SqlError("read arrivals");
  return keys;
}

absl::StatusOr<UnsettledSummary> Journal::Unsettled(Direction d) const {
  std::lock_guard<std::mutex> l(mu_);
  const std::string sql = absl::StrCat(
      "SELECT COUNT(*), MIN(created_ms), (SELECT COUNT(*) FROM migration_jobs j JOIN migrations m ON "
      "m.direction = j.direction AND m.id = j.migration_id WHERE m.direction = ?1 AND m.",
      kUnsettled, ") FROM migrations WHERE direction = ?1 AND ", kUnsettled);
  Stmt q(&statements_, sql);
  if (!q.ok()) return SqlError("prepare unsettled query");
  if (q.Bind(1, DirectionName(d)).Step() != SQLITE_ROW) return SqlError("read unsettled");
  UnsettledSummary u;
  u.migrations = q.Int(0);
  if (u.migrations > 0) u.oldest_created = absl::FromUnixMillis(q.Int(1));
  u.jobs = q.Int(2);
  return u;
}

}  // namespace hyperfed::migration
