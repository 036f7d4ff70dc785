// Seed 004 reproduction: the worked examples match the paper cell for cell,
// and the speedup model behaves (deterministic, balancing helps).

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

}  // namespace
}  // namespace hyperfed::sim
