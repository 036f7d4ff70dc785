// The daemon's log formats (docs/operations.md, "Logs"): a site configured
// with log.format: json writes only JSON lines on stderr, from its start to
// its SIGTERM; a site left at the default writes text lines.

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(LogFormatTest, AJsonSiteWritesOnlyJsonLinesAndATextSiteText) {
  auto f = TestFederation::Start({.sites = 2});
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  // Site 0 again, now with log: {format: json, level: debug}, into a fresh log.
  fed.Stop(0);
  {
    std::ofstream config(fed.ConfigPath(0), std::ios::app);
    config << "log: {level: debug, format: json}\n";
  }
  const std::string log0 = fed.dir() + "/site-0.log";
  std::remove(log0.c_str());
  ASSERT_TRUE(fed.StartSite(0).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(20), 1).ok()) << fed.Log(0);
  auto round = RunRound(fed, 0);
  ASSERT_TRUE(round.ok()) << round.status();
  fed.Stop(0);  // SIGTERM: "shutting down", then "stopped"

  const std::string text = ReadAll(log0);
  ASSERT_FALSE(text.empty());
  EXPECT_TRUE(absl::EndsWith(text, "\n"));
  std::vector<std::string> messages;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << "not a JSON line: " << line << "\n" << text;
    EXPECT_EQ(j.value("site", ""), "site-0") << line;
    EXPECT_TRUE(j.contains("ts") && j.contains("level")) << line;
    messages.push_back(j.value("msg", ""));
    EXPECT_FALSE(absl::StartsWith(messages.back(), "site-0:")) << "the site is a field, not in the text: " << line;
  }
  auto has = [&](const std::string& part) {
    for (const std::string& m : messages)
      if (absl::StrContains(m, part)) return true;
    return false;
  };
  for (const char* part : {"serving on port", "peer site-1 (label 1) is", "started by site-0", "shutting down",
                           "stopped"})
    EXPECT_TRUE(has(part)) << part << "\n" << text;

  const std::string log1 = ReadAll(fed.dir() + "/site-1.log");
  EXPECT_TRUE(absl::StrContains(log1, " info site-1: serving on port")) << log1;
  for (absl::string_view line : absl::StrSplit(log1, '\n', absl::SkipEmpty()))
    EXPECT_FALSE(absl::StartsWith(line, "{")) << "site 1 writes text: " << line;
}

}  // namespace
}  // namespace hyperfed::testing
