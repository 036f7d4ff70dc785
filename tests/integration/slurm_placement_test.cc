// Placement at arrival on the project's real Slurm (issue 29; docs/design.md
// §6.10 "Placement at arrival"; docs/adapters.md, "Placement at arrival
// (job_submit.lua)"): two Slurm clusters with hyperfed's job_submit.lua and
// a placement window, two hyperfedd placing at arrival (no timer rounds, so
// every move is placement's). A user submits with sbatch, as users do.
//
// One federation serves every test of the fixture (starting two Slurm
// clusters and two daemons is most of the time); each test begins with
// both clusters empty and cancels its jobs at the end. Skipped, saying why,
// where Slurm or its job_submit/lua plugin is missing, or without root
// (useradd, sbatch --uid).

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/scheduler/slurm_adapter.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/federation_harness.h"
#include "tests/scheduler/slurm_cluster.h"

namespace hyperfed::testing {
namespace {

using scheduler::Job;

// Long enough that a job cannot start at home before the daemon decides,
// short enough that a test that waits it out stays short.
constexpr int kWindowS = 30;
// The user who submits (made with useradd if missing, as the Slurm
// run-as tests do); moved jobs run as their owner (users_map: same-name).
constexpr char kUser[] = "alice";

bool WaitFor(const std::function<bool()>& cond, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    if (cond()) return true;
    absl::SleepFor(absl::Milliseconds(200));
  }
  return cond();
}

class SlurmPlacementTest : public ::testing::Test {
 protected:
  // Two clusters of 4 CPUs with the placement window, their adapters (for
  // the test's own view), and a federation of two daemons placing at
  // arrival with a margin of 1 s. On trouble, skip_ or error_ says why.
  static void SetUpTestSuite() {
    if (std::string why = SlurmLuaMissing(); !why.empty()) {
      skip_ = why;
      return;
    }
    if (geteuid() != 0) {
      skip_ = absl::StrCat("creating a user (useradd) and sbatch --uid need root; running as uid ", geteuid());
      return;
    }
    if (getpwnam(kUser) == nullptr) {
      auto r = scheduler::RunCommand({.argv = {"useradd", "-M", "-s", "/bin/sh", kUser}});
      if (!r.ok() || r->exit_code != 0) {
        error_ = absl::StrCat("useradd ", kUser, ": ", r.ok() ? r->err : r.status().ToString());
        return;
      }
    }
    std::string tmpl = (std::filesystem::temp_directory_path() / "hyperfed-slurm-place-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      error_ = "mkdtemp failed";
      return;
    }
    work_ = new std::string(tmpl);
    chmod(tmpl.c_str(), 01777);  // the user's jobs write here, at both clusters
    std::filesystem::create_directories(tmpl + "/out");
    chmod((tmpl + "/out").c_str(), 01777);
    clusters_ = new std::vector<std::unique_ptr<SlurmCluster>>;
    adapters_ = new std::vector<std::unique_ptr<scheduler::SlurmAdapter>>;
    FederationOptions o{.sites = 2};
    o.adapter = "slurm";
    o.placement = true;
    o.placement_margin = "1s";
    o.interval = "0s";  // no timer rounds: a move is placement's
    o.job_choice = "gain";
    for (const char* name : {"slurm-a", "slurm-b"}) {
      auto c = SlurmCluster::Start(name, 4, kWindowS);
      if (!c.ok()) {
        error_ = c.status().ToString();
        return;
      }
      clusters_->push_back(*std::move(c));
      const SlurmCluster& cl = *clusters_->back();
      const std::map<std::string, std::string> opts = {
          {"slurm_conf", cl.conf()},  {"submit_dir", *work_},
          {"timeout", "30s"},         {"run_as", "owner"},
          {"users_map", "same-name"}, {"mark_key", absl::StrCat(*work_, "/keys/", cl.name(), ".key")}};
      o.adapter_options.push_back(opts);
      auto a = scheduler::SlurmAdapter::Open({.options = opts});
      if (!a.ok()) {
        error_ = a.status().ToString();
        return;
      }
      adapters_->push_back(*std::move(a));
    }
    const absl::Time t0 = absl::Now();
    auto f = TestFederation::Start(o);
    if (!f.ok()) {
      error_ = f.status().ToString();
      return;
    }
    fed_ = f->release();
    // A few heartbeats: each site has the other's start profile.
    absl::SleepFor(absl::Seconds(1));
    std::cout << "two Slurm clusters and two hyperfedd up; the daemons took " << absl::FormatDuration(absl::Now() - t0)
              << "\n";
  }

