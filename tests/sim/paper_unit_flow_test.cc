// unit-flow §1: the unit-flow balancing flow against Hu et al.'s
// l2-optimal flow.

#include "sim/paper_unit_flow.h"

#include <cmath>
#include <random>
#include <vector>

#include "daemon/balance/quota.h"
#include "daemon/balance/unit_flow.h"
#include "gtest/gtest.h"

namespace hyperfed::sim {
namespace {

using balance::Load;
using balance::Topology;

struct Flows {
  std::vector<double> unit, optimal, excess;
};

Flows Both(const Topology& topo, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<Load> u(0, 1000);
  std::vector<Load> w(topo.size());
  for (auto& x : w) x = u(rng);
  const std::vector<double> p(topo.size(), 1.0);
  auto plan = balance::UnitFlowPlan(topo, w, p);
  EXPECT_TRUE(plan.ok());
  const auto quota = balance::Apportion(balance::TotalLoad(w), p);
  Flows f;
  for (size_t i = 0; i < w.size(); ++i) f.excess.push_back(static_cast<double>(w[i] - quota[i]));
  f.unit = NetEdgeFlow(topo, *plan);
  f.optimal = OptimalBalancingFlow(topo, f.excess);
  return f;
}

// The optimal flow balances: at every node, out minus in equals its excess.
TEST(UnitFlowL2Test, OptimalFlowBalances) {
  auto cube = Topology::Hypercube(5);
  ASSERT_TRUE(cube.ok());
  const Flows f = Both(*cube, 3);
  std::vector<double> net(cube->size(), 0.0);
  const auto edges = cube->Edges();
  for (size_t e = 0; e < edges.size(); ++e) {
    net[edges[e].first] += f.optimal[e];
    net[edges[e].second] -= f.optimal[e];
  }
  for (size_t i = 0; i < net.size(); ++i) EXPECT_NEAR(net[i], f.excess[i], 1e-6) << i;
}

// On a tree the balancing flow is unique, so both are the same flow; on a
// graph with cycles the unit flows (n - 1 tree edges) are longer in l2.
TEST(UnitFlowL2Test, EqualOnATreeLongerWithCycles) {
  auto chain = Topology::Chain(20);
  ASSERT_TRUE(chain.ok());
  for (uint64_t s = 1; s <= 5; ++s) {
    const Flows f = Both(*chain, s);
    EXPECT_NEAR(L2Norm(f.unit), L2Norm(f.optimal), 1e-6);
  }
  auto cube = Topology::Hypercube(6);
  ASSERT_TRUE(cube.ok());
  for (uint64_t s = 1; s <= 5; ++s) {
    const Flows f = Both(*cube, s);
    EXPECT_GT(L2Norm(f.unit), 2.0 * L2Norm(f.optimal));
  }
}

}  // namespace
}  // namespace hyperfed::sim
