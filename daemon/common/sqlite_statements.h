#pragma once

// Prepared SQLite statements kept for the life of a connection, so that a
// statement is parsed once and afterwards only reset and bound again (the
// sim adapter's queue and the migration journal; docs/benchmarks.md,
// "hyperfedd": parsing was the top cost of a migration).
//
// Not thread-safe: the owner serializes use of the connection (both owners
// hold their own mutex around every call). Header-only; its users link
// SQLite.

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <unordered_map>

namespace hyperfed {

class SqliteStatements {
 public:
  // Call before opening a connection: turns off SQLite's memory statistics,
  // which take a process-wide mutex on every allocation (nothing here reads
  // them). Takes effect only before SQLite's first use in the process, and
  // is a no-op after.
  static void BeforeOpen() { (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

  explicit SqliteStatements(sqlite3* db) : db_(db) {}
  ~SqliteStatements() { Clear(); }
  SqliteStatements(const SqliteStatements&) = delete;
  SqliteStatements& operator=(const SqliteStatements&) = delete;

  // A statement for `sql` with no bindings, ready to step, or nullptr (see
  // sqlite3_errmsg) when it does not compile. *owned: the caller must
  // finalize it, because the cached one is in use further up the stack (a
  // nested use of the same SQL). Hand it back with Return.
  sqlite3_stmt* Acquire(std::string_view sql, bool* owned) {
    *owned = false;
    auto it = cache_.find(std::string(sql));
    if (it != cache_.end() && !sqlite3_stmt_busy(it->second)) return it->second;
    sqlite3_stmt* st = nullptr;
    if (it != cache_.end()) {
      *owned = true;
      if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &st, nullptr) != SQLITE_OK) {
        sqlite3_finalize(st);
        return nullptr;
      }
      return st;
    }
    if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &st, nullptr) !=
        SQLITE_OK) {
      sqlite3_finalize(st);
      return nullptr;
    }
    cache_.emplace(std::string(sql), st);
    return st;
  }

  // Resets and clears a statement from Acquire, or finalizes it if owned.
  static void Return(sqlite3_stmt* st, bool owned) {
    if (st == nullptr) return;
    if (owned) {
      sqlite3_finalize(st);
      return;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
  }

  // Finalizes every cached statement; call before closing the connection.
  void Clear() {
    for (auto& [sql, st] : cache_) sqlite3_finalize(st);
    cache_.clear();
  }

 private:
  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

}  // namespace hyperfed
