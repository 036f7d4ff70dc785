#include "daemon/balance/mcwa.h"

#include <algorithm>
#include <random>
#include <vector>

#include "daemon/balance/cwa.h"
#include "daemon/balance/quota.h"
#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

// nam Example 2: faults 0101, 0110, 1000, 1010 in a 4-cube.
const std::vector<NodeId> kFaults2 = {0b0101, 0b0110, 0b1000, 0b1010};

// Loads for Example 2. The text and Tables 5 and 6 fix the tree sums of the
// paper's subcube X0X1: l_t(1011) = 37, l_t(1111) = 32, l_t(1110) = 14;
// l_t(1001) = 37 (Table 5); l_t(0011) = 41 - 7 = 34 (Table 6, after
// receiving theta^0(1011) = 7); l_t(0001) = 120 - 37 - 37 - 34 = 12 (12
// healthy nodes, quota 10 each). Figure 4 is missing, so the split inside the
// trees of 0001, 0011 and 1001 is ours.
std::vector<Load> Example2Loads() {
  std::vector<Load> l(16, 0);
  l[0b0001] = 4, l[0b0000] = 6, l[0b0100] = 2;    // tree of 0001: 12
  l[0b0011] = 10, l[0b0010] = 20, l[0b0111] = 4;  // tree of 0011: 34
  l[0b1001] = 7, l[0b1101] = 20, l[0b1100] = 10;  // tree of 1001: 37
  l[0b1011] = 5, l[0b1111] = 18, l[0b1110] = 14;  // tree of 1011: 37
  return l;
}

Topology Example2Topology() {
  auto t = Topology::Hypercube(4, kFaults2);
  EXPECT_TRUE(t.ok());
  return *t;
}

TEST(McwaSubcubeTest, Example2PaperSubcubeX0X1HasDepth2AndPaperTrees) {
  Topology topo = Example2Topology();
  auto bs = BuildBalancingSubcube(topo, 0b1010, 0b0001);
  ASSERT_TRUE(bs.ok()) << bs.status();
  EXPECT_EQ(bs->dim, 2);
  EXPECT_EQ(bs->tree_depth, 2);
  EXPECT_EQ(bs->parent[0b1111], 0b1011);
  EXPECT_EQ(bs->parent[0b1110], 0b1111);
  EXPECT_EQ(bs->parent[0b0100], 0b0000);
  EXPECT_EQ(bs->parent[0b1100], 0b1101);
  for (NodeId u : {0b0001, 0b0011, 0b1001, 0b1011}) EXPECT_EQ(bs->parent[u], -1);
  for (NodeId f : kFaults2) EXPECT_EQ(bs->level[f], -1);
  EXPECT_EQ(bs->order.size(), 12u);
  EXPECT_EQ(bs->Index(0b1011), 3);
  EXPECT_EQ(bs->Label(2), 0b1001);
}

TEST(McwaSubcubeTest, Example2FilterRejectsXX11AndAcceptsX0X1) {
  Topology topo = Example2Topology();
  // Section 5: 0110 and 0101 cut the short paths from 0100 to XX11.
  EXPECT_FALSE(PaperFilterAccepts(topo, 0b1100, 0b0011));
  EXPECT_TRUE(PaperFilterAccepts(topo, 0b1010, 0b0001));
  EXPECT_EQ(BuildBalancingSubcube(topo, 0b1100, 0b0011)->tree_depth, 3);
}

TEST(McwaSubcubeTest, Example2SelectionFollowsDesignTieBreak) {
  // The four maximum healthy subcubes are XX11, X0X1, 1XX1 and 11XX (nam
  // §5). X0X1 and 1XX1 both have depth 2; docs/design.md §4.2 breaks the tie
  // by the lowest (mask, base), which is 1XX1 (mask 0110 < 1010). The paper
  // takes X0X1 because it tries candidates in the order XX11, X0X1, ...
  Topology topo = Example2Topology();
  EXPECT_EQ(BuildBalancingSubcube(topo, 0b0110, 0b1001)->tree_depth, 2);
  EXPECT_EQ(BuildBalancingSubcube(topo, 0b0011, 0b1100)->tree_depth, 3);
  auto sel = SelectBalancingSubcubes(topo);
  ASSERT_TRUE(sel.ok());
  ASSERT_EQ(sel->size(), 1u);
  EXPECT_EQ((*sel)[0].dim, 2);
  EXPECT_EQ((*sel)[0].tree_depth, 2);
  EXPECT_EQ((*sel)[0].mask, 0b0110);
  EXPECT_EQ((*sel)[0].base, 0b1001);
}

