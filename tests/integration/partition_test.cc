// A partition: two halves of a federation that can no longer talk. Neither
// side loses or duplicates a job, each side balances within itself, and the
// federation heals when the link returns. The cut is made twice: over real
// links between network namespaces (the link between the sides goes down;
// needs root), and with the daemon's partition test hook
// (daemon/server/partition_hook.h), which refuses every call across the cut
// at both ends and runs anywhere.

#include <functional>
#include <thread>

#include "daemon/balance/plan.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"
#include "tests/integration/netns.h"

namespace hyperfed::testing {
namespace {

constexpr int64_t kLong = 3'600'000;

std::vector<int64_t> Pending(TestFederation& f) {
  std::vector<int64_t> w;
  for (int i = 0; i < f.size(); ++i) w.push_back(CountState(ListJobs(f, i), "pending"));
  return w;
}

// Sites {0, 1} on one side, {2, 3} on the other; `cut` and `heal` act on
// the link between them.
void EachSideBalancesAloneAndTheFederationHeals(const FederationOptions& o,
                                                const std::function<void(TestFederation&)>& cut,
                                                const std::function<void(TestFederation&)>& heal) {
  auto f = TestFederation::Start(o);
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(Submit(fed, i, 1, kLong).ok());
    ASSERT_TRUE(WaitRunning(fed, i, 1, absl::Seconds(10)));
  }
  ASSERT_TRUE(Submit(fed, 0, 40, kLong).ok());
  ASSERT_TRUE(Submit(fed, 3, 60, kLong).ok());
  const auto before = AllKeys(fed);

  cut(fed);
  // A round started before the sides notice ends early and moves nothing across.
  auto early = RunRound(fed, 0);
  ASSERT_TRUE(early.ok()) << early.status();
  EXPECT_FALSE(early->ok()) << early->message();
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(20), 1).ok()) << "each site sees only its own side";

  // Each side has its own coordinator (the lowest live label it sees).
  auto left = RunRound(fed, 0);
  auto right = RunRound(fed, 3);  // site 2 coordinates the right side
  ASSERT_TRUE(left.ok() && right.ok());
  EXPECT_TRUE(left->ok()) << left->message();
  EXPECT_TRUE(right->ok()) << right->message();
  EXPECT_EQ(Pending(fed), (std::vector<int64_t>{20, 20, 30, 30}));
  EXPECT_EQ(AllKeys(fed), before) << "no job lost or duplicated on either side";

  // Heal: everyone sees everyone again and a round spans the whole cube.
  heal(fed);
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(20)).ok());
  // A site may still be caught in the round started at the cut, and a
  // message held up in the dropped link may arrive now: rounds are fenced
  // (docs/design.md §6.3), so the first round after the heal supersedes the
  // stale one and runs whole.
  auto whole = RunRound(fed, 2);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_TRUE(whole->ok()) << whole->message();
  EXPECT_NE(whole->message().find("faults none"), std::string::npos) << whole->message();
  EXPECT_EQ(Pending(fed), (std::vector<int64_t>{25, 25, 25, 25}));
  EXPECT_EQ(AllKeys(fed), before);
}

TEST(PartitionTest, NetworkNamespacesEachSideBalancesAloneNothingIsLostAndTheFederationHeals) {
  auto net = NetnsPair::Create();
  if (!net.ok())
    GTEST_SKIP() << "cannot make network namespaces here (" << net.status().message()
                 << "); PartitionTest.HookEachSide... covers the partition with the test hook";
  NetnsPair& n = **net;
  // No hysteresis: the round after the heal rebalances what each side moved.
  FederationOptions o{.sites = 4, .slots = {1, 1, 1, 1}, .hysteresis = "0s"};
  o.hosts = {n.host_a(), n.host_a(), n.host_b(), n.host_b()};
  o.netns = {n.ns_a(), n.ns_a(), n.ns_b(), n.ns_b()};
  EachSideBalancesAloneAndTheFederationHeals(
      o, [&](TestFederation&) { ASSERT_TRUE(n.Cut().ok()); }, [&](TestFederation&) { ASSERT_TRUE(n.Heal().ok()); });
}

TEST(PartitionTest, HookEachSideBalancesAloneNothingIsLostAndTheFederationHeals) {
  EachSideBalancesAloneAndTheFederationHeals(
      {.sites = 4, .slots = {1, 1, 1, 1}, .hysteresis = "0s", .partition_hook = true},
      [](TestFederation& fed) {
        fed.Cut(0, {2, 3});
        fed.Cut(1, {2, 3});
        fed.Cut(2, {0, 1});
        fed.Cut(3, {0, 1});
      },
      [](TestFederation& fed) {
        for (int i = 0; i < 4; ++i) fed.Heal(i);
      });
}

}  // namespace
}  // namespace hyperfed::testing
