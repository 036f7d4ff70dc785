#include "config/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "daemon/scheduler/sim_adapter.h"
#include "gtest/gtest.h"
#include "tests/config/test_files.h"

namespace hyperfed::config {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;
using testing::WriteSecret;

// Every field set, none at its default. Line numbers matter: tests name them.
constexpr char kFull[] =
    R"(site: {id: site-a, label: 0, listen: "0.0.0.0:7001", advertise: "127.0.0.1:7001", metrics_listen: "127.0.0.1:9101"}
roster:
  - {id: site-a, label: 0, endpoint: "127.0.0.1:7001"}
  - {id: site-b, label: 1, endpoint: "127.0.0.1:7002", cost: 3}
  - {id: site-c, label: 2, endpoint: "127.0.0.1:7003"}
capacity: {units: 64, speed: 1.5}
balancer: {algorithm: improved-dem, interval: 45s, underload_threshold: 2, min_imbalance: 3, heartbeat_interval: 500ms, peer_timeout: 4s, step_timeout: 2m, max_batch: 250}
scheduler: {adapter: slurm, options: {partition: batch, slots: 8}}
state_dir: ./state/site-a
security: {insecure: false, cert: certs/site-a.pem, key: certs/site-a-key.pem, ca: certs/ca.pem, admin_token_file: certs/admin-token}
log: {level: debug, format: json}
)";

// Only what has no default.
constexpr char kMinimal[] = R"(site: {id: solo, listen: "127.0.0.1:7001"}
roster:
  - {id: solo, label: 0, endpoint: "127.0.0.1:7001"}
state_dir: /var/lib/hyperfed
security: {insecure: true}
)";

::testing::AssertionResult ErrorContains(const absl::StatusOr<Config>& c, const std::string& text) {
  if (c.ok()) return ::testing::AssertionFailure() << "parsed, expected an error with: " << text;
  if (c.status().code() != absl::StatusCode::kInvalidArgument) {
    return ::testing::AssertionFailure() << "wrong code: " << c.status();
  }
  if (c.status().message().find(text) == std::string::npos) {
    return ::testing::AssertionFailure() << "error\n  " << c.status().message() << "\nlacks\n  " << text;
  }
  return ::testing::AssertionSuccess();
}

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(dir_ / "certs/site-a.pem", "cert\n");
    WriteSecret(dir_ / "certs/site-a-key.pem", "key\n");
    WriteFile(dir_ / "certs/ca.pem", "ca\n");
    WriteSecret(dir_ / "certs/admin-token", "0123456789abcdef\n");
  }

  std::string Path() const { return dir_ / "site-a.yaml"; }

  absl::StatusOr<Config> Parse(const std::string& yaml) { return ParseConfig(yaml, Path()); }

  // kFull with `from` replaced by `to` (which must occur once).
  absl::StatusOr<Config> ParseFullWith(const std::string& from, const std::string& to) {
    std::string yaml = kFull;
    EXPECT_NE(yaml.find(from), std::string::npos) << from;
    EXPECT_EQ(yaml.find(from), yaml.rfind(from)) << from;
    return Parse(absl::StrReplaceAll(yaml, {{from, to}}));
  }

  TempDir dir_;
};

TEST_F(ConfigTest, FullConfigParsesEveryField) {
  WriteFile(Path(), kFull);
  absl::StatusOr<Config> c = LoadConfig(Path());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->path, Path());
  EXPECT_EQ(c->site.id, "site-a");
  EXPECT_EQ(c->site.label, 0);
  EXPECT_EQ(c->site.listen, "0.0.0.0:7001");
  EXPECT_EQ(c->site.advertise, "127.0.0.1:7001");
  EXPECT_EQ(c->site.metrics_listen, "127.0.0.1:9101");
  ASSERT_EQ(c->roster.sites.size(), 3u);
  EXPECT_EQ(c->roster.sites[1].id, "site-b");
  EXPECT_EQ(c->roster.sites[1].label, 1);
  EXPECT_EQ(c->roster.sites[1].endpoint, "127.0.0.1:7002");
  EXPECT_EQ(c->roster.sites[1].cost, 3);
  EXPECT_EQ(c->roster.sites[2].cost, 1);
  EXPECT_FALSE(c->capacity.from_adapter);
  EXPECT_EQ(c->capacity.units, 64);
  EXPECT_DOUBLE_EQ(c->capacity.speed, 1.5);
  EXPECT_EQ(c->balancer.algorithm->name(), "improved-dem");
  EXPECT_EQ(c->balancer.interval, absl::Seconds(45));
  EXPECT_EQ(c->balancer.underload_threshold, 2);
  EXPECT_EQ(c->balancer.min_imbalance, 3);
  EXPECT_EQ(c->balancer.heartbeat_interval, absl::Milliseconds(500));
  EXPECT_EQ(c->balancer.peer_timeout, absl::Seconds(4));
  EXPECT_EQ(c->balancer.step_timeout, absl::Minutes(2));
  EXPECT_EQ(c->balancer.max_batch, 250);
  EXPECT_EQ(c->scheduler.adapter, "slurm");
  EXPECT_EQ(c->scheduler.options, (std::map<std::string, std::string>{{"partition", "batch"}, {"slots", "8"}}));
  // Relative paths are taken from the config file's folder.
  EXPECT_EQ(c->state_dir, dir_ / "state/site-a");
  EXPECT_FALSE(c->security.insecure);
  EXPECT_EQ(c->security.cert, dir_ / "certs/site-a.pem");
  EXPECT_EQ(c->security.key, dir_ / "certs/site-a-key.pem");
  EXPECT_EQ(c->security.ca, dir_ / "certs/ca.pem");
  EXPECT_EQ(c->security.admin_token_file, dir_ / "certs/admin-token");
  EXPECT_EQ(c->log.level, LogLevel::kDebug);
  EXPECT_EQ(c->log.format, LogFormat::kJson);
  EXPECT_EQ(c->roster.Dimension(), 2);
  ASSERT_NE(c->roster.FindSite("site-c"), nullptr);
  EXPECT_EQ(c->roster.FindSite("site-c")->label, 2);
  EXPECT_EQ(c->roster.FindSite("site-z"), nullptr);
  ASSERT_NE(c->roster.FindLabel(1), nullptr);
  EXPECT_EQ(c->roster.FindLabel(1)->id, "site-b");
  EXPECT_EQ(c->roster.FindLabel(3), nullptr);
  EXPECT_TRUE(Validate(*c).ok());
}

