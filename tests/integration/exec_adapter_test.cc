// Two real hyperfedd processes whose scheduler is the `exec` adapter over
// exec_sched (tests/scheduler/exec_sched/sched.py, a scheduler written as a
// script whose jobs really run): a round moves jobs from one queue to the
// other, exactly once, and the moved jobs are in the other scheduler's own
// queue, tagged by the transfer.

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

constexpr int64_t kLong = 3'600'000;  // jobs that stay put for the test's life
constexpr int kSlots = 2;

std::string SchedCommandLine(const std::string& queue) {
  return absl::StrCat("python3 -S ", SourceDir(), "/tests/scheduler/exec_sched/sched.py --state ", queue, " --slots ",
                      kSlots);
}

// The sites' exec_sched queues. Destroyed after the federation (declare it
// before), so that no daemon's call starts a queued job after the shutdown:
// kills the jobs still running, then removes the folders.
class Queues {
 public:
  explicit Queues(int n) {
    std::string tmpl = "/tmp/hyperfed-exec-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    dir_ = tmpl;
    for (int i = 0; i < n; ++i) paths_.push_back(absl::StrCat(dir_, "/site-", i));
  }
  ~Queues() {
    for (const auto& q : paths_) {
      if (std::system((SchedCommandLine(q) + " shutdown").c_str()) != 0) ADD_FAILURE() << "shutdown of " << q;
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& path(int i) const { return paths_[i]; }

 private:
  std::string dir_;
  std::vector<std::string> paths_;
};

// What exec_sched itself says its queue holds (not through hyperfed).
std::string SchedList(const std::string& queue) {
  std::string out;
  FILE* p = popen((SchedCommandLine(queue) + " list").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

TEST(ExecAdapterFederationTest, RoundMovesJobsBetweenTwoExecSchedulers) {
  Queues queues(2);
  std::unique_ptr<TestFederation> f;
  {
    FederationOptions o{.sites = 2};
    o.adapter = "exec";
    for (int i = 0; i < 2; ++i) o.adapter_options.push_back({{"command", SchedCommandLine(queues.path(i))}});
    auto started = TestFederation::Start(o);
    ASSERT_TRUE(started.ok()) << started.status();
    f = *std::move(started);
  }
  // Site 0: both slots busy and 8 queued; site 1: both slots busy, none queued.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(Submit(*f, i, kSlots, kLong).ok());
    ASSERT_TRUE(WaitRunning(*f, i, kSlots, absl::Seconds(20))) << f->Log(i);
  }
  ASSERT_TRUE(Submit(*f, 0, 8, kLong).ok());
  ASSERT_EQ(CountState(ListJobs(*f, 0), "pending"), 8);
  const auto before = AllKeys(*f);
  ASSERT_EQ(before.size(), 12u);

  auto result = RunRound(*f, 0);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->ok()) << result->message();
  EXPECT_EQ(result->moved(), 4) << result->message();

  EXPECT_EQ(CountState(ListJobs(*f, 0), "pending"), 4);
  EXPECT_EQ(CountState(ListJobs(*f, 1), "pending"), 4);
  EXPECT_EQ(AllKeys(*f), before) << "every job exactly once";
  // The moved jobs are in site 1's scheduler, tagged by their transfer; site
  // 0's copies are cancelled, so its scheduler no longer lists them.
  const std::string at1 = SchedList(queues.path(1)), at0 = SchedList(queues.path(0));
  EXPECT_EQ(Count(at1, "\"tag\": \"hyperfed:"), 4) << at1;
  EXPECT_EQ(Count(at1, "\"state\": \"pending\""), 4) << at1;
  EXPECT_EQ(Count(at0, "\"state\": \"pending\""), 4) << at0;
  EXPECT_EQ(Count(at0, "\"state\": \"running\""), 2) << at0;
}

}  // namespace
}  // namespace hyperfed::testing
