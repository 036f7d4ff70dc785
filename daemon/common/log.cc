#include "daemon/common/log.h"

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/common/text.h"
#include "nlohmann/json.hpp"
#include "spdlog/logger.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/sinks/stdout_sinks.h"

namespace hyperfed {
namespace {

// spdlog's own names for these levels are the config's names.
struct LevelEntry {
  LogLevel level;
  spdlog::level::level_enum spd;
};
constexpr LevelEntry kLevels[] = {{LogLevel::kDebug, spdlog::level::debug},
                                  {LogLevel::kInfo, spdlog::level::info},
                                  {LogLevel::kWarning, spdlog::level::warn},
                                  {LogLevel::kError, spdlog::level::err}};
constexpr std::pair<LogFormat, std::string_view> kFormats[] = {{LogFormat::kText, "text"}, {LogFormat::kJson, "json"}};

spdlog::level::level_enum SpdLevel(LogLevel level) {
  for (const LevelEntry& e : kLevels)
    if (e.level == level) return e.spd;
  return spdlog::level::info;
}

// A JSON string (quotes included). Bytes that are no UTF-8 become U+FFFD,
// so every line stays valid JSON whatever a message holds.
std::string JsonString(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void Append(std::string_view s, spdlog::memory_buf_t& dest) { dest.append(s.data(), s.data() + s.size()); }

// Custom pattern flags (spdlog's own ones do the time and the level).
// A text fixed when the formatter is made: the site in either form.
class FixedTextFlag : public spdlog::custom_flag_formatter {
 public:
  explicit FixedTextFlag(std::string text) : text_(std::move(text)) {}
  void format(const spdlog::details::log_msg&, const std::tm&, spdlog::memory_buf_t& dest) override {
    Append(text_, dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<FixedTextFlag>(text_); }

 private:
  std::string text_;
};

class MessageJsonFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    Append(JsonString(std::string_view(msg.payload.data(), msg.payload.size())), dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<MessageJsonFlag>(); }
};

constexpr char kTime[] = "%Y-%m-%dT%H:%M:%S.%eZ";

std::unique_ptr<spdlog::formatter> MakeFormatter(const std::string& site, LogFormat format) {
  auto f = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  // %Q: the site as a JSON string; %q: "site: ", or nothing before a site is named; %j: the message as a
  // JSON string.
  f->add_flag<FixedTextFlag>('Q', JsonString(site))
      .add_flag<FixedTextFlag>('q', site.empty() ? "" : site + ": ")
      .add_flag<MessageJsonFlag>('j');
  if (format == LogFormat::kJson) {
    f->set_pattern(absl::StrCat(R"({"ts":")", kTime, R"(","level":"%l","site":%Q,"msg":%j})"));
  } else {
    f->set_pattern(absl::StrCat(kTime, " %l %q%v"));
  }
  return f;
}

std::shared_ptr<spdlog::logger> MakeLogger(const std::string& site, const LogOptions& options, std::ostream* out) {
  std::shared_ptr<spdlog::sinks::sink> sink;
  if (out) {
    sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*out, /*force_flush=*/true);
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();  // flushes every line
  }
  auto logger = std::make_shared<spdlog::logger>("hyperfedd", std::move(sink));
  logger->set_formatter(MakeFormatter(site, options.format));
  logger->set_level(SpdLevel(options.level));
  return logger;
}

// The logger every line goes to, and the site it names (ConfigureLog).
struct Current {
  std::mutex mu;
  std::shared_ptr<spdlog::logger> logger = MakeLogger("", LogOptions{}, nullptr);
  std::string site;
  bool text = true;                     // the format is text: messages are made one line (TerminalSafe)
  std::shared_ptr<const LogHook> hook;  // set: lines go there, not to the logger
};
Current& TheCurrent() {
  static auto* current = new Current;  // never destroyed: threads may log during exit
  return *current;
}

void Write(LogLevel level, std::string_view message) {
  std::shared_ptr<const LogHook> hook;
  std::shared_ptr<spdlog::logger> logger;
  bool text = true;
  {
    Current& c = TheCurrent();
    std::lock_guard<std::mutex> l(c.mu);
    hook = c.hook;
    logger = c.logger;
    text = c.text;
  }
  if (hook) return (*hook)(level, message);
  if (text) {
    // One entry, one line: text from peers and jobs (a balance request's
    // reason, a site's error) cannot forge entries or send escapes to the
    // terminal that reads the log (docs/security.md, "Peer text").
    const std::string safe = TerminalSafe(message);
    logger->log(SpdLevel(level), spdlog::string_view_t(safe.data(), safe.size()));
    return;
  }
  // The string_view overload: the text is not a format string.
  logger->log(SpdLevel(level), spdlog::string_view_t(message.data(), message.size()));
}

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  const spdlog::string_view_t name = spdlog::level::to_string_view(SpdLevel(level));
  return std::string_view(name.data(), name.size());
}

std::string_view LogFormatName(LogFormat format) {
  for (const auto& [f, name] : kFormats)
    if (f == format) return name;
  return "text";
}

absl::StatusOr<LogLevel> ParseLogLevel(std::string_view name) {
  std::vector<std::string> known;
  for (const LevelEntry& e : kLevels) {
    if (LogLevelName(e.level) == name) return e.level;
    known.emplace_back(LogLevelName(e.level));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown log level \"", std::string(name), "\"; known: ", absl::StrJoin(known, ", ")));
}

absl::StatusOr<LogFormat> ParseLogFormat(std::string_view name) {
  std::vector<std::string> known;
  for (const auto& [f, n] : kFormats) {
    if (n == name) return f;
    known.emplace_back(n);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown log format \"", std::string(name), "\"; known: ", absl::StrJoin(known, ", ")));
}

void ConfigureLog(const std::string& site, const LogOptions& options, std::ostream* out) {
  auto logger = MakeLogger(site, options, out);
  Current& c = TheCurrent();
  std::lock_guard<std::mutex> l(c.mu);
  c.logger = std::move(logger);
  c.site = site;
  c.text = options.format == LogFormat::kText;
}

void SetLogHook(LogHook hook) {
  Current& c = TheCurrent();
  std::lock_guard<std::mutex> l(c.mu);
  c.hook = hook ? std::make_shared<const LogHook>(std::move(hook)) : nullptr;
}

void LogDebug(std::string_view message) { Write(LogLevel::kDebug, message); }
void LogInfo(std::string_view message) { Write(LogLevel::kInfo, message); }
void LogWarning(std::string_view message) { Write(LogLevel::kWarning, message); }
void LogError(std::string_view message) { Write(LogLevel::kError, message); }

}  // namespace hyperfed