TEST_F(ConfigTest, BlockStyleParsesLikeFlowStyle) {
  absl::StatusOr<Config> c = Parse(R"(site:
  id: site-a
  listen: "127.0.0.1:7001"
roster:
  - id: site-a
    label: 0
    endpoint: "127.0.0.1:7001"
  - id: site-b
    label: 1
    endpoint: "127.0.0.1:7002"
capacity: from_adapter
scheduler:
  adapter: sim
  options:
    slots: 4
state_dir: state
security:
  insecure: true
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->roster.sites.size(), 2u);
  EXPECT_TRUE(c->capacity.from_adapter);
  EXPECT_EQ(c->scheduler.options.at("slots"), "4");
}

TEST_F(ConfigTest, DefaultsAreThoseOfTheHeader) {
  absl::StatusOr<Config> c = ParseConfig(kMinimal, "solo.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  const Config defaults;
  EXPECT_EQ(c->site.label, 0);
  EXPECT_EQ(c->site.advertise, "127.0.0.1:7001");  // advertise defaults to listen
  EXPECT_EQ(c->site.metrics_listen, "");
  EXPECT_EQ(c->roster.sites[0].cost, 1);
  EXPECT_TRUE(c->capacity.from_adapter);
  EXPECT_DOUBLE_EQ(c->capacity.speed, 1.0);
  EXPECT_EQ(c->balancer.algorithm->name(), "exact");
  EXPECT_EQ(c->balancer.interval, absl::Seconds(30));
  EXPECT_EQ(c->balancer.underload_threshold, 0);
  EXPECT_EQ(c->balancer.min_imbalance, 1);
  EXPECT_EQ(c->balancer.heartbeat_interval, absl::Seconds(1));
  EXPECT_EQ(c->balancer.peer_timeout, absl::Seconds(5));
  EXPECT_EQ(c->balancer.step_timeout, absl::Seconds(10));
  EXPECT_EQ(c->balancer.max_batch, 1000);
  EXPECT_EQ(c->scheduler.adapter, "sim");
  EXPECT_TRUE(c->scheduler.options.empty());
  EXPECT_EQ(c->state_dir, "/var/lib/hyperfed");  // absolute: untouched
  EXPECT_TRUE(c->security.insecure);
  EXPECT_EQ(c->security.cert, "");
  EXPECT_EQ(c->security.admin_token_file, "");
  EXPECT_EQ(c->log.level, LogLevel::kInfo);
  EXPECT_EQ(c->log.format, LogFormat::kText);
  EXPECT_EQ(c->roster.Dimension(), 0);
  EXPECT_EQ(defaults.balancer.interval, c->balancer.interval);
}

// A large roster is looked up through a table made at its first lookup; a
// copy, an entry added and an entry changed in place are still found as a
// scan finds them (the table is checked, and a miss scanned).
TEST(RosterLookupTest, ALargeRosterFindsWhatAScanFinds) {
  Roster r;
  for (int i = 0; i < 100; ++i) r.sites.push_back({absl::StrCat("s", i), 2 * i, absl::StrCat("h", i, ":1")});
  ASSERT_NE(r.FindLabel(42), nullptr);
  EXPECT_EQ(r.FindLabel(42)->id, "s21");
  EXPECT_EQ(r.FindSite("s99")->label, 198);
  EXPECT_EQ(r.FindLabel(43), nullptr);
  EXPECT_EQ(r.FindSite("nope"), nullptr);
  // Changed in place after the table was made: the new label and id are
  // found, the old ones are not.
  r.sites[21].label = 43;
  r.sites[21].id = "moved";
  EXPECT_EQ(r.FindLabel(42), nullptr);
  ASSERT_NE(r.FindLabel(43), nullptr);
  EXPECT_EQ(r.FindLabel(43)->id, "moved");
  EXPECT_EQ(r.FindSite("s21"), nullptr);
  EXPECT_EQ(r.FindSite("moved")->label, 43);
  // A copy, then one more site: found.
  Roster copy = r;
  copy.sites.push_back({"late", 1000, "h:1"});
  ASSERT_NE(copy.FindSite("late"), nullptr);
  EXPECT_EQ(copy.FindLabel(1000)->id, "late");
  EXPECT_EQ(&*copy.FindLabel(0), &copy.sites[0]) << "the copy's own entry, not the original's";
  // Removed: not found.
  copy.sites.erase(copy.sites.begin());
  EXPECT_EQ(copy.FindLabel(0), nullptr);
  EXPECT_EQ(copy.FindSite("s0"), nullptr);
}

TEST(ConfigDimensionTest, SmallestCubeHoldingEveryLabel) {
  auto dimension = [](std::vector<int> labels) {
    Config c;
    for (int l : labels) c.roster.sites.push_back({absl::StrCat("s", l), l, "h:1", 1});
    return c.roster.Dimension();
  };
  EXPECT_EQ(dimension({}), 0);
  EXPECT_EQ(dimension({0}), 0);
  EXPECT_EQ(dimension({0, 1}), 1);
  EXPECT_EQ(dimension({0, 2}), 2);
  EXPECT_EQ(dimension({0, 1, 2, 3}), 2);
  EXPECT_EQ(dimension({0, 4}), 3);
  EXPECT_EQ(dimension({7, 0, 5}), 3);
  EXPECT_EQ(dimension({8}), 4);
  EXPECT_EQ(dimension({(1 << 20) - 1}), 20);
}

// --- one test per rule: each names file:line and the key ------------------

TEST_F(ConfigTest, SiteIdMustMatchPattern) {
  auto c = ParseFullWith("site: {id: site-a,", "site: {id: \"site a\",");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:1: site.id: site id must be 1 to 64 characters"));
  std::string long_id(65, 'x');
  c = ParseFullWith("  - {id: site-c,", absl::StrCat("  - {id: ", long_id, ","));
  EXPECT_TRUE(ErrorContains(c, absl::StrCat("site-a.yaml:5: roster[2].id: site id must be")));
  c = ParseFullWith("  - {id: site-c,", "  - {id: site/c,");
  EXPECT_TRUE(ErrorContains(c,
                            "site-a.yaml:5: roster[2].id: site id must be 1 to 64 characters "
                            "of [A-Za-z0-9._-], got \"site/c\""));
}

// docs/design.md §6.9: the federation whose signed rosters the site takes.
TEST_F(ConfigTest, FederationDefaultsToDefaultAndMustMatchPattern) {
  auto c = Parse(kMinimal);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->federation, "default");
  c = Parse(absl::StrCat("federation: fed-a.eu\n", kMinimal));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->federation, "fed-a.eu");
  c = Parse(absl::StrCat("federation: \"fed a\"\n", kMinimal));
  EXPECT_TRUE(ErrorContains(c,
                            "site-a.yaml:1: federation: must be 1 to 64 characters of [A-Za-z0-9._-], got "
                            "\"fed a\""));
}

