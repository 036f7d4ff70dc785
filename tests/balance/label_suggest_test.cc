#include "daemon/balance/label_suggest.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

std::vector<int> Identity(int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Every label distinct and in [0, 2^dimension).
void ExpectValidLabels(const std::vector<int>& labels, int n, int dimension) {
  ASSERT_EQ(static_cast<int>(labels.size()), n);
  std::set<int> seen;
  for (int l : labels) {
    EXPECT_GE(l, 0);
    EXPECT_LT(l, 1 << dimension);
    EXPECT_TRUE(seen.insert(l).second) << "label " << l << " twice";
  }
}

CostMatrix RandomCosts(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> cost(0, 100);
  CostMatrix c(n);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) c.Set(i, j, cost(rng));
  return c;
}

std::vector<int> RandomLabels(int n, int dimension, uint32_t seed) {
  std::vector<int> all = Identity(1 << dimension);
  std::mt19937 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(n);
  return all;
}

const std::vector<std::string> kSites{"a", "b", "c", "d"};

TEST(ParseLinkCostsTest, ReadsPairsBothWaysSkipsCommentsAndGivesUnlistedPairsTheLargestCost) {
  auto c = ParseLinkCosts(
      "# site site cost\n"
      "\n"
      "a b 1.5   # fibre\n"
      "c\ta 4\r\n"
      "  b a 1.5\n"  // the same pair again with the same cost
      "d c 0\n",
      kSites);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 4);
  EXPECT_EQ((*c)(0, 1), 1.5);
  EXPECT_EQ((*c)(1, 0), 1.5);
  EXPECT_EQ((*c)(0, 2), 4);
  EXPECT_EQ((*c)(3, 2), 0);
  EXPECT_EQ((*c)(1, 3), 4) << "unlisted: the largest listed cost";
  EXPECT_EQ((*c)(2, 2), 0);
}

TEST(ParseLinkCostsTest, AFileWithNoPairsCostsOneEverywhere) {
  auto c = ParseLinkCosts("# nothing yet\n\n", kSites);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)(0, 3), 1);
  EXPECT_EQ((*c)(1, 1), 0);
}

TEST(ParseLinkCostsTest, ErrorsNameTheLineAndWhatIsWrong) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"a b 1\n\na x 2\n", "line 3: unknown site \"x\" (not in the roster)"},
      {"# c\na b\n", "line 2: expected SITE SITE COST, got 2 fields"},
      {"a b 1 2\n", "line 1: expected SITE SITE COST, got 4 fields"},
      {"a b fast\n", "line 1: cost \"fast\" is not a number"},
      {"a b 1\nb c -1\n", "line 2: cost must be a finite number >= 0, got \"-1\""},
      {"a b inf\n", "line 1: cost must be a finite number >= 0, got \"inf\""},
      {"a b nan\n", "line 1: cost must be a finite number >= 0, got \"nan\""},
      {"c c 1\n", "line 1: site \"c\" is paired with itself"},
      {"a b 1\nc d 2\nb a 3\n", "line 3: pair \"b\" \"a\" costs 3 here but 1 on line 1"},
      {"a \x1b[31m 1\n", "line 1: unknown site \"\\x1b[31m\" (not in the roster)"},
  };
  for (const Case& c : cases) {
    auto r = ParseLinkCosts(c.text, kSites);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), c.message);
  }
  EXPECT_FALSE(ParseLinkCosts("", {"a", "a"}).ok()) << "a roster id twice";
}

TEST(LabelCostTest, WeighsEachPairsAffinityByTheSmallestSubcubeHoldingIt) {
  // Costs 1, 2, 3: affinities (3 - cost) 2, 1, 0.
  CostMatrix c(3);
  c.Set(0, 1, 1);
  c.Set(0, 2, 2);
  c.Set(1, 2, 3);
  // Labels 0, 1, 2: sites 0-1 share a 1-cube, 0-2 and 1-2 a 2-cube.
  EXPECT_EQ(LabelCost(c, {0, 1, 2}), 2 * 1 + 1 * 2 + 0 * 2);
  EXPECT_EQ(LabelCost(c, {0, 2, 1}), 2 * 2 + 1 * 1 + 0 * 2);
  EXPECT_EQ(LabelCost(c, {0, 1, 4}), 2 * 1 + 1 * 3 + 0 * 3);
  EXPECT_EQ(LabelCost(CostMatrix(4, 7), {0, 1, 2, 3}), 0) << "equal costs: no labelling is better";
}

