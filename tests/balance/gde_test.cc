#include "daemon/balance/gde.h"

#include <cmath>
#include <numbers>
#include <random>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

TEST(GdeTest, PairTransferFollowsSeed000Figure2) {
  EXPECT_EQ(GdeTransfer(9, 3, 0.5), 3);
  EXPECT_EQ(GdeTransfer(3, 9, 0.5), -3);
  EXPECT_EQ(GdeTransfer(4, 3, 0.5), 0);   // difference 1: nothing moves
  EXPECT_EQ(GdeTransfer(10, 7, 0.5), 1);  // floor(3/2)
  EXPECT_EQ(GdeTransfer(10, 0, 0.723), 7);
  EXPECT_EQ(GdeNewLoad(10, 0, 0.723), 3);
  EXPECT_EQ(GdeNewLoad(0, 10, 0.723), 7);
  EXPECT_DOUBLE_EQ(GdeTransferReal(10, 4, 0.5), 3.0);
}

TEST(GdeTest, PairTransferIsAntisymmetric) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 500; ++i) {
    const Load a = static_cast<Load>(rng() % 2000), b = static_cast<Load>(rng() % 2000);
    const double lambda = 0.5 + 0.49 * static_cast<double>(rng() % 1000) / 1000.0;
    EXPECT_EQ(GdeTransfer(a, b, lambda), -GdeTransfer(b, a, lambda));
    EXPECT_EQ(GdeNewLoad(a, b, lambda) + GdeNewLoad(b, a, lambda), a + b);
  }
}

TEST(GdeTest, OptimalLambdaMatchesSeed002Formulas) {
  const double pi = std::numbers::pi;
  EXPECT_DOUBLE_EQ(*GdeLambda(*Topology::Ring(64), ExchangeParameter::kOptimal), 1 / (1 + std::sin(2 * pi / 64)));
  // wu-shu §6 uses 0.723 for the 8x8 mesh and the 16x16 torus.
  EXPECT_NEAR(*GdeLambda(*Topology::Mesh({8, 8}), ExchangeParameter::kOptimal), 0.723, 5e-4);
  EXPECT_NEAR(*GdeLambda(*Topology::Torus({16, 16, 16}), ExchangeParameter::kOptimal), 0.723, 5e-4);
  EXPECT_DOUBLE_EQ(*GdeLambda(*Topology::Hypercube(4), ExchangeParameter::kOptimal), 0.5);
  EXPECT_DOUBLE_EQ(*GdeLambda(*Topology::Ring(64), ExchangeParameter::kAverage), 0.5);
  auto graph = Topology::Graph(3, {{0, 1}, {1, 2}});
  EXPECT_FALSE(GdeLambda(*graph, ExchangeParameter::kOptimal).ok());
  EXPECT_TRUE(GdeLambda(*graph, ExchangeParameter::kAverage).ok());
}

void ExpectProperColouring(const Topology& topo, size_t want_classes) {
  const auto classes = EdgeColoring(topo);
  EXPECT_EQ(classes.size(), want_classes) << topo.Name();
  std::multiset<std::pair<NodeId, NodeId>> seen;
  for (const auto& c : classes) {
    std::set<NodeId> ends;
    for (auto [u, v] : c) {
      EXPECT_TRUE(ends.insert(u).second) << topo.Name() << " class is not a matching";
      EXPECT_TRUE(ends.insert(v).second) << topo.Name() << " class is not a matching";
      seen.insert({std::min(u, v), std::max(u, v)});
    }
  }
  const auto edges = topo.Edges();
  const std::multiset<std::pair<NodeId, NodeId>> want(edges.begin(), edges.end());
  EXPECT_EQ(seen, want) << topo.Name();
}

TEST(EdgeColoringTest, ClassesAreMatchingsCoveringEveryEdgeOnce) {
  ExpectProperColouring(*Topology::Torus({4, 4}), 4);
  ExpectProperColouring(*Topology::Ring(5), 3);  // odd ring: end-round edge alone
  ExpectProperColouring(*Topology::Ring(2), 1);
  ExpectProperColouring(*Topology::Mesh({3, 3}), 4);
  ExpectProperColouring(*Topology::Torus({3, 6, 2}), 6);
  ExpectProperColouring(*Topology::Hypercube(3), 3);
  ExpectProperColouring(*Topology::Hypercube(3, {5}), 3);
  auto star = Topology::Graph(5, {{0, 1}, {0, 2}, {0, 3}, {3, 4}, {1, 2}});
  ExpectProperColouring(*star, 3);
}