TEST(McwaTest, Example2TreeLoadsQuotasAndTables5And6) {
  Topology topo = Example2Topology();
  auto bs = BuildBalancingSubcube(topo, 0b1010, 0b0001);
  ASSERT_TRUE(bs.ok());
  const std::vector<Load> loads = Example2Loads();
  // Per-node steps, as the nodes run them.
  std::vector<Load> lt(16, 0);
  for (auto it = bs->order.rbegin(); it != bs->order.rend(); ++it) {
    std::vector<Load> ch;
    for (NodeId c : bs->Children(*it)) ch.push_back(lt[c]);
    lt[*it] = McwaTreeLoad(loads[*it], ch);
  }
  EXPECT_EQ(lt[0b1011], 37);
  EXPECT_EQ(lt[0b1111], 32);
  EXPECT_EQ(lt[0b1110], 14);
  std::vector<CwaNodeState> s(4);
  for (int c = 0; c < 4; ++c) s[c] = CwaInit(c, 2, lt[bs->Label(c)]);
  for (int j = 0; j < 2; ++j)
    for (int c = 0; c < 4; ++c) CwaReceiveLoad(s[c], j, s[c ^ (1 << j)].l[j]);
  ASSERT_EQ(s[0].l[2], 120);
  McwaQuotas q = McwaQuotaTable(*bs, 120, std::vector<double>(16, 1.0));
  EXPECT_EQ(q.tree[0b1011], 30);
  EXPECT_EQ(q.tree[0b1111], 20);
  EXPECT_EQ(q.tree[0b1110], 10);
  for (int c = 0; c < 4; ++c) CwaSetQuotas(s[c], CwaQuotaVector(c, 2, q.cube_prefix));
  // Table 5: 10X1 (indices 2 = 1001, 3 = 1011) sends along walked dimension 1.
  for (int c : {2, 3}) {
    ASSERT_TRUE(CwaIsSender(s[c], 1));
    CwaTheta t = CwaComputeTheta(s[c], 1);
    EXPECT_EQ(s[c].l[0], 37);
    EXPECT_EQ(s[c].delta[0], 7);
    EXPECT_EQ(t.theta[0], 7);
    EXPECT_EQ(t.gamma[0], 0);
    EXPECT_EQ(s[c].l[1], 74);
    EXPECT_EQ(s[c].delta[1], 14);
    EXPECT_EQ(t.theta[1], 14);
    EXPECT_EQ(t.gamma[1], 0);
    CwaAfterSend(s[c], 1, t.theta);
    CwaAfterReceive(s[c ^ 2], 1, t.theta);
  }
  // Table 6: then 0011 (index 1) sends 11 to 0001.
  ASSERT_TRUE(CwaIsSender(s[1], 0));
  CwaTheta t = CwaComputeTheta(s[1], 0);
  EXPECT_EQ(s[1].l[0], 41);
  EXPECT_EQ(s[1].delta[0], 11);
  EXPECT_EQ(t.theta[0], 11);
  EXPECT_EQ(t.gamma[0], 0);
}

TEST(McwaTest, Example2PlanOnPaperSubcubeMatchesFigure4) {
  Topology topo = Example2Topology();
  auto bs = BuildBalancingSubcube(topo, 0b1010, 0b0001);
  ASSERT_TRUE(bs.ok());
  std::vector<BalancingSubcube> v = {*bs};
  auto plan = McwaPlanOn(topo, Example2Loads(), {}, v);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<Transfer> want = {{1, 0b1110, 0b1111, 4, 1},  // Fig. 4(a)
                                {2, 0b1111, 0b1011, 12, 1}, {2, 0b1101, 0b1001, 10, 1}, {2, 0b0010, 0b0011, 10, 1},
                                {3, 0b1001, 0b0001, 7, 1},  {3, 0b1011, 0b0011, 7, 1},  // Fig. 4(b)
                                {4, 0b0011, 0b0001, 11, 1},                             // Fig. 4(c)
                                {5, 0b0001, 0b0000, 12, 1}, {5, 0b0011, 0b0111, 6, 1},  // Fig. 4(d)
                                {6, 0b0000, 0b0100, 8, 1}};
  EXPECT_EQ(plan->transfers, want);
  for (NodeId u = 0; u < 16; ++u) EXPECT_EQ(plan->final_loads[u], topo.alive(u) ? 10 : 0) << u;
  EXPECT_EQ(plan->metrics.steps, 3 * 4 + 2);  // 3 log N + T (k = n - T here)
}

