#include "daemon/common/log.h"

#include <cstdlib>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace hyperfed {
namespace {

// Each test logs into its own stream; afterwards the log is stderr again.
class LogTest : public ::testing::Test {
 protected:
  void TearDown() override { ConfigureLog("", LogOptions{}); }

  void Configure(const std::string& site, LogLevel level, LogFormat format) {
    ConfigureLog(site, LogOptions{.level = level, .format = format}, &out_);
  }

  std::vector<std::string> Lines() const {
    std::vector<std::string> lines = absl::StrSplit(out_.str(), '\n');
    EXPECT_EQ(lines.back(), "") << "the last line ends with a newline";
    lines.pop_back();
    return lines;
  }

  std::ostringstream out_;
};

// Every line is one JSON object; parse errors fail the test.
std::vector<nlohmann::json> ParseLines(const std::vector<std::string>& lines) {
  std::vector<nlohmann::json> objects;
  for (const std::string& line : lines) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(j.is_object()) << "not a JSON object: " << line;
    objects.push_back(std::move(j));
  }
  return objects;
}

absl::Time ParseStamp(const std::string& ts) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime("%Y-%m-%dT%H:%M:%E3SZ", ts, absl::UTCTimeZone(), &t, &err)) << ts << ": " << err;
  return t;
}

TEST_F(LogTest, JsonLinesHoldTimeLevelSiteAndTheMessageEscaped) {
  Configure("site-a", LogLevel::kDebug, LogFormat::kJson);
  const std::vector<std::string> messages = {
      "round site-a-1 done: moved 3",
      "a \"quoted\" word, a back\\slash and a tab\t",
      "two\nlines\r\n",
      "naïve café ✓ 日本",
      "control \x01\x1b[31m bytes",
      "braces {} {0} and percents %v %j %Q stay as written",
  };
  LogDebug(messages[0]);
  LogInfo(messages[1]);
  LogWarning(messages[2]);
  LogError(messages[3]);
  LogInfo(messages[4]);
  LogInfo(messages[5]);
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), messages.size()) << out_.str();
  const std::vector<nlohmann::json> objects = ParseLines(lines);
  const char* const levels[] = {"debug", "info", "warning", "error", "info", "info"};
  for (size_t i = 0; i < objects.size(); ++i) {
    const nlohmann::json& j = objects[i];
    ASSERT_TRUE(j.is_object()) << lines[i];
    EXPECT_EQ(j.size(), 4u) << lines[i];
    EXPECT_EQ(j.value("msg", ""), messages[i]) << lines[i];
    EXPECT_EQ(j.value("level", ""), levels[i]) << lines[i];
    EXPECT_EQ(j.value("site", ""), "site-a") << lines[i];
    EXPECT_LT(absl::AbsDuration(ParseStamp(j.value("ts", "")) - absl::Now()), absl::Seconds(60)) << lines[i];
  }
}

TEST_F(LogTest, BytesThatAreNoUtf8StillGiveAJsonLine) {
  Configure("site-a", LogLevel::kInfo, LogFormat::kJson);
  LogInfo("bad \xff\xfe bytes");
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 1u) << out_.str();
  const nlohmann::json j = ParseLines(lines)[0];
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.value("msg", ""), "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes") << "U+FFFD for each bad byte";
}

TEST_F(LogTest, TimesAreUtcWhateverTheLocalZone) {
  const char* tz = std::getenv("TZ");
  const std::string old_tz = tz ? tz : "";
  setenv("TZ", "Asia/Kolkata", 1);  // UTC+5:30 all year
  tzset();
  Configure("site-a", LogLevel::kInfo, LogFormat::kJson);
  const absl::Time before = absl::Now();
  LogInfo("now");
  const absl::Time after = absl::Now();
  if (tz) {
    setenv("TZ", old_tz.c_str(), 1);
  } else {
    unsetenv("TZ");
  }
  tzset();
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  const nlohmann::json j = ParseLines(lines)[0];
  const absl::Time t = ParseStamp(j.value("ts", ""));
  EXPECT_GE(t, absl::FromUnixMillis(absl::ToUnixMillis(before))) << lines[0];
  EXPECT_LE(t, after) << lines[0];
}

