#include "daemon/balance/rid.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

TEST(RidTest, EmptyNodeAsksEachNeighbourInProportionToItsLoad) {
  // l_avg = (0 + 10 + 20 + 30) / 4 = 15; phi_k = 15 * l(k) / 60.
  EXPECT_EQ(RidRequests(0, {10, 20, 30}), (std::vector<Load>{2, 5, 7}));
}

TEST(RidTest, OwnLoadIsSubtractedFromTheLocalAverage) {
  // l_avg = (3 + 9 + 9 + 15) / 4 = 9; wants 6, split 6 * l(k) / 33.
  EXPECT_EQ(RidRequests(3, {9, 9, 15}), (std::vector<Load>{1, 1, 2}));
  EXPECT_EQ(RidRequests(10, {9, 9, 15}), (std::vector<Load>{0, 0, 0}));  // above average
  EXPECT_EQ(RidRequests(0, {0, 0}), (std::vector<Load>{0, 0}));
}

TEST(RidTest, WeightedRequestsTargetLoadPerCapacity) {
  // Capacities 2 (self), 1, 1: target = (0 + 40) * 2 / 4 = 20.
  EXPECT_EQ(RidRequests(0, {20, 20}, 2.0, std::vector<double>{1.0, 1.0}), (std::vector<Load>{10, 10}));
}

TEST(RidTest, GrantNeverExceedsTheDonorsLoad) {
  EXPECT_EQ(RidGrant(10, {4, 5, 6}), (std::vector<Load>{4, 5, 1}));
  EXPECT_EQ(RidGrant(100, {4, 5, 6}), (std::vector<Load>{4, 5, 6}));
}

TEST(RidTest, OneRoundOnA3Cube) {
  auto topo = Topology::Hypercube(3);
  std::vector<Load> loads = {0, 30, 30, 0, 30, 0, 0, 0};
  auto plan = RidPlan(*topo, loads, {}, {.threshold = 1, .max_rounds = 1});
  ASSERT_TRUE(plan.ok());
  // Node 0: neighbours 1, 2, 4 with 30 each: asks floor(90*30/(4*90)) = 7.
  // Nodes 3, 5, 6 each have two loaded neighbours out of three: l_avg =
  // 60 / 4 = 15, so 7 from each. Node 7's neighbours (3, 5, 6) hold nothing.
  // Node 1 is asked by 0, 3 and 5 for 7 + 7 + 7 = 21 <= 30.
  EXPECT_EQ(plan->final_loads[0], 21);
  EXPECT_EQ(plan->final_loads[3], 14);
  EXPECT_EQ(plan->final_loads[1], 9);
  EXPECT_EQ(plan->final_loads[7], 0);
  EXPECT_EQ(plan->metrics.steps, 3);
  EXPECT_EQ(TotalLoad(plan->final_loads), 90);
}

TEST(RidTest, RejectsBadInput) {
  auto topo = Topology::Hypercube(2);
  EXPECT_FALSE(RidPlan(*topo, {1, 2, 3}, {}, {}).ok());
  EXPECT_FALSE(RidPlan(*topo, {1, 2, 3, -1}, {}, {}).ok());
  EXPECT_FALSE(RidPlan(*topo, {1, 2, 3, 4}, std::vector<double>{1, 0, 1, 1}, {}).ok());
}

TEST(RidPropertyTest, RandomTopologiesConserveAndRespectFaults) {
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 300; ++trial) {
    absl::StatusOr<Topology> topo;
    if (trial % 3 == 0) {
      topo = Topology::Torus({2 + static_cast<int>(rng() % 5), 2 + static_cast<int>(rng() % 5)});
    } else {
      const int n = 2 + static_cast<int>(rng() % 5);
      std::vector<NodeId> faults;
      for (int i = 0; i < static_cast<int>(rng() % 4); ++i) faults.push_back(static_cast<NodeId>(rng() % (1 << n)));
      topo = Topology::Hypercube(n, faults);
    }
    ASSERT_TRUE(topo.ok());
    const int size = topo->size();
    std::vector<Load> loads(size);
    std::vector<double> caps(size);
    for (int u = 0; u < size; ++u) {
      loads[u] = rng() % 4 == 0 ? 0 : static_cast<Load>(rng() % 200);
      caps[u] = 1.0 + static_cast<double>(rng() % 5);
    }
    RidOptions opt{.threshold = static_cast<Load>(rng() % 20), .max_rounds = 20};
    auto plan = RidPlan(*topo, loads, trial % 2 ? absl::Span<const double>(caps) : absl::Span<const double>(), opt);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(TotalLoad(plan->final_loads), TotalLoad(loads));
    for (int u = 0; u < size; ++u) {
      EXPECT_GE(plan->final_loads[u], 0);
      if (!topo->alive(u)) {
        EXPECT_EQ(plan->final_loads[u], loads[u]);
      }
    }
    for (const Transfer& t : plan->transfers) {
      EXPECT_TRUE(topo->alive(t.from) && topo->alive(t.to));
      const auto nb = topo->Neighbors(t.to);
      EXPECT_NE(std::find(nb.begin(), nb.end(), t.from), nb.end());
      EXPECT_LE(t.step, opt.max_rounds);
    }
    // Unweighted receivers never pass their local average, so the largest
    // load never grows.
    if (trial % 2 == 0) {
      Load before = 0, after = 0;
      for (int u = 0; u < size; ++u)
        if (topo->alive(u)) before = std::max(before, loads[u]), after = std::max(after, plan->final_loads[u]);
      EXPECT_LE(after, before);
    }
  }
}

}  // namespace
}  // namespace hyperfed::balance
