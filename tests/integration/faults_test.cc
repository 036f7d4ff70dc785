// Failed and missing sites: rounds go on around them over the MCWA topology,
// with exact weighted quotas among the live sites and no job lost.

#include <thread>

#include "absl/strings/str_cat.h"
#include "daemon/balance/mcwa.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

constexpr int64_t kLong = 3'600'000;

void FillSlots(TestFederation& f, const std::vector<int>& slots) {
  for (int i = 0; i < f.size(); ++i) {
    if (!f.Running(i)) continue;
    ASSERT_TRUE(Submit(f, i, slots[i], kLong).ok());
    ASSERT_TRUE(WaitRunning(f, i, slots[i], absl::Seconds(10)));
  }
}

// max_share_error of the pending loads over the running sites.
double ShareError(TestFederation& f, const std::vector<int>& slots, int64_t* total) {
  std::vector<balance::Load> w;
  std::vector<double> p;
  *total = 0;
  for (int i = 0; i < f.size(); ++i) {
    if (!f.Running(i)) continue;
    w.push_back(CountState(ListJobs(f, i), "pending"));
    p.push_back(slots[i]);
    *total += w.back();
  }
  return balance::MaxShareError(w, p);
}

class SizeTest : public ::testing::TestWithParam<int> {};

TEST_P(SizeTest, FederationsOfAnySizeBalanceExactly) {
  const int sites = GetParam();
  std::vector<int> slots;
  for (int i = 0; i < sites; ++i) slots.push_back(1 + (i * 3) % 5);
  auto f = TestFederation::Start({.sites = sites, .slots = slots});
  ASSERT_TRUE(f.ok()) << f.status();
  FillSlots(**f, slots);
  ASSERT_TRUE(Submit(**f, sites - 1, 300, kLong).ok());
  const auto before = AllKeys(**f);
  auto r = RunRound(**f, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok()) << r->message();
  EXPECT_NE(r->message().find("faults "), std::string::npos);
  int64_t total = 0;
  EXPECT_LT(ShareError(**f, slots, &total), 1.0) << r->message();
  EXPECT_EQ(total, 300);
  EXPECT_EQ(AllKeys(**f), before);
}

INSTANTIATE_TEST_SUITE_P(Sites, SizeTest, ::testing::Values(5, 6, 7));

TEST(FailedSiteTest, RoundsGoAroundAKilledSiteAndTheFullCubeReturnsWithIt) {
  const std::vector<int> slots{1, 2, 3, 4, 1, 2, 3, 4};
  // No hysteresis: the second round must balance again the jobs the first
  // one moved.
  auto f = TestFederation::Start({.sites = 8, .slots = slots, .hysteresis = "0s"});
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  FillSlots(fed, slots);
  ASSERT_TRUE(Submit(fed, 6, 40, kLong).ok());  // these stay with site 6 while it is down
  ASSERT_TRUE(Submit(fed, 2, 400, kLong).ok());
  fed.Kill(6);
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(20), 6).ok()) << "the others see site 6 down";
  auto r = RunRound(fed, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok()) << r->message();
  EXPECT_NE(r->message().find("faults 6"), std::string::npos) << r->message();
  int64_t total = 0;
  EXPECT_LT(ShareError(fed, slots, &total), 1.0) << r->message();
  EXPECT_EQ(total, 400) << "the survivors balance their own 400 jobs";
  EXPECT_NE(r->message().find("3 log N + T"), std::string::npos) << "steps beside the paper's bound\n" << r->message();
  {
    // The operator's views: the fault set, the balancing subcube and trees,
    // and why the last round ran what it ran.
    v1::TopologyReply topo;
    auto ctx = fed.Context();
    ASSERT_TRUE(fed.Admin(0)->Topology(ctx.get(), v1::TopologyRequest(), &topo).ok());
    ASSERT_EQ(topo.fault_labels_size(), 1);
    EXPECT_EQ(topo.fault_labels(0), 6);
    ASSERT_EQ(topo.subcubes_size(), 1);
    EXPECT_EQ(topo.subcubes(0).dim(), 2);  // the largest healthy subcube of a 3-cube without 110
    EXPECT_EQ(topo.subcubes(0).edges_size(), 7 - 4) << "every live site outside the subcube hangs on a tree";
    v1::StatusReply st;
    auto c2 = fed.Context();
    ASSERT_TRUE(fed.Admin(0)->Status(c2.get(), v1::StatusRequest(), &st).ok());
    EXPECT_NE(st.last_round_mode().find("MCWA topology"), std::string::npos) << st.last_round_mode();
    EXPECT_NE(st.last_round_mode().find("6"), std::string::npos) << st.last_round_mode();
  }

  // Site 6 comes back from its journal and queue: its 40 jobs are there,
  // and the next round runs on the full cube again.
  ASSERT_TRUE(fed.StartSite(6).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30)).ok());
  EXPECT_EQ(CountState(ListJobs(fed, 6), "pending"), 40);
  auto r2 = RunRound(fed, 0);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_TRUE(r2->ok()) << r2->message();
  EXPECT_NE(r2->message().find("faults none"), std::string::npos) << r2->message();
  EXPECT_LT(ShareError(fed, slots, &total), 1.0);
  EXPECT_EQ(total, 440);
}

