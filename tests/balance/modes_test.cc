#include "daemon/balance/modes.h"

#include "daemon/balance/dem.h"
#include "daemon/balance/exact.h"
#include "daemon/balance/mcwa.h"
#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

TEST(RoundModesTest, EveryModeIsRegisteredByNameAndUnknownNamesListTheKnownOnes) {
  EXPECT_EQ(RoundModeNames(), (std::vector<std::string>{"exact", "improved-dem", "mcwa"}));
  for (const std::string& name : RoundModeNames()) EXPECT_EQ(FindRoundMode(name)->name(), name);
  EXPECT_EQ(FindRoundMode("dem"), nullptr);
  absl::Status st = CheckRoundMode("dem");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "unknown round mode \"dem\"; known: exact, improved-dem, mcwa");
}

TEST(RoundModesTest, ImprovedDemKeepsDrainedSitesEmptyAndMatchesThePapersSweepWithoutThem) {
  // The example: loads {0,3,0,0}, site 0 drained. The round and the
  // dry run both run PlanRound's pair rule; site 0 ends with nothing.
  const RoundMode& m = *FindRoundMode("improved-dem");
  auto plan = PlanRound(m, {2, {}}, {{0, 0, 0}, {1, 3, 1}, {2, 0, 1}, {3, 0, 1}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->final_loads[0], 0);
  EXPECT_EQ(TotalLoad(plan->final_loads), 3);
  // With no drained site it is the library's sweep.
  std::vector<Load> w{7, 120, 31, 0, 55, 2, 90, 13};
  std::vector<double> p{2, 4, 2, 4, 1, 8, 3, 5};
  LoadTable t;
  for (int u = 0; u < 8; ++u) t.push_back({u, w[u], p[u]});
  auto ours = PlanRound(m, {3, {}}, t);
  auto lib = ImprovedDemPlan(*Topology::Hypercube(3), w, p);
  ASSERT_TRUE(ours.ok() && lib.ok());
  EXPECT_EQ(ours->final_loads, lib->final_loads);
}

TEST(RoundModesTest, GatheringModesPlanEachComponentAndKeepDrainedSitesEmpty) {
  // Five sites in a 3-cube (positions 5, 6, 7 empty), site 1 drained.
  const RoundShape shape{3, {5, 6, 7}};
  const LoadTable live{{0, 40, 2}, {1, 9, 0}, {2, 0, 1}, {3, 3, 3}, {4, 0, 2}};
  for (const char* name : {"exact", "mcwa"}) {
    auto plan = PlanRound(*FindRoundMode(name), shape, live);
    ASSERT_TRUE(plan.ok()) << name << ": " << plan.status();
    EXPECT_EQ(plan->final_loads[1], 0) << name;
    EXPECT_EQ(TotalLoad(plan->final_loads), 52) << name;
    std::vector<double> p{2, 0, 1, 3, 2, 0, 0, 0};
    EXPECT_LT(MaxShareError(plan->final_loads, p), 1.0) << name;
  }
  // Every site drained: nothing moves (Apportion would pile it on one site).
  auto none = PlanRound(*FindRoundMode("exact"), {2, {}}, {{0, 5, 0}, {1, 0, 0}, {2, 0, 0}, {3, 1, 0}});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->transfers.empty());
}

TEST(RoundModesTest, ARowForAFaultIsRefused) {
  auto plan = PlanRound(*FindRoundMode("exact"), {2, {3}}, {{3, 5, 1}});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
}

// A tree that detours around scattered faults makes the round deeper than
// the cube: for n = 5 and these 15 faults the balancing subcube has k = 2
// and T = 9 (docs/design.md, "Checked against the code"), and the round's
// bounds are sized by T + k = 11, not by n = 5.
TEST(RoundDepthTest, IsTheDimensionUnlessATreeAroundFaultsIsDeeper) {
  EXPECT_EQ(RoundDepth({5, {}}), 5);
  EXPECT_EQ(RoundDepth({3, {7}}), 3);
  const RoundShape deep{5, {0, 1, 3, 6, 7, 9, 12, 15, 16, 21, 22, 24, 26, 29, 31}};
  auto topo = Topology::Hypercube(deep.dimension, deep.faults);
  ASSERT_TRUE(topo.ok());
  auto subcubes = SelectBalancingSubcubes(*topo);
  ASSERT_TRUE(subcubes.ok());
  int deepest = 0;
  for (const BalancingSubcube& bs : *subcubes) deepest = std::max(deepest, bs.tree_depth + bs.dim);
  EXPECT_GT(deepest, deep.dimension);
  EXPECT_EQ(RoundDepth(deep), deepest);
}

}  // namespace
}  // namespace hyperfed::balance