// Two clusters {0,2,4,6} and {1,3,5,7}, cheap inside (fast pairs 0-4, 2-6,
// 1-7, 3-5 cheaper still), expensive across. The identity labelling mixes
// them up in every subcube.
CostMatrix TwoClusters() {
  CostMatrix c(8, 100);
  for (int i = 0; i < 8; ++i)
    for (int j = i + 1; j < 8; ++j)
      if (i % 2 == j % 2) c.Set(i, j, 5);
  c.Set(0, 4, 1);
  c.Set(2, 6, 1);
  c.Set(1, 7, 1);
  c.Set(3, 5, 1);
  return c;
}

TEST(SuggestLabelsTest, TwoClustersTakeTheTwoHalvesAndFastPairsShareOneCubes) {
  const CostMatrix c = TwoClusters();
  auto labels = SuggestLabels(c, Identity(8), 3);
  ASSERT_TRUE(labels.ok()) << labels.status();
  ExpectValidLabels(*labels, 8, 3);
  const std::vector<int>& l = *labels;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      EXPECT_EQ((l[i] >> 2) == (l[j] >> 2), i % 2 == j % 2) << "sites " << i << ", " << j << ": the highest bit";
  for (auto [i, j] : {std::pair{0, 4}, {2, 6}, {1, 7}, {3, 5}})
    EXPECT_EQ(l[i] >> 1, l[j] >> 1) << "fast pair " << i << "-" << j << " in one 1-cube";
  EXPECT_EQ(l[0], 0) << "the lowest current label keeps label 0";
  // The best a labelling can do (affinities 100 - cost): 4 fast pairs at
  // level 1, 8 cluster pairs at level 2, 16 cross pairs at level 3.
  EXPECT_EQ(LabelCost(c, l), 4 * 99 * 1 + 8 * 95 * 2 + 16 * 0 * 3);
  EXPECT_LT(LabelCost(c, l), LabelCost(c, Identity(8)));
}

TEST(SuggestLabelsTest, TheSiteWithTheLowestCurrentLabelGetsLabelZeroAndOthersKeepTheirsWhereFree) {
  const CostMatrix c = TwoClusters();
  // Site 5 holds label 0 now (it coordinates). A mirror image of the best
  // labelling keeps site 5 at 0 at no cost.
  std::vector<int> current{3, 1, 2, 4, 5, 0, 6, 7};
  auto labels = SuggestLabels(c, current, 3);
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_EQ((*labels)[5], 0);
  EXPECT_EQ(LabelCost(c, *labels), 4 * 99 * 1 + 8 * 95 * 2);
  // A labelling that is already best comes back unchanged.
  auto again = SuggestLabels(c, *labels, 3);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *labels);
}

TEST(SuggestLabelsTest, FewerSitesThanPositionsGetDistinctLabelsAndATightGroupSharesASubcube) {
  // Five sites in a 3-cube: sites 1..4 are one tight group, site 0 is far.
  CostMatrix c(5, 50);
  for (int i = 1; i < 5; ++i)
    for (int j = i + 1; j < 5; ++j) c.Set(i, j, 1);
  auto labels = SuggestLabels(c, {0, 1, 2, 3, 4}, 3);
  ASSERT_TRUE(labels.ok()) << labels.status();
  ExpectValidLabels(*labels, 5, 3);
  for (int i = 1; i < 5; ++i) EXPECT_EQ((*labels)[i] >> 2, (*labels)[1] >> 2) << "site " << i;
  EXPECT_NE((*labels)[0] >> 2, (*labels)[1] >> 2);

  for (int dimension : {3, 4, 6}) {
    for (int n : {1, 2, 3, 5, 7}) {
      if (n > (1 << dimension)) continue;
      auto l = SuggestLabels(RandomCosts(n, 7 * n + dimension), RandomLabels(n, dimension, n), dimension);
      ASSERT_TRUE(l.ok()) << l.status();
      ExpectValidLabels(*l, n, dimension);
    }
  }
  auto none = SuggestLabels(CostMatrix(0), {}, 2);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(SuggestLabelsTest, SameInputSameLabels) {
  const CostMatrix c = RandomCosts(27, 11);
  const std::vector<int> current = RandomLabels(27, 5, 3);
  auto a = SuggestLabels(c, current, 5);
  auto b = SuggestLabels(c, current, 5);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(SuggestLabelsTest, NeverCostsMoreThanTheIdentityOrTheCurrentLabels) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    for (auto [n, dimension] : {std::pair{8, 3}, {13, 4}, {16, 4}, {32, 5}, {40, 6}}) {
      const CostMatrix c = RandomCosts(n, seed * 100 + n);
      const std::vector<int> current = RandomLabels(n, dimension, seed);
      auto l = SuggestLabels(c, current, dimension);
      ASSERT_TRUE(l.ok()) << l.status();
      ExpectValidLabels(*l, n, dimension);
      EXPECT_LE(LabelCost(c, *l), LabelCost(c, Identity(n))) << "seed " << seed << ", " << n << " sites";
      EXPECT_LE(LabelCost(c, *l), LabelCost(c, current)) << "seed " << seed << ", " << n << " sites";
    }
  }
}

