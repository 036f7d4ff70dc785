// Seed 004 reproduction: the worked examples match the paper cell for cell,
// and the speedup model behaves (deterministic, balancing helps).

#include <array>
#include <cmath>

#include "gtest/gtest.h"
#include "sim/paper_nam.h"
#include "sim/speedup.h"

namespace hyperfed::sim {
namespace {

TEST(PaperNamTest, ExamplesMatchThePaper) {
  PaperOptions o;
  o.scale = 0.05;  // 2 runs per speedup point
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
// synchronous methods end ahead of RID on the same instances (section 6).
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

// The parts of section 6 the model does reproduce (MCWA's lead below n
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

}  // namespace
}  // namespace hyperfed::sim
