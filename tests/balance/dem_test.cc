#include "daemon/balance/dem.h"

#include <random>

#include "daemon/balance/quota.h"
#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

TEST(DemTest, HeavierKeepsCeilingAndSmallDifferencesDoNotMove) {
  EXPECT_EQ(DemShare(0, 0, 7, 4, DemVariant::kHeavierKeepsCeiling), 6);
  EXPECT_EQ(DemShare(1, 0, 4, 7, DemVariant::kHeavierKeepsCeiling), 5);
  EXPECT_EQ(DemShare(0, 0, 5, 4, DemVariant::kHeavierKeepsCeiling), 5);  // diff 1: no move
  EXPECT_EQ(DemShare(1, 0, 4, 5, DemVariant::kHeavierKeepsCeiling), 4);
}

TEST(DemTest, FixedVariantGivesCeilingToBitZeroSide) {
  EXPECT_EQ(DemShare(0b10, 0, 4, 7, DemVariant::kBitZeroKeepsCeiling), 6);
  EXPECT_EQ(DemShare(0b11, 0, 7, 4, DemVariant::kBitZeroKeepsCeiling), 5);
  EXPECT_EQ(DemShare(0b01, 1, 3, 0, DemVariant::kBitZeroKeepsCeiling), 2);
}

TEST(ImprovedDemTest, OddPairSumGoesToSideChosenByNextBit) {
  // 3-cube, dimension 0: pair (0,1) has bit 1 = 0, so the bit-0 side (node 0)
  // takes the extra task; pair (2,3) has bit 1 = 1, so node 3 takes it.
  EXPECT_EQ(ImprovedDemShare(0, 0, 3, 2, 5), 4);
  EXPECT_EQ(ImprovedDemShare(1, 0, 3, 5, 2), 3);
  EXPECT_EQ(ImprovedDemShare(2, 0, 3, 2, 5), 3);
  EXPECT_EQ(ImprovedDemShare(3, 0, 3, 5, 2), 4);
  // Dimension 1: pair (0,2) shares bit 2 = 0 -> node 0; pair (4,6) bit 2 = 1 -> node 6.
  EXPECT_EQ(ImprovedDemShare(0, 1, 3, 0, 9), 5);
  EXPECT_EQ(ImprovedDemShare(6, 1, 3, 0, 9), 5);
}

TEST(ImprovedDemTest, LastDimensionIsPlainDem) {
  EXPECT_EQ(ImprovedDemShare(0, 2, 3, 4, 5), 4);  // heavier (node 4) keeps the ceiling
  EXPECT_EQ(ImprovedDemShare(4, 2, 3, 5, 4), 5);
  EXPECT_EQ(ImprovedDemShare(0, 2, 3, 9, 0), 5);
}

TEST(WeightedImprovedDemTest, ChauFuExampleMoves427InAnEarlyDimension) {
  // chau-fu §4: 640 tasks on 64 processors, 960 on 32.
  const Load u = WeightedImprovedDemShare(0, 0, 2, 640, 960, 64, 32);
  const Load v = WeightedImprovedDemShare(1, 0, 2, 960, 640, 32, 64);
  EXPECT_EQ(u, 640 + 427);
  EXPECT_EQ(u + v, 1600);
}

TEST(WeightedImprovedDemTest, LastDimensionLetsHigherLoadPerCapacityKeepCeiling) {
  EXPECT_EQ(WeightedImprovedDemShare(0, 0, 1, 640, 960, 64, 32), 640 + 426);
}

TEST(WeightedImprovedDemTest, EqualCapacitiesMatchUnweighted) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const int n = 1 + rng() % 6, k = rng() % n;
    const NodeId u = rng() % (1 << n);
    const Load a = rng() % 50, b = rng() % 50;
    EXPECT_EQ(WeightedImprovedDemShare(u, k, n, a, b, 3, 3), ImprovedDemShare(u, k, n, a, b));
  }
}

TEST(WeightedImprovedDemTest, PairFunctionIsSymmetric) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    const int n = 1 + rng() % 8, k = rng() % n;
    const NodeId u = rng() % (1 << n), v = u ^ (1 << k);
    const Load wu = rng() % 1000, wv = rng() % 1000;
    const double pu = 1 + rng() % 16, pv = (rng() % 3 == 0) ? 0.5 + (rng() % 100) / 7.0 : 1 + rng() % 16;
    const Load su = WeightedImprovedDemShare(u, k, n, wu, wv, pu, pv);
    const Load sv = WeightedImprovedDemShare(v, k, n, wv, wu, pv, pu);
    ASSERT_EQ(su + sv, wu + wv) << "u=" << u << " k=" << k << " n=" << n;
    ASSERT_GE(su, 0);
    ASSERT_GE(sv, 0);
    // The share is within one task of the exact proportional split.
    ASSERT_LT(std::abs(su - (wu + wv) * pu / (pu + pv)), 1.0 + 1e-9);
  }
}

