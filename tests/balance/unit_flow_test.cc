#include "daemon/balance/unit_flow.h"

#include <random>

#include "daemon/balance/quota.h"
#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

TEST(UnitFlowTest, ChainFlowIsTheSubtreeImbalance) {
  // Chain 0-1-2-3 rooted at 0 with loads 0,0,0,8: quota 2 each; the edge
  // 3->2 carries 6, 2->1 carries 4, 1->0 carries 2.
  auto chain = Topology::Chain(4);
  auto plan = UnitFlowPlan(*chain, std::vector<Load>{0, 0, 0, 8});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->final_loads, (std::vector<Load>{2, 2, 2, 2}));
  EXPECT_EQ(plan->metrics.tasks_moved, 12);
  EXPECT_EQ(plan->transfers.front(), (Transfer{1, 3, 2, 6, 1}));
}

TEST(UnitFlowTest, UsesOnlySpanningTreeEdges) {
  auto torus = Topology::Torus({4, 4});
  std::mt19937_64 rng(5);
  std::vector<Load> w(16);
  for (auto& x : w) x = rng() % 100;
  auto tree = BreadthFirstTree(*torus, 0);
  ASSERT_TRUE(tree.ok());
  auto plan = UnitFlowPlan(*torus, w);
  ASSERT_TRUE(plan.ok());
  for (const Transfer& t : plan->transfers)
    EXPECT_TRUE(tree->parent[t.from] == t.to || tree->parent[t.to] == t.from) << t.from << "->" << t.to;
}

TEST(UnitFlowTest, StepFunctionAddsChildFlows) {
  EXPECT_EQ(UnitFlowToParent(3, std::vector<Load>{-2, 5}), 6);
  EXPECT_EQ(UnitFlowToParent(-4, {}), -4);
}

TEST(UnitFlowTest, BalancesAnyConnectedGraphExactlyByCapacity) {
  std::mt19937_64 rng(17);
  for (int t = 0; t < 300; ++t) {
    const int n = 2 + rng() % 30;
    std::vector<std::pair<NodeId, NodeId>> edges;
    for (int v = 1; v < n; ++v) edges.emplace_back(rng() % v, v);  // a random tree ...
    for (int e = 0; e < n / 2; ++e) {                              // ... plus some chords
      NodeId a = rng() % n, b = rng() % n;
      if (a != b) edges.emplace_back(a, b);
    }
    auto g = Topology::Graph(n, edges);
    ASSERT_TRUE(g.ok()) << g.status();
    std::vector<Load> w(n);
    std::vector<double> p(n);
    for (int i = 0; i < n; ++i) {
      w[i] = rng() % 500;
      p[i] = 1 + rng() % 16;
    }
    auto plan = UnitFlowPlan(*g, w, p, rng() % n);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(TotalLoad(plan->final_loads), TotalLoad(w));
    EXPECT_LT(MaxShareError(plan->final_loads, p), 1.0);
    EXPECT_EQ(plan->final_loads, Apportion(TotalLoad(w), p));
    for (Load x : plan->final_loads) EXPECT_GE(x, 0);
  }
}

TEST(UnitFlowTest, RefusesDisconnectedAliveNodes) {
  auto split = Topology::Hypercube(2, {1, 2});
  EXPECT_EQ(UnitFlowPlan(*split, std::vector<Load>{1, 0, 0, 3}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hyperfed::balance
