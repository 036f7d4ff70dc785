#include "daemon/federation/membership.h"

#include <cmath>
#include <limits>
#include <optional>
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

// docs/design.md §6.11: a roster site is presumed alive until a probe of
// it fails; empty positions are faults from the start.
TEST(MembershipTest, EmptyPositionsAndDownSitesAreFaults) {
  FakeEnv clock;
  LiveConfig live(FiveSites());
  Membership m(&live, &clock);
  EXPECT_EQ(m.dimension(), 3);  // 5 sites sit in a 3-cube
  EXPECT_EQ(m.FaultLabels(), (std::vector<int>{5, 6, 7})) << "roster sites are presumed alive";
  EXPECT_EQ(m.Coordinator(), "s0");
  m.ProbeFailed("s0", {"s2"});  // this site's probe and s2's for it failed
  EXPECT_EQ(m.FaultLabels(), (std::vector<int>{5, 6, 7})) << "a suspect is still up";
  m.Expire();
  EXPECT_EQ(m.FaultLabels(), (std::vector<int>{0, 5, 6, 7})) << "two sites' suspicions take it down";
  EXPECT_EQ(m.Coordinator(), "s1") << "the lowest live label coordinates";
  HeartbeatInfo intruder = Hb(1);
  intruder.site = "intruder";
  EXPECT_FALSE(m.Seen(intruder));
}

// One suspicion alone lasts the suspicion timeout (what the peer timeout
// leaves after two intervals) before the site is down; an answer ends it.
TEST(MembershipTest, AnUnconfirmedSuspicionLastsItsTimeoutAndAnAnswerEndsIt) {
  FakeEnv clock;
  config::Config c = FiveSites();
  c.balancer.heartbeat_interval = absl::Seconds(1);
  c.balancer.peer_timeout = absl::Seconds(5);  // suspicion: 3 s
  LiveConfig live(c);
  Membership m(&live, &clock);
  m.ProbeFailed("s3", {});
  EXPECT_EQ(m.Find("s3")->state, Liveness::kSuspect);
  clock.Advance(absl::Milliseconds(2900));
  m.Expire();
  EXPECT_TRUE(m.Find("s3")->up);
  clock.Advance(absl::Milliseconds(200));
  m.Expire();
  EXPECT_FALSE(m.Find("s3")->up) << "3.1 s suspected, nobody confirming";
  // Another suspicion, ended by the site's own answer.
  m.ProbeFailed("s4", {});
  m.Acked("s4", ProbeAck{.protocol = "1.8", .incarnation = 0});
  EXPECT_EQ(m.Find("s4")->state, Liveness::kAlive) << "it answered this incarnation's probe";
  clock.Advance(absl::Seconds(4));
  m.Expire();
  EXPECT_TRUE(m.Find("s4")->up);
}

// A site said suspect or down raises its incarnation above the news and
// spreads that it is alive; a site back at a higher incarnation is up.
TEST(MembershipTest, ASuspectedSiteRefutesWithAHigherIncarnation) {
  FakeEnv clock;
  LiveConfig live(FiveSites());  // this site is s1
  Membership m(&live, &clock);
  const int64_t mine = m.incarnation();
  HeartbeatInfo from0 = Hb(0);
  from0.incarnation = 5;
  Gossip g;
  g.news.push_back({1, mine, Liveness::kSuspect, 0});
  ASSERT_TRUE(m.Seen(from0, g));
  EXPECT_GT(m.incarnation(), mine);
  const Gossip out = m.GossipFor("s3");
  bool says_alive = false;
  for (const MemberNews& n : out.news)
    says_alive |= n.label == 1 && n.state == Liveness::kAlive && n.incarnation == m.incarnation();
  EXPECT_TRUE(says_alive) << "the refutation goes out on the next probes";
  // s4 down here; it comes back with a higher incarnation.
  m.ProbeFailed("s4", {"s0"});
  m.Expire();
  ASSERT_FALSE(m.Find("s4")->up);
  HeartbeatInfo back = Hb(4);
  back.incarnation = m.Find("s4")->incarnation;
  clock.Advance(absl::Seconds(1));
  m.Seen(back);
  EXPECT_FALSE(m.Find("s4")->up) << "the same incarnation does not undo a down";
  ProbeAck ack;
  m.AckFor(4, Gossip{}, &ack);
  bool tells_it = false;
  for (const MemberNews& n : ack.news) tells_it |= n.label == 4 && n.state == Liveness::kDown;
  EXPECT_TRUE(tells_it) << "the answer tells it, so it refutes";
  back.incarnation += 1;
  m.Seen(back);
  EXPECT_TRUE(m.Find("s4")->up);
}