TEST(FailedSiteTest, McwaRoundsGoAroundAKilledSiteAndCwaRunsWhenItReturns) {
  const std::vector<int> slots{1, 2, 3, 4, 1, 2, 3, 4};
  auto f = TestFederation::Start({.sites = 8, .slots = slots, .algorithm = "mcwa", .hysteresis = "0s"});
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  FillSlots(fed, slots);
  ASSERT_TRUE(Submit(fed, 6, 30, kLong).ok());  // these stay with site 6 while it is down
  // Without 110 the balancing subcube is a 2-cube with trees of depth 1:
  // site 7's jobs cross the subcube and go down the trees, some through
  // relays, each hop a real migration.
  ASSERT_TRUE(Submit(fed, 7, 300, kLong).ok());
  fed.Kill(6);
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(20), 6).ok()) << "the others see site 6 down";
  const auto before = AllKeys(fed);
  auto r = RunRound(fed, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok()) << r->message();
  EXPECT_NE(r->message().find("mcwa"), std::string::npos) << r->message();
  EXPECT_NE(r->message().find("faults 6"), std::string::npos) << r->message();
  EXPECT_NE(r->message().find("3 log N + T = 10"), std::string::npos) << "steps beside the paper's bound\n"
                                                                      << r->message();
  int64_t total = 0;
  EXPECT_LT(ShareError(fed, slots, &total), 1.0) << r->message();
  EXPECT_EQ(total, 300);
  EXPECT_EQ(AllKeys(fed), before) << "every job exactly once, relays included";
  {
    v1::StatusReply st;
    auto ctx = fed.Context();
    ASSERT_TRUE(fed.Admin(0)->Status(ctx.get(), v1::StatusRequest(), &st).ok());
    EXPECT_NE(st.last_round_mode().find("nam Algorithm 3"), std::string::npos) << st.last_round_mode();
  }

  ASSERT_TRUE(fed.StartSite(6).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30)).ok());
  EXPECT_EQ(CountState(ListJobs(fed, 6), "pending"), 30);
  const auto all = AllKeys(fed);
  auto r2 = RunRound(fed, 0);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_TRUE(r2->ok()) << r2->message();
  EXPECT_NE(r2->message().find("faults none"), std::string::npos) << r2->message();
  EXPECT_NE(r2->message().find("9 steps"), std::string::npos) << "CWA's 3 log N\n" << r2->message();
  EXPECT_LT(ShareError(fed, slots, &total), 1.0) << r2->message();
  EXPECT_EQ(total, 330);
  EXPECT_EQ(AllKeys(fed), all);
}

