// Real hyperfedd processes on loopback with mutual TLS and the sim adapter:
// a round over gRPC ends with exactly the loads the simulator computes for
// the same input, and no job is lost or duplicated.

#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "daemon/balance/dem.h"
#include "daemon/balance/exact.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

constexpr int64_t kLong = 3'600'000;  // jobs that stay put for the test's life

// Fills every slot with a running job, then queues `pending[i]` jobs at
// site i: the round's load snapshot is then exactly `pending`.
void Load(TestFederation& f, const std::vector<int>& slots, const std::vector<int>& pending) {
  for (int i = 0; i < f.size(); ++i) {
    if (slots[i] > 0) {
      ASSERT_TRUE(Submit(f, i, slots[i], kLong).ok());
    }
    ASSERT_TRUE(WaitRunning(f, i, slots[i], absl::Seconds(10))) << f.Log(i);
    if (pending[i] > 0) {
      ASSERT_TRUE(Submit(f, i, pending[i], kLong).ok());
    }
  }
}

std::vector<int64_t> PendingLoads(TestFederation& f) {
  std::vector<int64_t> w;
  for (int i = 0; i < f.size(); ++i) w.push_back(CountState(ListJobs(f, i), "pending"));
  return w;
}

TEST(FederationTest, FourSitesExactRoundMatchesTheSimulator) {
  const std::vector<int> slots{4, 8, 2, 6};
  auto f = TestFederation::Start({.sites = 4, .slots = slots});
  ASSERT_TRUE(f.ok()) << f.status();
  const std::vector<int> pending{300, 10, 0, 55};
  Load(**f, slots, pending);
  const auto before_keys = AllKeys(**f);

  auto result = RunRound(**f, 0);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->ok()) << result->message();

  // The simulator on the same input.
  auto topo = balance::Topology::Hypercube(2);
  std::vector<balance::Load> w(pending.begin(), pending.end());
  std::vector<double> p(slots.begin(), slots.end());
  auto plan = balance::ExactPlan(*topo, w, p);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(PendingLoads(**f), std::vector<int64_t>(plan->final_loads.begin(), plan->final_loads.end()));
  EXPECT_LT(balance::MaxShareError(plan->final_loads, p), 1.0);
  EXPECT_EQ(result->moved(), plan->metrics.tasks_moved);
  // Every job exactly once.
  EXPECT_EQ(AllKeys(**f), before_keys);
}

TEST(FederationTest, EightSitesTwoThousandJobsAtOneSite) {
  const std::vector<int> slots{2, 4, 6, 8, 2, 4, 6, 8};
  auto f = TestFederation::Start({.sites = 8, .slots = slots});
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<int> pending(8, 0);
  pending[5] = 2000;
  Load(**f, slots, pending);
  const auto before_keys = AllKeys(**f);
  ASSERT_EQ(before_keys.size(), 2000u + 40u);

  auto result = RunRound(**f, 3);  // asked at a site that is not the coordinator
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->ok()) << result->message();
  std::vector<int64_t> after = PendingLoads(**f);
  std::vector<balance::Load> w(after.begin(), after.end());
  std::vector<double> p(slots.begin(), slots.end());
  EXPECT_LT(balance::MaxShareError(w, p), 1.0);
  EXPECT_EQ(balance::TotalLoad(w), 2000);
  EXPECT_EQ(AllKeys(**f), before_keys);
  // Moved exactly the minimum: everything that left site 5 went straight to its destination.
  EXPECT_EQ(result->moved(), 2000 - after[5]);
}

// Jobs submitted just before a round, after the submitting site's last
// heartbeat: the round balances them (each site brings its own load), and
// the round's report shows the loads it balanced, not the heartbeats'.
TEST(FederationTest, TheReportShowsTheLoadsTheRoundBalancedNotTheLastHeartbeats) {
  const std::vector<int> slots{1, 1, 1, 1};
  auto f = TestFederation::Start({.sites = 4, .slots = slots, .peer_timeout = "10s", .heartbeat = "3s"});
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  Load(fed, slots, {0, 0, 0, 0});
  ASSERT_TRUE(Submit(fed, 2, 40, kLong).ok());  // the next heartbeat is most likely seconds away
  auto r = RunRound(fed, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok()) << r->message();
  EXPECT_EQ(PendingLoads(fed), (std::vector<int64_t>{10, 10, 10, 10}));
  const v1::RoundEvent& e = r->final_event();
  ASSERT_EQ(e.before_size(), 4);
  EXPECT_EQ(e.before(2).load(), 40) << r->message();
  for (const auto& row : e.after()) EXPECT_EQ(row.load(), 10) << r->message();
  EXPECT_EQ(e.max_share_error_before(), 30);
  EXPECT_LT(e.max_share_error_after(), 1) << r->message();
}