TEST(SuggestLabelsTest, FindsTheBestLabellingOfFourSites) {
  // Four sites in a 2-cube: the labelling is a choice of the two 1-cube
  // pairs; the heuristic must find the cheapest of the three.
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const CostMatrix c = RandomCosts(4, seed);
    std::vector<int> perm = Identity(4);
    double best = LabelCost(c, perm);
    while (std::next_permutation(perm.begin(), perm.end())) best = std::min(best, LabelCost(c, perm));
    auto l = SuggestLabels(c, RandomLabels(4, 2, seed), 2);
    ASSERT_TRUE(l.ok());
    EXPECT_DOUBLE_EQ(LabelCost(c, *l), best) << "seed " << seed;
  }
}

// The cheapest of all labellings, by trying every one (n! of them).
double BestByEnumeration(const CostMatrix& c) {
  std::vector<int> perm = Identity(c.size());
  double best = LabelCost(c, perm);
  while (std::next_permutation(perm.begin(), perm.end())) best = std::min(best, LabelCost(c, perm));
  return best;
}

TEST(SuggestLabelsTest, FindsTheBestLabellingWhereNeitherStartAloneDoes) {
  // Eight sites (a search over random costs 0..9 found them): after swaps,
  // the greedy split without Fiduccia-Mattheyses passes ends at 325, and so
  // does the bottom-up merge; the split with the passes reaches the best.
  const double kCosts[8][8] = {
      {0, 2, 3, 5, 0, 5, 3, 0}, {2, 0, 1, 3, 7, 2, 1, 6}, {3, 1, 0, 6, 1, 8, 0, 8}, {5, 3, 6, 0, 9, 6, 5, 1},
      {0, 7, 1, 9, 0, 0, 5, 7}, {5, 2, 8, 6, 0, 0, 5, 1}, {3, 1, 0, 5, 5, 5, 0, 7}, {0, 6, 8, 1, 7, 1, 7, 0},
  };
  CostMatrix c(8);
  for (int i = 0; i < 8; ++i)
    for (int j = i + 1; j < 8; ++j) c.Set(i, j, kCosts[i][j]);
  auto l = SuggestLabels(c, {0, 7, 1, 6, 2, 5, 3, 4}, 3);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(LabelCost(c, *l), BestByEnumeration(c));
  EXPECT_EQ(BestByEnumeration(c), 323);
}

TEST(SuggestLabelsTest, WithNothingToGainTheCurrentLabelsStay) {
  // Equal costs: every labelling costs the same, so nothing is relabelled
  // (the heuristic alone would pack the three sites into a 2-cube).
  auto l = SuggestLabels(CostMatrix(3, 7), {0, 5, 6}, 3);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(*l, (std::vector<int>{0, 5, 6}));
}

TEST(SuggestLabelsTest, NoSingleMoveOrSwapLowersTheCostOfTheResult) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    for (auto [n, dimension] : {std::pair{13, 4}, {21, 6}, {32, 5}}) {
      const CostMatrix c = RandomCosts(n, seed * 1000 + n);
      const std::vector<int> current = RandomLabels(n, dimension, seed);
      auto l = SuggestLabels(c, current, dimension);
      ASSERT_TRUE(l.ok()) << l.status();
      ASSERT_NE(*l, current) << "random labels are not the best";
      const double cost = LabelCost(c, *l);
      std::vector<int> site_at(1 << dimension, -1);
      for (int i = 0; i < n; ++i) site_at[(*l)[i]] = i;
      for (int i = 0; i < n; ++i) {
        for (int z = 0; z < (1 << dimension); ++z) {
          std::vector<int> other = *l;
          other[i] = z;
          if (site_at[z] >= 0) other[site_at[z]] = (*l)[i];
          EXPECT_GE(LabelCost(c, other), cost * (1 - 1e-12)) << "site " << i << " to " << z << ", seed " << seed;
        }
      }
    }
  }
}

