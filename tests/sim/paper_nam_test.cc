// nam reproduction: the worked examples match the paper cell for cell,
// and the speedup model behaves (deterministic, balancing helps).

#include "sim/paper_nam.h"

#include <array>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "sim/speedup.h"
#include "sim/stats.h"

namespace hyperfed::sim {
namespace {

TEST(PaperNamTest, ExamplesMatchThePaper) {
  PaperOptions o;
  o.scale = 0.01;  // 3 runs per speedup point
  auto r = PaperNam(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->text.find("table cells differing from the paper: 0"), std::string::npos);
  EXPECT_NE(r->text.find("ours: 000->100 6, 001->101 3 | 000->010 5, 101->111 2 | 011->010 1, 101->100 2, 110->111 2"),
            std::string::npos);
  EXPECT_NE(r->text.find("l_t(1011) 37 | 37, l_t(1111) 32 | 32, l_t(1110) 14 | 14; q_t(1011) 30 | 30"),
            std::string::npos);
  EXPECT_NE(r->text.find("ours: 1001->0001 7 1011->0011 7"), std::string::npos);
  EXPECT_NE(r->text.find("paper theta^0 11 | ours: 0011->0001 11"), std::string::npos);
  EXPECT_NE(r->text.find("paper 0 (fully balanced) | ours 0; steps 3 log N + T = 14 | ours 14"), std::string::npos);
  // Fig. 9 once (issue 14: it was printed twice).
  const size_t fig9 = r->text.find("Fig. 9 (7-cube");
  ASSERT_NE(fig9, std::string::npos);
  EXPECT_EQ(r->text.find("Fig. 9 (7-cube", fig9 + 1), std::string::npos);
}

TEST(SpeedupTest, DeterministicAndBalancingHelps) {
  SpeedupConfig c;
  c.n = 4;
  c.faults = 2;
  c.seed = 9;
  auto a = RunSpeedup(c), b = RunSpeedup(c);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < kSpeedupAlgorithms; ++i) {
    EXPECT_EQ(a->time_with[i], b->time_with[i]);
    EXPECT_GT(a->speedup[i], 1.0) << SpeedupAlgorithmName(static_cast<SpeedupAlgorithm>(i));
  }
  EXPECT_EQ(a->mcwa_dim + a->mcwa_tree_depth >= 3, true);
  c.faults = 16;
  EXPECT_FALSE(RunSpeedup(c).ok());
}

// A synchronous round tells every node the global load, so once fewer than
// one waiting task per node remains nobody asks again: DEM and MCWA start
// fewer rounds than there are nodes, while RID, with only its neighbours'
// loads, asks several times per node; and in the 5-cube without faults both
// synchronous methods end ahead of RID on the same instances (§6).
TEST(SpeedupTest, SynchronousRoundsSettleAndBeatRidInTheFiveCube) {
  const int runs = 10;
  std::array<double, kSpeedupAlgorithms> sp{}, rounds{};
  for (int r = 0; r < runs; ++r) {
    SpeedupConfig c;
    c.n = 5;
    c.seed = 500 + static_cast<uint64_t>(r);
    auto run = RunSpeedup(c);
    ASSERT_TRUE(run.ok()) << run.status();
    for (int a = 0; a < kSpeedupAlgorithms; ++a) {
      sp[a] += run->speedup[a] / runs;
      rounds[a] += static_cast<double>(run->rounds[a]) / runs;
    }
  }
  const int mcwa = static_cast<int>(SpeedupAlgorithm::kMcwa), dem = static_cast<int>(SpeedupAlgorithm::kDem),
            rid = static_cast<int>(SpeedupAlgorithm::kRid);
  EXPECT_LT(rounds[mcwa], 32);
  EXPECT_LT(rounds[dem], 32);
  EXPECT_GT(rounds[rid], 2 * 32);
  EXPECT_GT(sp[mcwa], sp[rid]);
  EXPECT_GT(sp[dem], sp[rid]);
}

// The parts of §6 the model does reproduce (MCWA's lead below n
// faults it does not; see the report text): in the 7-cube MCWA's migrations per node grow with
// the fault count (its trees) while DEM's stay within 10%, and RID's speedup
// barely depends on the fault count.
TEST(SpeedupTest, SevenCubeMigrationsGrowForMcwaOnly) {
  const int runs = 6;
  std::array<double, kSpeedupAlgorithms> mig0{}, mig8{}, sp0{}, sp8{};
  for (int r = 0; r < runs; ++r)
    for (int f : {0, 8}) {
      SpeedupConfig c;
      c.n = 7;
      c.faults = f;
      c.seed = 100 + static_cast<uint64_t>(r);
      auto run = RunSpeedup(c);
      ASSERT_TRUE(run.ok()) << run.status();
      for (int a = 0; a < kSpeedupAlgorithms; ++a) {
        (f == 0 ? mig0 : mig8)[a] += run->migrations_per_node[a] / runs;
        (f == 0 ? sp0 : sp8)[a] += run->speedup[a] / runs;
      }
    }
  const int mcwa = static_cast<int>(SpeedupAlgorithm::kMcwa), dem = static_cast<int>(SpeedupAlgorithm::kDem),
            rid = static_cast<int>(SpeedupAlgorithm::kRid);
  EXPECT_GT(mig8[mcwa], 1.2 * mig0[mcwa]);
  EXPECT_LT(std::abs(mig8[dem] - mig0[dem]), 0.1 * mig0[dem]);
  EXPECT_LT(std::abs(sp8[rid] - sp0[rid]), 0.1 * sp0[rid]);
  // With many faults DEM is ahead of MCWA, as the paper says.
  EXPECT_GT(sp8[dem], sp8[mcwa]);
}

// Issue 14: with synchronous rounds only while a node is "severely
// underloaded" (average waiting load >= 5 per healthy node), MCWA is first
// without faults in the 7-cube: its paired lead over DEM and over RID
// excludes 0 (paper nam at 300 runs: +0.016 +- 0.004 over DEM). With the
// check off (the model before issue 14) the end-of-run rounds, each
// stopping all 128 nodes for little migration, put DEM ahead.
TEST(SpeedupTest, SeverelyUnderloadedTriggerPutsMcwaFirstWithoutFaults) {
  const int runs = 40;
  std::vector<double> mcwa_dem, mcwa_rid, old_mcwa_dem;
  double skipped = 0, rounds_new = 0, rounds_old = 0;
  const int mcwa = static_cast<int>(SpeedupAlgorithm::kMcwa), dem = static_cast<int>(SpeedupAlgorithm::kDem),
            rid = static_cast<int>(SpeedupAlgorithm::kRid);
  for (int r = 0; r < runs; ++r) {
    SpeedupConfig c;
    c.n = 7;
    c.seed = 90000 + static_cast<uint64_t>(r);
    auto run = RunSpeedup(c);
    ASSERT_TRUE(run.ok()) << run.status();
    mcwa_dem.push_back(run->speedup[mcwa] - run->speedup[dem]);
    mcwa_rid.push_back(run->speedup[mcwa] - run->speedup[rid]);
    skipped += static_cast<double>(run->skipped[mcwa]);
    rounds_new += static_cast<double>(run->rounds[mcwa]);
    c.round_min_average = 0;
    auto old = RunSpeedup(c);
    ASSERT_TRUE(old.ok()) << old.status();
    old_mcwa_dem.push_back(old->speedup[mcwa] - old->speedup[dem]);
    rounds_old += static_cast<double>(old->rounds[mcwa]);
    EXPECT_EQ(old->skipped[mcwa], 0);
  }
  const MeanCi md = Summarise(mcwa_dem), mr = Summarise(mcwa_rid), old_md = Summarise(old_mcwa_dem);
  EXPECT_GT(md.mean - md.half, 0) << md.mean << " +- " << md.half;
  EXPECT_GT(mr.mean - mr.half, 0) << mr.mean << " +- " << mr.half;
  EXPECT_LT(old_md.mean + old_md.half, 0) << old_md.mean << " +- " << old_md.half;
  // At most one round per run stops at the load sum (the total only falls),
  // and far fewer rounds run.
  EXPECT_LE(skipped, runs);
  EXPECT_LT(rounds_new, 0.2 * rounds_old);
}

// Halving the charge at each end makes every migration cheaper, so every
// algorithm's mean speedup rises; charging only the sender leaves RID's
// requester free while it receives, so RID gains most from it.
TEST(SpeedupTest, CheaperChargingRaisesSpeedup) {
  const int runs = 8;
  std::array<std::array<double, kSpeedupAlgorithms>, 3> sp{};
  for (int r = 0; r < runs; ++r)
    for (int ch = 0; ch < 3; ++ch) {
      SpeedupConfig c;
      c.n = 5;
      c.faults = 2;
      c.seed = 40 + static_cast<uint64_t>(r);
      c.charge = static_cast<MigrationCharge>(ch);
      auto run = RunSpeedup(c);
      ASSERT_TRUE(run.ok()) << run.status();
      for (int a = 0; a < kSpeedupAlgorithms; ++a) sp[ch][a] += run->speedup[a] / runs;
    }
  for (int a = 0; a < kSpeedupAlgorithms; ++a) {
    EXPECT_GT(sp[1][a], sp[0][a]) << SpeedupAlgorithmName(static_cast<SpeedupAlgorithm>(a));
    EXPECT_GT(sp[2][a], sp[0][a]) << SpeedupAlgorithmName(static_cast<SpeedupAlgorithm>(a));
  }
}

}  // namespace
}  // namespace hyperfed::sim