// In mcwa mode jobs are relayed through tree and subcube sites phase by
// phase. A relay dies after the jobs of its first phase have arrived and
// before it passes them on: the round ends there, the jobs it holds come back
// with it, and no job is lost or duplicated.
TEST(FailedSiteTest, McwaRelayDiesBetweenTransferPhases) {
  const std::vector<int> slots{1, 2, 3, 4, 1, 2, 3, 4};
  auto f = TestFederation::Start({.sites = 8, .slots = slots, .algorithm = "mcwa", .hysteresis = "0s"});
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  FillSlots(fed, slots);
  ASSERT_TRUE(Submit(fed, 7, 300, kLong).ok());
  fed.Kill(6);

  // The plan every site will derive: pick a relay, a site whose first phase
  // only receives and which sends in a later one. Not site 0: it coordinates
  // the round, and this test watches the round's report through it.
  std::vector<balance::Load> w(8, 0);
  w[7] = 300;
  std::vector<double> p(slots.begin(), slots.end());
  auto topo = balance::Topology::Hypercube(3, {6});
  ASSERT_TRUE(topo.ok()) << topo.status();
  auto plan = balance::McwaPlan(*topo, w, p);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int relay = -1;
  for (int u = 7; u >= 1 && relay < 0; --u) {
    int first = 1 << 30, first_send = 1 << 30, last_send = -1;
    for (const balance::Transfer& t : plan->transfers) {
      if (t.to == u || t.from == u) first = std::min(first, t.step);
      if (t.from == u) first_send = std::min(first_send, t.step), last_send = std::max(last_send, t.step);
    }
    if (last_send > first && first_send > first) relay = u;
  }
  ASSERT_GE(relay, 0) << "the plan has no relay; the test needs one";
  const int initiator = 0;

  fed.Stop(relay);
  ASSERT_TRUE(fed.StartSite(relay, {{"HYPERFED_CRASH_AT", "round_mcwa_phase:2"}}).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30), 6).ok()) << "the others see site 6 down";
  const auto before = AllKeys(fed);
  ASSERT_EQ(before.size(), 300u + 17u);  // and the running jobs of every live site

  auto first = RunRound(fed, initiator);
  ASSERT_TRUE(fed.WaitExit(relay, absl::Seconds(60))) << "site " << relay << " never reached its second phase";
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->ok()) << "the round ends where the relay died\n" << first->message();
  EXPECT_NE(first->message().find(absl::StrCat("site-", relay, " went down during the round")), std::string::npos)
      << first->message();
  EXPECT_NE(first->message().find("mcwa"), std::string::npos) << first->message();
  // What the relay held when it died is not lost: it is in its queue, which
  // is not up now.
  std::multiset<std::string> up = AllKeys(fed);
  EXPECT_LT(up.size(), before.size()) << "the relay held jobs when it died";
  for (const std::string& k : up) EXPECT_EQ(up.count(k), 1u) << k;

  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30), 5).ok());
  auto second = RunRound(fed, initiator);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->ok()) << second->message();
  EXPECT_NE(second->message().find(absl::StrCat("faults ", std::min(6, relay), ",", std::max(6, relay))),
            std::string::npos)
      << second->message();
  int64_t total = 0;
  EXPECT_LT(ShareError(fed, slots, &total), 1.0) << second->message();

  ASSERT_TRUE(fed.StartSite(relay).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30), 6).ok());
  const absl::Time end = absl::Now() + absl::Seconds(30);
  std::multiset<std::string> keys;
  while (absl::Now() < end && (keys = AllKeys(fed)) != before)
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_EQ(keys, before) << "every job exactly once after the relay returns";
}

TEST(FailedSiteTest, ThreeFailedSitesOfEight) {
  const std::vector<int> slots{2, 2, 2, 2, 2, 2, 2, 2};
  auto f = TestFederation::Start({.sites = 8, .slots = slots});
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  FillSlots(fed, slots);
  ASSERT_TRUE(Submit(fed, 0, 250, kLong).ok());
  // 3, 5 and 7 failed: the live sites 0, 1, 2, 4, 6 stay connected through
  // the cube (with 3, 5 and 6 down, site 7 would be cut off and balance alone).
  for (int dead : {3, 5, 7}) fed.Kill(dead);
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(20), 4).ok());
  const auto before = AllKeys(fed);
  auto r = RunRound(fed, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok()) << r->message();
  EXPECT_NE(r->message().find("faults 3,5,7"), std::string::npos) << r->message();
  int64_t total = 0;
  EXPECT_LT(ShareError(fed, slots, &total), 1.0) << r->message();
  EXPECT_EQ(total, 250);
  EXPECT_EQ(AllKeys(fed), before);
}

}  // namespace
}  // namespace hyperfed::testing

