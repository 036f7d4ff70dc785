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
#include "absl/strings/str_replace.h"
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

// Issue 33: MigrateOut cut batches by count only, so a batch of large
// scripts over the 8 MiB message limit was refused as final and nothing
// moved. Three jobs of 3 MiB scripts (9 MiB together) go from site 0 to
// site 1 in one round: in several Transfers, every one exactly once.
TEST(ExecAdapterFederationTest, LargeScriptsOverTheMessageLimitMoveInSeveralBatches) {
  constexpr size_t kScriptBytes = size_t{3} << 20;
  constexpr int kBig = 6;  // pending at site 0; the round moves half
  Queues queues(2);
  std::unique_ptr<TestFederation> f;
  {
    FederationOptions o{.sites = 2};
    o.adapter = "exec";
    o.heartbeat = "1s";  // each call of exec_sched reads the whole queue: 18 MiB of scripts
    o.step_timeout = "60s";
    o.peer_timeout = "10s";
    for (int i = 0; i < 2; ++i)
      o.adapter_options.push_back({{"command", SchedCommandLine(queues.path(i))}, {"timeout_ms", "60000"}});
    auto started = TestFederation::Start(o);
    ASSERT_TRUE(started.ok()) << started.status();
    f = *std::move(started);
  }
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(Submit(*f, i, kSlots, kLong).ok());
    ASSERT_TRUE(WaitRunning(*f, i, kSlots, absl::Seconds(20))) << f->Log(i);
  }
  // Straight into site 0's scheduler: hyperfedctl submit makes small
  // scripts only.
  for (int i = 0; i < kBig; ++i) {
    const std::string script = absl::StrCat("#!/bin/sh\n#", std::string(kScriptBytes - 64, 'x'), "\nsleep 3600\n");
    FILE* p = popen((SchedCommandLine(queues.path(0)) + " submit '' false >/dev/null").c_str(), "w");
    ASSERT_NE(p, nullptr);
    const std::string spec = absl::StrCat(
        "{\"name\":\"big\",\"script\":\"", absl::StrReplaceAll(script, {{"\n", "\\n"}}),
        "\",\"cores\":1,\"memory_mb\":0,\"time_limit_s\":0,\"workdir\":\"\",\"env\":{},\"duration_ms\":", kLong,
        ",\"cost\":0,\"key\":\"big-", i, "\",\"owner\":\"\"}");
    fwrite(spec.data(), 1, spec.size(), p);
    ASSERT_EQ(pclose(p), 0);
  }
  // Read from the schedulers themselves (an Admin.Jobs reply with these
  // scripts is over the client's message limit), once per queue: each
  // listing is 9 to 18 MiB.
  auto key = [](int i) { return absl::StrCat("\"key\": \"big-", i, "\""); };
  {
    const std::string at0 = SchedList(queues.path(0)), at1 = SchedList(queues.path(1));
    for (int i = 0; i < kBig; ++i)
      ASSERT_EQ(std::make_pair(Count(at0, key(i)), Count(at1, key(i))), std::make_pair(1, 0));
  }

  // Moving 9 MiB of scripts through exec_sched's whole-queue reads took
  // 150 to 160 s on a loaded 2-core machine: the wait is for the round's
  // end, not a measure of its speed (the round's own deadline is 10 steps).
  auto result = RunRound(*f, 0, /*dry_run=*/false, absl::Seconds(400));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->ok()) << result->message();
  EXPECT_EQ(result->moved(), kBig / 2) << result->message() << f->Log(0);
  const std::string at0 = SchedList(queues.path(0)), at1 = SchedList(queues.path(1));
  int moved = 0;
  for (int i = 0; i < kBig; ++i) {
    EXPECT_EQ(Count(at0, key(i)) + Count(at1, key(i)), 1) << "big-" << i << " exactly once";
    moved += Count(at1, key(i));
  }
  EXPECT_EQ(moved, kBig / 2);
  EXPECT_EQ(Count(at1, "\"tag\": \"hyperfed:"), kBig / 2);
  // Each moved script arrived whole (its end after the padding; the queue
  // holds the scripts), in more than one Transfer (the tags name the
  // migration: "hyperfed:<site>:<sequence>:<index>").
  EXPECT_EQ(Count(at1, "xxxxxxxx\\nsleep 3600\\n"), kBig / 2);
  EXPECT_GT(at1.size(), kBig / 2 * kScriptBytes);
  EXPECT_GE(Count(at1, "\"tag\": \"hyperfed:site-0:"), kBig / 2);
  EXPECT_LT(Count(at1, "\"tag\": \"hyperfed:site-0:1:"), kBig / 2) << "one Transfer took them all";
}

}  // namespace
}  // namespace hyperfed::testing
