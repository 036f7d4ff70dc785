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

TEST(ApportionTest, WeightedQuotasAreWithinOneOfTheWeightedShare) {
  std::mt19937_64 rng(3);
  for (int t = 0; t < 2000; ++t) {
    const int n = 1 + rng() % 40;
    std::vector<double> p(n);
    for (auto& x : p) x = (rng() % 4 == 0) ? 0.25 + (rng() % 1000) / 13.0 : 1 + rng() % 16;
    const Load total = (t % 10 == 0) ? static_cast<Load>(rng() >> 2) : static_cast<Load>(rng() % 100000);
    auto q = Apportion(total, p);
    EXPECT_EQ(std::accumulate(q.begin(), q.end(), Load{0}), total);
    __int128 whole = 0;
    for (double x : p) whole += CapacityWeight(x);
    for (int i = 0; i < n; ++i) {
      // |q_i - T w_i / W| < 1, in exact integers: |q_i W - T w_i| < W.
      const __int128 diff = static_cast<__int128>(q[i]) * whole - static_cast<__int128>(total) * CapacityWeight(p[i]);
      EXPECT_GE(q[i], 0);
      EXPECT_TRUE(diff < whole && -diff < whole) << "node " << i << " of trial " << t;
      // Against the capacities themselves the weights' rounding adds at
      // most about T n / (2^25 C): nothing at these totals.
      if (total < 100000) EXPECT_LT(std::fabs(q[i] - total * p[i] / std::accumulate(p.begin(), p.end(), 0.0)), 1.0);
    }
  }
}

TEST(ApportionTest, PrefixFloorsNotLargestRemainder) {
  // Exact shares 10*1/6, 10*2/6, 10*3/6 = 1.67, 3.33, 5. Largest remainder
  // gave 2, 3, 5; the prefix floors floor(10 P/6) at P = 0, 1, 3, 6 are
  // 0, 1, 5, 10: quotas 1, 4, 5, each still within one of its share.
  EXPECT_EQ(Apportion(10, std::vector<double>{1, 2, 3}), (std::vector<Load>{1, 4, 5}));
}

TEST(ApportionTest, DrainedSitesGetNothingAndEqualRestKeepsThePapersRule) {
  // Capacities 0, 2, 0, 2, 2 are not all equal, so the prefix rule: the
  // floors of 7 P / 6 at P = 0, 2, 4, 6 are 0, 2, 4, 7.
  EXPECT_EQ(Apportion(7, std::vector<double>{0, 2, 0, 2, 2}), (std::vector<Load>{0, 2, 0, 2, 3}));
  // A dead drained site does not make the alive ones unequal.
  EXPECT_EQ(Apportion(7, std::vector<double>{0, 2, 2, 2}, {false, true, true, true}), (std::vector<Load>{0, 3, 2, 2}));
  // Every alive site drained: the lowest alive one is charged with all.
  EXPECT_EQ(Apportion(7, std::vector<double>{0, 0, 0}, {false, true, true}), (std::vector<Load>{0, 7, 0}));
}

TEST(ApportionTest, CapacitiesBecomeFixedPointWeights) {
  EXPECT_EQ(CapacityWeight(1), int64_t{1} << 24);
  EXPECT_EQ(CapacityWeight(1.5), int64_t{3} << 23);
  EXPECT_EQ(CapacityWeight(0), 0);
  EXPECT_EQ(CapacityWeight(-2), 0);
  EXPECT_EQ(CapacityWeight(std::nan("")), 0);
  EXPECT_EQ(CapacityWeight(std::ldexp(1.0, -26)), 0) << "below half a unit of 2^-24";
  EXPECT_EQ(CapacityWeight(std::ldexp(1.0, -24)), 1);
  EXPECT_EQ(CapacityWeight(1e300), int64_t{1} << 62) << "capped at 2^38 units";
  // Capacities closer than 2^-25 share a weight: equal for the papers' rule.
  EXPECT_EQ(Apportion(5, std::vector<double>{1, 1 + 1e-12, 1}), (std::vector<Load>{2, 2, 1}));
}

TEST(ApportionTest, MulDivFloorIsExactBeyond128BitProducts) {
  EXPECT_TRUE(MulDivFloor(10, 3, 6) == 5);
  EXPECT_TRUE(MulDivFloor(7, 0, 6) == 0);
  const __int128 big = __int128{1} << 100;
  const int64_t t = (int64_t{1} << 62) + 1;
  // t (2^100 - 1) / 2^100 = t - t / 2^100: floor t - 1.
  EXPECT_TRUE(MulDivFloor(t, big - 1, big) == t - 1);
  EXPECT_TRUE(MulDivFloor(t, big, big) == t);
  EXPECT_TRUE(MulDivFloor(t, big / 2, big) == t / 2);
  // Thirds of whole = 3 x 2^99.
  const __int128 whole = 3 * (__int128{1} << 99);
  EXPECT_TRUE(MulDivFloor(t, whole / 3, whole) == t / 3);
  EXPECT_TRUE(MulDivFloor(t, 2 * (whole / 3), whole) == (2 * static_cast<__int128>(t)) / 3);
}

TEST(ApportionTest, HugeWeightsAndTotalsStayExact) {
  // Weights of 2^62 and a total near 2^62: past the eighth site T P needs
  // more than 127 bits.
  std::vector<double> p(12, 1e300);
  p[3] = 1e11;
  p[9] = 1;
  const Load total = (int64_t{1} << 62) + 12345;
  auto q = Apportion(total, p);
  EXPECT_EQ(std::accumulate(q.begin(), q.end(), Load{0}), total);
  __int128 whole = 0;
  for (double x : p) whole += CapacityWeight(x);
  for (size_t i = 0; i < p.size(); ++i) {
    const __int128 diff = static_cast<__int128>(q[i]) * whole - static_cast<__int128>(total) * CapacityWeight(p[i]);
    EXPECT_TRUE(diff < whole && -diff < whole) << i;
  }
}

}  // namespace
}  // namespace hyperfed::balance
