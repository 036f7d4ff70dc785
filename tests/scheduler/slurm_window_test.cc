// The placement window of a Slurm site (docs/adapters.md, "Placement at
// arrival (job_submit.lua)"): deploy/slurm/job_submit.lua in a real Slurm
// (scripts/slurm-cluster --placement-window) and SlurmAdapter's side of it.
// Each test starts its own cluster; skipped, saying why, where Slurm or its
// job_submit/lua plugin is not installed (scripts/setup installs both).

#include <sys/stat.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/scheduler/slurm_adapter.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/scheduler/slurm_cluster.h"
#include "tests/scheduler/temp_dir.h"

namespace hyperfed::scheduler::testing {
namespace {

using hyperfed::testing::SlurmCluster;
using hyperfed::testing::SlurmLuaMissing;
using hyperfed::testing::SlurmJobView;
using hyperfed::testing::SqueueJob;

TEST(SlurmWindowFieldTest, ReadsAndEndsTheWindowField) {
  EXPECT_EQ(SlurmWindowEnd(""), 0);
  EXPECT_EQ(SlurmWindowEnd("hyperfed-window=1700000000"), 1700000000);
  EXPECT_EQ(SlurmWindowEnd("site note;hyperfed-window=1700000005"), 1700000005);
  EXPECT_EQ(SlurmWindowEnd("hyperfed-window=kept"), 0);
  EXPECT_EQ(SlurmWindowEnd("hyperfed-window=12x"), 0);
  EXPECT_EQ(SlurmWindowEnd("xhyperfed-window=1700000000"), 0);  // a field of its own only
  EXPECT_EQ(SlurmWindowKept("hyperfed-window=1700000000"), "hyperfed-window=kept");
  EXPECT_EQ(SlurmWindowKept("site note;hyperfed-window=1700000005"), "site note;hyperfed-window=kept");
  EXPECT_EQ(SlurmWindowEnd(SlurmWindowKept("a;hyperfed-window=1700000005;b")), 0);
}

class SlurmWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = SlurmLuaMissing(); !why.empty()) GTEST_SKIP() << why;
    chmod(dir_.path().c_str(), 01777);  // moved jobs run as nobody (run_as_account below); sticky, as /tmp
  }
  void StartCluster(int window_s) {
    auto c = SlurmCluster::Start("win", 4, window_s);
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = *std::move(c);
    auto a = SlurmAdapter::Open({.state_dir = dir_.path(),
                                 .options = {{"slurm_conf", cluster_->conf()},
                                             {"submit_dir", dir_.path()},
                                             {"run_as", "account"},
                                             {"run_as_account", "nobody"}}});
    ASSERT_TRUE(a.ok()) << a.status();
    adapter_ = *std::move(a);
  }
  // sbatch straight to the cluster, as a user would; returns the id.
  std::string Sbatch(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"sbatch", "--parsable", "--time=10"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = cluster_->Cmd(argv, "#!/bin/sh\nsleep 300\n", dir_.path());
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::string(absl::StripAsciiWhitespace(r->out)) : "";
  }
  SlurmJobView View(const std::string& id) {
    return SqueueJob(*cluster_, id);
  }
  // Polls until job `id` runs, for up to `limit`; what squeue last said.
  SlurmJobView WaitRunning(const std::string& id, absl::Duration limit) {
    const absl::Time deadline = absl::Now() + limit;
    SlurmJobView v = View(id);
    while (v.state != "RUNNING" && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(200));
      v = View(id);
    }
    return v;
  }

  TempDir dir_;
  std::unique_ptr<SlurmCluster> cluster_;
  std::unique_ptr<SlurmAdapter> adapter_;
};

// With no daemon, a job submitted with sbatch waits out its window (pending,
// reason BeginTime, the window's end in its AdminComment) and then starts at
// home by itself: nothing waits on hyperfedd.
TEST_F(SlurmWindowTest, WithoutDaemonJobStartsAtHomeWhenWindowEnds) {
  StartCluster(5);
  const std::string id = Sbatch({});
  ASSERT_FALSE(id.empty());
  SlurmJobView v = View(id);
  ASSERT_TRUE(v.found);
  const int64_t window_end = SlurmWindowEnd(v.admin_comment);
  ASSERT_GT(window_end, 0) << "AdminComment: " << v.admin_comment;
  // Submitted before the window's end, it cannot have started yet (the
  // node is idle: only the window keeps it).
  EXPECT_EQ(v.state, "PENDING");
  EXPECT_EQ(v.reason, "BeginTime");
  EXPECT_EQ(v.eligible_s, window_end);
  // The adapter sees it as a new job in its window.
  auto pending = adapter_->Pending();
  ASSERT_TRUE(pending.ok()) << pending.status();
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].id, id);
  EXPECT_EQ((*pending)[0].window_end_ms, window_end * 1000);

  v = WaitRunning(id, absl::Seconds(60));
  EXPECT_EQ(v.state, "RUNNING") << "reason " << v.reason;
  EXPECT_GE(v.start_s, window_end);                        // not before the window ended
  EXPECT_EQ(SlurmWindowEnd(v.admin_comment), window_end);  // nobody ended it
}

