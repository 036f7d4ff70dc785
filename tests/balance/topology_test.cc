#include "daemon/balance/topology.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

TEST(TopologyTest, HypercubeNeighboursSkipFaults) {
  auto t = Topology::Hypercube(3, {1, 4});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->size(), 8);
  EXPECT_EQ(t->alive_count(), 6);
  EXPECT_EQ(t->Neighbors(0), (std::vector<NodeId>{2}));
  EXPECT_EQ(t->Neighbors(5), (std::vector<NodeId>{7}));
  EXPECT_EQ(t->faults(), (std::vector<NodeId>{1, 4}));
  EXPECT_TRUE(t->Connected());
  EXPECT_EQ(t->Name(), "hypercube:3");
}

TEST(TopologyTest, RejectsBadShapes) {
  EXPECT_FALSE(Topology::Hypercube(-1).ok());
  EXPECT_FALSE(Topology::Hypercube(3, {8}).ok());
  EXPECT_FALSE(Topology::Torus({4, 0}).ok());
  EXPECT_FALSE(Topology::Graph(3, {{0, 1}}).ok());  // node 2 unreachable
  EXPECT_FALSE(Topology::Graph(2, {{0, 0}}).ok());
  EXPECT_FALSE(Topology::Graph(2, {{0, 2}}).ok());
}

TEST(TopologyTest, TorusWrapsAndMeshDoesNot) {
  auto torus = Topology::Torus({4, 4});
  auto mesh = Topology::Mesh({4, 4});
  ASSERT_TRUE(torus.ok() && mesh.ok());
  EXPECT_EQ(torus->Neighbors(0).size(), 4u);
  EXPECT_EQ(mesh->Neighbors(0).size(), 2u);
  EXPECT_EQ(torus->Edges().size(), 32u);
  EXPECT_EQ(mesh->Edges().size(), 24u);
  EXPECT_EQ(torus->Coords(6), (std::vector<int>{2, 1}));
  EXPECT_EQ(torus->FromCoords({2, 1}), 6);
  EXPECT_EQ(torus->Name(), "torus:4x4");
  EXPECT_EQ(Topology::Ring(64)->Name(), "ring:64");
  EXPECT_EQ(Topology::Chain(8)->Name(), "chain:8");
}

TEST(TopologyTest, DistancesGoAroundFaults) {
  auto t = Topology::Hypercube(2, {1});
  std::vector<int> d = t->Distances(0);
  EXPECT_EQ(d, (std::vector<int>{0, -1, 1, 2}));
  auto split = Topology::Hypercube(2, {1, 2});
  EXPECT_FALSE(split->Connected());
}

}  // namespace
}  // namespace hyperfed::balance
