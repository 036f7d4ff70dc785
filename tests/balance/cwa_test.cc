#include "daemon/balance/cwa.h"

#include <random>
#include <vector>

#include "daemon/balance/quota.h"
#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

// nam Example 1: initial loads of the 3-cube. The 0XX side is Table 2;
// node 100 has load 0 (it initiates); 101 = 12 - 3 (Table 3 after receiving
// theta^0(001) = 3); 110 = 10 (Table 4, untouched by dimensions 2 and 1);
// 111 = 64 - 41 - 0 - 9 - 10.
const std::vector<Load> kExample1 = {19, 11, 2, 9, 0, 9, 10, 4};

struct Row {
  NodeId node;
  // For j = 0..k: l^j, delta^j, theta^j, gamma^j as printed in the table.
  std::vector<std::vector<Load>> cols;
};

// Runs the per-node steps up to the migration along dimension `stop_k`
// (migrations along higher dimensions applied) and returns the states.
std::vector<CwaNodeState> StatesBefore(int stop_k) {
  const int n = 3;
  std::vector<CwaNodeState> s(8);
  for (int c = 0; c < 8; ++c) s[c] = CwaInit(c, n, kExample1[c]);
  for (int j = 0; j < n; ++j)
    for (int c = 0; c < 8; ++c) CwaReceiveLoad(s[c], j, s[c ^ (1 << j)].l[j]);
  std::vector<Load> quota = Apportion(64, std::vector<double>(8, 1.0));
  std::vector<Load> prefix(9, 0);
  for (int c = 0; c < 8; ++c) prefix[c + 1] = prefix[c] + quota[c];
  for (int c = 0; c < 8; ++c) CwaSetQuotas(s[c], CwaQuotaVector(c, n, prefix));
  for (int k = n - 1; k > stop_k; --k)
    for (int c = 0; c < 8; ++c)
      if (CwaIsSender(s[c], k)) {
        CwaTheta t = CwaComputeTheta(s[c], k);
        CwaAfterSend(s[c], k, t.theta);
        CwaAfterReceive(s[c ^ (1 << k)], k, t.theta);
      }
  return s;
}

void ExpectRows(const std::vector<CwaNodeState>& s, int k, const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    SCOPED_TRACE(testing::Message() << "node " << r.node << " k " << k);
    ASSERT_TRUE(CwaIsSender(s[r.node], k));
    CwaTheta t = CwaComputeTheta(s[r.node], k);
    for (int j = 0; j <= k; ++j) {
      EXPECT_EQ(s[r.node].l[j], r.cols[j][0]) << "l^" << j;
      EXPECT_EQ(s[r.node].delta[j], r.cols[j][1]) << "delta^" << j;
      EXPECT_EQ(t.theta[j], r.cols[j][2]) << "theta^" << j;
      EXPECT_EQ(t.gamma[j], r.cols[j][3]) << "gamma^" << j;
    }
  }
}

TEST(CwaTest, Example1Table2AtSubcube0XX) {
  ExpectRows(StatesBefore(2), 2,
             {{0b000, {{19, 11, 6, 5}, {30, 14, 9, 5}, {41, 9, 9, 0}}},
              {0b001, {{11, 3, 3, 0}, {30, 14, 9, 5}, {41, 9, 9, 0}}},
              {0b010, {{2, -6, 0, -6}, {11, -5, 0, -5}, {41, 9, 9, 0}}},
              {0b011, {{9, 1, 0, 1}, {11, -5, 0, -5}, {41, 9, 9, 0}}}});
  // The 1XX side receives and computes nothing.
  auto s = StatesBefore(2);
  for (int c = 4; c < 8; ++c) EXPECT_FALSE(CwaIsSender(s[c], 2));
}

TEST(CwaTest, Example1Table3AtSubcubes00XAnd10X) {
  ExpectRows(StatesBefore(1), 1,
             {{0b000, {{13, 5, 5, 0}, {21, 5, 5, 0}}},
              {0b001, {{8, 0, 0, 0}, {21, 5, 5, 0}}},
              {0b100, {{6, -2, 0, -2}, {18, 2, 2, 0}}},
              {0b101, {{12, 4, 2, 2}, {18, 2, 2, 0}}}});
}