  static void TearDownTestSuite() {
    delete fed_;  // daemons first, then their clusters
    fed_ = nullptr;
    delete adapters_;
    adapters_ = nullptr;
    delete clusters_;
    clusters_ = nullptr;
    if (work_ != nullptr && getenv("HYPERFED_KEEP_TEST_DIR") == nullptr) {
      std::error_code ec;
      std::filesystem::remove_all(*work_, ec);
    }
    delete work_;
    work_ = nullptr;
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(error_.empty()) << error_;
    ASSERT_TRUE(Live(0).empty() && Live(1).empty()) << "a previous test left jobs";
  }

  // Every job of both clusters cancelled, and gone, before the next test.
  void TearDown() override {
    if (!skip_.empty() || !error_.empty()) return;
    for (int i = 0; i < 2; ++i) EXPECT_TRUE(cluster(i).Cmd({"scancel", "--user", kUser}).ok());
    EXPECT_TRUE(WaitFor([&] { return Live(0).empty() && Live(1).empty(); }, absl::Seconds(30)))
        << "jobs left after scancel";
    // Each daemon's own start profile is refreshed every heartbeat or
    // more: let both see empty clusters before the next test submits.
    absl::SleepFor(absl::Seconds(3));
  }

  static SlurmCluster& cluster(int i) { return *(*clusters_)[i]; }
  static TestFederation& fed() { return *fed_; }

  // Site i's live (pending, held, running) jobs, as its adapter sees them.
  static std::vector<Job> Live(int i) {
    auto jobs = (*adapters_)[i]->ListJobs();
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    return jobs.ok() ? *jobs : std::vector<Job>{};
  }

  // sbatch at cluster i as kUser: the id.
  static std::string Sbatch(int i, const std::vector<std::string>& args, const std::string& script) {
    std::vector<std::string> argv = {"sbatch", "--parsable", absl::StrCat("--uid=", kUser)};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = cluster(i).Cmd(argv, script, *work_);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::string(absl::StripAsciiWhitespace(r->out)) : "";
  }

  // A job that writes where it ran, as whom and when (epoch seconds) to
  // out/<name>.txt, then sleeps so that it stays live.
  static std::string Script(const std::string& name) {
    return absl::StrCat("#!/bin/sh\n#SBATCH --output=", *work_, "/out/slurm-%j.log\n",
                        "echo \"$SLURM_CLUSTER_NAME $(id -un) $(date +%s)\" > ", *work_, "/out/", name,
                        ".txt\nsleep 600\n");
  }
  static std::string Ran(const std::string& name) {
    return std::string(absl::StripAsciiWhitespace(ReadText(absl::StrCat(*work_, "/out/", name, ".txt"))));
  }

  static std::string Logs() { return fed_->Log(0) + fed_->Log(1); }