TEST(McwaTest, Example2SelectedSubcubeAlsoBalancesFully) {
  Topology topo = Example2Topology();
  std::vector<BalancingSubcube> chosen;
  auto plan = McwaPlan(topo, Example2Loads(), {}, &chosen);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_EQ(chosen[0].tree_depth, 2);
  EXPECT_LE(MaxDiff(plan->final_loads, topo.alive_mask()), 1);
  EXPECT_EQ(TotalLoad(plan->final_loads), 120);
}

TEST(McwaTest, NoFaultsEqualsCwa) {
  std::mt19937_64 rng(17);
  for (int n = 0; n <= 6; ++n) {
    auto topo = Topology::Hypercube(n);
    std::vector<Load> loads(1 << n);
    std::vector<double> caps(1 << n);
    for (auto& l : loads) l = static_cast<Load>(rng() % 500);
    for (auto& c : caps) c = 1.0 + static_cast<double>(rng() % 4);
    auto a = McwaPlan(*topo, loads, caps);
    auto b = CwaPlan(*topo, loads, caps);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->transfers, b->transfers);
    EXPECT_EQ(a->final_loads, b->final_loads);
    EXPECT_EQ(a->metrics.messages, b->metrics.messages);
    EXPECT_EQ(a->metrics.steps, b->metrics.steps);
  }
}

TEST(McwaTest, PartitionedCubeBalancesEachSide) {
  // In a 3-cube, faulting 001, 010, 100 isolates 000.
  auto topo = Topology::Hypercube(3, {1, 2, 4});
  ASSERT_TRUE(topo.ok());
  std::vector<Load> loads = {7, 5, 5, 9, 5, 20, 1, 0};
  std::vector<BalancingSubcube> chosen;
  auto plan = McwaPlan(*topo, loads, {}, &chosen);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].dim, 0);
  EXPECT_EQ(chosen[0].base, 0);
  EXPECT_EQ(plan->final_loads[0], 7);  // alone on its side
  EXPECT_EQ(plan->final_loads[3] + plan->final_loads[5] + plan->final_loads[6] + plan->final_loads[7], 30);
  for (NodeId u : {3, 5, 6, 7}) EXPECT_NEAR(plan->final_loads[u], 7.5, 0.5);
  for (NodeId u : {1, 2, 4}) EXPECT_EQ(plan->final_loads[u], 5);  // faulty: untouched
}

TEST(McwaTest, RejectsBadInput) {
  Topology topo = Example2Topology();
  EXPECT_FALSE(McwaPlan(topo, std::vector<Load>(15, 0), {}).ok());
  EXPECT_FALSE(BuildBalancingSubcube(topo, 0b1100, 0b0001).ok());  // contains 0101
  EXPECT_FALSE(BuildBalancingSubcube(topo, 0b1010, 0b0011).ok());  // base has a free bit
  auto ring = Topology::Ring(16);
  EXPECT_FALSE(McwaPlan(*ring, std::vector<Load>(16, 0), {}).ok());
}

// Brute force: the least depth over all maximum-size healthy subcubes of the
// component, and the first (mask, base) reaching it.
std::pair<int, std::pair<NodeId, NodeId>> BruteBest(const Topology& topo, NodeId member) {
  const int n = topo.dimensions(), size = topo.size();
  std::vector<int> dist = topo.Distances(member);
  for (int k = n; k >= 0; --k) {
    int best = 1 << 30;
    std::pair<NodeId, NodeId> arg{-1, -1};
    for (NodeId mask = 0; mask < size; ++mask) {
      if (__builtin_popcount(mask) != k) continue;
      for (NodeId base = 0; base < size; ++base) {
        if (base & mask) continue;
        auto bs = BuildBalancingSubcube(topo, mask, base);
        if (!bs.ok() || dist[base] < 0) continue;
        if (bs->tree_depth < best) best = bs->tree_depth, arg = {mask, base};
      }
    }
    if (arg.first >= 0) return {best, arg};
  }
  return {-1, {-1, -1}};
}

