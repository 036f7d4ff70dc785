// A Site driven by a fake Env and an in-process PeerClient: heartbeats, timer
// and underload rounds, peer timeouts, round deadlines, fencing and shutdown,
// with no real sleep (docs/design.md §9). Time moves only when a test calls
// Advance; the tests wait for other threads with bounded busy-waits on what
// those threads change, never for time to pass.

#include "daemon/federation/site.h"

#include <dirent.h>

#include <atomic>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/migration/fake_adapter.h"

namespace hyperfed::federation {
namespace {

std::string Id(int i) { return absl::StrCat("site-", i); }

// Calls go straight to the callee Site; `cut` sites neither send nor answer.
class InProcessPeers : public PeerClient {
 public:
  std::map<std::string, Site*> sites;
  std::set<std::string> cut;
  bool drop_reports = false;  // reports are recorded but never arrive
  std::set<std::string> drop_reports_of;  // the same, for these sites only
  // These sites take the start, but their answer never comes back; their
  // reports are recorded but never arrive.
  std::set<std::string> lose_start_answer;
  std::vector<RoundReport> reports;  // every report sent, guarded by mu_

  // The first report of `round` sent (by `site`, when given).
  std::optional<RoundReport> ReportOf(const std::string& round, const std::string& site = "") {
    std::lock_guard<std::mutex> l(mu_);
    for (const RoundReport& r : reports)
      if (r.round_id == round && (site.empty() || r.site == site)) return r;
    return std::nullopt;
  }

