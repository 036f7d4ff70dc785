#include "sim/paper_xu.h"

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "daemon/balance/diffusion.h"
#include "daemon/balance/gde.h"
#include "gtest/gtest.h"
#include "sim/xu_dynamic.h"

namespace hyperfed::sim {
namespace {

using balance::ExchangeParameter;

// xu §6, ring of 64: ODE 98, ADE and ODF about 1305, ADF 1684.
// The paper leaves edge order and stopping details loose: accept 15%.
TEST(PaperXuTest, RingOfSixtyFourStepsWithinFifteenPercent) {
  auto ring = balance::Topology::Ring(64);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1000);
  double ode = 0, ade = 0, odf = 0, adf = 0;
  const int trials = 6;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> w(64);
    for (double& x : w) x = u(rng);
    balance::IterativeOptions o;
    o.parameter = ExchangeParameter::kOptimal;
    ode += static_cast<double>(balance::GdeTraceReal(*ring, w, o)->steps);
    odf += static_cast<double>(balance::DiffusionTraceReal(*ring, w, o)->steps);
    o.parameter = ExchangeParameter::kAverage;
    ade += static_cast<double>(balance::GdeTraceReal(*ring, w, o)->steps);
    adf += static_cast<double>(balance::DiffusionTraceReal(*ring, w, o)->steps);
  }
  EXPECT_NEAR(ode / trials, 98, 98 * 0.15);
  EXPECT_NEAR(ade / trials, 1305, 1305 * 0.15);
  EXPECT_NEAR(odf / trials, 1305, 1305 * 0.15);
  EXPECT_NEAR(adf / trials, 1684, 1684 * 0.15);
  // The paper's ordering: ODE far ahead, ADF last.
  EXPECT_LT(ode, ade);
  EXPECT_LT(ade, adf);
  EXPECT_LT(odf, adf);
}

TEST(PaperXuTest, ReportPrintsPaperBesideOurs) {
  PaperOptions opts;
  opts.scale = 0.05;
  auto report = PaperXu(opts);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NE(report->text.find("Ring of 64"), std::string::npos);
  EXPECT_NE(report->text.find("paper"), std::string::npos);
  EXPECT_NE(report->text.find("ODE          98"), std::string::npos);
  EXPECT_NE(report->text.find("Fig. 10: 16x16 mesh, synchronous"), std::string::npos);
  EXPECT_EQ(report->text.find("Not reproduced: the dynamic experiments"), std::string::npos);
}

// Lemmas 5.1 and 5.2 on the 16x16 torus: at t = 0 the closed forms match
// the mean of their own model (Eq. 29 once the sigma0^2 term is the one its
// proof derives; as printed it is s = 1.875 times too large for ADE); by
// t = 5 they fall below zero while the measured variance stays positive.
TEST(XuDynamicTest, ClosedFormsHoldAtTheFirstOperationOnly) {
  auto torus = balance::Topology::Torus({16, 16});
  ASSERT_TRUE(torus.ok());
  const double s0 = 1000.0 * 1000.0 / 12.0, s = 30.0;
  const int runs = 300;
  for (double alpha : {0.2, 1 / (5 - std::cos(2 * M_PI / 16))}) {
    auto m = XuLemmaMeasured(*torus, true, alpha, 5, runs, 11);
    ASSERT_TRUE(m.ok());
    EXPECT_NEAR((*m)[0], XuLemma51(0, 256, 4, alpha, s0, s), 0.03 * (*m)[0]) << alpha;
    EXPECT_LT(XuLemma51(5, 256, 4, alpha, s0, s), 0);
    EXPECT_GT((*m)[5], 0);
  }
  for (double lambda : {0.5, 1 / (1 + std::sin(2 * M_PI / 16))}) {
    auto m = XuLemmaMeasured(*torus, false, lambda, 5, runs, 12);
    ASSERT_TRUE(m.ok());
    EXPECT_NEAR((*m)[0], XuLemma52FromProof(0, 256, 4, lambda, s0, s), 0.03 * (*m)[0]) << lambda;
    EXPECT_GT(XuLemma52(0, 256, 4, lambda, s0, s), 1.5 * (*m)[0]) << lambda;
    EXPECT_LT(XuLemma52FromProof(5, 256, 4, lambda, s0, s), 0);
  }
}

