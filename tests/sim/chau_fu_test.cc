// chau-fu's simulation results, reproduced at 20,000 trials per dimension.

#include "gtest/gtest.h"
#include "sim/paper_chau_fu.h"
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
  // docs/design.md §4.1: the heavier-keeps-ceiling reading gives lower means.
  for (int n = 4; n <= 8; ++n)
    EXPECT_LT(MeanMaxDiff("dem", n, 2000, 3000 + n), MeanMaxDiff("dem-fixed", n, 2000, 3000 + n));
}

// Issue 14: Table 2 at n = 10 to 12 (paper 1.56 / 1.60 / 1.65) cannot be
// reached by choosing another label rule for the odd task: the docs/design.md §4.1 rule
// matches the pair-rule sweep of the library, the other label rules agree
// with it within noise, and a load-based rule is far worse.
TEST(ChauFuTable2Test, OtherLabelRulesDoNotLowerTheMean) {
  const int n = 10;
  const int64_t trials = 600;
  const double design = RunPairRuleVariant(0, n, trials, 77).mean_max_diff;
  EXPECT_NEAR(design, MeanMaxDiff("improved-dem", n, trials, 78), 0.06);
  for (int i = 1; i <= 3; ++i)
    EXPECT_NEAR(RunPairRuleVariant(i, n, trials, 77).mean_max_diff, design, 0.05) << PairRuleVariantName(i);
  EXPECT_GT(design, 1.56 + 0.005);  // the deviation the docs explain
  EXPECT_GT(RunPairRuleVariant(5, n, trials, 77).mean_max_diff, design + 0.3) << PairRuleVariantName(5);
}

}  // namespace
}  // namespace hyperfed::sim