TEST_F(LogTest, TextLinesKeepTheSitePrefix) {
  Configure("site-a", LogLevel::kInfo, LogFormat::kText);
  LogInfo("serving on port 7101");
  LogWarning("insecure: true");
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 2u) << out_.str();
  // 2026-11-22T04:10:01.123Z info site-a: serving on port 7101
  ASSERT_GT(lines[0].size(), 25u);
  ParseStamp(lines[0].substr(0, 24));
  EXPECT_EQ(lines[0].substr(24), " info site-a: serving on port 7101");
  EXPECT_EQ(lines[1].substr(24), " warning site-a: insecure: true");
}

// Text from a peer (a balance request's reason, a site's error) cannot
// forge a log entry or send escapes to the terminal that reads the log.
TEST_F(LogTest, TextLinesAreOneLineWhateverThePeerSent) {
  Configure("site-a", LogLevel::kInfo, LogFormat::kText);
  LogInfo("balancing request from site-3 (x\n2026-11-22T04:10:01.123Z error site-a: journal lost\x1b[2J\xc2\x9b\xff)");
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 1u) << out_.str();
  EXPECT_EQ(lines[0].substr(24),
            " info site-a: balancing request from site-3 (x\\n2026-11-22T04:10:01.123Z error site-a: journal "
            "lost\\x1b[2J\\xc2\\x9b\\xff)");
}

TEST_F(LogTest, WithoutASiteTextHasNoPrefixAndJsonAnEmptySite) {
  Configure("", LogLevel::kInfo, LogFormat::kText);
  LogInfo("early");
  Configure("", LogLevel::kInfo, LogFormat::kJson);
  LogInfo("early");
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 2u) << out_.str();
  EXPECT_EQ(lines[0].substr(24), " info early");
  EXPECT_EQ(nlohmann::json::parse(lines[1]).value("site", "?"), "");
}

TEST_F(LogTest, ALevelShowsItselfAndThoseAbove) {
  struct Case {
    LogLevel level;
    std::vector<std::string> shown;
  };
  for (const Case& c : {Case{LogLevel::kDebug, {"d", "i", "w", "e"}}, Case{LogLevel::kInfo, {"i", "w", "e"}},
                        Case{LogLevel::kWarning, {"w", "e"}}, Case{LogLevel::kError, {"e"}}}) {
    out_.str("");
    Configure("site-a", c.level, LogFormat::kJson);
    LogDebug("d");
    LogInfo("i");
    LogWarning("w");
    LogError("e");
    std::vector<std::string> shown;
    for (const nlohmann::json& j : ParseLines(Lines())) shown.push_back(j.value("msg", ""));
    EXPECT_EQ(shown, c.shown) << "at " << LogLevelName(c.level);
  }
}

TEST(LogNamesTest, LevelsAndFormatsByName) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError}) {
    auto parsed = ParseLogLevel(LogLevelName(l));
    ASSERT_TRUE(parsed.ok()) << LogLevelName(l);
    EXPECT_EQ(*parsed, l);
  }
  EXPECT_EQ(LogLevelName(LogLevel::kWarning), "warning");
  EXPECT_EQ(LogLevelName(LogLevel::kError), "error");
  EXPECT_EQ(*ParseLogFormat("text"), LogFormat::kText);
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  for (const char* bad : {"warn", "err", "INFO", "trace", ""}) EXPECT_FALSE(ParseLogLevel(bad).ok()) << bad;
  EXPECT_EQ(ParseLogLevel("verbose").status().message(),
            "unknown log level \"verbose\"; known: debug, info, warning, error");
  EXPECT_EQ(ParseLogFormat("xml").status().message(), "unknown log format \"xml\"; known: text, json");
}

}  // namespace
}  // namespace hyperfed
