#pragma once

// The migration journal: one SQLite database per site (WAL mode,
// synchronous=FULL), the durable memory of the transfer protocol of
// docs/design.md §7. Every state change is one transaction, so after a crash a
// record is in exactly one of its states with the job rows that go with it.
//
// Tables:
//   meta(name, value)             schema_version; next_sequence, the
//                                 persistent counter behind migration ids;
//                                 early_abort_floor:<peer> (RecordEarlyAbort)
//   migrations(direction, id, peer, state, round_id, created_ms,
//              updated_ms, note)  one row per outgoing ("out") or incoming
//                                 ("in") migration
//   migration_jobs(direction, migration_id, idx, job_key, source_id,
//                  dest_id, spec) the jobs of a migration, in request order
//   aborted_ids (view)            the incoming ids recorded as aborted: the
//                                 destination refuses them for ever
//
// Thread-safe: one connection behind a mutex.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/common/sqlite_statements.h"
#include "daemon/scheduler/adapter.h"

struct sqlite3;

namespace hyperfed::migration {

enum class Direction { kOut, kIn };

// Outgoing: PREPARING -> PREPARED -> COMMITTED, or -> ABORTING -> ABORTED /
// COMMITTED, or PREPARING -> ABORTED (never sent), or -> FORCED (operator).
// Incoming: PREPARED -> COMMITTED, or ABORTED (also inserted directly when an
// Abort arrives before any Transfer).
enum class MigrationState { kPreparing, kPrepared, kAborting, kCommitted, kAborted, kForced };

const char* DirectionName(Direction d);            // "out", "in"
const char* MigrationStateName(MigrationState s);  // "PREPARING", ...
bool IsTerminal(MigrationState s);                 // COMMITTED, ABORTED, FORCED

struct JournalJob {
  std::string key;          // federation-wide job key
  std::string source_id;    // id at the source ("" in incoming records)
  std::string dest_id;      // id at the destination; "" until known
  scheduler::JobSpec spec;  // loaded only when asked for
};

// The records of one direction not yet in a terminal state (for the
// metrics endpoint): how many, their jobs, and when the oldest was created.
struct UnsettledSummary {
  int64_t migrations = 0;
  int64_t jobs = 0;
  std::optional<absl::Time> oldest_created;  // nullopt when there is none
};

struct MigrationRecord {
  std::string id;
  Direction direction = Direction::kOut;
  std::string peer;  // the destination (out) or the source (in)
  MigrationState state = MigrationState::kPreparing;
  std::string round_id;
  absl::Time created = absl::UnixEpoch();
  absl::Time updated = absl::UnixEpoch();
  std::string note;  // "; "-separated remarks, oldest first
  std::vector<JournalJob> jobs;
};

class Journal {
 public:
  // Opens or creates the database at `path` (its folder must exist).
  static absl::StatusOr<std::unique_ptr<Journal>> Open(const std::string& path);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Reserves the next `n` (at least 1) values of the persistent sequence
  // (1, 2, ...) and returns the first; never repeated, even across a crash.
  absl::StatusOr<int64_t> NextSequence(int64_t n = 1);

  // Inserts a record with its jobs; AlreadyExists if (direction, id) exists.
  absl::Status Insert(const MigrationRecord& r);
  // Inserts every record in one transaction (one fsync): all or none.
  absl::Status InsertAll(const std::vector<MigrationRecord>& rs);

  // nullopt if unknown.
  absl::StatusOr<std::optional<MigrationRecord>> Get(Direction d, const std::string& id, bool with_specs = true) const;

  // Sets the state and updated time, appends `note` (if not empty), and when
  // `dest_ids` is given (one per job, in order) records the destination ids.
  // NotFound if the record does not exist; InvalidArgument on a count
  // mismatch (and nothing changes).
  absl::Status Update(Direction d, const std::string& id, MigrationState state, const std::string& note, absl::Time now,
                      const std::vector<std::string>* dest_ids = nullptr);

