// Seed 003's simulation results, reproduced at 20,000 trials per dimension.

#include "gtest/gtest.h"
#include "sim/runner.h"

namespace hyperfed::sim {
namespace {

double MeanMaxDiff(const std::string& algorithm, int n, int64_t trials, uint64_t seed) {
  RunConfig c;
  c.algorithm = algorithm;
  c.topology = "hypercube:" + std::to_string(n);
  c.trials = trials;
  c.seed = seed;
  auto s = RunTrials(c);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? s->max_diff.mean : -1;
}

TEST(ChauFuTable2Test, ImprovedDemMeanMaxDifferenceWithin003OfPaper) {
  const double paper[] = {0.94, 1.08, 1.20, 1.30, 1.39, 1.47, 1.53, 1.56};  // n = 3..10
  for (int n = 3; n <= 10; ++n)
    EXPECT_NEAR(MeanMaxDiff("improved-dem", n, 20000, 1000 + n), paper[n - 3], 0.03) << "n = " << n;
}

TEST(ChauFuTable1Test, FixedSideDemReproducesTable1) {
  const double paper[] = {1.50, 2.00, 2.50, 3.00, 3.50, 3.97};  // n = 3..8
  for (int n = 3; n <= 8; ++n)
    EXPECT_NEAR(MeanMaxDiff("dem-fixed", n, 5000, 2000 + n), paper[n - 3], 0.05) << "n = " << n;
}

TEST(ChauFuTable1Test, PlainDemBalancesBetterThanTable1) {
  // DESIGN section 4: the heavier-keeps-ceiling reading gives lower means.
  for (int n = 4; n <= 8; ++n) EXPECT_LT(MeanMaxDiff("dem", n, 2000, 3000 + n), MeanMaxDiff("dem-fixed", n, 2000, 3000 + n));
}

}  // namespace
}  // namespace hyperfed::sim
