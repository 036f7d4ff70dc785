// Sites join and leave a running federation (docs/operations.md, "Join and
// leave"): real daemons, the real hyperfedctl signing rosters with the
// operators' key, real gRPC. Jobs are submitted and rounds run between the
// changes; every job stays at exactly one site.

#include <sys/wait.h>

#include <csignal>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "daemon/roster/roster_doc.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

std::string Ctl(TestFederation& f, int site, const std::string& args) {
  return absl::StrCat(HyperfedctlPath(), " --endpoint ", f.Endpoint(site), " --server-name ", f.SiteId(site),
                      " --ca ", f.CertDir(), "/ca.pem --token-file ", f.CertDir(), "/admin-token ", args);
}

v1::StatusReply Status(TestFederation& f, int site) {
  v1::StatusReply r;
  auto ctx = f.Context();
  grpc::Status st = f.Admin(site)->Status(ctx.get(), v1::StatusRequest(), &r);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return r;
}

// Waits until each of `sites` lists exactly `sites` in its roster, has
// roster version `version` and sees every other one up.
::testing::AssertionResult WaitRoster(TestFederation& f, const std::vector<int>& sites, int64_t version,
                                      absl::Duration timeout = absl::Seconds(30)) {
  const absl::Time end = absl::Now() + timeout;
  std::string last;
  while (absl::Now() < end) {
    bool all = true;
    for (int i : sites) {
      v1::StatusReply r = Status(f, i);
      int up = 0;
      bool versions = true;
      for (const auto& s : r.sites()) {
        up += s.state() != "down";
        versions = versions && (s.state() == "down" || s.roster_version() == version);
      }
      if (r.sites_size() != static_cast<int>(sites.size()) || up != r.sites_size() || !versions) {
        all = false;
        last = absl::StrCat("site-", i, " lists ", r.sites_size(), " sites, ", up, " up, versions ",
                            versions ? "agree" : "differ");
        break;
      }
    }
    if (all) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ::testing::AssertionFailure() << "roster version " << version << " not everywhere: " << last;
}

// Every key once, and the same set as `expected`.
void ExpectExactlyOnce(TestFederation& f, const std::set<std::string>& expected, const std::string& when) {
  std::multiset<std::string> keys = AllKeys(f);
  EXPECT_EQ(keys.size(), expected.size()) << when;
  EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()), expected) << when;
}

std::set<std::string> SubmitAt(TestFederation& f, int site, int count, std::set<std::string> keys) {
  v1::SubmitRequest req;
  req.set_count(count);
  req.set_duration_ms(3600 * 1000);  // they stay queued or running
  v1::SubmitReply r;
  auto ctx = f.Context();
  grpc::Status st = f.Admin(site)->Submit(ctx.get(), req, &r);
  EXPECT_TRUE(st.ok()) << st.error_message();
  keys.insert(r.keys().begin(), r.keys().end());
  return keys;
}

class RosterTest : public ::testing::Test {
 protected:
  void Start(int sites, int joining) {
    // No hysteresis: a job moved in one round may move again in the next,
    // so that every round can balance.
    auto f = TestFederation::Start({.sites = sites, .heartbeat = "200ms", .hysteresis = "0s", .joining = joining});
    ASSERT_TRUE(f.ok()) << f.status();
    fed_ = *std::move(f);
  }
  std::unique_ptr<TestFederation> fed_;
};