TEST(CwaTest, Example1Table4AtNodes011_101_110) {
  auto s = StatesBefore(0);
  ExpectRows(s, 0, {{0b011, {{9, 1, 1, 0}}}, {0b101, {{10, 2, 2, 0}}}, {0b110, {{10, 2, 2, 0}}}});
  int senders = 0;
  for (int c = 0; c < 8; ++c) senders += CwaIsSender(s[c], 0);
  EXPECT_EQ(senders, 3);
}

TEST(CwaTest, Example1TransfersMatchFigure2) {
  auto topo = Topology::Hypercube(3);
  ASSERT_TRUE(topo.ok());
  auto plan = CwaPlan(*topo, kExample1, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<Transfer> want = {{1, 0b000, 0b100, 6, 1}, {1, 0b001, 0b101, 3, 1},  // Fig. 2(a), dimension 2
                                {2, 0b000, 0b010, 5, 1}, {2, 0b101, 0b111, 2, 1},  // Fig. 2(b), dimension 1
                                {3, 0b011, 0b010, 1, 1}, {3, 0b101, 0b100, 2, 1},
                                {3, 0b110, 0b111, 2, 1}};  // dimension 0
  EXPECT_EQ(plan->transfers, want);
  EXPECT_EQ(plan->final_loads, std::vector<Load>(8, 8));
  EXPECT_LE(MaxDiff(plan->final_loads), 1);
  EXPECT_EQ(plan->metrics.steps, 9);  // 3 log N
  EXPECT_EQ(plan->metrics.tasks_moved, 21);
  // 24 load messages (8 nodes x 3 dimensions), 4 theta vectors that travel
  // without tasks (010 and 011 in dimension 2, 001 and 100 in dimension 1)
  // and 7 transfers.
  EXPECT_EQ(plan->metrics.messages, 24 + 4 + 7);
}

TEST(CwaTest, RefusesFaultyCubeAndBadInput) {
  auto faulty = Topology::Hypercube(3, {5});
  ASSERT_TRUE(faulty.ok());
  EXPECT_EQ(CwaPlan(*faulty, kExample1, {}).status().code(), absl::StatusCode::kInvalidArgument);
  auto topo = Topology::Hypercube(3);
  EXPECT_FALSE(CwaPlan(*topo, std::vector<Load>(7, 1), {}).ok());
  std::vector<Load> neg = kExample1;
  neg[2] = -1;
  EXPECT_FALSE(CwaPlan(*topo, neg, {}).ok());
  EXPECT_FALSE(CwaPlan(*topo, kExample1, std::vector<double>(8, 0.0)).ok());
  auto ring = Topology::Ring(8);
  EXPECT_FALSE(CwaPlan(*ring, kExample1, {}).ok());
}

TEST(CwaTest, RandomLoadsAndCapacitiesReachApportionExactly) {
  std::mt19937_64 rng(4004);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 7);
    const int count = 1 << n;
    std::vector<Load> loads(count);
    std::vector<double> caps(count);
    const bool weighted = trial % 2 == 1;
    for (int u = 0; u < count; ++u) {
      loads[u] = static_cast<Load>(rng() % 1001);
      caps[u] = weighted ? 1.0 + static_cast<double>(rng() % 16) : 1.0;
    }
    auto topo = Topology::Hypercube(n);
    auto plan = CwaPlan(*topo, loads, caps);
    ASSERT_TRUE(plan.ok());
    const Load total = TotalLoad(loads);
    EXPECT_EQ(TotalLoad(plan->final_loads), total);
    EXPECT_EQ(plan->final_loads, Apportion(total, caps));
    EXPECT_LT(MaxShareError(plan->final_loads, caps), 1.0);
    if (!weighted) {
      EXPECT_LE(MaxDiff(plan->final_loads), 1);
    }
    for (Load l : plan->final_loads) EXPECT_GE(l, 0);
    EXPECT_EQ(plan->metrics.steps, 3 * n);
    for (const Transfer& t : plan->transfers) {
      EXPECT_EQ(__builtin_popcount(static_cast<unsigned>(t.from ^ t.to)), 1);
      // Step s moves along dimension n - s.
      EXPECT_EQ(t.from ^ t.to, 1 << (n - t.step));
    }
  }
}

}  // namespace
}  // namespace hyperfed::balance