class DemPropertyTest : public ::testing::TestWithParam<int> {};

TEST_P(DemPropertyTest, ConservesNeverNegativeAndMeetsBounds) {
  const int n = GetParam();
  std::mt19937_64 rng(100 + n);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<NodeId> faults;
    if (trial % 2 && n >= 2)
      for (int f = 0; f < n / 2; ++f) faults.push_back(rng() % (1 << n));
    std::sort(faults.begin(), faults.end());
    faults.erase(std::unique(faults.begin(), faults.end()), faults.end());
    auto topo = Topology::Hypercube(n, faults);
    ASSERT_TRUE(topo.ok());
    std::vector<Load> w(1 << n);
    std::vector<double> p(1 << n);
    for (NodeId u = 0; u < (1 << n); ++u) {
      w[u] = topo->alive(u) ? rng() % 1000 : 0;
      p[u] = 1 + rng() % 16;
    }
    for (int variant = 0; variant < 4; ++variant) {
      absl::StatusOr<Plan> plan = variant == 0   ? DemPlan(*topo, w, DemVariant::kHeavierKeepsCeiling)
                                  : variant == 1 ? DemPlan(*topo, w, DemVariant::kBitZeroKeepsCeiling)
                                  : variant == 2 ? ImprovedDemPlan(*topo, w)
                                                 : ImprovedDemPlan(*topo, w, p);
      ASSERT_TRUE(plan.ok()) << plan.status();
      EXPECT_EQ(TotalLoad(plan->final_loads), TotalLoad(w));
      for (NodeId u = 0; u < (1 << n); ++u) {
        EXPECT_GE(plan->final_loads[u], 0);
        if (!topo->alive(u)) EXPECT_EQ(plan->final_loads[u], w[u]) << "a faulty node's load moved";
      }
      Load moved = 0;
      for (const Transfer& t : plan->transfers) {
        EXPECT_EQ(__builtin_popcount(t.from ^ t.to), 1) << "transfers go along cube edges";
        EXPECT_TRUE(topo->alive(t.from) && topo->alive(t.to));
        moved += t.count;
      }
      EXPECT_EQ(moved, plan->metrics.tasks_moved);
      if (faults.empty()) {
        // chau-fu: DEM leaves a difference of at most n, improved DEM n/2
        // (Theorem 1; at least 1 when the total is not divisible).
        if (variant <= 1) EXPECT_LE(MaxDiff(plan->final_loads), n);
        if (variant == 2) EXPECT_LE(MaxDiff(plan->final_loads), std::max(1, (n + 1) / 2));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dimensions, DemPropertyTest, ::testing::Values(1, 2, 3, 4, 5, 6, 8));

TEST(DemTest, RefusesWrongInput) {
  auto ring = Topology::Ring(4);
  std::vector<Load> w{1, 2, 3, 4};
  EXPECT_EQ(DemPlan(*ring, w).status().code(), absl::StatusCode::kInvalidArgument);
  auto cube = Topology::Hypercube(2);
  EXPECT_EQ(DemPlan(*cube, std::vector<Load>{1, 2, 3}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DemPlan(*cube, std::vector<Load>{1, -2, 3, 4}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ImprovedDemPlan(*cube, w, std::vector<double>{1, 0, 1, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DemTest, PlanCountsThreeStepsPerDimensionAndTwoMessagesPerPair) {
  auto cube = Topology::Hypercube(3);
  std::vector<Load> w{8, 0, 0, 0, 0, 0, 0, 0};
  auto plan = DemPlan(*cube, w);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->metrics.steps, 9);
  // 4 pairs x 2 load messages x 3 dimensions, plus one message per transfer.
  EXPECT_EQ(plan->metrics.messages, 24 + static_cast<int64_t>(plan->transfers.size()));
  EXPECT_EQ(plan->final_loads, std::vector<Load>(8, 1));
  EXPECT_EQ(plan->metrics.tasks_moved, 4 + 4 + 4);  // 7 must move; DEM moves some twice
  EXPECT_EQ(plan->transfers.front(), (Transfer{1, 0, 1, 4, 1}));
}

}  // namespace
}  // namespace hyperfed::balance