// A neighbour heard before that probes at a newer incarnation restarted
// (its crash went unnoticed): that is news, so that a round's coordinator
// far off learns it within log2 N hops and asks it for its report
// (Coordinator::SilentLocked). A site's first word is none.
TEST(MembershipTest, ARestartOfASiteHeardBeforeIsNewsAndItsFirstWordIsNone) {
  FakeEnv clock;
  LiveConfig live(FiveSites());  // this site is s1
  Membership m(&live, &clock);
  auto news_of = [&](int label) -> std::optional<MemberNews> {
    for (const MemberNews& n : m.GossipFor("s0").news)
      if (n.label == label) return n;
    return std::nullopt;
  };
  HeartbeatInfo three = Hb(3);
  three.incarnation = 100;
  ASSERT_TRUE(m.Seen(three));
  EXPECT_EQ(m.Find("s3")->incarnation, 100);
  EXPECT_FALSE(news_of(3)) << "a first word is no news";
  clock.Advance(absl::Seconds(1));
  three.incarnation = 200;  // restarted
  ASSERT_TRUE(m.Seen(three));
  auto n = news_of(3);
  ASSERT_TRUE(n) << "a restart is news";
  EXPECT_EQ(n->state, Liveness::kAlive);
  EXPECT_EQ(n->incarnation, 200);
  EXPECT_TRUE(m.Find("s3")->up);
  // The same through the answer to this site's probe.
  ProbeAck first{.protocol = "1.8", .incarnation = 300};
  m.Acked("s2", first);
  EXPECT_FALSE(news_of(2));
  ProbeAck again{.protocol = "1.8", .incarnation = 400};
  m.Acked("s2", again);
  ASSERT_TRUE(news_of(2));
  EXPECT_EQ(news_of(2)->incarnation, 400);
}

// News goes out on kNewsTicks ticks of probes, then stops; a site heard
// within two intervals is not taken down on another's word.
TEST(MembershipTest, NewsSpreadsForItsTicksAndADirectlyHeardSiteIsNotTakenDown) {
  FakeEnv clock;
  LiveConfig live(FiveSites());
  Membership m(&live, &clock);
  HeartbeatInfo from0 = Hb(0);
  Gossip g;
  g.news.push_back({4, 0, Liveness::kDown, 0});
  g.news.push_back({3, 0, Liveness::kDown, 0});
  ASSERT_TRUE(m.Seen(Hb(3)));  // s3 heard directly just now
  ASSERT_TRUE(m.Seen(from0, g));
  EXPECT_FALSE(m.Find("s4")->up);
  EXPECT_TRUE(m.Find("s3")->up) << "heard directly within two intervals";
  auto carries = [&](int label) {
    for (const MemberNews& n : m.GossipFor("s0").news)
      if (n.label == label) return true;
    return false;
  };
  for (int t = 0; t < Membership::kNewsTicks; ++t) {
    EXPECT_TRUE(carries(4)) << "tick " << t;
    m.Spread();
  }
  EXPECT_FALSE(carries(4)) << "spread for its ticks";
}

