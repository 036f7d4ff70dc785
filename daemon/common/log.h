#pragma once

// The daemon's log: one line per entry on stderr, through spdlog
// (docs/operations.md, "Logs"). Two formats:
//
//   text: 2026-11-22T04:10:01.123Z info site-a: round site-a-7 done: ...
//   json: {"ts":"2026-11-22T04:10:01.123Z","level":"info","site":"site-a","msg":"round site-a-7 done: ..."}
//
// Times are UTC with milliseconds. A message is plain text without the site:
// the site is set once, by ConfigureLog. Every function here is thread-safe.

#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace hyperfed {

// Each level shows itself and those above it: at kWarning, warnings and
// errors. An error: something the daemon meant to do failed. A warning: the
// daemon carries on, but an operator should look.
enum class LogLevel { kDebug, kInfo, kWarning, kError };
enum class LogFormat { kText, kJson };

// The names the config uses ("debug", "info", "warning", "error"; "text",
// "json"); anything else is an error listing them.
absl::StatusOr<LogLevel> ParseLogLevel(std::string_view name);
absl::StatusOr<LogFormat> ParseLogFormat(std::string_view name);
std::string_view LogLevelName(LogLevel level);
std::string_view LogFormatName(LogFormat format);

struct LogOptions {
  LogLevel level = LogLevel::kInfo;
  LogFormat format = LogFormat::kText;

  bool operator==(const LogOptions&) const = default;
};

// Sets the site every later line names, the level and the format. Until it
// is called: no site, info, text. `out` is for tests (nullptr: stderr).
void ConfigureLog(const std::string& site, const LogOptions& options, std::ostream* out = nullptr);

// Sends every later line to `hook` instead of the logger, whatever its
// level (the federation simulation writes them into its trace, with the
// simulated site and time; docs/design.md §10). An empty hook restores the
// logger.
using LogHook = std::function<void(LogLevel, std::string_view)>;
void SetLogHook(LogHook hook);

void LogDebug(std::string_view message);
void LogInfo(std::string_view message);
void LogWarning(std::string_view message);
void LogError(std::string_view message);

}  // namespace hyperfed