  static inline std::string skip_, error_;
  static inline std::string* work_ = nullptr;
  static inline std::vector<std::unique_ptr<SlurmCluster>>* clusters_ = nullptr;
  static inline std::vector<std::unique_ptr<scheduler::SlurmAdapter>>* adapters_ = nullptr;
  static inline TestFederation* fed_ = nullptr;
};

// Cluster A is full for an hour, B idle: a job submitted with sbatch at A
// is moved by A's daemon during its window and runs at B, as its owner,
// long before A's window would have ended; its key is at exactly one
// cluster.
TEST_F(SlurmPlacementTest, ASbatchJobRunsAtTheOtherClusterWhenThatOneStartsItSooner) {
  // The blocker: all 4 CPUs of A for an hour. Both clusters are idle, so
  // A's daemon keeps it and ends its window (as in AKeptJobStartsAtOnce).
  const std::string blocker = Sbatch(0, {"--job-name=blocker", "--cpus-per-task=4", "--time=60"}, Script("blocker"));
  ASSERT_FALSE(blocker.empty());
  ASSERT_TRUE(WaitFor([&] { return SqueueJob(cluster(0), blocker).state == "RUNNING"; }, absl::Seconds(20)))
      << "the blocker did not start at A: " <<
      [&] {
        auto r = cluster(0).Cmd({"scontrol", "show", "job", blocker});
        return r.ok() ? r->out : r.status().ToString();
      }()
      << Logs();
  // A's own start profile is refreshed every heartbeat or more (ten times
  // what the Slurm probe costs): let it see the blocker.
  absl::SleepFor(absl::Seconds(3));

  const int64_t submitted_s = absl::ToUnixSeconds(absl::Now());
  const std::string id = Sbatch(0, {"--job-name=mover", "--cpus-per-task=1", "--time=10"}, Script("mover"));
  ASSERT_FALSE(id.empty());
  // The window job_submit.lua gave it ends no sooner than this.
  const int64_t window_end_s = submitted_s + kWindowS;
  const std::string key = absl::StrCat("slurm-a/", id);

  // It runs at B, as its owner, before A's window would have ended (the
  // wait stops short of that end).
  EXPECT_TRUE(WaitFor([&] { return !Ran("mover").empty(); }, absl::Seconds(kWindowS - 5)))
      << "the job did not run anywhere within its window at A\n"
      << Logs();
  const std::vector<std::string> ran = absl::StrSplit(Ran("mover"), ' ');
  ASSERT_EQ(ran.size(), 3u) << Ran("mover");
  EXPECT_EQ(ran[0], "slurm-b") << "it ran at " << ran[0];
  EXPECT_EQ(ran[1], kUser) << "it ran as " << ran[1];
  int64_t ran_s = 0;
  ASSERT_TRUE(absl::SimpleAtoi(ran[2], &ran_s)) << ran[2];
  EXPECT_LT(ran_s, window_end_s) << "it waited out A's window";
  std::cout << "sbatch at A to running at B: about " << ran_s - submitted_s << " s (window " << kWindowS << " s)\n";

  // Exactly once by hyperfed's key: at B, and A holds only the blocker.
  std::multiset<std::string> keys;
  std::vector<Job> at_b = Live(1);
  for (int i = 0; i < 2; ++i)
    for (const Job& j : Live(i)) keys.insert(j.spec.key);
  EXPECT_EQ(keys.count(key), 1u) << key;
  EXPECT_EQ(keys, (std::multiset<std::string>{key, absl::StrCat("slurm-a/", blocker)}));
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_b[0].spec.key, key);
  EXPECT_EQ(at_b[0].spec.owner, kUser);
  EXPECT_EQ(at_b[0].spec.name, "mover");
  EXPECT_TRUE(absl::StartsWith(at_b[0].tag, "hyperfed:")) << at_b[0].tag;
  const SlurmJobView at_b_view = SqueueJob(cluster(1), at_b[0].id);
  EXPECT_EQ(at_b_view.state, "RUNNING");
  EXPECT_LT(at_b_view.start_s, window_end_s) << "Slurm at B started it after A's window";
  EXPECT_FALSE(SqueueJob(cluster(0), id).state == "RUNNING") << "it ran at A too";
  EXPECT_NE(fed().Log(0).find("placed 1 jobs where they start sooner: 1 to site-1"), std::string::npos) << fed().Log(0);
}

// Both clusters idle: no peer starts the job sooner by the margin, so A's
// daemon keeps it and ends its window (EndPlacementWindow): it starts at A
// long before the window would have ended, and nothing goes to B.
TEST_F(SlurmPlacementTest, AKeptJobStartsAtOnce) {
  const int64_t submitted_s = absl::ToUnixSeconds(absl::Now());
  const std::string id = Sbatch(0, {"--job-name=kept", "--cpus-per-task=1", "--time=10"}, Script("kept"));
  ASSERT_FALSE(id.empty());
  // The window job_submit.lua gave it ends no sooner than this (the daemon
  // may have ended it already: its AdminComment then says "kept").
  const int64_t window_end_s = submitted_s + kWindowS;
  // Up to a little past the window's end: a job that waited it out fails
  // below, not here.
  WaitFor([&] { return SqueueJob(cluster(0), id).state == "RUNNING"; }, absl::Seconds(kWindowS + 5));
  const SlurmJobView v = SqueueJob(cluster(0), id);
  EXPECT_EQ(v.state, "RUNNING") << Logs();
  EXPECT_LT(v.start_s, window_end_s) << "the job waited out its window\n" << Logs();
  EXPECT_EQ(v.admin_comment, "hyperfed-window=kept") << "the daemon did not end its window";
  EXPECT_TRUE(WaitFor([&] { return !Ran("kept").empty(); }, absl::Seconds(10)));
  EXPECT_TRUE(absl::StartsWith(Ran("kept"), absl::StrCat("slurm-a ", kUser, " "))) << Ran("kept");
  if (v.start_s > 0 && window_end_s > v.start_s)
    std::cout << "kept job started " << window_end_s - v.start_s << " s before its window's end\n";
  EXPECT_TRUE(Live(1).empty()) << "a job went to B";
}

}  // namespace
}  // namespace hyperfed::testing