// Rows of non-neighbours come relayed, in turn, and a relayed row never
// replaces a fresher one.
TEST(MembershipTest, RowsAreRelayedInTurnAndOnlyFresherOnesTaken) {
  FakeEnv clock;
  LiveConfig live(FiveSites());  // this site s1
  Membership m(&live, &clock);
  for (int i : {0, 2, 3, 4}) ASSERT_TRUE(m.Seen(Hb(i)));
  const Gossip to0 = m.GossipFor("s0");
  std::vector<int> labels;
  for (const RelayedRow& r : to0.rows) labels.push_back(r.info.label);
  EXPECT_EQ(labels, (std::vector<int>{2, 3, 4})) << "every row but the receiver's and this site's own";
  HeartbeatInfo from0 = Hb(0);
  Gossip g;
  RelayedRow stale;
  stale.info = Hb(2);
  stale.info.load = 99;
  stale.age_ms = 500;  // older than what s2 itself said just now
  RelayedRow fresh;
  fresh.info = Hb(3);
  fresh.info.load = 77;
  fresh.age_ms = 0;
  g.rows = {stale, fresh};
  clock.Advance(absl::Milliseconds(100));
  ASSERT_TRUE(m.Seen(from0, g));
  EXPECT_EQ(m.Find("s2")->load, 10) << "the direct row is fresher";
  EXPECT_EQ(m.Find("s3")->load, 77);
}

// The probes go to the cube neighbours; a missing or down one's duty
// passes to the nearest roster site across the same dimension.
TEST(MembershipTest, ProbesGoToCubeNeighboursAndStandIns) {
  FakeEnv clock;
  LiveConfig live(FiveSites());  // labels 0..4 in a 3-cube, this site 1
  Membership m(&live, &clock);
  EXPECT_EQ(m.ProbeTargets(), (std::vector<std::string>{"s0", "s3", "s4"}))
      << "0 and 3 are neighbours; 5 is empty, and 4 stands in for it";
  m.ProbeFailed("s3", {"s2"});
  m.Expire();
  EXPECT_EQ(m.ProbeTargets(), (std::vector<std::string>{"s0", "s3", "s2", "s4"}))
      << "2 stands in for 3, down, which is still probed (to find it back)";
  EXPECT_EQ(m.Helpers("s0", 2), (std::vector<std::string>{"s2", "s4"})) << "s0's other cube neighbours";
}

// A peer of protocol 1.7 or older heartbeats every site: it is up while
// heard within the peer timeout, and probed every tick.
TEST(MembershipTest, AnOlderPeerIsUpWhileHeard) {
  FakeEnv clock;
  LiveConfig live(FiveSites());  // peer timeout 3 s
  Membership m(&live, &clock);
  HeartbeatInfo old = Hb(2);
  old.protocol = "1.7";
  ASSERT_TRUE(m.Seen(old));
  EXPECT_TRUE(m.Find("s2")->up);
  const std::vector<std::string> targets = m.ProbeTargets();
  EXPECT_NE(std::find(targets.begin(), targets.end(), "s2"), targets.end()) << "not a neighbour, but 1.7";
  clock.Advance(absl::Seconds(4));
  EXPECT_FALSE(m.Find("s2")->up);
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
  EXPECT_FALSE(m.MayCoordinate("s1")) << "s0 is presumed up";
  EXPECT_FALSE(m.MayCoordinate("s3")) << "this site, label 1, is below it";
  EXPECT_FALSE(m.MayCoordinate("s9")) << "not in the roster";
  m.ProbeFailed("s0", {"s2"});
  m.Expire();
  EXPECT_TRUE(m.MayCoordinate("s1")) << "s0 is down";
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
  EXPECT_TRUE(m.Find("s8")->up) << "a new site is presumed alive until a probe of it fails";
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
  std::vector<absl::StatusOr<ProbeAck>> Heartbeats(const std::vector<std::string>& sites, const HeartbeatInfo& info,
                                                   const std::vector<Gossip>&, absl::Duration timeout) override {
    calls.push_back({sites, info.site, timeout});
    return std::vector<absl::StatusOr<ProbeAck>>(sites.size(), absl::DeadlineExceededError("no answer"));
  }
  std::vector<absl::StatusOr<bool>> ProbeFor(const std::vector<std::pair<std::string, std::string>>& a,
                                             absl::Duration timeout) override {
    asks.push_back({a, timeout});
    return std::vector<absl::StatusOr<bool>>(a.size(), absl::UnavailableError("no helper answers"));
  }
  struct Call {
    std::vector<std::string> sites;
    std::string from;
    absl::Duration timeout;
  };
  std::vector<Call> calls;
  struct Ask {
    std::vector<std::pair<std::string, std::string>> asks;
    absl::Duration timeout;
  };
  std::vector<Ask> asks;
};