TEST_F(ConfigTest, LabelsMustBeInRange) {
  auto c = ParseFullWith("id: site-b, label: 1,", "id: site-b, label: -1,");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:4: roster[1].label: label must be in 0..1048575, got -1"));
  c = ParseFullWith("id: site-b, label: 1,", "id: site-b, label: 1048576,");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:4: roster[1].label: label must be in 0..1048575"));
  c = ParseFullWith("id: site-b, label: 1,", "id: site-b, label: 1048575,");
  EXPECT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->roster.Dimension(), 20);
  c = ParseFullWith("id: site-b, label: 1,", "id: site-b, label: one,");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:4: roster[1].label: expected an integer, got \"one\""));
}

TEST_F(ConfigTest, LabelsMustBeUnique) {
  auto c = ParseFullWith("id: site-c, label: 2,", "id: site-c, label: 1,");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:5: roster[2].label: duplicate label 1 (also roster[1], \"site-b\")"));
}

TEST_F(ConfigTest, IdsMustBeUnique) {
  auto c = ParseFullWith("id: site-c, label: 2,", "id: site-b, label: 2,");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:5: roster[2].id: duplicate site id \"site-b\""));
}

TEST_F(ConfigTest, EndpointsMustBeHostPort) {
  auto c = ParseFullWith("\"127.0.0.1:7003\"", "\"localhost\"");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:5: roster[2].endpoint: expected host:port, got \"localhost\""));
  c = ParseFullWith("\"127.0.0.1:7003\"", "\"127.0.0.1:0\"");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:5: roster[2].endpoint: port 0 is out of range 1..65535"));
  c = ParseFullWith("\"127.0.0.1:7003\"", "\"127.0.0.1:65536\"");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:5: roster[2].endpoint: port 65536 is out of range"));
  c = ParseFullWith("\"127.0.0.1:7003\"", "\"127.0.0.1:http\"");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:5: roster[2].endpoint: port must be a number"));
  c = ParseFullWith("\"127.0.0.1:7003\"", "\":7003\"");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:5: roster[2].endpoint: expected host:port"));
  c = ParseFullWith("\"127.0.0.1:7003\"", "\"::1:7003\"");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:5: roster[2].endpoint: expected host:port"));
  c = ParseFullWith("\"127.0.0.1:7003\"", "\"[::1]:7003\"");
  EXPECT_TRUE(c.ok()) << c.status();
  c = ParseFullWith("\"127.0.0.1:7003\"", "\"node-3.example.org:65535\"");
  EXPECT_TRUE(c.ok()) << c.status();
  c = ParseFullWith("\"127.0.0.1:7003\"", "\"127.0.0.1:7002\"");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:5: roster[2].endpoint: duplicate endpoint"));
  c = ParseFullWith("metrics_listen: \"127.0.0.1:9101\"", "metrics_listen: \"9101\"");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:1: site.metrics_listen: expected host:port"));
}

TEST_F(ConfigTest, BindAddressesMayUsePortZero) {
  // The kernel picks the port; tests rely on it. Peers still need a real one.
  auto c = ParseFullWith("listen: \"0.0.0.0:7001\"", "listen: \"127.0.0.1:0\"");
  EXPECT_TRUE(c.ok()) << c.status();
  c = ParseFullWith("advertise: \"127.0.0.1:7001\"", "advertise: \"127.0.0.1:0\"");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:1: site.advertise: port 0 is out of range 1..65535"));
}

TEST_F(ConfigTest, SiteMustBeInRosterWithItsLabelAndEndpoint) {
  auto c = ParseFullWith("  - {id: site-a, label: 0, endpoint: \"127.0.0.1:7001\"}\n", "");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:2: roster: this site \"site-a\" (site.id) is not in the roster"));
  c = ParseFullWith("id: site-a, label: 0, endpoint", "id: site-a, label: 5, endpoint");
  EXPECT_TRUE(ErrorContains(c,
                            "site-a.yaml:3: roster[0].label: this site has label 5 in the "
                            "roster but site.label is 0"));
  c = ParseFullWith("endpoint: \"127.0.0.1:7001\"", "endpoint: \"127.0.0.1:7009\"");
  EXPECT_TRUE(ErrorContains(c,
                            "site-a.yaml:3: roster[0].endpoint: this site's roster endpoint "
                            "\"127.0.0.1:7009\" must equal site.advertise"));
  // The listen address is accepted too, when it is dialable.
  c = ParseFullWith("listen: \"0.0.0.0:7001\", advertise: \"127.0.0.1:7001\"",
                    "listen: \"127.0.0.1:7001\", advertise: \"site-a.example:7001\"");
  EXPECT_TRUE(c.ok()) << c.status();
}

TEST_F(ConfigTest, RosterMustBeAListOfSites) {
  auto c = Parse(R"(site: {id: a, listen: "127.0.0.1:1"}
roster: []
state_dir: s
security: {insecure: true}
)");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:2: roster: must list every site"));
  c = Parse(R"(site: {id: a, listen: "127.0.0.1:1"}
roster: {id: a}
state_dir: s
security: {insecure: true}
)");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:2: roster: expected a list"));
  c = Parse(R"(site: {id: a, listen: "127.0.0.1:1"}
roster:
  - {id: a, label: 0, endpoint: "127.0.0.1:1"}
  - {id: b, endpoint: "127.0.0.1:2"}
  - just-a-name
state_dir: s
security: {insecure: true}
)");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:4: roster[1].label: required key is missing"));
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:5: roster[2]: expected a mapping"));
}

TEST_F(ConfigTest, SeedsAloneLetASiteJoinAndAreChecked) {
  // A joining site: no roster, its id, and where to fetch the roster.
  auto c = Parse(R"(site: {id: site-e, listen: "127.0.0.1:7005"}
seeds: [{id: site-a, endpoint: "127.0.0.1:7001"}]
state_dir: s
security: {insecure: true, roster_key: keys/roster-pub.pem}
)");
  EXPECT_TRUE(
      ErrorContains(c, "site-a.yaml:4: security.roster_key: \"" + (dir_ / "keys/roster-pub.pem") + "\" does not exist"))
      << "a relative roster_key is taken from the file's folder";
  WriteFile(dir_ / "keys/roster-pub.pem", "key");
  c = Parse(R"(site: {id: site-e, listen: "127.0.0.1:7005"}
seeds: [{id: site-a, endpoint: "127.0.0.1:7001"}]
state_dir: s
security: {insecure: true, roster_key: keys/roster-pub.pem}
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->roster.sites.empty());
  ASSERT_EQ(c->seeds.size(), 1u);
  EXPECT_EQ(c->seeds[0].id, "site-a");
  EXPECT_EQ(c->seeds[0].endpoint, "127.0.0.1:7001");
  c = Parse(R"(site: {id: site-e, listen: "127.0.0.1:7005"}
seeds:
  - {id: site-a, endpoint: "127.0.0.1:7001"}
  - {id: "b c", endpoint: "nowhere"}
state_dir: s
security: {insecure: true}
)");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:4: seeds[1].id: site id must be"));
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:4: seeds[1].endpoint: expected host:port"));
  c = Parse(R"(site: {id: site-e, listen: "127.0.0.1:7005"}
state_dir: s
security: {insecure: true}
)");
  EXPECT_TRUE(ErrorContains(c, "roster: must list every site, this one included (or give seeds"));
}