TEST(SuggestLabelsTest, ClustersOfEightEachFillA3SubcubeOfA1024Cube) {
  // 128 clusters of 8 sites, members scattered over the site order; links
  // cost 1..40 inside a cluster and 60..100 across. Bisection alone cuts
  // some clusters at this size (the many dear pairs outweigh a few cheap
  // ones one level up); the result must keep every cluster whole.
  const int n = 1024;
  std::mt19937 rng(5);
  std::vector<int> cluster(n);
  std::vector<int> order = Identity(n);
  std::shuffle(order.begin(), order.end(), rng);
  for (int i = 0; i < n; ++i) cluster[order[i]] = i / 8;
  std::uniform_real_distribution<double> inside(1, 40), across(60, 100);
  CostMatrix c(n);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) c.Set(i, j, cluster[i] == cluster[j] ? inside(rng) : across(rng));
  auto l = SuggestLabels(c, Identity(n), 10);
  ASSERT_TRUE(l.ok()) << l.status();
  ExpectValidLabels(*l, n, 10);
  std::vector<int> subcube_of(n / 8, -1);
  int split = 0;
  for (int i = 0; i < n; ++i) {
    int& s = subcube_of[cluster[i]];
    if (s < 0) s = (*l)[i] >> 3;
    split += s != (*l)[i] >> 3;
  }
  EXPECT_EQ(split, 0) << "sites away from their cluster's 3-subcube";
}

TEST(SuggestLabelsTest, AThousandAndTwentyFourSitesFinish) {
  const int n = 1024;
  const CostMatrix c = RandomCosts(n, 5);
  auto l = SuggestLabels(c, Identity(n), 10);
  ASSERT_TRUE(l.ok()) << l.status();
  ExpectValidLabels(*l, n, 10);
  EXPECT_LE(LabelCost(c, *l), LabelCost(c, Identity(n)));
}

TEST(SuggestLabelsTest, RefusesBadInput) {
  const CostMatrix c(3);
  EXPECT_FALSE(SuggestLabels(c, {0, 1, 2}, 1).ok()) << "3 sites in a 1-cube";
  EXPECT_FALSE(SuggestLabels(c, {0, 1, 2}, -1).ok());
  EXPECT_FALSE(SuggestLabels(c, {0, 1, 2}, kMaxLabelBits + 1).ok());
  EXPECT_FALSE(SuggestLabels(c, {0, 1}, 2).ok()) << "a label per site";
  EXPECT_FALSE(SuggestLabels(c, {0, 1, 1}, 2).ok()) << "a label twice";
  EXPECT_FALSE(SuggestLabels(c, {0, 1, -2}, 2).ok());
  CostMatrix bad(3);
  bad.Set(0, 2, -1);
  EXPECT_FALSE(SuggestLabels(bad, {0, 1, 2}, 2).ok());
  bad.Set(0, 2, std::numeric_limits<double>::infinity());
  EXPECT_FALSE(SuggestLabels(bad, {0, 1, 2}, 2).ok());
}

TEST(TransferCostTest, SumsCountTimesTheCostOfTheSitesAtBothEnds) {
  CostMatrix c(3);
  c.Set(0, 1, 2);
  c.Set(1, 2, 7);
  // Site 0 at label 4, site 1 at 0, site 2 at 1.
  const std::vector<int> labels{4, 0, 1};
  auto cost = TransferCost(c, labels, {{1, 4, 0, 3}, {1, 1, 0, 2}});
  ASSERT_TRUE(cost.ok());
  EXPECT_EQ(*cost, 3 * 2 + 2 * 7);
  EXPECT_FALSE(TransferCost(c, labels, {{1, 2, 0, 1}}).ok()) << "label 2 is nobody's";
}

