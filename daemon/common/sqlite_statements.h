#pragma once

// SQLite helpers for the sim adapter's queue and the migration journal:
// SqliteStatements, prepared statements kept for the life of a connection,
// so that a statement is parsed once and afterwards only reset and bound
// again (docs/benchmarks.md, "hyperfedd": parsing was the top cost of a
// migration), and SqlJsonArray, a whole batch as one statement parameter.
//
// Not thread-safe: the owner serializes use of the connection (both owners
// hold their own mutex around every call). Header-only; its users link
// SQLite.

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hyperfed {

// A whole batch as one statement parameter: a JSON array that the statement
// reads with json_each(?N), so one statement reads or writes every item
// instead of one statement per item (docs/benchmarks.md, "Migration between
// two sim sites").
inline std::string SqlJsonArray(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(values[i]);
  }
  out += ']';
  return out;
}
// Texts as JSON strings, byte for byte as json_each gives them back; nullopt
// when one holds a NUL byte, which json_each would cut there (the caller
// then goes item by item).
inline std::optional<std::string> SqlJsonArray(const std::vector<std::string>& values) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    out += i > 0 ? ",\"" : "\"";
    for (char c : values[i]) {
      const auto u = static_cast<unsigned char>(c);
      if (u == 0) return std::nullopt;
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (u < 0x20) {  // JSON allows no raw control character
        out += "\\u00";
        out += kHex[u >> 4];
        out += kHex[u & 15];
      } else {
        out += c;  // bytes >= 0x80 go through as they are
      }
    }
    out += '"';
  }
  out += ']';
  return out;
}

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