  Site* To(const std::string& s) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = sites.find(s);
    return it == sites.end() || cut.count(s) ? nullptr : it->second;
  }
  absl::StatusOr<balance::LoadTable> Exchange(const std::string& s, const ExchangeMessage& m, absl::Duration) override {
    Site* to = To(s);
    if (!to) return absl::UnavailableError("cut");
    return to->OnExchange(m);
  }
  std::vector<StartAnswer> StartRound(const std::vector<std::string>& sites, const RoundSpec& spec,
                                      absl::Duration) override {
    std::vector<StartAnswer> out(sites.size());
    for (size_t i = 0; i < sites.size(); ++i) {
      Site* to = To(sites[i]);
      if (!to) {
        out[i].why_not = "cut";
        continue;
      }
      out[i].accepted = to->OnStartRound(spec, &out[i].why_not);
      out[i].answered = true;
      if (lose_start_answer.count(sites[i])) out[i] = {false, "no answer", false};
    }
    return out;
  }
  // Called as each GetReport begins, with the site asked.
  std::function<void(const std::string&)> on_get_report;
  std::vector<std::string> AskedForReport() {
    std::lock_guard<std::mutex> l(mu_);
    return asked_for_report_;
  }
  // Asked by the round's coordinator, which the round id names.
  absl::StatusOr<RoundReport> GetReport(const std::string& s, const std::string& round_id, absl::Duration) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      asked_for_report_.push_back(s);
    }
    if (on_get_report) on_get_report(s);
    Site* to = To(s);
    if (!to) return absl::UnavailableError("cut");
    auto coordinator = RoundCoordinator(round_id);
    if (!coordinator) return absl::InvalidArgumentError("no round id");
    return to->OnGetReport(*coordinator, round_id);
  }
  std::vector<absl::Status> LeftRound(const std::vector<std::string>& to, const std::string& round_id,
                                      const std::map<int, std::string>& left, absl::Duration) override {
    std::vector<absl::Status> out;
    for (const std::string& s : to) {
      Site* site = To(s);
      if (!site) {
        out.push_back(absl::UnavailableError("cut"));
        continue;
      }
      auto coordinator = RoundCoordinator(round_id);
      out.push_back(coordinator ? site->OnLeftRound(*coordinator, round_id, left)
                                : absl::InvalidArgumentError("no round id"));
    }
    return out;
  }
  absl::Status ReportRound(const std::string& s, const RoundReport& r, absl::Duration) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      reports.push_back(r);
      if (drop_reports || drop_reports_of.count(r.site) || lose_start_answer.count(r.site)) return absl::OkStatus();
    }
    Site* to = To(s);
    if (!to) return absl::UnavailableError("cut");
    return to->OnReport(r);
  }
  absl::StatusOr<std::string> RequestBalance(const std::string& s, const std::string& from, const std::string& reason,
                                             absl::Duration) override {
    Site* to = To(s);
    if (!to) return absl::UnavailableError("cut");
    return to->OnRequestBalance(from, reason);
  }
  std::vector<absl::StatusOr<ProbeAck>> Heartbeats(const std::vector<std::string>& sites, const HeartbeatInfo& hb,
                                                   const std::vector<Gossip>& gossip, absl::Duration) override {
    // The server fills in the sender's protocol (this build's).
    HeartbeatInfo with_protocol = hb;
    with_protocol.protocol = "1.8";
    std::vector<absl::StatusOr<ProbeAck>> out;
    for (size_t i = 0; i < sites.size(); ++i) {
      Site* to = To(sites[i]);
      if (!to) {
        out.push_back(absl::UnavailableError("cut"));
        continue;
      }
      ProbeAck ack;
      to->OnHeartbeat(with_protocol, i < gossip.size() ? gossip[i] : Gossip{}, &ack);
      ack.protocol = "1.8";
      out.push_back(std::move(ack));
    }
    return out;
  }
  std::vector<absl::StatusOr<bool>> ProbeFor(const std::vector<std::pair<std::string, std::string>>& asks,
                                             absl::Duration timeout) override {
    std::vector<absl::StatusOr<bool>> out;
    for (const auto& [helper, target] : asks) {
      Site* h = To(helper);
      if (!h) {
        out.push_back(absl::UnavailableError("cut"));
        continue;
      }
      out.push_back(h->OnProbeFor(target, timeout));
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> asked_for_report_;  // guarded by mu_
};

// Moves pending jobs between the sites' in-memory schedulers.
class InProcessMover : public JobMover {
 public:
  InProcessMover(migration::testing::FakeAdapter* self, std::map<std::string, migration::testing::FakeAdapter*>* all)
      : self_(self), all_(all) {}
  absl::StatusOr<Result> MoveJobs(const std::string& dest, int64_t count, const std::string&) override {
    std::lock_guard<std::mutex> l(mu_);  // moves to several sites run at once
    Result r;
    auto jobs = self_->ListJobs();
    if (!jobs.ok()) return jobs.status();
    for (const scheduler::Job& j : *jobs) {
      if (r.moved == count) break;
      if (j.state != scheduler::JobState::kPending || j.pinned) continue;
      if (!self_->Cancel(j.id).ok()) continue;
      all_->at(dest)->Add(j.spec);
      ++r.moved;
    }
    r.shortfall = count - r.moved;
    return r;
  }
  absl::Status Recover() override {
    ++recovered;
    return absl::OkStatus();
  }
  std::atomic<int> recovered{0};

 private:
  std::mutex mu_;
  migration::testing::FakeAdapter* self_;
  std::map<std::string, migration::testing::FakeAdapter*>* all_;
};

config::Config SiteConfig(int self, int sites) {
  config::Config c;
  c.site.id = Id(self);
  c.site.label = self;
  for (int i = 0; i < sites; ++i) c.roster.sites.push_back({Id(i), i, absl::StrCat("127.0.0.1:", 7000 + i)});
  c.capacity.from_adapter = false;
  c.capacity.units = 2;
  c.balancer.interval = absl::Seconds(10);
  c.balancer.heartbeat_interval = absl::Seconds(1);
  c.balancer.peer_timeout = absl::Seconds(3);
  c.balancer.step_timeout = absl::Seconds(2);
  return c;
}

// Busy-waits (yielding, never sleeping) until `done` holds, for at most a
// few real seconds: the threads it waits for run without time passing.
bool Eventually(const std::function<bool()>& done) {
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (absl::Now() < end) {
    if (done()) return true;
    std::this_thread::yield();
  }
  return done();
}

// A scheduler with Slurm's placement window and `sbatch --test-only`
// estimates, as site.cc reads them: a probe is queued behind every pending
// job for its whole limit, so while a job waits in its window this
// scheduler says every probe starts ten minutes from now. `arrive_in_probe`
// is a job that is submitted (into its window) while the next probe runs.
class ProbedAdapter : public migration::testing::FakeAdapter {
 public:
  ProbedAdapter(std::string site, const FakeEnv* env) : FakeAdapter(std::move(site)), env_(env) {}

  // Set before the probe it arrives in; read by the site's placement thread.
  void ArriveInNextProbe(scheduler::JobSpec spec) {
    std::lock_guard<std::mutex> l(window_mu_);
    arrive_in_probe_ = std::move(spec);
  }
  int probes() const { return probes_.load(); }
  std::vector<std::string> WindowsEnded() {
    std::lock_guard<std::mutex> l(window_mu_);
    return windows_ended_;
  }

  absl::StatusOr<int64_t> WidestJob() override { return 4; }
  absl::StatusOr<std::vector<scheduler::PendingJob>> Pending() override {
    auto out = FakeAdapter::Pending();
    if (!out.ok()) return out;
    std::lock_guard<std::mutex> l(window_mu_);
    for (scheduler::PendingJob& p : *out)
      if (in_window_.count(p.id)) p.window_end_ms = absl::ToUnixMillis(env_->Now() + absl::Seconds(30));
    return out;
  }
  absl::StatusOr<std::vector<int64_t>> ArrivalStarts(const std::vector<int64_t>& widths) override {
    std::optional<scheduler::JobSpec> arriving;
    {
      std::lock_guard<std::mutex> l(window_mu_);
      arriving = std::exchange(arrive_in_probe_, std::nullopt);
    }
    if (arriving) {
      const std::string id = Add(*arriving);
      std::lock_guard<std::mutex> l(window_mu_);
      in_window_.insert(id);
    }
    ++probes_;
    bool behind = false;
    {
      std::lock_guard<std::mutex> l(window_mu_);
      behind = !in_window_.empty();
    }
    const absl::Time start = env_->Now() + (behind ? absl::Minutes(10) : absl::ZeroDuration());
    return std::vector<int64_t>(widths.size(), absl::ToUnixMillis(start));
  }
  std::vector<absl::Status> EndPlacementWindow(const std::vector<std::string>& ids) override {
    std::lock_guard<std::mutex> l(window_mu_);
    for (const std::string& id : ids) {
      in_window_.erase(id);
      windows_ended_.push_back(id);
    }
    return std::vector<absl::Status>(ids.size(), absl::OkStatus());
  }

 private:
  const FakeEnv* env_;
  std::mutex window_mu_;
  std::set<std::string> in_window_;
  std::optional<scheduler::JobSpec> arrive_in_probe_;
  std::vector<std::string> windows_ended_;
  std::atomic<int> probes_{0};
};

class SiteTest : public ::testing::Test {
 protected:
  void Make(int n, const std::function<void(config::Config&)>& tweak = nullptr) {
    for (int i = 0; i < n; ++i) {
      adapters_.push_back(make_adapter_ ? make_adapter_(i) : std::make_unique<migration::testing::FakeAdapter>(Id(i)));
      all_[Id(i)] = adapters_.back().get();
    }
    for (int i = 0; i < n; ++i) {
      config::Config c = SiteConfig(i, n);
      if (tweak) tweak(c);
      movers_.push_back(std::make_unique<InProcessMover>(adapters_[i].get(), &all_));
      lives_.push_back(std::make_unique<LiveConfig>(c));
      sites_.push_back(
          std::make_unique<Site>(c, lives_.back().get(), adapters_[i].get(), movers_[i].get(), &peers_, &env_));
      peers_.sites[Id(i)] = sites_.back().get();
    }
  }
  void TearDown() override {
    for (auto& s : sites_) s->Stop();
  }
  void AddJobs(int site, int n) {
    for (int j = 0; j < n; ++j) {
      scheduler::JobSpec s;
      s.key = absl::StrCat("k-", site, "-", next_key_++);
      adapters_[site]->Add(s);
    }
  }
  int64_t Pending(int site) { return *adapters_[site]->CountMigratable(); }
  void HeartbeatAll() {
    for (auto& s : sites_) s->HeartbeatOnce();
  }
  std::string Events(int site) {
    auto r = sites_[site]->LastRound();
    return r ? absl::StrJoin(r->events, "\n") : "(no round)";
  }
  bool RoundDone(int site) {
    auto r = sites_[site]->LastRound();
    return r && r->done;
  }
  // Site 1's probe brings site 0 news that each of `sites` runs a newer
  // incarnation (it restarted); no row of theirs comes with it.
  bool NewsOfRestartsFromSite1(const std::vector<int>& sites) {
    HeartbeatInfo one;
    one.site = Id(1);
    one.label = 1;
    one.capacity = 2;
    one.protocol = "1.8";
    one.incarnation = sites_[0]->membership().Find(Id(1))->incarnation;
    Gossip g;
    for (int i : sites) g.news.push_back({i, sites_[i]->membership().incarnation() + 1, Liveness::kAlive, 1});
    return sites_[0]->OnHeartbeat(one, g);
  }

  // Eight sites with a 10 s step, site 0 loaded; site 1 is cut off (the
  // others still see it up) as site 0 starts a round.
  absl::StatusOr<std::string> StartWithSite1Cut() {
    Make(8, [](config::Config& c) { c.balancer.step_timeout = absl::Seconds(10); });
    HeartbeatAll();
    for (int i = 0; i < 8; ++i) AddJobs(i, i == 0 ? 40 : 2);
    HeartbeatAll();
    peers_.cut.insert(Id(1));
    return sites_[0]->Balance(false, "test");
  }

  FakeEnv env_;
  std::function<std::unique_ptr<migration::testing::FakeAdapter>(int)> make_adapter_;
  InProcessPeers peers_;
  std::vector<std::unique_ptr<migration::testing::FakeAdapter>> adapters_;
  std::map<std::string, migration::testing::FakeAdapter*> all_;
  std::vector<std::unique_ptr<InProcessMover>> movers_;
  std::vector<std::unique_ptr<LiveConfig>> lives_;
  std::vector<std::unique_ptr<Site>> sites_;
  int next_key_ = 0;
};

// docs/design.md §6.11: site 3's neighbours (1 and 2) find it gone with
// their probes, each confirming the other's; their news tells site 0,
// which does not probe it.
TEST_F(SiteTest, ProbesFindASiteDownAndNewsTellsTheOthers) {
  Make(4);
  HeartbeatAll();
  EXPECT_TRUE(sites_[0]->membership().FaultLabels().empty());
  env_.Advance(absl::Seconds(3));  // nobody has heard from site 3 for more than two intervals
  peers_.cut.insert(Id(3));        // site 3 is gone
  for (int i : {0, 1, 2}) sites_[i]->HeartbeatOnce();
  EXPECT_FALSE(sites_[1]->membership().Find(Id(3))->up) << "its probe and site 2's for it failed";
  EXPECT_TRUE(sites_[0]->membership().Find(Id(3))->up) << "no news yet";
  for (int i : {0, 1, 2}) sites_[i]->HeartbeatOnce();
  EXPECT_EQ(sites_[0]->membership().FaultLabels(), std::vector<int>{3}) << "the answers of 1 and 2 said so";
  env_.Advance(absl::Seconds(3));
  peers_.cut.insert(Id(0));  // the coordinator goes too: the lowest live label takes over
  for (int round = 0; round < 2; ++round)
    for (int i : {1, 2}) sites_[i]->HeartbeatOnce();
  EXPECT_EQ(sites_[1]->Coordinator(), Id(1));
}

TEST_F(SiteTest, TheTimerStartsARoundOnlyAfterItsIntervalAndOnlyWhenWorthIt) {
  Make(4);
  AddJobs(2, 40);
  HeartbeatAll();
  sites_[0]->TimerOnce();
  EXPECT_FALSE(sites_[0]->LastRound()) << "the interval has not passed";
  env_.Advance(absl::Seconds(10));
  HeartbeatAll();
  sites_[0]->TimerOnce();
  ASSERT_TRUE(Eventually([&] { return RoundDone(0); })) << Events(0);
  auto r = sites_[0]->LastRound();
  EXPECT_TRUE(r->ok) << Events(0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Pending(i), 10) << Id(i);
  // Balanced now: the next interval starts no round. (Site 3 is not site
  // 0's neighbour: its row comes relayed, a tick later.)
  env_.Advance(absl::Seconds(10));
  HeartbeatAll();
  HeartbeatAll();
  sites_[0]->TimerOnce();
  EXPECT_EQ(sites_[0]->LastRound()->id, r->id);
}

TEST_F(SiteTest, ASiteOnAnotherRosterVersionDeclinesARoundAndNothingIsLost) {
  Make(4);
  AddJobs(0, 30);
  HeartbeatAll();
  // Site 3 has heard of roster version 1 (the same sites); the coordinator
  // has not yet.
  auto v1 = std::make_shared<config::Roster>(*lives_[3]->roster());
  v1->version = 1;
  ASSERT_TRUE(lives_[3]->SetRoster(v1));
  ASSERT_TRUE(sites_[0]->Balance(false, "test").ok());
  // The others wait for site 3's part until their step timeouts.
  for (int i = 0; i < 200 && !RoundDone(0); ++i) {
    env_.Advance(absl::Seconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(RoundDone(0)) << Events(0);
  EXPECT_FALSE(sites_[0]->LastRound()->ok);
  EXPECT_NE(Events(0).find("site-3 did not take part: round "), std::string::npos) << Events(0);
  EXPECT_NE(Events(0).find("was planned with roster version 0, this site has version 1"), std::string::npos)
      << Events(0);
  EXPECT_EQ(Pending(3), 0) << "site-3 got nothing";
  EXPECT_EQ(Pending(0) + Pending(1) + Pending(2), 30) << "no job lost";
}

TEST_F(SiteTest, AnUnderloadedSiteAsksTheCoordinatorForARound) {
  Make(4, [](config::Config& c) {
    c.balancer.interval = absl::ZeroDuration();
    c.balancer.underload_threshold = 5;
  });
  AddJobs(2, 40);
  HeartbeatAll();
  sites_[1]->TimerOnce();  // 0 pending < 5, and site 2 has work
  ASSERT_TRUE(Eventually([&] { return RoundDone(0); })) << Events(0);
  EXPECT_NE(sites_[0]->LastRound()->events.front().find("underload at site-1"), std::string::npos)
      << sites_[0]->LastRound()->events.front();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Pending(i), 10);
}

TEST_F(SiteTest, APartWaitingForASilentPeerEndsAtTheRoundsDeadline) {
  Make(2, [](config::Config& c) { c.balancer.step_timeout = absl::Seconds(30); });
  HeartbeatAll();
  // Site 1 (label 1) waits for label 0's exchange call, which never comes.
  RoundSpec spec{"r1", 7, env_.Now() + absl::Seconds(5), Id(0), {}, 1, "exact"};
  std::string why;
  ASSERT_TRUE(sites_[1]->OnStartRound(spec, &why)) << why;
  ASSERT_TRUE(Eventually([&] { return env_.waiters() > 0; }));
  env_.Advance(absl::Seconds(4));
  EXPECT_TRUE(Eventually([&] { return env_.waiters() > 0; }));
  EXPECT_FALSE(sites_[1]->OnStartRound(RoundSpec{"r0", 6, env_.Now() + absl::Seconds(5), Id(0), {}, 1, "exact"}, &why))
      << "an older round is refused";
  EXPECT_NE(why.find("not newer"), std::string::npos) << why;
  env_.Advance(absl::Seconds(1));  // the deadline: the part gives up
  ASSERT_TRUE(Eventually([&] {
    std::string busy;
    // Free again: a newer round is taken.
    return sites_[1]->OnStartRound(RoundSpec{"r2", 8, env_.Now() + absl::Seconds(5), Id(0), {}, 1, "exact"}, &busy);
  }));
}

TEST_F(SiteTest, ANewerRoundReplacesAStaleOneAtOnceAndStaleStartsAreRefused) {
  Make(2, [](config::Config& c) { c.balancer.step_timeout = absl::Hours(1); });
  HeartbeatAll();
  std::string why;
  // Caught in round r1 (as at a network cut): its deadline is far away.
  ASSERT_TRUE(sites_[1]->OnStartRound({"r1", 10, env_.Now() + absl::Hours(1), Id(0), {}, 1, "exact"}, &why));
  ASSERT_TRUE(Eventually([&] { return env_.waiters() > 0; }));
  EXPECT_FALSE(sites_[1]->OnStartRound({"r-late", 9, env_.Now() + absl::Hours(1), Id(0), {}, 1, "exact"}, &why));
  EXPECT_FALSE(sites_[1]->OnStartRound({"r-past", 20, env_.Now(), Id(0), {}, 1, "exact"}, &why));
  EXPECT_NE(why.find("past its deadline"), std::string::npos) << why;
  // After the heal the coordinator starts a newer round: taken at once,
  // with no time passing, and the stale part ends.
  ASSERT_TRUE(sites_[1]->OnStartRound({"r2", 11, env_.Now() + absl::Hours(1), Id(0), {}, 1, "exact"}, &why)) << why;
  ASSERT_TRUE(Eventually([&] { return peers_.ReportOf("r1").has_value(); }));
  const RoundReport stale = *peers_.ReportOf("r1");
  EXPECT_FALSE(stale.ok);
  EXPECT_NE(stale.error.find("replaced"), std::string::npos) << stale.error;
}

TEST_F(SiteTest, AWholeRoundAfterAStaleOneRunsWhole) {
  Make(4);
  AddJobs(0, 40);
  HeartbeatAll();
  std::string why;
  // Site 3 is caught in a round nobody else runs.
  ASSERT_TRUE(sites_[3]->OnStartRound({"stale", 1, env_.Now() + absl::Hours(1), Id(0), {}, 2, "exact"}, &why));
  auto id = sites_[0]->Balance(false, "test");
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(Eventually([&] { return RoundDone(0); })) << Events(0);
  auto r = sites_[0]->LastRound();
  EXPECT_TRUE(r->ok) << absl::StrJoin(r->events, "\n");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Pending(i), 10);
}

TEST_F(SiteTest, ThreadsStayFlatOverManyRounds) {
  Make(4);
  auto threads = [] {
    int n = 0;
    if (DIR* d = opendir("/proc/self/task")) {
      while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
      closedir(d);
    }
    return n;
  };
  int after_first = 0;
  for (int round = 0; round < 30; ++round) {
    AddJobs(round % 4, 12);
    HeartbeatAll();
    auto id = sites_[0]->Balance(false, "test");
    ASSERT_TRUE(id.ok()) << id.status();
    ASSERT_TRUE(Eventually([&] {
      auto r = sites_[0]->LastRound();
      return r && r->id == *id && r->done;
    }));
    if (round == 0) after_first = threads();
  }
  EXPECT_EQ(threads(), after_first);
}

TEST_F(SiteTest, StopEndsTheLoopsAndAWaitingPartWithoutTimePassing) {
  Make(2, [](config::Config& c) { c.balancer.step_timeout = absl::Hours(1); });
  sites_[1]->Start();
  std::string why;
  ASSERT_TRUE(sites_[1]->OnStartRound({"r1", 10, env_.Now() + absl::Hours(1), Id(0), {}, 1, "exact"}, &why));
  ASSERT_TRUE(Eventually([&] { return env_.waiters() >= 3; })) << "two loops and the part wait";
  sites_[1]->Stop();
  EXPECT_EQ(env_.waiters(), 0);
}

// Site::Start runs the recovery loop (hyperfedd and the federation
// simulation start every site so): the mover's Recover every
// kRecoveryInterval of the site's clock, none before, none after Stop.
TEST_F(SiteTest, StartRunsTheRecoveryLoopEveryRecoveryInterval) {
  Make(2);
  sites_[0]->Start();
  // Heartbeat, timer, recovery and placement loops all wait (placement is
  // on by default; its loop starts with the first heartbeat). Three would
  // not prove the recovery loop waits: on a loaded machine the other three
  // can come first, and its interval would then start after the clock moved.
  constexpr int kLoops = 4;
  ASSERT_TRUE(Eventually([&] { return env_.waiters() >= kLoops; }));
  env_.Advance(kRecoveryInterval - absl::Milliseconds(1));
  ASSERT_TRUE(Eventually([&] { return env_.waiters() >= kLoops; }));
  EXPECT_EQ(movers_[0]->recovered.load(), 0);
  env_.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(Eventually([&] { return movers_[0]->recovered.load() == 1 && env_.waiters() >= kLoops; }));
  env_.Advance(kRecoveryInterval);
  ASSERT_TRUE(Eventually([&] { return movers_[0]->recovered.load() == 2 && env_.waiters() >= kLoops; }));
  sites_[0]->Stop();
  env_.Advance(3 * kRecoveryInterval);
  EXPECT_EQ(movers_[0]->recovered.load(), 2);
  EXPECT_EQ(movers_[1]->recovered.load(), 0) << "site 1 was never started";
}

// A submitted job's key takes its randomness from the site's Env: a site
// with a FakeEnv whose sequence starts again makes the same keys, and no two
// jobs share one.
TEST_F(SiteTest, SubmittedKeysTakeTheirRandomnessFromTheEnv) {
  Make(1);
  auto keys = [&] {
    SubmitResult r = sites_[0]->Submit(SubmitOrder{.count = 3});
    EXPECT_TRUE(r.status.ok()) << r.status;
    std::vector<std::string> out;
    for (const SubmittedJob& j : r.jobs) out.push_back(j.key);
    return out;
  };
  const std::vector<std::string> first = keys();
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(std::set<std::string>(first.begin(), first.end()).size(), 3u);
  FakeEnv again;
  std::vector<uint64_t> expected;
  for (int i = 0; i < 3; ++i) expected.push_back(again.Random());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(first[i], absl::StrFormat("%s-%016x", Id(0), expected[i]));
}

TEST_F(SiteTest, OnlyTheCoordinatorThisSiteRecognisesStartsARound) {
  Make(4);
  HeartbeatAll();
  std::string why;
  // Site 3 names itself coordinator at site 1, which sees site 0 up.
  EXPECT_FALSE(sites_[1]->OnStartRound({"r-3", 10, env_.Now() + absl::Hours(1), Id(3), {}, 2, "mcwa"}, &why));
  EXPECT_NE(why.find("not the coordinator here"), std::string::npos) << why;
  // Nor a site not in the roster.
  EXPECT_FALSE(sites_[1]->OnStartRound({"r-x", 11, env_.Now() + absl::Hours(1), "site-9", {}, 2, "exact"}, &why));
  // The refusals fenced nothing off: the real coordinator's round of the
  // same epoch is taken.
  EXPECT_TRUE(sites_[1]->OnStartRound({"r-0", 10, env_.Now() + absl::Hours(1), Id(0), {}, 2, "exact"}, &why)) << why;
  // Once site 0 is gone and its neighbours' probes have found it so, site
  // 1 is the coordinator (site 2 hears it from its own probes; site 3 by
  // news).
  env_.Advance(absl::Seconds(3));
  peers_.cut.insert(Id(0));
  for (int round = 0; round < 2; ++round)
    for (int i = 1; i < 4; ++i) sites_[i]->HeartbeatOnce();
  EXPECT_TRUE(sites_[2]->OnStartRound({"r-1", 12, env_.Now() + absl::Hours(1), Id(1), {0}, 2, "exact"}, &why)) << why;
  // The parts started here wait for peers nobody started: past their
  // deadlines they end, and the sites stop.
  ASSERT_TRUE(Eventually([&] { return env_.waiters() > 0; }));
  env_.Advance(absl::Hours(2));
}

TEST_F(SiteTest, AReportIsGivenOnlyToTheCoordinatorTheRoundIdNames) {
  Make(4);
  HeartbeatAll();  // site 2 takes site 0 for the coordinator
  // Site 1 started the round (say while site 0 was down): it may ask.
  const std::string round = absl::StrCat(Id(1), "-1700000000000-3");
  auto mine = sites_[2]->OnGetReport(Id(1), round);
  ASSERT_TRUE(mine.ok()) << mine.status();
  EXPECT_EQ(mine->site, Id(2));
  EXPECT_TRUE(mine->from_journal);
  EXPECT_TRUE(mine->transfers.empty());  // nothing was committed in it here
  // Nobody else may, not even the coordinator this site sees now.
  EXPECT_EQ(sites_[2]->OnGetReport(Id(0), round).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(sites_[2]->OnGetReport(Id(3), round).status().code(), absl::StatusCode::kPermissionDenied);
  // An id that only starts like one of the caller's is not the caller's.
  EXPECT_EQ(sites_[2]->OnGetReport(Id(1), absl::StrCat(Id(1), "-x-3")).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(sites_[2]->OnGetReport(Id(1), absl::StrCat(Id(1), "-17-3-4")).status().code(),
            absl::StatusCode::kPermissionDenied);
}

// Issue 33 (docs/benchmarks.md, "Moved from design.md": seeds 708 and 955 of 8 sites): a site whose
// answer to the start never came may have begun the round and moved jobs.
// The round waits for it while it is up, asks it once its heartbeat says it
// is out of the round, and counts what it moved.
TEST_F(SiteTest, ASiteWhoseAnswerToTheStartNeverCameIsAskedAndCounted) {
  Make(4, [](config::Config& c) { c.balancer.step_timeout = absl::Hours(1); });
  AddJobs(2, 40);
  HeartbeatAll();
  peers_.lose_start_answer.insert(Id(2));
  auto id = sites_[0]->Balance(false, "test");
  ASSERT_TRUE(id.ok()) << id.status();
  // Every site ran its part; site 2's report, like its answer, is lost.
  ASSERT_TRUE(Eventually([&] {
    return peers_.ReportOf(*id, Id(1)) && peers_.ReportOf(*id, Id(2)) && peers_.ReportOf(*id, Id(3));
  }));
  const RoundReport two = *peers_.ReportOf(*id, Id(2));
  ASSERT_GT(two.moved_out, 0);
  ASSERT_TRUE(Eventually([&] { return sites_[0]->CurrentRound().empty(); }));  // its own part is done too
  EXPECT_FALSE(RoundDone(0)) << "the round waits for site 2\n" << Events(0);
  // Site 2's next heartbeat says it is out of the round: the coordinator,
  // looking again a heartbeat interval later, asks it for its report.
  env_.Advance(absl::Milliseconds(500));
  sites_[2]->HeartbeatOnce();
  ASSERT_TRUE(Eventually([&] { return env_.waiters() > 0; }));
  env_.Advance(absl::Seconds(1));
  ASSERT_TRUE(Eventually([&] { return RoundDone(0); })) << Events(0);
  const auto r = sites_[0]->LastRound();
  int64_t sent = 0;
  for (int i = 0; i < 4; ++i) sent += peers_.ReportOf(*id, Id(i)) ? peers_.ReportOf(*id, Id(i))->moved_out : 0;
  EXPECT_EQ(r->moved, sent) << Events(0);
  EXPECT_FALSE(r->ok) << "a site that did not answer leaves the round short of whole";
  EXPECT_EQ(Pending(2), 40 - two.moved_out);
}

// A site that restarted during a round never reports by itself, and its
// row, relayed in turn to a coordinator that is not its neighbour, may be
// long in coming (1,024 simulated sites waited 76 s for it). News of its
// newer incarnation crosses the cube within log2 N hops: the coordinator
// asks it for its report once that news comes.
TEST_F(SiteTest, NewsOfANewerIncarnationHasTheCoordinatorAskForTheReport) {
  Make(4, [](config::Config& c) { c.balancer.step_timeout = absl::Hours(1); });
  AddJobs(3, 40);
  HeartbeatAll();
  peers_.drop_reports_of.insert(Id(3));  // site 3 (no neighbour of site 0) "restarts" as it reports
  auto id = sites_[0]->Balance(false, "test");
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(Eventually([&] { return peers_.ReportOf(*id, Id(3)).has_value(); }));
  ASSERT_TRUE(Eventually([&] { return sites_[0]->CurrentRound().empty(); }));
  env_.Advance(absl::Seconds(1));
  ASSERT_TRUE(Eventually([&] { return env_.waiters() > 0; }));
  EXPECT_FALSE(RoundDone(0)) << "the round waits for site 3\n" << Events(0);
  // Site 1, its neighbour, passes on news of its newer incarnation; no row
  // of site 3 reaches site 0.
  ASSERT_TRUE(NewsOfRestartsFromSite1({3}));
  ASSERT_LE(sites_[0]->membership().Find(Id(3))->row_at, env_.Now() - absl::Seconds(1));
  env_.Advance(absl::Seconds(1));
  ASSERT_TRUE(Eventually([&] { return RoundDone(0); })) << Events(0);
  EXPECT_EQ(sites_[0]->LastRound()->moved, peers_.ReportOf(*id, Id(3))->moved_out) << Events(0);
}

// The coordinator asks its silent sites one at a time; a report that comes
// by itself meanwhile is not asked for again.
TEST_F(SiteTest, ASiteWhoseReportCameWhileAnotherWasAskedIsNotAsked) {
  Make(8, [](config::Config& c) { c.balancer.step_timeout = absl::Hours(1); });
  AddJobs(3, 40);
  HeartbeatAll();
  // Sites 3, 5 and 6 are no neighbours of site 0; their reports are lost,
  // and site 6's keeps the round open throughout.
  peers_.drop_reports_of = {Id(3), Id(5), Id(6)};
  auto id = sites_[0]->Balance(false, "test");
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(Eventually(
      [&] { return peers_.ReportOf(*id, Id(3)) && peers_.ReportOf(*id, Id(5)) && peers_.ReportOf(*id, Id(6)); }));
  ASSERT_TRUE(Eventually([&] { return sites_[0]->CurrentRound().empty(); }));
  env_.Advance(absl::Seconds(1));
  ASSERT_TRUE(Eventually([&] { return env_.waiters() > 0; }));
  // Sites 3 and 5 restarted, as news from site 1 says; site 5's report
  // gets through while the coordinator asks site 3.
  peers_.on_get_report = [&](const std::string& s) {
    if (s == Id(3)) (void)sites_[0]->OnReport(*peers_.ReportOf(*id, Id(5)));
  };
  ASSERT_TRUE(NewsOfRestartsFromSite1({3, 5}));
  env_.Advance(absl::Seconds(1));
  // Asked site 3, then waits again (for site 6).
  ASSERT_TRUE(Eventually([&] { return !peers_.AskedForReport().empty() && env_.waiters() > 0; })) << Events(0);
  EXPECT_EQ(peers_.AskedForReport(), std::vector<std::string>{Id(3)}) << Events(0);
  EXPECT_FALSE(RoundDone(0)) << Events(0);
}

TEST_F(SiteTest, ReportsAreTakenOnlyFromTheRoundsSitesOnceEach) {
  Make(4, [](config::Config& c) { c.balancer.step_timeout = absl::Hours(1); });
  peers_.cut.insert(Id(3));  // site 3 never answers: down once probed, not in the round
  for (int round = 0; round < 2; ++round)
    for (int i : {0, 1, 2}) sites_[i]->HeartbeatOnce();
  ASSERT_FALSE(sites_[0]->membership().Find(Id(3))->up);
  peers_.drop_reports = true;  // the reports of sites 1 and 2 are lost: the round waits for them
  auto id = sites_[0]->Balance(false, "test");
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(Eventually([&] { return peers_.ReportOf(*id, Id(1)) && peers_.ReportOf(*id, Id(2)); }));
  const RoundReport one = *peers_.ReportOf(*id, Id(1)), two = *peers_.ReportOf(*id, Id(2));
  RoundReport outsider = one;
  outsider.site = Id(3);
  outsider.label = 3;
  EXPECT_EQ(sites_[0]->OnReport(outsider).code(), absl::StatusCode::kPermissionDenied);
  RoundReport stray = one;
  stray.transfers.push_back({1, 1, 3, 5, 1});  // to site 3, which is not in the round
  EXPECT_EQ(sites_[0]->OnReport(stray).code(), absl::StatusCode::kInvalidArgument);
  RoundReport other = one;
  other.round_id = "another-round";
  EXPECT_EQ(sites_[0]->OnReport(other).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(sites_[0]->OnReport(one).ok());
  EXPECT_EQ(sites_[0]->OnReport(one).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(RoundDone(0)) << "no refused report ended the round";
  EXPECT_TRUE(sites_[0]->OnReport(two).ok());
  ASSERT_TRUE(Eventually([&] { return RoundDone(0); })) << Events(0);
  EXPECT_TRUE(sites_[0]->LastRound()->ok) << Events(0);
  // A report after the round ended is for no running round.
  EXPECT_EQ(sites_[0]->OnReport(two).code(), absl::StatusCode::kFailedPrecondition);
}

// Issue 34 (finding 7): a coordinator is checked. A site declines a round
// whose fault set names a site it hears from itself, or whose mode the
// roster does not allow; the decline fences nothing off.
TEST_F(SiteTest, ARoundWhoseFaultSetNamesASiteThisSiteHearsFromIsDeclined) {
  Make(4);
  HeartbeatAll();
  std::string why;
  // Site 0 says site 3 is down; site 1 heard from it a moment ago.
  EXPECT_FALSE(sites_[1]->OnStartRound({"r-0", 10, env_.Now() + absl::Hours(1), Id(0), {3}, 2, "exact"}, &why));
  EXPECT_NE(why.find("names site-3 (label 3) as down, but this site hears from it"), std::string::npos) << why;
  EXPECT_EQ(sites_[1]->CurrentRound(), "");
  // Empty positions and sites it has not heard from for two heartbeat
  // intervals (up still in its view) may be in a fault set; the decline
  // took no epoch.
  env_.Advance(absl::Milliseconds(2500));
  for (int i : {0, 2}) sites_[i]->HeartbeatOnce();  // site 1 hears nothing of site 3
  ASSERT_TRUE(sites_[1]->membership().Find(Id(3))->up);
  EXPECT_TRUE(sites_[1]->OnStartRound({"r-0b", 10, env_.Now() + absl::Hours(1), Id(0), {3}, 2, "exact"}, &why)) << why;
  ASSERT_TRUE(Eventually([&] { return env_.waiters() > 0; }));
  env_.Advance(absl::Hours(2));  // the part waits for peers nobody started: it ends
}

TEST_F(SiteTest, ARoundWithAFaultSetOfASiteOnlyThisSiteHearsEndsWithNothingLost) {
  Make(4);
  AddJobs(0, 30);
  HeartbeatAll();
  env_.Advance(absl::Seconds(4));
  peers_.cut.insert(Id(3));  // site 3's neighbours find it gone; site 0 hears it from them
  for (int round = 0; round < 2; ++round)
    for (int i : {0, 1, 2}) sites_[i]->HeartbeatOnce();
  ASSERT_FALSE(sites_[0]->membership().Find(Id(3))->up);
  // Site 3's probe (it is back, at a higher incarnation) reaches site 1
  // only: site 0 coordinates without it.
  HeartbeatInfo hb;
  hb.site = Id(3);
  hb.label = 3;
  hb.capacity = 2;
  hb.protocol = "1.8";
  hb.incarnation = sites_[1]->membership().Find(Id(3))->incarnation + 1;
  ASSERT_TRUE(sites_[1]->OnHeartbeat(hb));
  ASSERT_TRUE(sites_[0]->Balance(false, "test").ok());
  for (int i = 0; i < 200 && !RoundDone(0); ++i) {
    env_.Advance(absl::Seconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(RoundDone(0)) << Events(0);
  EXPECT_FALSE(sites_[0]->LastRound()->ok);
  EXPECT_NE(Events(0).find("site-1 did not take part"), std::string::npos) << Events(0);
  EXPECT_NE(Events(0).find("but this site hears from it"), std::string::npos) << Events(0);
  EXPECT_EQ(Pending(1), 0) << "site-1 got nothing";
  EXPECT_EQ(Pending(0) + Pending(2) + Pending(3), 30) << "no job lost";
}

TEST_F(SiteTest, ARoundOfAModeTheRosterDoesNotAllowIsDeclinedAndNotStarted) {
  Make(4, [](config::Config& c) { c.roster.allowed_modes = {"exact"}; });
  HeartbeatAll();
  std::string why;
  EXPECT_FALSE(sites_[1]->OnStartRound({"r-m", 10, env_.Now() + absl::Hours(1), Id(0), {}, 2, "mcwa"}, &why));
  EXPECT_NE(why.find("mode mcwa, which roster version 0 does not allow (allowed: exact)"), std::string::npos) << why;
  EXPECT_EQ(sites_[1]->CurrentRound(), "");
  // The coordinator does not start one either.
  auto id = sites_[0]->Balance(false, "test", "mcwa");
  EXPECT_EQ(id.status().code(), absl::StatusCode::kFailedPrecondition) << id.status();
  // The decline took no epoch: an allowed round of the same epoch is taken.
  EXPECT_TRUE(sites_[1]->OnStartRound({"r-e", 10, env_.Now() + absl::Hours(1), Id(0), {}, 2, "exact"}, &why)) << why;
  ASSERT_TRUE(Eventually([&] { return env_.waiters() > 0; }));
  env_.Advance(absl::Hours(2));
}

// Issue 34 (finding 6): every start meets the same field checks, also one
// that reaches the site without the RPC handler's.
TEST_F(SiteTest, AStartWithAnEpochMoreThanADayAheadIsDeclinedAndFencesNothing) {
  Make(4);
  HeartbeatAll();
  std::string why;
  const int64_t far = absl::ToUnixMillis(env_.Now() + absl::Hours(25));
  EXPECT_FALSE(sites_[1]->OnStartRound({"r-far", far, env_.Now() + absl::Hours(1), Id(0), {}, 2, "exact"}, &why));
  EXPECT_NE(why.find("at most a day ahead"), std::string::npos) << why;
  EXPECT_FALSE(sites_[1]->OnStartRound(
      {"r-max", std::numeric_limits<int64_t>::max(), env_.Now() + absl::Hours(1), Id(0), {}, 2, "exact"}, &why));
  EXPECT_FALSE(sites_[1]->OnStartRound({"r-dim", 11, env_.Now() + absl::Hours(1), Id(0), {}, 5, "exact"}, &why));
  EXPECT_NE(why.find("dimension 5"), std::string::npos) << why;
  EXPECT_TRUE(sites_[1]->OnStartRound({"r-ok", 10, env_.Now() + absl::Hours(1), Id(0), {}, 2, "exact"}, &why)) << why;
  ASSERT_TRUE(Eventually([&] { return env_.waiters() > 0; }));
  env_.Advance(absl::Hours(2));
}

// Both sites idle; site 0 took its own profile at the last heartbeat. A job
// comes into its placement window at site 0 while site 0 probes its
// scheduler again, before any snapshot has seen it: the probe counts the
// job (ten minutes' wait), so it is dropped for the profile taken before,
// and the job stays at home with its window ended instead of going to the
// idle peer.
TEST_F(SiteTest, AJobThatCameDuringTheProbeIsNotCountedByIt) {
  make_adapter_ = [this](int i) { return std::make_unique<ProbedAdapter>(Id(i), &env_); };
  Make(2, [](config::Config& c) { c.balancer.placement_margin = absl::Seconds(1); });
  // Each takes its profile (idle) and hears the other's; the first
  // heartbeat starts each site's placement loop, which runs a pass and waits
  // a heartbeat interval.
  HeartbeatAll();
  HeartbeatAll();
  auto* home = static_cast<ProbedAdapter*>(adapters_[0].get());
  ASSERT_TRUE(Eventually([&] { return env_.waiters() == 2; })) << "the placement loops did not settle";
  const int probes = home->probes();
  ASSERT_GT(probes, 0);
  scheduler::JobSpec job;
  job.key = "k-new";
  job.cores = 1;
  job.time_limit_s = 600;
  home->ArriveInNextProbe(job);
  // Past the heartbeat interval: site 0's loop runs a pass, and its own
  // profile is due again.
  env_.Advance(absl::Seconds(2));
  ASSERT_TRUE(Eventually([&] { return home->probes() > probes && env_.waiters() == 2; }))
      << "site 0's placement loop took no new profile";
  EXPECT_EQ(home->WindowsEnded().size(), 1u) << "the job's window was not ended at home";
  EXPECT_EQ(Pending(0), 1) << "the job went to the idle peer on a probe that counted it";
  EXPECT_EQ(Pending(1), 0);
}

// Site 1 is cut as a round starts, while the others still see it up: its
// answer to the start never comes (it may have begun the round), and site
// 0, which calls it first, fails at once. Sites 2 and 4 wait for site 0's
// call: the coordinator tells them site 0 has left as soon as its report
// says so, and they end their parts with no time passing. Sites 3 and 5
// wait for site 1's call: they are told once site 1 is down in the
// coordinator's view (the peer timeout, 3 s), not at the step timeout
// (10 s here).
TEST_F(SiteTest, ASiteThatLeftARoundIsNotWaitedForByTheOthers) {
  auto id = StartWithSite1Cut();
  ASSERT_TRUE(id.ok()) << id.status();
  auto failed_for = [&](int site, const std::string& why) {
    auto r = peers_.ReportOf(*id, Id(site));
    if (!r) return ::testing::AssertionFailure() << Id(site) << " has not reported";
    if (r->ok || r->error.find(why) == std::string::npos)
      return ::testing::AssertionFailure() << Id(site) << ": " << r->error;
    return ::testing::AssertionSuccess();
  };
  ASSERT_TRUE(Eventually([&] { return peers_.ReportOf(*id, Id(2)) && peers_.ReportOf(*id, Id(4)); }))
      << "sites 2 and 4 waited for site 0, which had left the round";
  for (int i : {2, 4}) EXPECT_TRUE(failed_for(i, "site-0 (label 0) did not exchange in dimension"));
  for (int i : {2, 4}) EXPECT_TRUE(failed_for(i, "it left the round (site-0 ended its part: "));
  EXPECT_FALSE(peers_.ReportOf(*id, Id(3))) << "site 3 did not wait for site 1, whose answer may only be lost";
  for (int second = 0; second < 4; ++second) {  // the others keep being heard
    for (int i = 0; i < 8; ++i)
      if (i != 1) sites_[i]->HeartbeatOnce();
    env_.Advance(absl::Seconds(1));
  }
  ASSERT_TRUE(Eventually([&] { return peers_.ReportOf(*id, Id(3)) && peers_.ReportOf(*id, Id(5)); }))
      << "sites 3 and 5 were not told that site 1 went down";
  for (int i : {3, 5}) EXPECT_TRUE(failed_for(i, "site-1 (label 1) did not exchange in dimension"));
  for (int i : {3, 5}) EXPECT_TRUE(failed_for(i, "it left the round (site-1 went down)"));
  EXPECT_TRUE(Eventually([&] { return RoundDone(0); })) << Events(0);
  EXPECT_NE(Events(0).find("sites still in the round that site-0"), std::string::npos) << Events(0);
  // (Site 1's leaving may be told with another's: "that site-1, site-6 have
  // left it".)
  bool told_1 = false;
  const auto last = sites_[0]->LastRound();
  for (const std::string& e : last->events)
    told_1 |= e.starts_with("told ") && e.find("sites still in the round that") != std::string::npos &&
              e.find(" site-1") != std::string::npos && e.find("left it") != std::string::npos;
  EXPECT_TRUE(told_1) << Events(0);
}

// As above, but site 1 is back within the peer timeout (a restart, a
// short cut): it never ran its part, and it is never down. Its heartbeat
// says it is in no round, so the coordinator asks it for its report, which
// comes from its journal; that says it is not running its part, and the
// sites waiting for it are told at once.
TEST_F(SiteTest, ASiteBackWithoutItsPartIsToldAsLeftFromItsReport) {
  auto id = StartWithSite1Cut();
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(Eventually([&] { return peers_.ReportOf(*id, Id(2)) && peers_.ReportOf(*id, Id(4)); }));
  env_.Advance(absl::Seconds(1));
  peers_.cut.clear();
  HeartbeatAll();
  env_.Advance(absl::Seconds(1));
  ASSERT_TRUE(Eventually([&] { return peers_.ReportOf(*id, Id(3)) && peers_.ReportOf(*id, Id(5)); }))
      << "sites 3 and 5 were not told that site 1 is not running its part\n"
      << Events(0);
  for (int i : {3, 5}) {
    auto r = peers_.ReportOf(*id, Id(i));
    EXPECT_NE(r->error.find("it left the round (site-1 is not running its part"), std::string::npos) << r->error;
  }
  EXPECT_TRUE(Eventually([&] { return RoundDone(0); })) << Events(0);
}

// A site reuses its own profile for up to a heartbeat interval; its
// heartbeat says how old the profile is, so that a peer dates it by when it
// was taken, not by when it came, and keeps booked the jobs it placed there
// since (docs/design.md §6.10).
TEST_F(SiteTest, AHeartbeatSaysHowOldItsProfileIs) {
  make_adapter_ = [this](int i) { return std::make_unique<ProbedAdapter>(Id(i), &env_); };
  Make(2);
  const absl::Time taken = env_.Now();
  HeartbeatAll();
  auto* peer = static_cast<ProbedAdapter*>(adapters_[1].get());
  ASSERT_TRUE(Eventually([&] { return env_.waiters() == 2; })) << "the placement loops did not settle";
  const int probes = peer->probes();
  env_.Advance(absl::Milliseconds(400));
  sites_[1]->HeartbeatOnce();
  EXPECT_EQ(peer->probes(), probes) << "site 1 took a new profile within its heartbeat interval";
  std::optional<PeerInfo> seen;
  for (const PeerInfo& p : sites_[0]->View())
    if (p.site == Id(1)) seen = p;
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->profile_at, taken + absl::Milliseconds(400));
  EXPECT_EQ(seen->profile_taken, taken);
}

}  // namespace
}  // namespace hyperfed::federation