TEST_F(RosterTest, GrowsFrom4To9SitesAndShrinksBackWhileJobsRun) {
  Start(4, 5);
  TestFederation& f = *fed_;
  std::set<std::string> keys = SubmitAt(f, 0, 80, {});
  std::vector<int> in{0, 1, 2, 3};
  int64_t version = 0;
  auto round_balances = [&](const std::string& when) {
    auto r = RunRound(f, 0);
    ASSERT_TRUE(r.ok()) << when << ": " << r.status();
    EXPECT_TRUE(r->ok()) << when << ": " << r->message();
    EXPECT_LT(r->final_event().max_share_error_after(), 1.0) << when << ": " << r->message();
    EXPECT_EQ(r->final_event().after_size(), static_cast<int>(in.size())) << when << ": every site took part";
    ExpectExactlyOnce(f, keys, when);
  };
  // Grow: 5 sites (a 3-cube), 8 (full 3-cube), 9 (a 4-cube). Each new site
  // starts with only a seed and fetches the roster.
  for (int target : {5, 8, 9}) {
    while (static_cast<int>(in.size()) < target) {
      const int s = static_cast<int>(in.size());
      Out add = Shell(Ctl(f, 1, absl::StrCat("roster add ", f.SiteId(s), " --endpoint ", f.Endpoint(s),
                                             " --roster-key ", f.RosterKey())));
      ASSERT_EQ(add.code, 0) << add.text;
      ++version;
      EXPECT_NE(add.text.find(absl::StrCat("roster version ", version, ": added ", f.SiteId(s), " at label ", s)),
                std::string::npos)
          << add.text;
      ASSERT_TRUE(f.StartSite(s).ok());
      in.push_back(s);
      keys = SubmitAt(f, s % 2, 7, keys);  // jobs keep arriving
    }
    ASSERT_TRUE(WaitRoster(f, in, version)) << f.Log(in.back());
    v1::TopologyReply topo;
    auto ctx = f.Context();
    ASSERT_TRUE(f.Admin(2)->Topology(ctx.get(), v1::TopologyRequest(), &topo).ok());
    EXPECT_EQ(topo.dimension(), target == 5 ? 3 : target == 8 ? 3 : 4) << target << " sites";
    round_balances(absl::StrCat("after growing to ", target, " sites"));
  }
  // Shrink back to 4, one site at a time: each is drained, a round moves its
  // queued jobs, then it leaves.
  while (in.size() > 4) {
    const int s = in.back();
    Out rm = Shell(Ctl(f, 0, absl::StrCat("roster remove ", f.SiteId(s), " --roster-key ", f.RosterKey())));
    ASSERT_EQ(rm.code, 0) << rm.text << f.Log(0);
    version += 2;  // drained, then removed
    EXPECT_NE(rm.text.find(absl::StrCat("drained ", f.SiteId(s))), std::string::npos) << rm.text;
    EXPECT_NE(rm.text.find(absl::StrCat("roster version ", version, ": removed ", f.SiteId(s))), std::string::npos)
        << rm.text;
    in.pop_back();
    ASSERT_TRUE(WaitRoster(f, in, version)) << f.Log(0);
    // What was queued there left; what runs there stays (its own cluster).
    EXPECT_EQ(CountState(ListJobs(f, s), "pending"), 0) << f.SiteId(s) << " kept queued jobs";
    keys = SubmitAt(f, 1, 5, keys);
    round_balances(absl::StrCat("after shrinking to ", in.size(), " sites"));
  }
}