TEST_F(ConfigTest, AlgorithmMustBeKnown) {
  for (const char* ok : {"exact", "improved-dem", "mcwa"}) {
    auto c = ParseFullWith("algorithm: improved-dem", absl::StrCat("algorithm: ", ok));
    EXPECT_TRUE(c.ok()) << ok << ": " << c.status();
  }
  auto c = ParseFullWith("algorithm: improved-dem", "algorithm: dem");
  EXPECT_TRUE(ErrorContains(c,
                            "site-a.yaml:7: balancer.algorithm: unknown round mode \"dem\"; "
                            "known: exact, improved-dem, mcwa"));
}

TEST_F(ConfigTest, DurationsAreCheckedAndNamed) {
  auto c = ParseFullWith("interval: 45s", "interval: -1s");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:7: balancer.interval: must be >= 0, got -1s"));
  c = ParseFullWith("interval: 45s", "interval: 0");
  EXPECT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->balancer.interval, absl::ZeroDuration());
  c = ParseFullWith("interval: 45s", "interval: 30");
  EXPECT_TRUE(ErrorContains(c,
                            "site-a.yaml:7: balancer.interval: expected a duration like "
                            "\"30s\", \"500ms\" or \"2m\", got \"30\""));
  c = ParseFullWith("interval: 45s", "interval: inf");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:7: balancer.interval: must be finite"));
  c = ParseFullWith("heartbeat_interval: 500ms", "heartbeat_interval: 0s");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:7: balancer.heartbeat_interval: must be > 0"));
  c = ParseFullWith("peer_timeout: 4s", "peer_timeout: 500ms");
  EXPECT_TRUE(ErrorContains(c,
                            "site-a.yaml:7: balancer.peer_timeout: must be longer than "
                            "heartbeat_interval (500ms), got 500ms"));
  c = ParseFullWith("step_timeout: 2m", "step_timeout: 0s");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:7: balancer.step_timeout: must be > 0"));
  c = ParseFullWith("step_timeout: 2m", "step_timeout: [1s]");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:7: balancer.step_timeout: expected a duration, got a list"));
}

TEST_F(ConfigTest, CountsMustNotBeNegative) {
  auto c = ParseFullWith("underload_threshold: 2", "underload_threshold: -2");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:7: balancer.underload_threshold: must be >= 0"));
  c = ParseFullWith("min_imbalance: 3", "min_imbalance: -1");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:7: balancer.min_imbalance: must be >= 0"));
  c = ParseFullWith("cost: 3", "cost: -3");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:4: roster[1].cost: cost must be >= 0, got -3"));
}

TEST_F(ConfigTest, MaxCapacityIsAPositiveNumberPerRosterSite) {
  auto c = ParseFullWith("cost: 3", "cost: 3, max_capacity: 512");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->roster.sites[1].max_capacity, 512);
  EXPECT_EQ(c->roster.sites[0].max_capacity, 1e6) << "the default";
  c = ParseFullWith("cost: 3", "max_capacity: 0");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:4: roster[1].max_capacity: max_capacity must be finite and > 0, got 0"));
  c = ParseFullWith("cost: 3", "max_capacity: .inf");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:4: roster[1].max_capacity: expected a number"));
  c = ParseFullWith("cost: 3", "max_capacity: lots");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:4: roster[1].max_capacity: expected a number, got \"lots\""));
}

TEST_F(ConfigTest, MaxBatchIsBounded) {
  auto c = ParseFullWith("max_batch: 250", "max_batch: 0");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:7: balancer.max_batch: must be in 1..100000, got 0"));
  c = ParseFullWith("max_batch: 250", "max_batch: 100001");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:7: balancer.max_batch: must be in 1..100000, got 100001"));
  c = ParseFullWith("max_batch: 250", "max_batch: 100000");
  EXPECT_TRUE(c.ok()) << c.status();
  c = ParseFullWith("max_batch: 250", "max_batch: 2.5");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:7: balancer.max_batch: expected an integer, got \"2.5\""));
}

TEST_F(ConfigTest, CapacityMustBePositive) {
  auto c = ParseFullWith("capacity: {units: 64, speed: 1.5}", "capacity: {units: 0, speed: 1.5}");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:6: capacity.units: must be >= 1, got 0"));
  c = ParseFullWith("capacity: {units: 64, speed: 1.5}", "capacity: {units: 64, speed: 0}");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:6: capacity.speed: must be a finite number > 0"));
  c = ParseFullWith("capacity: {units: 64, speed: 1.5}", "capacity: {units: 64, speed: fast}");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:6: capacity.speed: expected a number, got \"fast\""));
  c = ParseFullWith("capacity: {units: 64, speed: 1.5}", "capacity: {speed: 2}");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:6: capacity.units: required key is missing"));
  c = ParseFullWith("capacity: {units: 64, speed: 1.5}", "capacity: from_scheduler");
  EXPECT_TRUE(ErrorContains(c,
                            "site-a.yaml:6: capacity: expected \"from_adapter\" or {units: N, "
                            "speed: X}, got \"from_scheduler\""));
  c = ParseFullWith("capacity: {units: 64, speed: 1.5}", "capacity: {units: 64}");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->capacity.speed, 1.0);
}

TEST_F(ConfigTest, SchedulerAdapterMustBeNamed) {
  auto c = ParseFullWith("adapter: slurm", "adapter: \"\"");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:8: scheduler.adapter: must name an adapter"));
  c = ParseFullWith("options: {partition: batch, slots: 8}", "options: {partition: [a, b]}");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:8: scheduler.options.partition: expected a scalar value, got a list"));
  c = ParseFullWith("options: {partition: batch, slots: 8}", "options: [a]");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:8: scheduler.options: expected a mapping"));
}

