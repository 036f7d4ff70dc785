#include "daemon/balance/exact.h"

#include <random>

#include "daemon/balance/quota.h"
#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

TEST(ExactTest, GatherMergesPartnerRowsInLabelOrder) {
  LoadTable a{{0, 5, 1}, {1, 7, 2}};
  LoadTable b{{2, 1, 1}, {3, 0, 4}};
  auto m = MergeLoadTables(b, a);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, (LoadTable{{0, 5, 1}, {1, 7, 2}, {2, 1, 1}, {3, 0, 4}}));
  EXPECT_EQ(*MergeLoadTables(a, b), *m) << "both partners end with the same table";
}

TEST(ExactTest, GatherRefusesMalformedOrConflictingRows) {
  LoadTable mine{{0, 5, 1}};
  EXPECT_FALSE(MergeLoadTables(mine, LoadTable{{1, -1, 1}}).ok());
  EXPECT_FALSE(MergeLoadTables(mine, LoadTable{{1, 1, -1}}).ok());
  EXPECT_TRUE(MergeLoadTables(mine, LoadTable{{1, 1, 0}}).ok()) << "a drained site has capacity 0";
  EXPECT_FALSE(MergeLoadTables(mine, LoadTable{{2, 1, 1}, {1, 1, 1}}).ok());
  EXPECT_FALSE(MergeLoadTables(mine, LoadTable{{0, 6, 1}}).ok());
  EXPECT_TRUE(MergeLoadTables(mine, LoadTable{{0, 5, 1}}).ok());
}

TEST(ExactTest, NearestSurplusFillsDeficitInsideSmallestSubcube) {
  // 2-cube: node 0 has 6 over, node 1 and node 3 lack 3 each. Node 1 shares a
  // 1-subcube with node 0, so it is filled first; node 3 gets the rest.
  LoadTable t{{0, 9, 1}, {1, 0, 1}, {2, 3, 1}, {3, 0, 1}};
  DirectPlan p = PlanDirectTransfers(t);
  EXPECT_EQ(p.quotas, (std::vector<Load>{3, 3, 3, 3}));
  ASSERT_EQ(p.transfers.size(), 2u);
  EXPECT_EQ(p.transfers[0], (Transfer{1, 0, 1, 3, 1}));
  EXPECT_EQ(p.transfers[1], (Transfer{1, 0, 3, 3, 2}));
  EXPECT_EQ(OutgoingTransfers(p, 0).size(), 2u);
  EXPECT_TRUE(OutgoingTransfers(p, 2).empty());
}

TEST(ExactTest, RosterCostsChooseTheCheapestDestination) {
  // Quotas 3 each: site 0 has 5 over, site 2 one over, sites 1 and 3 lack 3.
  LoadTable t{{0, 8, 1}, {1, 0, 1}, {2, 4, 1}, {3, 0, 1}};
  PairCost cost = [](NodeId from, NodeId to) -> int64_t { return (from == 0 && to == 3) ? 1 : 10; };
  DirectPlan p = PlanDirectTransfers(t, cost);
  Load moved = 0;
  for (const Transfer& x : p.transfers) moved += x.count;
  EXPECT_EQ(moved, 6);
  EXPECT_EQ(p.transfers.front().to, 1);  // sorted by (from, to); 0 -> 1 gets the rest after 0 -> 3
  bool cheap_filled = false;
  for (const Transfer& x : p.transfers)
    if (x.from == 0 && x.to == 3) cheap_filled = x.count == 3;
  EXPECT_TRUE(cheap_filled) << "the cheap pair takes all it can";
}

class ExactPropertyTest : public ::testing::TestWithParam<int> {};