// docs/design.md §9, §6.11: one tick probes the cube neighbours at once
// (never one after another), within 0.6 of three quarters of an interval,
// and asks helpers to probe those not heard lately within the rest; so the
// next tick, an interval after this one began, probes again on time.
TEST(HeartbeaterTest, ATickProbesTheNeighboursAtOnceThenAsksHelpers) {
  FakeEnv clock;
  config::Config c = FiveSites();
  c.balancer.heartbeat_interval = absl::Seconds(2);
  LiveConfig live(c);
  Membership membership(&live, &clock);
  RecordingPeers peers;
  Heartbeater heartbeater(&live, &membership, &peers);
  heartbeater.Tick(Hb(1));
  ASSERT_EQ(peers.calls.size(), 1u) << "one call for all probes";
  EXPECT_EQ(peers.calls[0].sites, (std::vector<std::string>{"s0", "s3", "s4"})) << "the neighbours, not s2";
  EXPECT_EQ(peers.calls[0].from, "s1");
  EXPECT_EQ(peers.calls[0].timeout, absl::Milliseconds(900));
  ASSERT_EQ(peers.asks.size(), 1u) << "one call for all indirect probes";
  EXPECT_EQ(peers.asks[0].timeout, absl::Milliseconds(600));
  EXPECT_EQ(peers.asks[0].asks.size(), 6u) << "two helpers for each of the three silent neighbours";
  for (const std::string s : {"s0", "s3", "s4"}) EXPECT_EQ(membership.Find(s)->state, Liveness::kSuspect) << s;
}

// The observer hears what a tick logs: each peer's state at the first tick,
// then only its changes (the federation simulation counts downs with it,
// docs/design.md §10).
TEST(HeartbeaterTest, TheObserverHearsTheStartingStateThenEachChange) {
  FakeEnv clock;
  config::Config c = FiveSites();  // peer timeout 3 s, interval 1 s: suspicion 1 s
  LiveConfig live(c);
  Membership membership(&live, &clock);
  RecordingPeers peers;  // no probe is answered
  Heartbeater heartbeater(&live, &membership, &peers);
  std::vector<std::string> heard;
  heartbeater.SetObserver([&](const PeerInfo& p, bool first) {
    heard.push_back(p.site + (p.up ? " up" : " down") + (first ? " (first)" : ""));
  });
  heartbeater.Tick(Hb(1));
  EXPECT_EQ(heard, (std::vector<std::string>{"s0 up (first)", "s2 up (first)", "s3 up (first)", "s4 up (first)"}))
      << "presumed alive; the silent neighbours are only suspected";
  heard.clear();
  clock.Advance(absl::Seconds(1));
  heartbeater.Tick(Hb(1));
  EXPECT_EQ(heard, (std::vector<std::string>{"s0 down", "s3 down", "s4 down"}));
  heard.clear();
  HeartbeatInfo back = Hb(3);
  back.incarnation = membership.Find("s3")->incarnation + 1;
  membership.Seen(back);
  heartbeater.Tick(Hb(1));
  EXPECT_EQ(heard, (std::vector<std::string>{"s3 up"}));
  heard.clear();
  heartbeater.Tick(Hb(1));
  EXPECT_TRUE(heard.empty()) << "no change, nothing heard";
}

}  // namespace
}  // namespace hyperfed::federation