TEST(McwaPropertyTest, RandomFaultsLoadsCapacities) {
  std::mt19937_64 rng(1999);
  int filter_cases = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 6);
    const int size = 1 << n;
    const int nf = static_cast<int>(rng() % (n + 3));
    std::vector<NodeId> faults;
    for (int i = 0; i < nf; ++i) faults.push_back(static_cast<NodeId>(rng() % size));
    std::sort(faults.begin(), faults.end());
    faults.erase(std::unique(faults.begin(), faults.end()), faults.end());
    if (static_cast<int>(faults.size()) == size) continue;
    auto topo = Topology::Hypercube(n, faults);
    ASSERT_TRUE(topo.ok());
    std::vector<Load> loads(size);
    std::vector<double> caps(size);
    const bool weighted = trial % 2 == 1;
    for (int u = 0; u < size; ++u) {
      loads[u] = static_cast<Load>(rng() % 300);
      caps[u] = weighted ? 0.5 + static_cast<double>(rng() % 8) : 1.0;
    }
    std::vector<BalancingSubcube> chosen;
    auto plan = McwaPlan(*topo, loads, caps, &chosen);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(TotalLoad(plan->final_loads), TotalLoad(loads));
    std::vector<int> owner(size, -1);
    for (size_t ci = 0; ci < chosen.size(); ++ci) {
      const BalancingSubcube& bs = chosen[ci];
      std::vector<bool> member(size);
      Load before = 0, after = 0;
      for (NodeId u = 0; u < size; ++u) {
        if (!bs.Member(u)) continue;
        EXPECT_EQ(owner[u], -1) << "node in two trees";
        owner[u] = static_cast<int>(ci);
        member[u] = true;
        before += loads[u];
        after += plan->final_loads[u];
        if (!bs.InSubcube(u)) {
          ASSERT_GE(bs.parent[u], 0);
          EXPECT_EQ(__builtin_popcount(u ^ bs.parent[u]), 1);
          EXPECT_EQ(bs.level[bs.parent[u]], bs.level[u] - 1);
        } else {
          EXPECT_EQ(bs.level[u], 0);
        }
      }
      EXPECT_EQ(before, after) << "a component's total changed";
      EXPECT_LT(MaxShareError(plan->final_loads, caps, member), 1.0);
      // Selection against brute force (maximum size, least depth, tie-break).
      auto [best_depth, arg] = BruteBest(*topo, bs.order[0]);
      EXPECT_EQ(bs.tree_depth, best_depth);
      EXPECT_EQ(bs.mask, arg.first);
      EXPECT_EQ(bs.base, arg.second);
      EXPECT_EQ(bs.dim, __builtin_popcount(arg.first));
      // Theorem 1: if some maximum subcube passes Algorithm 4's filter, the
      // chosen depth is at most n - k.
      bool any_pass = false;
      for (NodeId mask = 0; mask < size && !any_pass; ++mask) {
        if (__builtin_popcount(mask) != bs.dim) continue;
        for (NodeId base = 0; base < size && !any_pass; ++base)
          if (!(base & mask) && BuildBalancingSubcube(*topo, mask, base).ok() && bs.Member(base) &&
              PaperFilterAccepts(*topo, mask, base))
            any_pass = true;
      }
      if (any_pass && chosen.size() == 1) {
        ++filter_cases;
        EXPECT_LE(bs.tree_depth, n - bs.dim);
      }
    }
    for (NodeId u = 0; u < size; ++u) {
      EXPECT_GE(plan->final_loads[u], 0);
      if (!topo->alive(u)) {
        EXPECT_EQ(plan->final_loads[u], loads[u]) << "faulty node touched";
      } else {
        EXPECT_GE(owner[u], 0) << "healthy node in no tree";
      }
    }
    for (const Transfer& t : plan->transfers) {
      EXPECT_TRUE(topo->alive(t.from) && topo->alive(t.to));
      EXPECT_EQ(__builtin_popcount(t.from ^ t.to), 1);
    }
    if (chosen.size() == 1 && !weighted) {
      EXPECT_LE(MaxDiff(plan->final_loads, topo->alive_mask()), 1);
    }
    if (chosen.size() == 1) {
      EXPECT_EQ(plan->metrics.steps, 3 * chosen[0].dim + 4 * chosen[0].tree_depth);
    }
  }
  EXPECT_GT(filter_cases, 100);
}

}  // namespace
}  // namespace hyperfed::balance