  // Like Update, but replaces the job rows with `jobs` (keys, ids and specs).
  absl::Status UpdateWithJobs(Direction d, const std::string& id, MigrationState state, const std::string& note,
                              absl::Time now, const std::vector<JournalJob>& jobs);

  // An Abort that came before any Transfer (issue 34, finding 6): inserts
  // `r` (an incoming ABORTED record without jobs, its id "<r.peer>:<n>"),
  // then keeps at most `cap` such records from r.peer, dropping those with
  // the lowest n, and raises r.peer's floor (EarlyAbortFloor) to the
  // highest n dropped. One
  // transaction: a crash leaves the record and its floor, or neither.
  // AlreadyExists if the id exists.
  absl::Status RecordEarlyAbort(const MigrationRecord& r, int64_t cap);
  // The highest number RecordEarlyAbort dropped for `peer` (0: none): a
  // Transfer of an unknown id of that peer at or below it was aborted.
  absl::StatusOr<int64_t> EarlyAbortFloor(const std::string& peer) const;

  // Records not in a terminal state, oldest first, with specs.
  absl::StatusOr<std::vector<MigrationRecord>> ListActive(Direction d) const;
  // The most recent `limit` records of both directions, newest first,
  // without specs.
  absl::StatusOr<std::vector<MigrationRecord>> ListRecent(int limit) const;
  // The migrations of one round in direction d, oldest first (their jobs'
  // keys, not their specs).
  absl::StatusOr<std::vector<MigrationRecord>> OfRound(Direction d, const std::string& round_id) const;
  // Every record that carries `job_key`, oldest first, without specs.
  absl::StatusOr<std::vector<MigrationRecord>> HistoryOfJob(const std::string& job_key) const;
  // Source ids of the jobs of active outgoing records.
  absl::StatusOr<std::set<std::string>> ActiveOutJobIds() const;
  // Keys of the jobs that arrived here by a committed migration created at
  // or after `since`, outside round `except_round` (the hysteresis of
  // docs/algorithms.md, "Jobs that gain").
  absl::StatusOr<std::set<std::string>> ArrivedSince(absl::Time since, const std::string& except_round) const;
  // Counts only, without loading any record.
  absl::StatusOr<UnsettledSummary> Unsettled(Direction d) const;

  // Failures of the database itself since Open: SQLite errors (disk full,
  // I/O, a lock held beyond busy_timeout) and rows that cannot be read. A
  // caller's mistake (NotFound, AlreadyExists, InvalidArgument) is not one.
  int64_t errors() const { return errors_.load(std::memory_order_relaxed); }

 private:
  explicit Journal(sqlite3* db) : db_(db), statements_(db) {}
  absl::Status Exec(const char* sql) const;
  absl::StatusOr<std::vector<MigrationRecord>> Query(const std::string& where_sql, const std::string& order_sql,
                                                     const std::vector<std::string>& args, int limit,
                                                     bool with_specs) const;
  absl::Status LoadJobs(MigrationRecord* r, bool with_specs) const;
  absl::Status InsertJobs(Direction d, const std::string& id, const std::vector<JournalJob>& jobs);
  // The destination ids of a record's rows (one per row, in order), inside
  // the caller's transaction.
  absl::Status SetDestIds(Direction d, const std::string& id, const std::vector<std::string>& dest_ids);
  // A record and its jobs, inside the caller's transaction.
  absl::Status InsertLocked(const MigrationRecord& r);
  absl::Status UpdateLocked(Direction d, const std::string& id, MigrationState state, const std::string& note,
                            absl::Time now);
  // Every failure counted by errors() passes here.
  absl::Status Failure(absl::Status s) const;
  // Failure() with SQLite's last error message, after `what`.
  absl::Status SqlError(const std::string& what) const;

  mutable std::mutex mu_;
  sqlite3* db_;
  // Every statement, prepared once (guarded by mu_, as db_).
  mutable SqliteStatements statements_;
  mutable std::atomic<int64_t> errors_{0};
};

}  // namespace hyperfed::migration