// Theorem 4.1, case 1: the proof's closed forms for one invoker and its
// neighbours match the measurement within 2% on the 16x16 torus (d = 4) and
// the ring of 64 (d = 2), Eq. (13) is the general X_de at lambda = 1/2, and
// the theorem's orderings hold.
TEST(XuDynamicTest, TheoremFourOneClosedFormsMatch) {
  const double s0 = 1000.0 * 1000.0 / 12.0;
  for (int d : {2, 4}) {
    auto topo = d == 2 ? balance::Topology::Ring(64) : balance::Topology::Torus({16, 16});
    ASSERT_TRUE(topo.ok());
    const int n = topo->size();
    EXPECT_NEAR(XuTheorem41DeOnePort(d, 0.5, n, s0) / s0, (3 * d + 5 + std::pow(2.0, 2 - 2 * d)) / 9 - (d + 1.0) / n,
                1e-12);
    const double adf = 1.0 / (d + 1), ade = 0.5;
    const double odf = 1 / (d + 1 - std::cos(2 * M_PI / (d == 2 ? 64 : 16)));
    const auto ma = XuTheorem41Measured(*topo, adf, ade, 6000, 5);
    const auto mo = XuTheorem41Measured(*topo, odf, ade, 6000, 6);
    EXPECT_NEAR(ma[0], XuTheorem41Df(d, adf, n, s0), 0.02 * ma[0]) << d;
    EXPECT_NEAR(mo[0], XuTheorem41Df(d, odf, n, s0), 0.02 * mo[0]) << d;
    EXPECT_NEAR(ma[1], XuTheorem41DeOnePort(d, ade, n, s0), 0.02 * ma[1]) << d;
    EXPECT_NEAR(ma[2], XuTheorem41DeAllPort(d, ade, n, s0), 0.02 * ma[2]) << d;
    EXPECT_LT(ma[1], std::min(ma[0], mo[0])) << "one-port ADE <= DF, d = " << d;
    EXPECT_LT(std::max(ma[0], mo[0]), ma[2]) << "all-port DF <= ADE, d = " << d;
    if (d == 2) EXPECT_LT(ma[0], mo[0]) << "ADF <= ODF in a ring";
    if (d == 4) EXPECT_LT(mo[0], ma[0]) << "ODF <= ADF in a 2-D torus";
  }
}

// Figs. 8 and 9, Table 4 (all-port): asynchronous in the 16x16 mesh,
// {ODF, ADF} > ADE > ODE and ODF > ADF; synchronous in the 16x16 torus,
// ADE > ODE and ADF > ODF (a > b: lower mean variance over the 200 steps).
TEST(XuDynamicTest, OrderingsOfTable4) {
  auto mesh = balance::Topology::Mesh({16, 16});
  auto torus = balance::Topology::Torus({16, 16});
  ASSERT_TRUE(mesh.ok() && torus.ok());
  auto mean_variance = [](const balance::Topology& topo, bool sync) {
    std::array<double, 4> avg{};
    for (int a = 0; a < 4; ++a)
      for (int r = 0; r < 4; ++r) {
        XuDynamicConfig c;
        c.synchronous = sync;
        c.seed = 500 + static_cast<uint64_t>(r);
        auto nu = XuDynamicRun(topo, static_cast<XuAlgo>(a), c);
        EXPECT_TRUE(nu.ok());
        for (int t = 1; t <= 200; ++t) avg[a] += (*nu)[t];
      }
    return avg;
  };
  const int ode = 0, ade = 1, odf = 2, adf = 3;
  const auto as = mean_variance(*mesh, false);
  EXPECT_LT(as[odf], as[adf]);
  EXPECT_LT(as[adf], as[ade]);
  EXPECT_LT(as[ade], as[ode]);
  const auto sy = mean_variance(*torus, true);
  EXPECT_LT(sy[ade], sy[ode]);
  EXPECT_LT(sy[adf], sy[odf]);
}

}  // namespace
}  // namespace hyperfed::sim