TEST_P(ExactPropertyTest, ExactShareMinimumMovesOneStepDirect) {
  const int n = GetParam();
  std::mt19937_64 rng(500 + n);
  auto topo = Topology::Hypercube(n);
  for (int trial = 0; trial < 150; ++trial) {
    std::vector<Load> w(1 << n);
    std::vector<double> p(1 << n);
    const bool equal = trial % 3 == 0;
    for (NodeId u = 0; u < (1 << n); ++u) {
      w[u] = (trial % 5 == 1 && u != 0) ? 0 : rng() % 501;  // some rounds: everything on one site
      p[u] = equal ? 4 : (trial % 2 ? 1 + rng() % 16 : 0.5 + (rng() % 1000) / 37.0);
    }
    auto plan = ExactPlan(*topo, w, p);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(TotalLoad(plan->final_loads), TotalLoad(w));
    EXPECT_LT(MaxShareError(plan->final_loads, p), 1.0);
    auto quotas = Apportion(TotalLoad(w), p);
    EXPECT_EQ(plan->final_loads, quotas);
    EXPECT_EQ(plan->metrics.tasks_moved, MinimumMoves(w, quotas)) << "every job moves at most once";
    EXPECT_EQ(plan->metrics.steps, n + 1);
    // A site either sends or receives, never both, so no job moves twice.
    std::vector<int> role(1 << n, 0);
    for (const Transfer& t : plan->transfers) {
      EXPECT_EQ(t.step, 1);
      EXPECT_NE(role[t.from], -1);
      EXPECT_NE(role[t.to], 1);
      role[t.from] = 1;
      role[t.to] = -1;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dimensions, ExactPropertyTest, ::testing::Values(0, 1, 2, 3, 5, 7));

TEST(ExactFaultsTest, BalancesAroundFaultsExactlyWithMinimumMoves) {
  std::mt19937_64 rng(77);
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 2 + rng() % 6;
    const int nf = 1 + rng() % n;
    std::vector<NodeId> faults;
    while (static_cast<int>(faults.size()) < nf) {
      NodeId f = rng() % (1 << n);
      if (std::find(faults.begin(), faults.end(), f) == faults.end()) faults.push_back(f);
    }
    auto topo = Topology::Hypercube(n, faults);
    ASSERT_TRUE(topo.ok());
    if (!topo->Connected()) continue;  // partitions: covered below
    ++checked;
    std::vector<Load> w(1 << n);
    std::vector<double> p(1 << n);
    for (NodeId u = 0; u < (1 << n); ++u) {
      w[u] = rng() % 501;  // faulty nodes keep whatever they hold
      p[u] = 1 + rng() % 16;
    }
    auto plan = ExactPlan(*topo, w, p);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const auto& alive = topo->alive_mask();
    auto quotas = Apportion(TotalLoad(w, alive), p, alive);
    for (NodeId u = 0; u < (1 << n); ++u) {
      if (topo->alive(u))
        EXPECT_EQ(plan->final_loads[u], quotas[u]);
      else
        EXPECT_EQ(plan->final_loads[u], w[u]) << "a failed site's jobs are out of reach";
    }
    Load minimum = 0;
    for (NodeId u = 0; u < (1 << n); ++u)
      if (topo->alive(u)) minimum += std::max<Load>(0, w[u] - quotas[u]);
    EXPECT_EQ(plan->metrics.tasks_moved, minimum);
    EXPECT_LT(MaxShareError(plan->final_loads, p, alive), 1.0);
    for (const Transfer& t : plan->transfers) EXPECT_TRUE(topo->alive(t.from) && topo->alive(t.to));
  }
  EXPECT_GT(checked, 300);
}

TEST(ExactFaultsTest, PartitionedRemainderBalancesOnItsOwnSide) {
  // 2-cube with 1 and 2 failed: 0 and 3 cannot reach each other.
  auto topo = Topology::Hypercube(2, {1, 2});
  std::vector<Load> w{10, 4, 4, 0};
  auto plan = ExactPlan(*topo, w, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->final_loads, w) << "nothing crosses a partition";
}

TEST(ExactFaultsTest, ExampleTwoFaultsUseSubcubeAndTreeSteps) {
  // nam Example 2: balancing subcube X0X1 (k = 2), tree depth 2:
  // 2 up + 2 exchanges + 2 down + 1 migration.
  auto topo = Topology::Hypercube(4, {0b0101, 0b0110, 0b1000, 0b1010});
  std::vector<Load> w(16, 10);
  w[0b0001] = 0;
  w[0b1111] = 40;
  for (NodeId f : topo->faults()) w[f] = 0;
  auto plan = ExactPlan(*topo, w, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->metrics.steps, 7);
  EXPECT_LE(MaxDiff(plan->final_loads, topo->alive_mask()), 1);
}

}  // namespace
}  // namespace hyperfed::balance

namespace hyperfed::balance {
namespace {

TEST(ExactTest, DrainedSiteWithZeroCapacitySendsEverythingAndTakesNothing) {
  LoadTable t{{0, 10, 0}, {1, 2, 1}, {2, 0, 1}, {3, 0, 2}};
  DirectPlan p = PlanDirectTransfers(t);
  EXPECT_EQ(p.quotas, (std::vector<Load>{0, 3, 3, 6}));
  for (const Transfer& x : p.transfers) EXPECT_NE(x.to, 0);
}

TEST(ExactTest, EverySiteDrainedMovesNothing) {
  LoadTable t{{0, 10, 0}, {1, 2, 0}};
  DirectPlan p = PlanDirectTransfers(t);
  EXPECT_TRUE(p.transfers.empty());
  EXPECT_EQ(p.quotas, (std::vector<Load>{10, 2}));
}

}  // namespace
}  // namespace hyperfed::balance