TEST_F(RosterTest, RefusesAWrongKeyAnOlderVersionAndACeilingASiteExceeds) {
  Start(2, 0);
  TestFederation& f = *fed_;
  auto current = [&] {
    v1::AdminGetRosterReply r;
    auto ctx = f.Context();
    EXPECT_TRUE(f.Admin(0)->GetRoster(ctx.get(), v1::AdminGetRosterRequest(), &r).ok());
    return *roster::FromProto(r.roster());
  };
  auto set = [&](config::Roster next, const std::string& key_pem, int64_t expected) {
    next.expires_unix_ms = absl::ToUnixMillis(absl::Now() + absl::Hours(1));  // sites take none without
    auto doc = roster::Sign(next, key_pem);
    EXPECT_TRUE(doc.ok()) << doc.status();
    v1::SetRosterRequest req;
    req.set_expected_version(expected);
    *req.mutable_roster() = *doc;
    v1::SetRosterReply r;
    auto ctx = f.Context();
    return f.Admin(0)->SetRoster(ctx.get(), req, &r);
  };
  const std::string key = ReadFile(f.RosterKey());
  config::Roster v0 = current();
  ASSERT_EQ(v0.version, 0);
  // Another key: a fresh Ed25519 key the sites do not know.
  const std::string other = f.dir() + "/other-key.pem";
  ASSERT_EQ(std::system(absl::StrCat("openssl genpkey -algorithm ed25519 -out ", other, " 2>/dev/null").c_str()), 0);
  config::Roster v1 = v0;
  v1.version = 1;
  v1.sites[1].max_capacity = 1000;
  grpc::Status st = set(v1, ReadFile(other), 0);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_NE(st.error_message().find("not the operators'"), std::string::npos) << st.error_message();
  // A ceiling below what site-1 reports (4 sim slots), once site-0 holds
  // that row and site-1 up: the check is against what this site has heard.
  auto heard_4 = [&] {
    const v1::StatusReply r = Status(f, 0);
    for (const auto& s : r.sites())
      if (s.site() == "site-1") return s.state() == "up" && s.capacity() == 4;
    return false;
  };
  const absl::Time heard_by = absl::Now() + absl::Seconds(10);
  while (absl::Now() < heard_by && !heard_4()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(heard_4()) << f.Log(0);
  config::Roster low = v1;
  low.sites[1].max_capacity = 2;
  st = set(low, key, 0);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_NE(st.error_message().find("site-1 reports capacity 4"), std::string::npos) << st.error_message();
  EXPECT_EQ(current().version, 0) << "nothing changed";
  ASSERT_TRUE(set(v1, key, 0).ok());
  config::Roster v2 = v1;
  v2.version = 2;
  ASSERT_TRUE(set(v2, key, 1).ok());
  // An older (or the same) version, even with the version in force expected.
  st = set(v1, key, 2);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_NE(st.error_message().find("not newer"), std::string::npos) << st.error_message();
  // A peer's heartbeat with an older roster changes nothing either: both
  // sites keep version 2.
  ASSERT_TRUE(WaitRoster(f, {0, 1}, 2));
  EXPECT_EQ(current().version, 2);
}

TEST_F(RosterTest, TwoConcurrentAddsOneWinsTheOtherGetsTheConflict) {
  Start(2, 2);
  TestFederation& f = *fed_;
  // Two operators read version 0 and each sign a version 1 with one more
  // site: whichever is set first wins; the other is told to retry, and
  // changes nothing.
  v1::AdminGetRosterReply read;
  {
    auto ctx = f.Context();
    ASSERT_TRUE(f.Admin(0)->GetRoster(ctx.get(), v1::AdminGetRosterRequest(), &read).ok());
  }
  const config::Roster v0 = *roster::FromProto(read.roster());
  const std::string key = ReadFile(f.RosterKey());
  std::vector<v1::SetRosterRequest> reqs(2);
  for (int k = 0; k < 2; ++k) {
    auto next = roster::WithSite(v0, f.SiteId(2 + k), f.Endpoint(2 + k), std::nullopt, std::nullopt);
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_EQ(next->version, 1);
    next->expires_unix_ms = absl::ToUnixMillis(absl::Now() + absl::Hours(1));  // sites take none without
    auto doc = roster::Sign(*next, key);
    ASSERT_TRUE(doc.ok()) << doc.status();
    reqs[k].set_expected_version(0);
    *reqs[k].mutable_roster() = *doc;
  }
  // One through site-0 (the coordinator), one through site-1, which
  // hands it to the coordinator: the one place the version is compared.
  std::vector<grpc::Status> got(2);
  std::vector<std::thread> ops;
  for (int k = 0; k < 2; ++k)
    ops.emplace_back([&, k] {
      v1::SetRosterReply r;
      auto ctx = f.Context();
      got[k] = f.Admin(k)->SetRoster(ctx.get(), reqs[k], &r);
    });
  for (auto& t : ops) t.join();
  ASSERT_NE(got[0].ok(), got[1].ok()) << got[0].error_message() << " / " << got[1].error_message();
  const int winner = got[0].ok() ? 0 : 1;
  const grpc::Status& lost = got[1 - winner];
  EXPECT_EQ(lost.error_code(), grpc::StatusCode::ABORTED) << lost.error_message();
  EXPECT_NE(lost.error_message().find("run the command again"), std::string::npos) << lost.error_message();
  // Everywhere the winner's roster, and only it.
  // site-0 and site-1 agree on version 1 (the joining sites are not started).
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (absl::Now() < end && Status(f, 1).sites_size() != 3) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int site : {0, 1}) {
    v1::AdminGetRosterReply r;
    auto ctx = f.Context();
    ASSERT_TRUE(f.Admin(site)->GetRoster(ctx.get(), v1::AdminGetRosterRequest(), &r).ok());
    const config::Roster now = *roster::FromProto(r.roster());
    EXPECT_EQ(now.version, 1);
    EXPECT_NE(now.FindSite(f.SiteId(2 + winner)), nullptr) << "site-" << site;
    EXPECT_EQ(now.FindSite(f.SiteId(3 - winner)), nullptr) << "site-" << site;
  }
}