TEST(GdePlanTest, HypercubeSweepIsDemAndDiffersByAtMostN) {
  auto cube = Topology::Hypercube(3);
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<Load> w(8);
    for (Load& x : w) x = static_cast<Load>(rng() % 100);
    IterativeOptions o;
    o.max_steps = 3;  // one sweep
    auto plan = GdePlan(*cube, w, o);
    ASSERT_TRUE(plan.ok());
    EXPECT_LE(MaxDiff(plan->final_loads), 3);
    EXPECT_LE(plan->metrics.steps, 3);
  }
  // Real-valued: one sweep of ADE on a hypercube averages exactly.
  IterativeOptions o;
  o.target_variance = 1e-9;
  auto trace = GdeTraceReal(*cube, std::vector<double>{8, 0, 0, 0, 0, 0, 0, 0}, o);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->steps, 3);
  for (double x : trace->final_loads) EXPECT_NEAR(x, 1.0, 1e-12);
}

TEST(GdePlanTest, RandomRunsConserveAndEndWithNeighboursWithinOne) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 150; ++trial) {
    const int pick = static_cast<int>(rng() % 3);
    const int a = 2 + static_cast<int>(rng() % 7), b = 1 + static_cast<int>(rng() % 5);
    auto topo = pick == 0 ? Topology::Torus({a, b}) : pick == 1 ? Topology::Mesh({a, b}) : Topology::Ring(a + 1);
    std::vector<Load> w(topo->size());
    for (Load& x : w) x = static_cast<Load>(rng() % 200);
    IterativeOptions o;
    o.parameter = rng() % 2 ? ExchangeParameter::kOptimal : ExchangeParameter::kAverage;
    o.stop = StopTest::kNeighborDifference;
    o.max_steps = 20000;
    auto plan = GdePlan(*topo, w, o);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(TotalLoad(plan->final_loads), TotalLoad(w));
    EXPECT_LE(MaxNeighborDifference(*topo, plan->final_loads), 1) << topo->Name();
    EXPECT_LE(WorkloadVariance(plan->final_loads), WorkloadVariance(w) + 1e-9);
    const size_t colours = EdgeColoring(*topo).size();
    EXPECT_EQ(plan->metrics.steps % static_cast<int64_t>(colours), 0);
  }
}

TEST(GdePlanTest, MergedBlocksKeepLoadsAndMetrics) {
  std::mt19937_64 rng(4);
  for (int trial = 0; trial < 60; ++trial) {
    auto topo = trial % 2 ? Topology::Ring(6 + trial % 7) : Topology::Torus({4, 3 + trial % 4});
    std::vector<Load> w(topo->size());
    for (Load& x : w) x = static_cast<Load>(rng() % 300);
    IterativeOptions o;
    o.parameter = ExchangeParameter::kOptimal;
    auto exact = GdePlan(*topo, w, o);
    o.merge_block = 1 + static_cast<int64_t>(rng() % 40);
    auto merged = GdePlan(*topo, w, o);
    ASSERT_TRUE(exact.ok() && merged.ok());
    EXPECT_EQ(merged->final_loads, exact->final_loads);
    EXPECT_EQ(merged->metrics.tasks_moved, exact->metrics.tasks_moved);
    EXPECT_EQ(merged->metrics.messages, exact->metrics.messages);
    EXPECT_EQ(merged->metrics.steps, exact->metrics.steps);
    EXPECT_LE(merged->transfers.size(), exact->transfers.size());
    for (const Transfer& t : merged->transfers) EXPECT_LE(t.step, (exact->metrics.steps - 1) / o.merge_block + 1);
  }
}

TEST(GdePlanTest, StopsAtVarianceTargetOrStepBudget) {
  auto ring = Topology::Ring(16);
  std::vector<Load> w(16, 0);
  w[0] = 1600;
  IterativeOptions o;
  o.target_variance = 1e6;
  auto plan = GdePlan(*ring, w, o);
  ASSERT_TRUE(plan.ok());
  EXPECT_LE(WorkloadVariance(plan->final_loads), 1e6);
  EXPECT_GT(plan->metrics.steps, 0);
  o.target_variance = 1.0;
  o.max_steps = 5;
  auto short_plan = GdePlan(*ring, w, o);
  EXPECT_EQ(short_plan->metrics.steps, 5);
  EXPECT_EQ(GdePlan(*ring, std::vector<Load>{1, 2}, o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WorkloadVarianceTest, IsSumOfSquaredDeviations) {
  EXPECT_DOUBLE_EQ(WorkloadVariance(std::vector<Load>{1, 3}), 2.0);
  EXPECT_DOUBLE_EQ(WorkloadVarianceReal(std::vector<double>{0, 0, 3}), 6.0);
}

}  // namespace
}  // namespace hyperfed::balance