TEST_F(ConfigTest, StateDirIsRequired) {
  auto c = ParseFullWith("state_dir: ./state/site-a\n", "");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:1: state_dir: required key is missing"));
  c = ParseFullWith("state_dir: ./state/site-a", "state_dir: \"\"");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:9: state_dir: is required"));
}

TEST_F(ConfigTest, SiteAndListenAreRequired) {
  auto c = Parse("roster: [{id: a, label: 0, endpoint: \"h:1\"}]\nstate_dir: s\n");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:1: site: required key is missing"));
  c = ParseFullWith("listen: \"0.0.0.0:7001\", ", "");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:1: site.listen: required key is missing"));
  c = Parse("site: site-a\nroster: [{id: a, label: 0, endpoint: \"h:1\"}]\nstate_dir: s\n");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:1: site: expected a mapping with the keys id, label"));
}

TEST_F(ConfigTest, CertificatesRequiredUnlessInsecure) {
  auto c = ParseFullWith("cert: certs/site-a.pem, ", "");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:10: security.cert: is required unless security.insecure is true"));
  c = ParseFullWith("key: certs/site-a-key.pem, ", "");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:10: security.key: is required"));
  c = ParseFullWith("ca: certs/ca.pem, ", "");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:10: security.ca: is required"));
  // No security section at all means TLS, so the files are missing.
  c = ParseFullWith(
      "security: {insecure: false, cert: certs/site-a.pem, key: certs/site-a-key.pem, ca: "
      "certs/ca.pem, admin_token_file: certs/admin-token}\n",
      "");
  EXPECT_TRUE(ErrorContains(c, ": security.cert: is required"));
  c = ParseFullWith(
      "security: {insecure: false, cert: certs/site-a.pem, key: certs/site-a-key.pem, ca: "
      "certs/ca.pem, admin_token_file: certs/admin-token}",
      "security: {insecure: true}");
  // kFull listens on 0.0.0.0: plain text there is refused (see
  // InsecureOnlyOnLoopback).
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:10: security.insecure: insecure: true needs site.listen on a loopback"));
  c = ParseFullWith("insecure: false", "insecure: maybe");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:10: security.insecure: expected true or false, got \"maybe\""));
}

TEST_F(ConfigTest, CertificateFilesMustExist) {
  auto c = ParseFullWith("ca: certs/ca.pem", "ca: certs/other-ca.pem");
  EXPECT_TRUE(ErrorContains(
      c, absl::StrCat("site-a.yaml:10: security.ca: \"", dir_.path(), "/certs/other-ca.pem\" does not exist")));
  c = ParseFullWith("cert: certs/site-a.pem", "cert: certs");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:10: security.cert: \"" + dir_.path() + "/certs\" is not a regular file"));
  c = ParseFullWith("key: certs/site-a-key.pem", absl::StrCat("key: ", dir_.path(), "/certs/site-a-key.pem"));
  EXPECT_TRUE(c.ok()) << c.status();  // absolute paths work too
}

TEST_F(ConfigTest, UnreadableKeyIsAnError) {
  if (geteuid() == 0) GTEST_SKIP() << "running as root: every file is readable";
  ASSERT_EQ(chmod((dir_ / "certs/site-a-key.pem").c_str(), 0), 0);
  auto c = Parse(kFull);
  EXPECT_TRUE(
      ErrorContains(c, "site-a.yaml:10: security.key: \"" + dir_.path() + "/certs/site-a-key.pem\" is not readable"));
}