// Rewrites site i's config file, replacing `from` by `to` (which must occur).
void EditConfig(TestFederation& f, int i, const std::string& from, const std::string& to) {
  std::string text = ReadFile(f.ConfigPath(i));
  ASSERT_NE(text.find(from), std::string::npos) << from << " not in\n" << text;
  std::ofstream(f.ConfigPath(i)) << absl::StrReplaceAll(text, {{from, to}});
}

// Waits until site i's log holds `text`.
bool WaitLog(TestFederation& f, int i, const std::string& text, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    if (ReadFile(absl::StrCat(f.dir(), "/site-", i, ".log")).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int TimerRounds(TestFederation& f) {
  v1::RoundsRequest req;
  v1::RoundsReply r;
  auto ctx = f.Context();
  EXPECT_TRUE(f.Admin(0)->Rounds(ctx.get(), req, &r).ok());
  int n = 0;
  for (const auto& round : r.rounds())
    for (const auto& e : round.events()) n += e.find("(timer)") != std::string::npos;
  return n;
}

TEST_F(RosterTest, SighupChangesTheIntervalOfARunningSiteAndRefusesWhatNeedsARestart) {
  Start(2, 0);
  TestFederation& f = *fed_;
  SubmitAt(f, 0, 40, {});  // an imbalance a timer round would act on
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(TimerRounds(f), 0) << "interval 0s: no timer rounds";
  EditConfig(f, 0, "algorithm: exact, interval: 0s", "algorithm: improved-dem, interval: 1s");
  ASSERT_EQ(kill(f.Pid(0), SIGHUP), 0);
  ASSERT_TRUE(WaitLog(f, 0, "balancer.algorithm exact -> improved-dem, balancer.interval 0 -> 1s")) << f.Log(0);
  EXPECT_EQ(Status(f, 0).algorithm(), "improved-dem");
  const absl::Time end = absl::Now() + absl::Seconds(15);
  while (absl::Now() < end && TimerRounds(f) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GE(TimerRounds(f), 1) << "a timer round within the new interval\n" << f.Log(0);
  // The adapter's options: a new adapter over the same queue, no job lost.
  const std::multiset<std::string> before = AllKeys(f);
  EditConfig(f, 0, "slots: \"4\"", "slots: \"6\"");
  // Taken only between migrations: a timer round running at that moment
  // defers it ("send SIGHUP again later"), as an operator would see.
  for (int attempt = 0; attempt < 20 && !WaitLog(f, 0, "scheduler.options slots=6", absl::Milliseconds(300));
       ++attempt)
    ASSERT_EQ(kill(f.Pid(0), SIGHUP), 0);
  ASSERT_TRUE(WaitLog(f, 0, "scheduler.options slots=6")) << f.Log(0);
  auto capacity = [&] {
    const v1::StatusReply r = Status(f, 0);
    for (const auto& s : r.sites())
      if (s.site() == "site-0") return s.capacity();
    return -1.0;
  };
  EXPECT_EQ(capacity(), 6) << "the sim cluster has 6 cores now";
  EXPECT_EQ(AllKeys(f), before);
  // Options the adapter refuses: nothing changes.
  EditConfig(f, 0, "slots: \"6\"", "slots: \"-1\"");
  ASSERT_EQ(kill(f.Pid(0), SIGHUP), 0);
  EXPECT_TRUE(WaitLog(f, 0, "not reloaded, nothing changed: scheduler.options")) << f.Log(0);
  EXPECT_EQ(capacity(), 6);
  EditConfig(f, 0, "slots: \"-1\"", "slots: \"6\"");
  // A change that needs a restart: refused whole, named, nothing changes
  // (the algorithm edited with it stays).
  EditConfig(f, 0, "algorithm: improved-dem", "algorithm: mcwa");
  EditConfig(f, 0, "state_dir: state/site-0", "state_dir: state/elsewhere");
  ASSERT_EQ(kill(f.Pid(0), SIGHUP), 0);
  EXPECT_TRUE(WaitLog(f, 0, "not reloaded, nothing changed: state_dir changes only with a restart")) << f.Log(0);
  EXPECT_EQ(Status(f, 0).algorithm(), "improved-dem");
  // A file that does not parse: its error names the line; the daemon runs on.
  std::ofstream(f.ConfigPath(0), std::ios::app) << "balancer: {interval: soon}\n";
  ASSERT_EQ(kill(f.Pid(0), SIGHUP), 0);
  EXPECT_TRUE(WaitLog(f, 0, absl::StrCat(f.ConfigPath(0), ":"))) << f.Log(0);
  EXPECT_TRUE(f.Running(0));
  EXPECT_EQ(Status(f, 0).algorithm(), "improved-dem");
}

TEST_F(RosterTest, ARollingUpgradeOneSiteAtATimeLosesNoJob) {
  Start(8, 0);
  TestFederation& f = *fed_;
  std::set<std::string> keys = SubmitAt(f, 0, 60, {});
  keys = SubmitAt(f, 5, 30, keys);
  // Each site is stopped and started as the next build: protocol 1.99, a
  // minor version ahead (HYPERFED_TEST_PROTOCOL stands in for a second
  // build). Old and new take part in the same rounds.
  for (int i = 0; i < f.size(); ++i) {
    f.Stop(i);
    ASSERT_TRUE(f.StartSite(i, {{"HYPERFED_TEST_PROTOCOL", "1.99"}}).ok());
    ASSERT_TRUE(f.WaitHealthy(absl::Seconds(30)).ok()) << f.Log(i);
    keys = SubmitAt(f, (i + 3) % f.size(), 3, keys);
    auto r = RunRound(f, (i + 1) % f.size());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->ok()) << "after upgrading site-" << i << ": " << r->message();
    EXPECT_EQ(r->final_event().after_size(), 8) << "every site took part";
    ExpectExactlyOnce(f, keys, absl::StrCat("after upgrading site-", i));
  }
  // A non-neighbour's row reaches site-0 relayed, within the row age bound
  // (docs/design.md §6.11): site-7's new row may come a few probes later.
  auto all_new = [&] {
    const v1::StatusReply now = Status(f, 0);
    for (const auto& s : now.sites())
      if (s.protocol() != "1.99") return false;
    return true;
  };
  const absl::Time rows_by = absl::Now() + absl::Seconds(10);
  while (absl::Now() < rows_by && !all_new()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const v1::StatusReply after = Status(f, 0);
  for (const auto& s : after.sites()) EXPECT_EQ(s.protocol(), "1.99") << s.site();
  // A major version apart is refused, in words that name both versions.
  f.Stop(7);
  ASSERT_TRUE(f.StartSite(7, {{"HYPERFED_TEST_PROTOCOL", "2.0"}}).ok());
  // (Said at its cube neighbours, which it probes: site-3 is one.)
  EXPECT_TRUE(WaitLog(f, 3, "heartbeats of site-7 refused: protocol 2.0 at the caller, 1.99 here")) << f.Log(3);
  // Down once the old process's last heartbeat is older than the timeout.
  auto seen_down = [&] {
    const v1::StatusReply r = Status(f, 0);
    for (const auto& s : r.sites())
      if (s.site() == "site-7") return s.state() == "down";
    return false;
  };
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (absl::Now() < end && !seen_down()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(seen_down()) << f.Log(0);
  auto r = RunRound(f, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->final_event().after_size(), 7) << "site-7 is no part of the federation: " << r->message();
  ExpectExactlyOnce(f, keys, "with site-7 refused");
}

TEST_F(RosterTest, SuggestPlacesCheapLinksInSmallSubcubesAndApplyRelabelsTheRunningFederation) {
  Start(4, 0);
  TestFederation& f = *fed_;
  std::set<std::string> keys = SubmitAt(f, 0, 20, {});
  keys = SubmitAt(f, 1, 20, keys);
  ASSERT_TRUE(RunRound(f, 0).ok());
  // site-0 and site-3 share a fast link, and so do site-1 and site-2; the
  // labels 0..3 put each pair across the cube's top dimension.
  const std::string costs = f.dir() + "/links.txt";
  std::ofstream(costs) << "# cheap pairs\nsite-0 site-3 1\nsite-1 site-2 1\nsite-0 site-1 10\nsite-0 site-2 10\n"
                       << "site-3 site-1 10\nsite-3 site-2 10\n";
  Out s = Shell(Ctl(f, 2, "roster suggest --costs " + costs));
  ASSERT_EQ(s.code, 0) << s.text;
  EXPECT_NE(s.text.find("label cost"), std::string::npos) << s.text;
  EXPECT_NE(s.text.find("planned again: its transfers cost"), std::string::npos) << s.text;
  Out bad = Shell(Ctl(f, 2, "roster suggest --costs " + costs + " --apply --roster-key " + f.RosterKey() +
                               " --label 3"));
  EXPECT_EQ(bad.code, 2) << bad.text;
  Out apply = Shell(Ctl(f, 2, "roster suggest --costs " + costs + " --apply --roster-key " + f.RosterKey()));
  ASSERT_EQ(apply.code, 0) << apply.text;
  EXPECT_NE(apply.text.find("roster version 1: relabelled as suggested"), std::string::npos) << apply.text;
  ASSERT_TRUE(WaitRoster(f, {0, 1, 2, 3}, 1));
  v1::AdminGetRosterReply r;
  auto ctx = f.Context();
  ASSERT_TRUE(f.Admin(1)->GetRoster(ctx.get(), v1::AdminGetRosterRequest(), &r).ok());
  const config::Roster now = *roster::FromProto(r.roster());
  auto label = [&](const char* id) { return now.FindSite(id)->label; };
  EXPECT_EQ(label("site-0") ^ label("site-3"), 1) << "partners across dimension 0";
  EXPECT_EQ(label("site-1") ^ label("site-2"), 1) << "partners across dimension 0";
  EXPECT_EQ(label("site-0"), 0) << "the coordinator keeps label 0";
  // The relabelled federation balances and keeps every job.
  auto round = RunRound(f, 0);
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_TRUE(round->ok()) << round->message();
  ExpectExactlyOnce(f, keys, "after relabelling");
}

// Issue 34 (finding 6): a new site takes only an unexpired roster of its own
// federation from its seed; `roster renew` signs the one in force again.
TEST_F(RosterTest, ANewSiteRefusesAnExpiredRosterUntilTheOperatorsRenewIt) {
  Start(2, 1);
  TestFederation& f = *fed_;
  Out add = Shell(Ctl(f, 0,
                      absl::StrCat("roster add ", f.SiteId(2), " --endpoint ", f.Endpoint(2),
                                   " --valid-for 3s --roster-key ", f.RosterKey())));
  ASSERT_EQ(add.code, 0) << add.text;
  EXPECT_NE(add.text.find("federation default, expires "), std::string::npos) << add.text;
  std::this_thread::sleep_for(std::chrono::seconds(4));  // past its expiry
  ASSERT_TRUE(f.StartSite(2).ok());
  std::this_thread::sleep_for(std::chrono::seconds(2));  // it asks its seed every heartbeat
  EXPECT_NE(f.Log(2).find("expired at"), std::string::npos) << f.Log(2);
  const v1::StatusReply at_new = Status(f, 2);
  for (const auto& s : at_new.sites()) EXPECT_EQ(s.roster_version(), 0) << "took nothing";
  // The sites that have it keep it, and say so.
  EXPECT_NE(f.Log(0).find("roster version 1 expired at"), std::string::npos) << f.Log(0);
  Out renew = Shell(Ctl(f, 1, absl::StrCat("roster renew --roster-key ", f.RosterKey())));
  ASSERT_EQ(renew.code, 0) << renew.text;
  EXPECT_NE(renew.text.find("roster version 2: renewed"), std::string::npos) << renew.text;
  ASSERT_TRUE(WaitRoster(f, {0, 1, 2}, 2)) << f.Log(2);
  Out show = Shell(Ctl(f, 2, "roster show"));
  ASSERT_EQ(show.code, 0) << show.text;
  EXPECT_NE(show.text.find("roster version 2 (signed)"), std::string::npos) << show.text;
  EXPECT_NE(show.text.find("federation default, expires "), std::string::npos) << show.text;
}

}  // namespace
}  // namespace hyperfed::testing
