// The metrics endpoint of a real hyperfedd, as Prometheus reads it: every
// page passes `promtool check metrics` (Debian's `prometheus` package), and
// the series the alerts of deploy/prometheus/rules/hyperfed.yml use show
// what happened: a peer seen down, the round and its share errors, a
// migration held while its destination is down, and all of it settled once
// the destination returns.

#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

constexpr int64_t kLong = 3'600'000;  // jobs that stay put for the test's life

// Scrapes site i until `ready` holds for its samples or `timeout` passes;
// returns the last page.
std::string ScrapeUntil(TestFederation& f, int site, absl::Duration timeout,
                        const std::function<bool(const std::map<std::string, double>&)>& ready) {
  const absl::Time end = absl::Now() + timeout;
  std::string page;
  while (absl::Now() < end) {
    const std::string url = f.MetricsUrl(site);
    Out o = url.empty() ? Out{} : Fetch(url);
    if (o.code == 0) {
      page = o.text;
      if (ready(ParseMetrics(page))) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return page;
}

// What `promtool check metrics` says of `page` ("" when it has no
// complaint); the test is skipped where promtool is missing.
Out Lint(TestFederation& f, const std::string& page) {
  const std::string path = f.dir() + "/metrics.txt";
  FILE* out = std::fopen(path.c_str(), "w");
  if (out) {
    std::fwrite(page.data(), 1, page.size(), out);
    std::fclose(out);
  }
  return Shell("promtool check metrics < " + path);
}

TEST(MetricsTest, PagePassesPromtoolAndShowsPeersRoundsAndHeldMigrations) {
  if (Shell("command -v promtool").code != 0)
    GTEST_SKIP() << "promtool not found (Debian's 'prometheus' package; bash scripts/setup installs it)";
  auto f = TestFederation::Start({.sites = 4, .slots = {1, 1, 1, 1}});
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  // One running blocker at each site, 30 pending at site-0: the round sends
  // some to each other site.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(Submit(fed, i, 1, kLong).ok());
    ASSERT_TRUE(WaitRunning(fed, i, 1, absl::Seconds(10))) << fed.Log(i);
  }
  ASSERT_TRUE(Submit(fed, 0, 30, kLong).ok());

  // Before any round: every peer up, no round series yet, nothing unsettled.
  std::string page = ScrapeUntil(fed, 0, absl::Seconds(20), [](const auto& m) {
    auto it = m.find("hyperfed_peers_up");
    return it != m.end() && it->second == 3;
  });
  Out lint = Lint(fed, page);
  EXPECT_EQ(lint.code, 0) << lint.text << "\n" << page;
  EXPECT_EQ(lint.text, "") << page;
  auto m = ParseMetrics(page);
  for (int i = 1; i < 4; ++i)
    EXPECT_EQ(m[absl::StrCat("hyperfed_peer_up{peer=\"site-", i, "\"}")], 1) << page;
  EXPECT_EQ(m.count("hyperfed_peer_up{peer=\"site-0\"}"), 0u) << "a site is no peer of itself\n" << page;
  EXPECT_EQ(m.count("hyperfed_last_round_share_error_after"), 0u) << page;
  EXPECT_EQ(m["hyperfed_round_duration_seconds_count"], 0) << page;
  EXPECT_EQ(m["hyperfed_migrations_unsettled{direction=\"out\"}"], 0) << page;
  EXPECT_EQ(m["hyperfed_migration_oldest_unsettled_age_seconds{direction=\"out\"}"], 0) << page;
  EXPECT_EQ(m["hyperfed_journal_errors_total"], 0) << page;

  // site-3 dies after journaling the incoming migration, before it answers:
  // site-0 keeps that batch held (PREPARED) while site-3 is down.
  fed.Stop(3);
  ASSERT_TRUE(fed.StartSite(3, {{"HYPERFED_CRASH_AT", "in_after_prepared"}}).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30), 3).ok());
  auto round = RunRound(fed, 0, false, absl::Seconds(40));  // ends early or not: site-3 dies in it
  ASSERT_TRUE(fed.WaitExit(3, absl::Seconds(30))) << "site-3 never reached its crash point\n" << fed.Log(3);

  page = ScrapeUntil(fed, 0, absl::Seconds(30), [](const auto& m) {
    auto down = m.find("hyperfed_peer_up{peer=\"site-3\"}"), rounds = m.find("hyperfed_rounds_total");
    return down != m.end() && down->second == 0 && rounds != m.end() && rounds->second == 1;
  });
  lint = Lint(fed, page);
  EXPECT_EQ(lint.code, 0) << lint.text << "\n" << page;
  EXPECT_EQ(lint.text, "") << page;
  m = ParseMetrics(page);
  EXPECT_EQ(m["hyperfed_peer_up{peer=\"site-1\"}"], 1) << page;
  EXPECT_EQ(m["hyperfed_peer_up{peer=\"site-2\"}"], 1) << page;
  EXPECT_EQ(m["hyperfed_peer_up{peer=\"site-3\"}"], 0) << page;
  EXPECT_EQ(m["hyperfed_peers_up"], 2) << page;
  EXPECT_EQ(m["hyperfed_rounds_total"], 1) << page;
  EXPECT_EQ(m["hyperfed_round_duration_seconds_count"], 1) << page;
  EXPECT_GT(m["hyperfed_round_duration_seconds_sum"], 0) << page;
  EXPECT_EQ(m["hyperfed_rounds_failed_consecutive"], m["hyperfed_rounds_failed_total"]) << page;
  // 30 jobs at one of 4 equal sites: 22.5 above its share of 7.5.
  EXPECT_EQ(m["hyperfed_last_round_share_error_before"], 22.5) << page;
  EXPECT_LT(m["hyperfed_last_round_share_error_after"], 22.5) << page;
  EXPECT_GT(m["hyperfed_jobs_moved_out_total"], 0) << page;
  EXPECT_EQ(m["hyperfed_migrations_unsettled{direction=\"out\"}"], 1) << page;
  EXPECT_GT(m["hyperfed_migration_jobs_unsettled{direction=\"out\"}"], 0) << page;
  EXPECT_GT(m["hyperfed_migration_oldest_unsettled_age_seconds{direction=\"out\"}"], 0) << page;
  EXPECT_LT(m["hyperfed_migration_oldest_unsettled_age_seconds{direction=\"out\"}"], 120) << page;
  EXPECT_EQ(m["hyperfed_migrations_unsettled{direction=\"in\"}"], 0) << page;
  EXPECT_EQ(m["hyperfed_journal_errors_total"], 0) << page;

  // site-3 returns: recovery settles the migration, the gauges go back to 0.
  ASSERT_TRUE(fed.StartSite(3).ok());
  page = ScrapeUntil(fed, 0, absl::Seconds(60), [](const auto& m) {
    auto up = m.find("hyperfed_peer_up{peer=\"site-3\"}");
    auto held = m.find("hyperfed_migrations_unsettled{direction=\"out\"}");
    return up != m.end() && up->second == 1 && held != m.end() && held->second == 0;
  });
  m = ParseMetrics(page);
  EXPECT_EQ(m["hyperfed_peer_up{peer=\"site-3\"}"], 1) << page << fed.Log(0);
  EXPECT_EQ(m["hyperfed_migrations_unsettled{direction=\"out\"}"], 0) << page << fed.Log(0);
  EXPECT_EQ(m["hyperfed_migration_jobs_unsettled{direction=\"out\"}"], 0) << page;
  EXPECT_EQ(m["hyperfed_migration_oldest_unsettled_age_seconds{direction=\"out\"}"], 0) << page;
}

}  // namespace
}  // namespace hyperfed::testing
