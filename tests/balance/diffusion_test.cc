#include "daemon/balance/diffusion.h"

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

TEST(DiffusionTest, IntegerStepSendsFloorOfAlphaDifferenceToLighterNeighbours) {
  EXPECT_EQ(DiffusionTransfer(10, 1, 1.0 / 3), 3);
  EXPECT_EQ(DiffusionTransfer(1, 10, 1.0 / 3), 0);
  EXPECT_EQ(DiffusionTransfer(5, 3, 1.0 / 3), 0);
  // Node with 10 between 1 and 4: sends 3 and 2.
  EXPECT_EQ(DiffusionNewLoad(10, std::vector<Load>{1, 4}, 1.0 / 3), 5);
  EXPECT_EQ(DiffusionNewLoad(1, std::vector<Load>{10, 1}, 1.0 / 3), 4);
  EXPECT_DOUBLE_EQ(DiffusionNewLoadReal(3, std::vector<double>{0, 6}, 0.25), 3.0);
}

TEST(DiffusionTest, AlphaMatchesSeed002) {
  const double pi = std::numbers::pi;
  EXPECT_DOUBLE_EQ(*DiffusionAlpha(*Topology::Ring(64), ExchangeParameter::kAverage), 1.0 / 3);
  EXPECT_DOUBLE_EQ(*DiffusionAlpha(*Topology::Ring(64), ExchangeParameter::kOptimal),
                   1.0 / (3 - std::cos(2 * pi / 64)));
  EXPECT_DOUBLE_EQ(*DiffusionAlpha(*Topology::Mesh({8, 8}), ExchangeParameter::kOptimal), 0.25);
  EXPECT_DOUBLE_EQ(*DiffusionAlpha(*Topology::Mesh({8, 8}), ExchangeParameter::kAverage), 0.2);
  EXPECT_DOUBLE_EQ(*DiffusionAlpha(*Topology::Hypercube(3), ExchangeParameter::kOptimal), 0.25);
  auto graph = Topology::Graph(3, {{0, 1}, {1, 2}});
  EXPECT_FALSE(DiffusionAlpha(*graph, ExchangeParameter::kOptimal).ok());
}

TEST(DiffusionPlanTest, RandomRunsConserveAndReachAFixedPoint) {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 150; ++trial) {
    const int a = 2 + static_cast<int>(rng() % 6), b = 1 + static_cast<int>(rng() % 5);
    const int pick = static_cast<int>(rng() % 3);
    auto topo = pick == 0 ? Topology::Torus({a, b}) : pick == 1 ? Topology::Mesh({a, b}) : Topology::Hypercube(a % 5);
    std::vector<Load> w(topo->size());
    for (Load& x : w) x = static_cast<Load>(rng() % 500);
    IterativeOptions o;
    o.parameter = rng() % 2 ? ExchangeParameter::kOptimal : ExchangeParameter::kAverage;
    o.max_steps = 50000;
    auto plan = DiffusionPlan(*topo, w, o);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(TotalLoad(plan->final_loads), TotalLoad(w));
    EXPECT_LE(WorkloadVariance(plan->final_loads), WorkloadVariance(w) + 1e-9);
    // At the integer fixed point no neighbour pair differs enough to move.
    const double alpha = *DiffusionAlpha(*topo, o.parameter);
    if (plan->metrics.steps < o.max_steps && WorkloadVariance(plan->final_loads) > 1.0) {
      for (auto [u, v] : topo->Edges()) {
        EXPECT_EQ(DiffusionTransfer(plan->final_loads[u], plan->final_loads[v], alpha), 0);
        EXPECT_EQ(DiffusionTransfer(plan->final_loads[v], plan->final_loads[u], alpha), 0);
      }
    }
    for (const Transfer& t : plan->transfers) EXPECT_LE(t.step, plan->metrics.steps);
  }
}

TEST(DiffusionPlanTest, MergedBlocksKeepLoadsAndMetrics) {
  std::mt19937_64 rng(10);
  for (int trial = 0; trial < 40; ++trial) {
    auto topo = Topology::Torus({3 + trial % 5, 4});
    std::vector<Load> w(topo->size());
    for (Load& x : w) x = static_cast<Load>(rng() % 1000);
    IterativeOptions o;
    auto exact = DiffusionPlan(*topo, w, o);
    o.merge_block = 2 + trial;
    auto merged = DiffusionPlan(*topo, w, o);
    ASSERT_TRUE(exact.ok() && merged.ok());
    EXPECT_EQ(merged->final_loads, exact->final_loads);
    EXPECT_EQ(merged->metrics.tasks_moved, exact->metrics.tasks_moved);
    EXPECT_EQ(merged->metrics.messages, exact->metrics.messages);
    EXPECT_EQ(merged->metrics.steps, exact->metrics.steps);
  }
}

TEST(DiffusionTraceTest, RealValuedRunReachesVarianceTarget) {
  auto mesh = Topology::Mesh({4, 4});
  std::vector<double> w(16, 0.0);
  w[5] = 1600;
  IterativeOptions o;
  o.parameter = ExchangeParameter::kOptimal;
  auto trace = DiffusionTraceReal(*mesh, w, o, /*keep_variance=*/true);
  ASSERT_TRUE(trace.ok());
  EXPECT_TRUE(trace->reached);
  EXPECT_LE(trace->final_variance, 1.0);
  EXPECT_EQ(trace->variance.size(), static_cast<size_t>(trace->steps + 1));
  double total = 0;
  for (double x : trace->final_loads) total += x;
  EXPECT_NEAR(total, 1600, 1e-6);
}

}  // namespace
}  // namespace hyperfed::balance
