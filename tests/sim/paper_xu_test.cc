#include "sim/paper_xu.h"

#include <random>
#include <vector>

#include "daemon/balance/diffusion.h"
#include "daemon/balance/gde.h"
#include "gtest/gtest.h"

namespace hyperfed::sim {
namespace {

using balance::ExchangeParameter;

// Seed 002 section 6, ring of 64: ODE 98, ADE and ODF about 1305, ADF 1684.
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
}

}  // namespace
}  // namespace hyperfed::sim