// EndPlacementWindow lets a windowed job start at once: with a 300 s window
// it runs long before the window would have ended, marked as kept. Unknown
// ids are NotFound; jobs without a window (a user's own later begin time, a
// job already running) are left as they are.
TEST_F(SlurmWindowTest, EndPlacementWindowStartsTheJobNow) {
  StartCluster(300);
  const std::string id = Sbatch({});
  const std::string later = Sbatch({"--begin=now+600"});
  ASSERT_FALSE(id.empty());
  ASSERT_FALSE(later.empty());
  SlurmJobView v = View(id);
  const int64_t window_end = SlurmWindowEnd(v.admin_comment);
  ASSERT_GT(window_end, 0) << "AdminComment: " << v.admin_comment;
  ASSERT_EQ(v.reason, "BeginTime");
  const SlurmJobView later_before = View(later);
  EXPECT_EQ(later_before.admin_comment, "");  // its own begin time is later than the window
  EXPECT_EQ(later_before.reason, "BeginTime");

  std::vector<absl::Status> got = adapter_->EndPlacementWindow({id, later, "999999", "abc", id});
  ASSERT_EQ(got.size(), 5u);
  EXPECT_TRUE(got[0].ok()) << got[0];
  EXPECT_TRUE(got[1].ok()) << got[1];
  EXPECT_TRUE(absl::IsNotFound(got[2])) << got[2];
  EXPECT_TRUE(absl::IsNotFound(got[3])) << got[3];
  EXPECT_TRUE(got[4].ok()) << got[4];

  v = WaitRunning(id, absl::Seconds(60));
  EXPECT_EQ(v.state, "RUNNING") << "reason " << v.reason;
  EXPECT_LT(v.start_s, window_end);  // the window did not run out: it was ended
  EXPECT_EQ(v.admin_comment, "hyperfed-window=kept");
  // A user's own begin time stays.
  const SlurmJobView later_after = View(later);
  EXPECT_EQ(later_after.state, "PENDING");
  EXPECT_EQ(later_after.eligible_s, later_before.eligible_s);
  // A running job has no window: a no-op.
  got = adapter_->EndPlacementWindow({id});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].ok()) << got[0];
}

// A job hyperfed submits at a destination (a moved job) is placed already:
// job_submit.lua gives it no window, so it starts at once although the
// window is 300 s; and the adapter's start probe is not held back either.
TEST_F(SlurmWindowTest, MovedJobAndProbeGetNoWindow) {
  StartCluster(300);
  JobSpec spec{.name = "moved", .script = "#!/bin/sh\nsleep 300\n", .time_limit_s = 600, .key = "a/1"};
  auto id = adapter_->Submit(spec, "tag-moved-1");
  ASSERT_TRUE(id.ok()) << id.status();
  SlurmJobView v = View(*id);
  ASSERT_TRUE(v.found);
  EXPECT_TRUE(absl::StartsWith(v.comment, "hyperfed1;")) << v.comment;
  EXPECT_EQ(v.admin_comment, "");
  EXPECT_NE(v.reason, "BeginTime");
  v = WaitRunning(*id, absl::Seconds(60));
  EXPECT_EQ(v.state, "RUNNING") << "reason " << v.reason;

  // The node has 3 CPUs free and nothing is pending: a job of 1 CPU that
  // arrived now would start now, not after a 300 s window.
  const int64_t before_ms = absl::ToUnixMillis(absl::Now());
  auto starts = adapter_->ArrivalStarts({1});
  ASSERT_TRUE(starts.ok()) << starts.status();
  ASSERT_EQ(starts->size(), 1u);
  EXPECT_LT((*starts)[0], before_ms + 120 * 1000);
}

}  // namespace
}  // namespace hyperfed::scheduler::testing