// Sites a, b, c, d; a-d and b-c are fast (1), every other pair slow (10).
// Under the labels a=0, b=1, c=2, d=3 the round below sends a's surplus to
// c and b's to d, over slow links.
CostMatrix CrossedLinks() {
  auto c = ParseLinkCosts("a d 1\nb c 1\na b 10\n", kSites);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(CompareTransfersTest, RelabellingByTheLinksMakesTheLastRoundCheaper) {
  const CostMatrix c = CrossedLinks();
  const std::vector<int> old_labels{0, 1, 2, 3};
  auto suggested = SuggestLabels(c, old_labels, 2);
  ASSERT_TRUE(suggested.ok()) << suggested.status();
  // a keeps 0, d joins it in a 1-cube; c keeps its label 2, b takes 3.
  EXPECT_EQ(*suggested, (std::vector<int>{0, 3, 2, 1}));

  // a and b hold 4 jobs each, c and d none; equal capacities: 2 each.
  const LoadTable before{{0, 4, 1}, {1, 4, 1}, {2, 0, 1}, {3, 0, 1}};
  auto g = CompareTransfers(*FindRoundMode("exact"), before, old_labels, *suggested, c);
  ASSERT_TRUE(g.ok()) << g.status();
  // Before: the exact mode matches 0->2 and 1->3 across the 2-cube:
  // a->c and b->d, 2 jobs each over slow links: 2*10 + 2*10.
  EXPECT_EQ(g->old_transfers, (std::vector<Transfer>{{1, 0, 2, 2, 1}, {1, 1, 3, 2, 1}}));
  EXPECT_EQ(g->old_cost, 40);
  // After: a (0) and d (1) share a 1-cube, as do b (3) and c (2): each
  // surplus goes over a fast link: 2*1 + 2*1.
  EXPECT_EQ(g->new_transfers, (std::vector<Transfer>{{1, 0, 1, 2, 1}, {1, 3, 2, 2, 1}}));
  EXPECT_EQ(g->new_cost, 4);
  EXPECT_EQ(g->old_shape.dimension, 2);
  EXPECT_TRUE(g->new_shape.faults.empty());
}

TEST(CompareTransfersTest, FailedSitesAndEmptyPositionsAreFaultsInBothCubes) {
  // Five sites in a 3-cube; site 4 (label 4) is down: no row.
  CostMatrix c(5, 10);
  c.Set(0, 3, 1);
  const std::vector<int> old_labels{0, 1, 2, 3, 4};
  const std::vector<int> new_labels{0, 2, 3, 1, 5};
  const LoadTable before{{0, 9, 1}, {1, 0, 1}, {2, 0, 1}, {3, 0, 1}};
  for (const std::string& mode : RoundModeNames()) {
    auto g = CompareTransfers(*FindRoundMode(mode), before, old_labels, new_labels, c);
    ASSERT_TRUE(g.ok()) << mode << ": " << g.status();
    EXPECT_EQ(g->old_shape.dimension, 3);
    EXPECT_EQ(g->old_shape.faults, (std::vector<NodeId>{4, 5, 6, 7})) << mode;
    EXPECT_EQ(g->new_shape.faults, (std::vector<NodeId>{4, 5, 6, 7})) << mode << ": site 4 is down at label 5";
    EXPECT_GT(g->old_cost, 0) << mode;
  }
}

TEST(CompareTransfersTest, RefusesRowsThatNoSiteHoldsOrBadRows) {
  const CostMatrix c = CrossedLinks();
  const std::vector<int> labels{0, 1, 2, 3};
  const RoundMode& exact = *FindRoundMode("exact");
  EXPECT_FALSE(CompareTransfers(exact, {{5, 1, 1}}, labels, labels, c).ok());
  EXPECT_FALSE(CompareTransfers(exact, {{1, 1, 1}, {1, 2, 1}}, labels, labels, c).ok());
  EXPECT_FALSE(CompareTransfers(exact, {{1, -1, 1}}, labels, labels, c).ok());
  EXPECT_FALSE(CompareTransfers(exact, {{1, 1, -1}}, labels, labels, c).ok());
  EXPECT_FALSE(CompareTransfers(exact, {{1, 1, 1}}, labels, {0, 1, 2}, c).ok());
  EXPECT_FALSE(CompareTransfers(exact, {{1, 1, 1}}, labels, {0, 1, 2, 2}, c).ok());
}

}  // namespace
}  // namespace hyperfed::balance