TEST_F(ConfigTest, AdminTokenFileMustExistAndHoldAToken) {
  auto c = ParseFullWith("admin_token_file: certs/admin-token", "admin_token_file: certs/nothing");
  EXPECT_TRUE(ErrorContains(
      c, "site-a.yaml:10: security.admin_token_file: \"" + dir_.path() + "/certs/nothing\" does not exist"));
  WriteSecret(dir_ / "certs/blank", " \n\t\n");
  c = ParseFullWith("admin_token_file: certs/admin-token", "admin_token_file: certs/blank");
  EXPECT_TRUE(
      ErrorContains(c, "site-a.yaml:10: security.admin_token_file: \"" + dir_.path() + "/certs/blank\" is empty"));
  // Optional, and checked in insecure mode too.
  c = ParseFullWith(", admin_token_file: certs/admin-token", "");
  EXPECT_TRUE(c.ok()) << c.status();
  const std::string loopback = absl::StrReplaceAll(kFull, {{"listen: \"0.0.0.0:7001\"", "listen: \"127.0.0.1:7001\""}});
  c = Parse(absl::StrReplaceAll(
      loopback,
      {{"insecure: false, cert: certs/site-a.pem, key: certs/site-a-key.pem, ca: certs/ca.pem", "insecure: true"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  c = Parse(absl::StrReplaceAll(loopback, {{"insecure: false, cert: certs/site-a.pem, key: certs/site-a-key.pem, ca: "
                                            "certs/ca.pem, admin_token_file: certs/admin-token",
                                            "insecure: true, admin_token_file: certs/blank"}}));
  EXPECT_TRUE(ErrorContains(c, "security.admin_token_file: \"" + dir_.path() + "/certs/blank\" is empty"));
}

TEST_F(ConfigTest, RelativePathsFollowTheConfigFile) {
  // Loaded through a path with a folder of its own, relative paths land there,
  // whatever the working directory.
  WriteFile(dir_ / "sub/certs/site-a.pem", "c");
  WriteSecret(dir_ / "sub/certs/site-a-key.pem", "k");
  WriteFile(dir_ / "sub/certs/ca.pem", "a");
  WriteSecret(dir_ / "sub/certs/admin-token", "t");
  WriteFile(dir_ / "sub/site-a.yaml", kFull);
  absl::StatusOr<Config> c = LoadConfig(dir_ / "sub/site-a.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->security.ca, dir_ / "sub/certs/ca.pem");
  EXPECT_EQ(c->state_dir, dir_ / "sub/state/site-a");
}

// --- hostile networks (issue 12, rows 9 and 12) ------------------------------

TEST_F(ConfigTest, InsecureOnlyOnLoopback) {
  const std::string plain = absl::StrReplaceAll(
      kFull, {{"security: {insecure: false, cert: certs/site-a.pem, key: certs/site-a-key.pem, ca: certs/ca.pem, "
               "admin_token_file: certs/admin-token}",
               "security: {insecure: true}"}});
  // kFull listens on 0.0.0.0: refused, naming the file, the line and the key.
  auto c = Parse(plain);
  EXPECT_TRUE(ErrorContains(c, Path() + ":10: security.insecure: insecure: true needs site.listen on a loopback "
                                        "address (127.0.0.0/8, ::1, localhost), got \"0.0.0.0:7001\""));
  for (const char* host : {"127.0.0.1", "127.3.2.1", "localhost", "[::1]"}) {
    c = Parse(absl::StrReplaceAll(plain, {{"0.0.0.0:7001", absl::StrCat(host, ":7001")}}));
    EXPECT_TRUE(c.ok()) << host << ": " << c.status();
  }
  for (const char* host : {"10.0.0.1", "128.0.0.1", "[::]", "site-a.example", "127.0.0.1.example", "[::2]"}) {
    c = Parse(absl::StrReplaceAll(plain, {{"0.0.0.0:7001", absl::StrCat(host, ":7001")}}));
    EXPECT_TRUE(ErrorContains(c, "security.insecure: insecure: true needs site.listen")) << host;
  }
  // The metrics endpoint too.
  c = Parse(absl::StrReplaceAll(plain, {{"0.0.0.0:7001", "127.0.0.1:7001"}, {"127.0.0.1:9101", "0.0.0.0:9101"}}));
  EXPECT_TRUE(ErrorContains(c, ":10: security.insecure: insecure: true needs site.metrics_listen on a loopback"));
  EXPECT_TRUE(IsLoopback("127.0.0.1:0"));
  EXPECT_FALSE(IsLoopback("0.0.0.0:0"));
}

TEST_F(ConfigTest, KeyAndTokenThatOthersCanReadAreRefused) {
  WriteFile(Path(), kFull);
  ASSERT_TRUE(LoadConfig(Path()).ok());
  const std::string key = dir_ / "certs/site-a-key.pem";
  for (mode_t mode : {0640, 0604, 0620, 0644}) {
    ASSERT_EQ(chmod(key.c_str(), mode), 0);
    EXPECT_TRUE(ErrorContains(LoadConfig(Path()),
                              absl::StrFormat("site-a.yaml:10: security.key: \"%s\" has mode %04o: group and others "
                                              "must have no access",
                                              key, mode)));
  }
  ASSERT_EQ(chmod(key.c_str(), 0400), 0);
  EXPECT_TRUE(LoadConfig(Path()).ok());
  const std::string token = dir_ / "certs/admin-token";
  ASSERT_EQ(chmod(token.c_str(), 0644), 0);
  EXPECT_TRUE(ErrorContains(LoadConfig(Path()),
                            absl::StrCat("site-a.yaml:10: security.admin_token_file: \"", token, "\" has mode 0644")));
  ASSERT_EQ(chmod(token.c_str(), 0600), 0);
  // The certificate and the CA are public.
  ASSERT_EQ(chmod((dir_ / "certs/ca.pem").c_str(), 0644), 0);
  ASSERT_EQ(chmod((dir_ / "certs/site-a.pem").c_str(), 0644), 0);
  EXPECT_TRUE(LoadConfig(Path()).ok());
}

// A daemon running as root must not trust what another user can change:
// the config, its keys and token, and every folder above them
// (docs/security.md, "Files").
TEST_F(ConfigTest, FilesOthersCanChangeAreRefusedFolderByFolder) {
  WriteFile(Path(), kFull);
  ASSERT_TRUE(LoadConfig(Path()).ok());
  const std::string ca = dir_ / "certs/ca.pem";
  EXPECT_EQ(CheckTrustedPath(ca), "");
  // The CA is public, but no one else may replace it.
  ASSERT_EQ(chmod(ca.c_str(), 0646), 0);
  EXPECT_TRUE(ErrorContains(LoadConfig(Path()), absl::StrCat("site-a.yaml:10: security.ca: \"", ca,
                                                             "\" has mode 0646: group or others may change it")));
  ASSERT_EQ(chmod(ca.c_str(), 0644), 0);
  // Another user's file (only root can give a file away: as another user
  // this part is not run, and says so).
  if (geteuid() == 0) {
    ASSERT_EQ(chown(ca.c_str(), 65534, static_cast<gid_t>(-1)), 0);
    EXPECT_TRUE(ErrorContains(LoadConfig(Path()), "security.ca: \"" + ca + "\" is owned by uid 65534"));
    ASSERT_EQ(chown(ca.c_str(), 0, static_cast<gid_t>(-1)), 0);
  } else {
    std::cout << "not root: the owner check is not run\n";
  }
  // A folder above it that others may write (not sticky): they could swap it.
  const std::string certs = dir_ / "certs";
  ASSERT_EQ(chmod(certs.c_str(), 0777), 0);
  EXPECT_TRUE(ErrorContains(LoadConfig(Path()), "a folder above"));
  EXPECT_NE(CheckTrustedPath(ca).find(certs + "\", a folder above"), std::string::npos) << CheckTrustedPath(ca);
  // Sticky, as /tmp is: no one else can replace what is in it.
  ASSERT_EQ(chmod(certs.c_str(), 01777), 0);
  EXPECT_EQ(CheckTrustedPath(ca), "");
  ASSERT_EQ(chmod(certs.c_str(), 0755), 0);
  // The config file itself.
  ASSERT_EQ(chmod(Path().c_str(), 0666), 0);
  EXPECT_TRUE(ErrorContains(LoadConfig(Path()), "config not trusted"));
  ASSERT_EQ(chmod(Path().c_str(), 0644), 0);
  EXPECT_TRUE(LoadConfig(Path()).ok());
  // A path not made yet (a new state_dir) is judged by the folders above.
  EXPECT_EQ(CheckTrustedPath(dir_ / "state/new/deeper"), "");
  ASSERT_EQ(chmod(dir_.path().c_str(), 01777), 0);  // a new state_dir right under a sticky folder, as /tmp
  EXPECT_EQ(CheckTrustedPath(dir_ / "new-state"), "");
  ASSERT_EQ(chmod(dir_.path().c_str(), 0777), 0);
  EXPECT_NE(CheckTrustedPath(dir_ / "new-state").find("has mode 0777"), std::string::npos);
  ASSERT_EQ(chmod(dir_.path().c_str(), 0700), 0);
}

TEST_F(ConfigTest, SecurityDefaultsAndLimits) {
  auto c = Parse(kFull);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->security.reflection);  // reflection off unless configured
  EXPECT_EQ(c->security.max_calls_per_peer, 16);
  EXPECT_EQ(c->security.max_threads, 64);
  c = ParseFullWith("admin_token_file: certs/admin-token}",
                    "admin_token_file: certs/admin-token, reflection: true, max_calls_per_peer: 4, max_threads: 20}");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->security.reflection);
  EXPECT_EQ(c->security.max_calls_per_peer, 4);
  EXPECT_EQ(c->security.max_threads, 20);
  c = ParseFullWith("admin_token_file: certs/admin-token}", "admin_token_file: certs/admin-token, max_threads: 2}");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:10: security.max_threads: must be in 8..10000, got 2"));
  c = ParseFullWith("admin_token_file: certs/admin-token}",
                    "admin_token_file: certs/admin-token, max_calls_per_peer: 0}");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:10: security.max_calls_per_peer: must be in 1..10000, got 0"));
}

TEST_F(ConfigTest, TheOperatorCertificateNameIsNoSiteId) {
  auto c = ParseFullWith("{id: site-c, label: 2,", "{id: hyperfed-admin, label: 2,");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:5: roster[2].id: \"hyperfed-admin\" is reserved"));
}

TEST_F(ConfigTest, LogLevelAndFormatAreNamed) {
  for (const char* level : {"debug", "info", "warning", "error"}) {
    auto c = ParseFullWith("level: debug", absl::StrCat("level: ", level));
    ASSERT_TRUE(c.ok()) << level << ": " << c.status();
    EXPECT_EQ(LogLevelName(c->log.level), level);
  }
  auto c = ParseFullWith("format: json", "format: text");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->log.format, LogFormat::kText);
  c = ParseFullWith("level: debug", "level: verbose");
  EXPECT_TRUE(
      ErrorContains(c, "site-a.yaml:11: log.level: unknown log level \"verbose\"; known: debug, info, warning, error"));
  c = ParseFullWith("format: json", "format: xml");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:11: log.format: unknown log format \"xml\"; known: text, json"));
  c = ParseFullWith("format: json", "format: [json]");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:11: log.format: expected text or json, got a list"));
  c = ParseFullWith("level: debug", "levle: debug");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:11: log.levle: unknown key; did you mean \"level\"?"));
  c = ParseFullWith("log: {level: debug, format: json}", "log: json");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:11: log: expected a mapping with the keys level, format"));
}

