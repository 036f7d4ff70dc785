#include "daemon/balance/quota.h"

#include <cmath>
#include <numeric>
#include <random>

#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

TEST(ApportionTest, EqualCapacitiesGiveLowestNodesTheRemainder) {
  std::vector<double> p(8, 2.0);
  EXPECT_EQ(Apportion(37, p), (std::vector<Load>{5, 5, 5, 5, 5, 4, 4, 4}));
}

TEST(ApportionTest, DeadNodesGetNothingAndRemainderSkipsThem) {
  std::vector<double> p(4, 1.0);
  std::vector<bool> alive{false, true, true, true};
  EXPECT_EQ(Apportion(7, p, alive), (std::vector<Load>{0, 3, 2, 2}));
}

TEST(ApportionTest, WeightedQuotasAreWithinOneOfTheExactShare) {
  std::mt19937_64 rng(3);
  for (int t = 0; t < 2000; ++t) {
    const int n = 1 + rng() % 40;
    std::vector<double> p(n);
    for (auto& x : p) x = (rng() % 4 == 0) ? 0.25 + (rng() % 1000) / 13.0 : 1 + rng() % 16;
    const Load total = rng() % 100000;
    auto q = Apportion(total, p);
    EXPECT_EQ(std::accumulate(q.begin(), q.end(), Load{0}), total);
    const double cap = std::accumulate(p.begin(), p.end(), 0.0);
    for (int i = 0; i < n; ++i) {
      EXPECT_GE(q[i], 0);
      EXPECT_LT(std::fabs(q[i] - total * p[i] / cap), 1.0);
    }
  }
}

TEST(ApportionTest, LargestRemainderWins) {
  // Exact shares 10*1/6, 10*2/6, 10*3/6 = 1.67, 3.33, 5: the first gets the extra.
  EXPECT_EQ(Apportion(10, std::vector<double>{1, 2, 3}), (std::vector<Load>{2, 3, 5}));
}

}  // namespace
}  // namespace hyperfed::balance
