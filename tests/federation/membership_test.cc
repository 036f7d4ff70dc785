#include "daemon/federation/membership.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "daemon/federation/round.h"
#include "gtest/gtest.h"

namespace hyperfed::federation {
namespace {

HeartbeatInfo Hb(int i) {
  HeartbeatInfo hb;
  hb.site = "s" + std::to_string(i);
  hb.label = i;
  hb.load = 10;
  hb.capacity = 1;
  return hb;
}

config::Config FiveSites() {
  config::Config c;
  c.site.id = "s1";
  c.site.label = 1;
  for (int i = 0; i < 5; ++i) c.roster.sites.push_back({"s" + std::to_string(i), i, "127.0.0.1:" + std::to_string(7000 + i)});
  c.balancer.peer_timeout = absl::Seconds(3);
  return c;
}

TEST(MembershipTest, EmptyPositionsAndSilentSitesAreFaults) {
  FakeEnv clock;
  LiveConfig live(FiveSites());
  Membership m(&live, &clock);
  EXPECT_EQ(m.dimension(), 3);  // 5 sites sit in a 3-cube
  // Nobody heard yet: only this site is up; 5..7 are empty.
  EXPECT_EQ(m.FaultLabels(), (std::vector<int>{0, 2, 3, 4, 5, 6, 7}));
  for (int i : {0, 2, 3, 4}) EXPECT_TRUE(m.Seen(Hb(i)));
  EXPECT_EQ(m.FaultLabels(), (std::vector<int>{5, 6, 7}));
  EXPECT_EQ(m.Coordinator(), "s0");
  clock.Advance(absl::Seconds(2));
  for (int i : {2, 3, 4}) m.Seen(Hb(i));
  clock.Advance(absl::Seconds(2));  // s0 silent for 4 s > 3 s timeout
  EXPECT_EQ(m.FaultLabels(), (std::vector<int>{0, 5, 6, 7}));
  EXPECT_EQ(m.Coordinator(), "s1") << "the lowest live label coordinates";
  HeartbeatInfo intruder = Hb(1);
  intruder.site = "intruder";
  EXPECT_FALSE(m.Seen(intruder));
}

// A peer's profile is as old as it says at the heartbeat: the placement
// ledger keeps the jobs placed there since it was taken (PeerForecast).
TEST(MembershipTest, AProfileIsDatedByTheAgeItsHeartbeatSays) {
  FakeEnv clock;
  LiveConfig live(FiveSites());
  Membership m(&live, &clock);
  HeartbeatInfo hb = Hb(2);
  hb.widest = 4;
  hb.free = {{0, 4}};
  hb.profile_age_ms = 700;
  ASSERT_TRUE(m.Seen(hb));
  auto p = m.Find("s2");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->profile_at, clock.Now());
  EXPECT_EQ(p->profile_taken, clock.Now() - absl::Milliseconds(700));
  hb.profile_age_ms = 0;  // a build before 1.6 says none: taken as it came
  clock.Advance(absl::Seconds(1));
  ASSERT_TRUE(m.Seen(hb));
  EXPECT_EQ(m.Find("s2")->profile_taken, clock.Now());
}

TEST(MembershipTest, OnlyASiteWithNoLiveSiteBelowItMayCoordinate) {
  FakeEnv clock;
  LiveConfig live(FiveSites());
  Membership m(&live, &clock);  // this site is s1
  EXPECT_TRUE(m.MayCoordinate("s0")) << "its call is the sign it is up";
  EXPECT_TRUE(m.MayCoordinate("s1"));
  EXPECT_FALSE(m.MayCoordinate("s3")) << "this site, label 1, is below it";
  EXPECT_FALSE(m.MayCoordinate("s9")) << "not in the roster";
  EXPECT_TRUE(m.Seen(Hb(0)));
  EXPECT_FALSE(m.MayCoordinate("s1")) << "s0 is up";
  clock.Advance(absl::Seconds(4));  // s0 silent past the timeout
  EXPECT_TRUE(m.MayCoordinate("s1"));
}

TEST(MembershipTest, ReportedNumbersAreBoundedByTheRoster) {
  config::Config c = FiveSites();
  c.roster.sites[2].max_capacity = 64;
  EXPECT_TRUE(CheckReportedRow(c.roster, 2, 10, 64).ok());
  EXPECT_TRUE(CheckReportedRow(c.roster, 3, config::kMaxReportedLoad, 1e6).ok()) << "the default ceiling";
  for (double bad : {64.5, -1.0, std::numeric_limits<double>::infinity(), std::nan("")})
    EXPECT_EQ(CheckReportedRow(c.roster, 2, 10, bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_EQ(CheckReportedRow(c.roster, 3, 10, 1e6 + 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckReportedRow(c.roster, 2, -1, 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckReportedRow(c.roster, 2, config::kMaxReportedLoad + 1, 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckReportedRow(c.roster, 6, 1, 1).code(), absl::StatusCode::kInvalidArgument) << "no site at label 6";
}

TEST(MembershipTest, ANewRosterVersionAddsAndRemovesRowsAndKeepsWhatStayingSitesSaid) {
  FakeEnv clock;
  LiveConfig live(FiveSites());  // s0..s4, this site s1
  Membership m(&live, &clock);
  for (int i : {0, 2, 3, 4}) ASSERT_TRUE(m.Seen(Hb(i)));
  ASSERT_EQ(m.dimension(), 3);
  auto next = std::make_shared<config::Roster>(*live.roster());
  next->version = 7;
  std::erase_if(next->sites, [](const config::RosterEntry& e) { return e.id == "s3"; });
  next->sites.push_back({"s8", 8, "127.0.0.1:7008"});
  ASSERT_TRUE(live.SetRoster(next));
  EXPECT_EQ(m.dimension(), 4) << "label 8 needs a 4-cube";
  std::vector<std::string> sites;
  for (const PeerInfo& p : m.View()) sites.push_back(p.site);
  EXPECT_EQ(sites, (std::vector<std::string>{"s0", "s1", "s2", "s4", "s8"}));
  EXPECT_TRUE(m.Find("s2")->up) << "a staying site keeps its last heartbeat";
  EXPECT_FALSE(m.Find("s8")->up) << "a new site is up once heard from";
  EXPECT_FALSE(m.Seen(Hb(3))) << "a removed site's heartbeat is not taken";
  auto older = std::make_shared<config::Roster>(*next);
  older->version = 6;
  EXPECT_FALSE(live.SetRoster(older)) << "an older version";
}

// Records the heartbeats Tick asks for.
class RecordingPeers : public PeerClient {
 public:
  absl::StatusOr<balance::LoadTable> Exchange(const std::string&, const ExchangeMessage&, absl::Duration) override {
    return absl::UnavailableError("not in this test");
  }
  std::vector<StartAnswer> StartRound(const std::vector<std::string>& sites, const RoundSpec&,
                                      absl::Duration) override {
    return std::vector<StartAnswer>(sites.size());
  }
  absl::Status ReportRound(const std::string&, const RoundReport&, absl::Duration) override {
    return absl::UnavailableError("not in this test");
  }
  absl::StatusOr<std::string> RequestBalance(const std::string&, const std::string&, const std::string&,
                                             absl::Duration) override {
    return absl::UnavailableError("not in this test");
  }
  std::vector<absl::Status> Heartbeats(const std::vector<std::string>& sites, const HeartbeatInfo& info,
                                       absl::Duration timeout) override {
    calls.push_back({sites, info.site, timeout});
    return std::vector<absl::Status>(sites.size(), absl::DeadlineExceededError("no answer"));
  }
  struct Call {
    std::vector<std::string> sites;
    std::string from;
    absl::Duration timeout;
  };
  std::vector<Call> calls;
};

// docs/design.md §9: one tick asks every peer at once (never one after
// another), and each call waits three quarters of an interval, so that the
// next tick, an interval after this one began, reaches every peer again.
TEST(HeartbeaterTest, ATickCallsEveryPeerAtOnceWithinThreeQuartersOfAnInterval) {
  FakeEnv clock;
  config::Config c = FiveSites();
  c.balancer.heartbeat_interval = absl::Seconds(2);
  LiveConfig live(c);
  Membership membership(&live, &clock);
  RecordingPeers peers;
  Heartbeater heartbeater(&live, &membership, &peers);
  heartbeater.Tick(Hb(1));
  ASSERT_EQ(peers.calls.size(), 1u) << "one call for all peers";
  EXPECT_EQ(peers.calls[0].sites, (std::vector<std::string>{"s0", "s2", "s3", "s4"})) << "every peer, not itself";
  EXPECT_EQ(peers.calls[0].from, "s1");
  EXPECT_EQ(peers.calls[0].timeout, absl::Milliseconds(1500));
}

// The observer hears what a tick logs: each peer's state at the first tick,
// then only its changes (the federation simulation counts downs with it,
// docs/design.md §10).
TEST(HeartbeaterTest, TheObserverHearsTheStartingStateThenEachChange) {
  FakeEnv clock;
  config::Config c = FiveSites();
  LiveConfig live(c);
  Membership membership(&live, &clock);
  RecordingPeers peers;
  Heartbeater heartbeater(&live, &membership, &peers);
  std::vector<std::string> heard;
  heartbeater.SetObserver([&](const PeerInfo& p, bool first) {
    heard.push_back(p.site + (p.up ? " up" : " down") + (first ? " (first)" : ""));
  });
  membership.Seen(Hb(2));
  heartbeater.Tick(Hb(1));
  EXPECT_EQ(heard,
            (std::vector<std::string>{"s0 down (first)", "s2 up (first)", "s3 down (first)", "s4 down (first)"}));
  heard.clear();
  membership.Seen(Hb(3));
  heartbeater.Tick(Hb(1));
  EXPECT_EQ(heard, (std::vector<std::string>{"s3 up"}));
  heard.clear();
  clock.Advance(absl::Seconds(4));  // past the 3 s peer timeout
  membership.Seen(Hb(3));
  heartbeater.Tick(Hb(1));
  EXPECT_EQ(heard, (std::vector<std::string>{"s2 down"}));
  heard.clear();
  heartbeater.Tick(Hb(1));
  EXPECT_TRUE(heard.empty()) << "no change, nothing heard";
}

}  // namespace
}  // namespace hyperfed::federation