// --- YAML-level errors ------------------------------------------------------

TEST_F(ConfigTest, SyntaxErrorNamesFileAndLine) {
  std::string yaml = kFull;
  yaml = absl::StrReplaceAll(yaml, {{"  - {id: site-b, label: 1,", "  - {id: site-b, label: [1,"}});
  auto c = Parse(yaml);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:"));
  EXPECT_TRUE(ErrorContains(c, "YAML syntax error"));
  c = Parse("site:\n  id: a\n   listen: x\n");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:3: YAML syntax error: illegal map value"));
  c = Parse("site: {id: a\nroster: []\n");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:2: YAML syntax error: end of map flow not found"));
}

TEST_F(ConfigTest, UnknownKeysAreErrorsWithSuggestions) {
  auto c = ParseFullWith("interval: 45s", "intervall: 45s");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:7: balancer.intervall: unknown key; did you mean \"interval\"?"));
  c = ParseFullWith("state_dir:", "sate_dir:");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:9: sate_dir: unknown key; did you mean \"state_dir\"?"));
  c = ParseFullWith("key: certs/site-a-key.pem", "kye: certs/site-a-key.pem");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:10: security.kye: unknown key; did you mean \"key\"?"));
  c = ParseFullWith("cost: 3", "colour: blue");
  EXPECT_TRUE(ErrorContains(c,
                            "site-a.yaml:4: roster[1].colour: unknown key (expected one of id, "
                            "label, endpoint, cost, max_capacity, drained)"));
  c = Parse(std::string(kFull) + "frobnicate: 1\n");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:12: frobnicate: unknown key (expected one of"));
}

TEST_F(ConfigTest, RepeatedKeysAreErrors) {
  auto c = ParseFullWith("cost: 3", "cost: 3, cost: 4");
  EXPECT_TRUE(ErrorContains(c, "site-a.yaml:4: roster[1].cost: duplicate key (first on line 4)"));
}

TEST_F(ConfigTest, EveryErrorIsReportedInFileOrder) {
  std::string yaml = absl::StrReplaceAll(
      kFull, {{"endpoint: \"127.0.0.1:7003\"", "endpoint: \"nowhere\""}, {"max_batch: 250", "max_batch: 0"}});
  auto c = Parse(yaml);
  ASSERT_FALSE(c.ok());
  std::string m(c.status().message());
  size_t first = m.find("site-a.yaml:5: roster[2].endpoint");
  size_t second = m.find("site-a.yaml:7: balancer.max_batch");
  ASSERT_NE(first, std::string::npos) << m;
  ASSERT_NE(second, std::string::npos) << m;
  EXPECT_LT(first, second);
}

TEST_F(ConfigTest, EmptyOrScalarDocumentIsAnError) {
  EXPECT_TRUE(ErrorContains(Parse(""), "site-a.yaml:1: expected a mapping with the keys site, roster"));
  EXPECT_TRUE(ErrorContains(Parse("just text\n"), "site-a.yaml:1: expected a mapping"));
}

// --- LoadConfig and Validate -----------------------------------------------