TEST(FederationTest, ImprovedDemModeMatchesTheSimulator) {
  const std::vector<int> slots{2, 4, 2, 4};
  auto f = TestFederation::Start({.sites = 4, .slots = slots, .algorithm = "improved-dem"});
  ASSERT_TRUE(f.ok()) << f.status();
  const std::vector<int> pending{7, 120, 31, 0};
  Load(**f, slots, pending);
  const auto before_keys = AllKeys(**f);
  auto result = RunRound(**f, 0);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->ok()) << result->message();
  auto topo = balance::Topology::Hypercube(2);
  std::vector<balance::Load> w(pending.begin(), pending.end());
  std::vector<double> p(slots.begin(), slots.end());
  auto plan = balance::ImprovedDemPlan(*topo, w, p);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(PendingLoads(**f), std::vector<int64_t>(plan->final_loads.begin(), plan->final_loads.end()));
  EXPECT_EQ(AllKeys(**f), before_keys);
}

TEST(FederationTest, DryRunPlansWithoutMovingAndDrainEmptiesASite) {
  const std::vector<int> slots{2, 2, 2, 2};
  auto f = TestFederation::Start({.sites = 4, .slots = slots});
  ASSERT_TRUE(f.ok()) << f.status();
  Load(**f, slots, {40, 0, 0, 0});
  // A dry run plans from the loads heard in the last heartbeats.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto dry = RunRound(**f, 1, /*dry_run=*/true);
  ASSERT_TRUE(dry.ok()) << dry.status();
  EXPECT_EQ(dry->moved(), 30);
  EXPECT_EQ(PendingLoads(**f), (std::vector<int64_t>{40, 0, 0, 0})) << "a dry run moves nothing";

  // Drain site 0 (asked at site 0 itself: no site acts at another for an
  // operator): all of its pending jobs leave.
  {
    v1::DrainRequest req;
    req.set_site("site-0");
    req.set_drain(true);
    v1::DrainReply reply;
    auto ctx = (*f)->Context();
    ASSERT_TRUE((*f)->Admin(0)->Drain(ctx.get(), req, &reply).ok());
  }
  // Wait until the coordinator has heard capacity 0 from site 0.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto round = RunRound(**f, 0);
  ASSERT_TRUE(round.ok()) << round.status();
  std::vector<int64_t> after = PendingLoads(**f);
  EXPECT_EQ(after[0], 0);
  EXPECT_EQ(after[1] + after[2] + after[3], 40);
}

}  // namespace
}  // namespace hyperfed::testing

namespace hyperfed::testing {
namespace {

// Waits until the pending loads settle at `expected` (rounds started by the
// daemons themselves).
bool WaitLoads(TestFederation& f, const std::vector<int64_t>& expected, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    std::vector<int64_t> w;
    for (int i = 0; i < f.size(); ++i) w.push_back(CountState(ListJobs(f, i), "pending"));
    if (w == expected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

TEST(AutomaticRoundTest, AnUnderloadedSiteAsksForARound) {
  const std::vector<int> slots{1, 1, 1, 1};
  auto f = TestFederation::Start({.sites = 4, .slots = slots, .underload_threshold = 5});
  ASSERT_TRUE(f.ok()) << f.status();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(Submit(**f, i, 1, kLong).ok());
    ASSERT_TRUE(WaitRunning(**f, i, 1, absl::Seconds(10)));
  }
  ASSERT_TRUE(Submit(**f, 2, 100, kLong).ok());
  // Sites 0, 1 and 3 hold nothing pending (< 5) while site 2 has 100.
  EXPECT_TRUE(WaitLoads(**f, {25, 25, 25, 25}, absl::Seconds(30))) << (*f)->Log(0) << (*f)->Log(1);
  std::string logs;
  for (int i : {0, 1, 3}) logs += (*f)->Log(i);
  EXPECT_NE(logs.find("underloaded"), std::string::npos) << logs;
  EXPECT_NE((*f)->Log(0).find("(underload"), std::string::npos) << "the coordinator started it for that reason";
}

TEST(AutomaticRoundTest, TheTimerBalancesWhenTheImbalanceIsWorthIt) {
  const std::vector<int> slots{1, 1};
  auto f = TestFederation::Start({.sites = 2, .slots = slots, .interval = "1s"});
  ASSERT_TRUE(f.ok()) << f.status();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(Submit(**f, i, 1, kLong).ok());
    ASSERT_TRUE(WaitRunning(**f, i, 1, absl::Seconds(10)));
  }
  ASSERT_TRUE(Submit(**f, 1, 30, kLong).ok());
  EXPECT_TRUE(WaitLoads(**f, {15, 15}, absl::Seconds(30))) << (*f)->Log(0);
  EXPECT_NE((*f)->Log(0).find("(timer)"), std::string::npos) << (*f)->Log(0);
}

}  // namespace
}  // namespace hyperfed::testing
