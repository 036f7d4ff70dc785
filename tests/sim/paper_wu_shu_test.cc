#include "sim/paper_wu_shu.h"

#include <random>
#include <vector>

#include "daemon/balance/dde.h"
#include "daemon/balance/gde.h"
#include "gtest/gtest.h"

namespace hyperfed::sim {
namespace {

using balance::Load;

const std::vector<Load> kExample1 = {9, 7, 4, 1, 4, 6, 1, 5};

TEST(LocalTaskFractionTest, ReceiveBeforeSendKeepsMoreTasksLocal) {
  auto chain = balance::Topology::Chain(8);
  auto rbs = balance::DdePlan(*chain, kExample1, {balance::ExchangeSchedule::kReceiveBeforeSend, true});
  auto sbr = balance::DdePlan(*chain, kExample1, {balance::ExchangeSchedule::kSendBeforeReceive, true});
  ASSERT_TRUE(rbs.ok() && sbr.ok());
  // Receive-before-send: nodes 0, 5, 7 send 4, 2, 1 own tasks, node 1 two
  // of its own after passing on the four it received.
  EXPECT_DOUBLE_EQ(LocalTaskFraction(*rbs), 28.0 / 37);
  // Send-before-receive: node 1 sends six of its own before receiving.
  EXPECT_DOUBLE_EQ(LocalTaskFraction(*sbr), 23.0 / 37);
}

TEST(PaperWuShuTest, TableOneSweepsOnEightByEightMeshMatchPaper) {
  // Table I: 11.08 sweeps at average weight 1000 (100 cases in the paper).
  auto mesh = balance::Topology::Mesh({8, 8});
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<Load> u(0, 2000);
  balance::IterativeOptions o;
  o.parameter = balance::ExchangeParameter::kOptimal;
  o.stop = balance::StopTest::kNeighborDifference;
  double sweeps = 0;
  const int trials = 20;
  for (int t = 0; t < trials; ++t) {
    std::vector<Load> w(64);
    for (Load& x : w) x = u(rng);
    auto plan = balance::GdePlan(*mesh, w, o);
    ASSERT_TRUE(plan.ok());
    sweeps += static_cast<double>(plan->metrics.steps) / 4;
  }
  EXPECT_NEAR(sweeps / trials, 11.08, 11.08 * 0.1);
}

TEST(PaperWuShuTest, ReportShowsExampleFiguresBesidePaper) {
  PaperOptions opts;
  opts.scale = 0.02;
  auto report = PaperWuShu(opts);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NE(report->text.find("receive-before-send (Fig. 5): paper 4 steps, ours 4"), std::string::npos);
  EXPECT_NE(report->text.find("send-before-receive (Fig. 6): paper 2 steps, ours 2"), std::string::npos);
  EXPECT_NE(report->text.find("chain flow paper 19 ours 19; after augmentation paper 17 ours 17"), std::string::npos);
  EXPECT_TRUE(report->plots.empty());
}

}  // namespace
}  // namespace hyperfed::sim