TEST_F(ConfigTest, LoadConfigOfMissingFileIsNotFound) {
  absl::StatusOr<Config> c = LoadConfig(dir_ / "absent.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("absent.yaml"), std::string::npos) << c.status();
  c = LoadConfig(dir_.path());
  EXPECT_FALSE(c.ok());
}

TEST_F(ConfigTest, LoadConfigReportsLinesOfTheFile) {
  WriteFile(Path(), absl::StrReplaceAll(kFull, {{"\"127.0.0.1:7002\"", "\"localhost\""}}));
  EXPECT_TRUE(
      ErrorContains(LoadConfig(Path()), Path() + ":4: roster[1].endpoint: expected host:port, got \"localhost\""));
}

// Given the adapters, loading resolves scheduler.adapter and has the
// adapter read its options: the config holds them typed, and an unknown
// adapter or a bad option is an error naming the file, line and key.
TEST_F(ConfigTest, LoadConfigWithTheAdaptersResolvesTheAdapterAndItsOptions) {
  scheduler::AdapterRegistry adapters;
  ASSERT_TRUE(adapters.Register(std::make_unique<scheduler::SimAdapterFactory>()).ok());
  auto with = [&](const std::string& scheduler) {
    WriteFile(Path(), absl::StrCat(kMinimal, scheduler));
    return LoadConfig(Path(), &adapters);
  };
  auto good = with("scheduler:\n  adapter: sim\n  options:\n    slots: \"3\"\n");
  ASSERT_TRUE(good.ok()) << good.status();
  const auto* typed = std::any_cast<scheduler::SimOptions>(&good->scheduler.parsed);
  ASSERT_NE(typed, nullptr);
  EXPECT_EQ(typed->cores, 3);
  EXPECT_TRUE(ErrorContains(with("scheduler:\n  adapter: sim\n  options:\n    slots: many\n"),
                            Path() + ":9: scheduler.options.slots: "));
  EXPECT_TRUE(ErrorContains(with("scheduler:\n  adapter: slurn\n"),
                            Path() + ":7: scheduler.adapter: unknown scheduler adapter \"slurn\"; known: sim"));
  // Without them, neither is checked (tools that read only the file).
  auto unchecked = [&](const std::string& scheduler) {
    WriteFile(Path(), absl::StrCat(kMinimal, scheduler));
    return LoadConfig(Path());
  };
  auto loose = unchecked("scheduler:\n  adapter: slurn\n");
  ASSERT_TRUE(loose.ok()) << loose.status();
  EXPECT_FALSE(loose->scheduler.parsed.has_value());
}

TEST(ConfigValidateTest, NamesKeysWithoutLines) {
  Config c;
  c.path = "built.yaml";
  c.site = {"a", 0, "127.0.0.1:7001", "127.0.0.1:7001", ""};
  c.roster.sites = {{"a", 0, "127.0.0.1:7001", 1}, {"b", 1, "127.0.0.1:7002", 1}};
  c.state_dir = "/tmp/state";
  c.security.insecure = true;
  EXPECT_TRUE(Validate(c).ok()) << Validate(c);

  c.roster.sites[1].endpoint = "localhost";
  c.balancer.algorithm = nullptr;
  absl::Status s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  std::string m(s.message());
  EXPECT_NE(m.find("built.yaml: roster[1].endpoint: expected host:port, got \"localhost\""), std::string::npos) << m;
  EXPECT_NE(m.find("built.yaml: balancer.algorithm: must name a round mode"), std::string::npos) << m;
}

// --- the shipped examples ----------------------------------------------------

// Copies config/examples (as committed, or with certs/ if someone made them)
// into `dir`.
void CopyExamples(const std::string& dir) {
  fs::path examples = testing::SourceDir() / "config/examples";
  ASSERT_TRUE(fs::is_directory(examples)) << examples;
  fs::copy(examples, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

std::vector<std::string> SiteNames(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(std::string("site-") + char('a' + i));
  return names;
}

TEST(ConfigExamplesTest, AllExamplesValidateWithCertificatesInPlace) {
  TempDir dir;
  CopyExamples(dir.path());
  // Placeholders where gen-certs would write: validation checks that the
  // files exist and are readable, not what they hold (gen_certs_test does).
  for (int n : {4, 8}) {
    std::string certs = dir / absl::StrCat("federation-", n, "/certs");
    WriteFile(certs + "/ca.pem", "placeholder");
    WriteSecret(certs + "/admin-token", "token");
    WriteFile(certs + "/roster-pub.pem", "placeholder");
    for (const std::string& id : SiteNames(n + 1)) {  // site-e of federation-4 joins it
      WriteFile(certs + "/" + id + ".pem", "placeholder");
      WriteSecret(certs + "/" + id + "-key.pem", "placeholder");
    }
    for (int i = 0; i < n; ++i) {
      std::string id = SiteNames(n)[i];
      std::string path = dir / absl::StrCat("federation-", n, "/", id, ".yaml");
      absl::StatusOr<Config> c = LoadConfig(path);
      ASSERT_TRUE(c.ok()) << path << ": " << c.status();
      EXPECT_EQ(c->site.id, id);
      EXPECT_EQ(c->site.label, i);
      EXPECT_EQ(c->roster.sites.size(), static_cast<size_t>(n));
      EXPECT_EQ(c->roster.Dimension(), n == 4 ? 2 : 3);
      EXPECT_EQ(c->site.listen, absl::StrCat("127.0.0.1:", (n == 4 ? 7101 : 7201) + i));
      EXPECT_FALSE(c->security.insecure);
      EXPECT_EQ(c->security.cert, certs + "/" + id + ".pem");
    }
  }
  absl::StatusOr<Config> joining = LoadConfig(dir / "federation-4/site-e.yaml");
  ASSERT_TRUE(joining.ok()) << joining.status();
  EXPECT_TRUE(joining->roster.sites.empty());
  ASSERT_EQ(joining->seeds.size(), 1u);
  EXPECT_EQ(joining->seeds[0].id, "site-a");
  absl::StatusOr<Config> demo = LoadConfig(dir / "demo-insecure.yaml");
  ASSERT_TRUE(demo.ok()) << demo.status();
  EXPECT_TRUE(demo->security.insecure);
  EXPECT_EQ(demo->roster.Dimension(), 0);
  absl::StatusOr<Config> slurm = LoadConfig(dir / "slurm-site.yaml");
  ASSERT_TRUE(slurm.ok()) << slurm.status();
  EXPECT_EQ(slurm->scheduler.adapter, "slurm");
  EXPECT_EQ(slurm->scheduler.options.at("slurm_conf"), "/tmp/hyperfed-slurm/demo/slurm.conf");
}

TEST(ConfigExamplesTest, FederationExampleWithoutCertificatesNamesTheMissingFile) {
  TempDir dir;
  CopyExamples(dir.path());
  fs::remove_all(dir / "federation-4/certs");
  absl::StatusOr<Config> c = LoadConfig(dir / "federation-4/site-a.yaml");
  ASSERT_FALSE(c.ok());
  std::string m(c.status().message());
  EXPECT_NE(
      m.find("site-a.yaml:14: security.cert: \"" + dir.path() + "/federation-4/certs/site-a.pem\" does not exist"),
      std::string::npos)
      << m;
}

}  // namespace
}  // namespace hyperfed::config

namespace hyperfed::config {
namespace {

TEST(ConfigWebTest, SiteWebIsLoopbackOnOrOff) {
  const std::string base = R"(site: {id: a, label: 0, listen: "127.0.0.1:7001", metrics_listen: "127.0.0.1:9101"WEB}
roster:
  - {id: a, label: 0, endpoint: "127.0.0.1:7001"}
state_dir: ./state
security: {insecure: true}
)";
  auto parse = [&](const std::string& web) {
    std::string text = base;
    text.replace(text.find("WEB"), 3, web);
    return ParseConfig(text, "site-a.yaml");
  };
  auto c = parse("");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->site.web, WebAccess::kLoopback);
  for (const char* v : {"loopback", "on", "off"}) {
    c = parse(std::string(", web: ") + v);
    ASSERT_TRUE(c.ok()) << v << ": " << c.status();
    EXPECT_EQ(WebAccessName(c->site.web), v);
  }
  c = parse(", web: public");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("site.web: \"public\": expected loopback, on or off"), std::string::npos)
      << c.status();
}

}  // namespace
}  // namespace hyperfed::config