namespace hyperfed::testing {
namespace {

// Site 1 takes a round and stops answering at once (SIGSTOP at the round's
// start, as a frozen process or a cut link): site 0's call to it ends when
// the connection's keepalive gives up (about 3 s), and site 3 waits for
// site 1's call. Once site 1 is down in the coordinator's view
// (peer_timeout 2 s), the coordinator tells the others it has left the
// round: site 3's wait ends, and the round answers with site 1 named, long
// before a step timeout of 60 s would have ended that wait.
TEST(FailedSiteTest, ARoundEndsSoonAfterASiteFreezesInIt) {
  auto f = TestFederation::Start({.sites = 4, .step_timeout = "60s"});
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  ASSERT_TRUE(Submit(fed, 0, 40, kLong).ok());
  fed.Stop(1);
  ASSERT_TRUE(fed.StartSite(1, {{"HYPERFED_CRASH_AT", "round_started"}, {"HYPERFED_CRASH_SIGNAL", "STOP"}}).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30)).ok());
  const absl::Time start = absl::Now();
  auto round = RunRound(fed, 0, /*dry_run=*/false, absl::Seconds(100));
  const absl::Duration took = absl::Now() - start;
  fed.Kill(1);  // stopped: only SIGKILL ends it
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_FALSE(round->ok()) << round->message();
  EXPECT_NE(round->message().find("that site-1 has left it"), std::string::npos) << round->message();
  EXPECT_LT(took, absl::Seconds(30)) << "the round waited for the frozen site's steps\n" << round->message();
}

// A site dies in the middle of a round (SIGKILL at a step of its part): the
// round ends at that step, what was done stands, the next round runs around
// it, and when it returns every job is still there exactly once.
class MidRoundFailureTest : public ::testing::TestWithParam<const char*> {};

TEST_P(MidRoundFailureTest, RoundEndsAtThatStepAndTheNextGoesAround) {
  const std::vector<int> slots(8, 1);
  // No hysteresis: the second round rebalances what the first one moved.
  auto f = TestFederation::Start({.sites = 8, .slots = slots, .hysteresis = "0s"});
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  FillSlots(fed, slots);
  ASSERT_TRUE(Submit(fed, 5, 200, kLong).ok());  // site 5 would send
  ASSERT_TRUE(Submit(fed, 2, 100, kLong).ok());
  fed.Stop(5);
  ASSERT_TRUE(fed.StartSite(5, {{"HYPERFED_CRASH_AT", GetParam()}}).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30)).ok());
  const auto before = AllKeys(fed);
  ASSERT_EQ(before.size(), 308u);

  auto first = RunRound(fed, 0);
  ASSERT_TRUE(fed.WaitExit(5, absl::Seconds(30))) << "site 5 never reached " << GetParam();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->ok()) << "the round ends at the step where site 5 died\n" << first->message();

  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(20), 6).ok());
  auto second = RunRound(fed, 0);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->ok()) << second->message();
  EXPECT_NE(second->message().find("faults 5"), std::string::npos) << second->message();
  int64_t total = 0;
  EXPECT_LT(ShareError(fed, slots, &total), 1.0) << second->message();

  ASSERT_TRUE(fed.StartSite(5).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30)).ok());
  // Recovery may still be settling a transfer site 5 had in flight.
  const absl::Time end = absl::Now() + absl::Seconds(30);
  std::multiset<std::string> keys;
  while (absl::Now() < end && (keys = AllKeys(fed)) != before)
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_EQ(keys, before) << "every job exactly once after site 5 returns";
}

INSTANTIATE_TEST_SUITE_P(Steps, MidRoundFailureTest,
                         ::testing::Values("round_started", "round_after_exchange:1", "round_after_exchange:2",
                                           "round_before_moves"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           for (char& c : n)
                             if (c == ':') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace hyperfed::testing
