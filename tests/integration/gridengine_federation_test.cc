// A mixed federation for real: one Slurm site (scripts/slurm-cluster) and
// one Grid Engine site (scripts/gridengine-cluster), each run by hyperfedd
// with its own adapter. Jobs move both ways and run to completion as their
// owner. Skipped, saying why, where either scheduler is not installed or
// the tests do not run as root; scripts/setup installs both.
//
// Every job is submitted directly, as its user would (sbatch --uid, qsub as
// that user): user nobody, whose uid (65534) the sites admit with uid_max.
// Sites run moved jobs as their owner (run_as: owner, users_map: same-name).

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "daemon/scheduler/gridengine_adapter.h"
#include "daemon/scheduler/slurm_adapter.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"
#include "tests/scheduler/gridengine_cluster.h"
#include "tests/scheduler/slurm_cluster.h"

namespace hyperfed::testing {
namespace {

using scheduler::Job;
using scheduler::JobState;

constexpr char kUser[] = "nobody";
constexpr int kUid = 65534;

class MixedSites {
 public:
  // Site 0: Slurm, its partition down (jobs stay pending); site 1: Grid
  // Engine, its scheduler thread stopped (the same). False on failure, with
  // a test failure recorded.
  bool Start() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hyperfed-mixed-work-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return false;
    chmod(tmpl.c_str(), 01777);
    work_ = tmpl;
    std::filesystem::create_directories(work_ + "/out");
    chmod((work_ + "/out").c_str(), 01777);
    auto s = SlurmCluster::Start("mixed-slurm");
    if (!s.ok()) {
      ADD_FAILURE() << s.status();
      return false;
    }
    slurm_ = *std::move(s);
    auto g = GridEngineCluster::Start("mixed-ge");
    if (!g.ok()) {
      ADD_FAILURE() << g.status();
      return false;
    }
    ge_ = *std::move(g);
    if (auto r = slurm_->Cmd({"scontrol", "update", "PartitionName=debug", "State=DOWN"}); !r.ok()) {
      ADD_FAILURE() << r.status();
      return false;
    }
    if (auto r = ge_->Cmd({"qconf", "-kt", "scheduler"}); !r.ok()) {
      ADD_FAILURE() << r.status();
      return false;
    }
    auto a = scheduler::SlurmAdapter::Open({.options = Options(0)});
    auto b = scheduler::GridEngineAdapter::Open({.options = Options(1)});
    if (!a.ok() || !b.ok()) {
      ADD_FAILURE() << a.status() << " " << b.status();
      return false;
    }
    slurm_adapter_ = *std::move(a);
    ge_adapter_ = *std::move(b);
    return true;
  }
  ~MixedSites() {
    slurm_adapter_.reset();
    ge_adapter_.reset();
    slurm_.reset();
    ge_.reset();
    if (!work_.empty() && getenv("HYPERFED_KEEP_TEST_DIR") == nullptr) {
      std::error_code ec;
      std::filesystem::remove_all(work_, ec);
    }
  }

  std::map<std::string, std::string> Options(int i) const {
    std::map<std::string, std::string> o = {{"submit_dir", work_},
                                            {"timeout", "30s"},
                                            {"run_as", "owner"},
                                            {"users_map", "same-name"},
                                            {"uid_max", std::to_string(kUid)}};
    if (i == 0) {
      o["slurm_conf"] = slurm_->conf();
      o["mark_key"] = work_ + "/keys/slurm.key";
    } else {
      for (const auto& [k, v] : ge_->Options()) o[k] = v;
      o["mark_key"] = work_ + "/keys/ge.key";
    }
    return o;
  }

  FederationOptions Federation() const {
    FederationOptions o{.sites = 2};
    o.site_adapters = {"slurm", "gridengine"};
    o.adapter_options = {Options(0), Options(1)};
    return o;
  }

  // A job that writes who ran it and where.
  std::string Script(int n) const {
    return absl::StrCat("#!/bin/sh\nwhere=${SLURM_JOB_ID:+slurm}${QUEUE:+gridengine}\n", "echo \"job ", n,
                        " ran as $(id -un) at $where\" > ", work_, "/out/job-", n, ".txt\n");
  }

  void SubmitAtSlurm(int from, int count) {
    for (int n = from; n < from + count; ++n) {
      auto r = slurm_->Cmd({"sbatch", "--parsable", absl::StrCat("--uid=", kUid), absl::StrCat("--gid=", kUid),
                            absl::StrCat("--job-name=move-", n), "--output=/dev/null"},
                           Script(n), work_);
      ASSERT_TRUE(r.ok()) << r.status();
    }
  }

  void SubmitAtGridEngine(int from, int count) {
    std::map<std::string, std::string> env = ge_->Env();
    env["PATH"] = "/usr/bin:/bin";
    for (int n = from; n < from + count; ++n) {
      scheduler::CommandSpec spec{
          .argv = {"setpriv", absl::StrCat("--reuid=", kUid), absl::StrCat("--regid=", kUid), "--init-groups", "qsub",
                   "-terse", "-cwd", "-o", "/dev/null", "-e", "/dev/null", "-N", absl::StrCat("move-", n)},
          .stdin_text = Script(n),
          .env = env,
          .inherit_env = false,
          .cwd = work_,
          .timeout = absl::Seconds(30)};
      auto r = scheduler::RunCommand(spec);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->exit_code, 0) << r->err;
    }
  }

  std::vector<Job> Live(int i) {
    auto jobs = i == 0 ? slurm_adapter_->ListJobs() : ge_adapter_->ListJobs();
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    return jobs.ok() ? *jobs : std::vector<Job>{};
  }

  // Keys of the live jobs of both sites; a key seen twice shows twice.
  std::multiset<std::string> LiveKeys() {
    std::multiset<std::string> keys;
    for (int i = 0; i < 2; ++i)
      for (const auto& j : Live(i)) keys.insert(j.spec.key);
    return keys;
  }
  scheduler::GridEngineAdapter& ge_adapter() { return *ge_adapter_; }

  SlurmCluster& slurm() { return *slurm_; }
  GridEngineCluster& ge() { return *ge_; }
  const std::string& work() const { return work_; }

 private:
  std::unique_ptr<SlurmCluster> slurm_;
  std::unique_ptr<GridEngineCluster> ge_;
  std::unique_ptr<scheduler::SlurmAdapter> slurm_adapter_;
  std::unique_ptr<scheduler::GridEngineAdapter> ge_adapter_;
  std::string work_;
};

std::string MixedMissing() {
  if (std::string why = SlurmMissing(); !why.empty()) return why;
  return GridEngineMissing();
}

class MixedFederationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = MixedMissing(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(sites_.Start());
  }

  // Moves jobs from site `from` in one round, lets the other site run them,
  // and checks: some moved, every job is at exactly one site, and every
  // moved job ran once, to completion, as its owner, at the other site.
  void MoveAndRun(int from, int count) {
    const int to = 1 - from;
    auto f = TestFederation::Start(sites_.Federation());
    ASSERT_TRUE(f.ok()) << f.status();
    TestFederation& fed = **f;
    auto round = RunRound(fed, from);
    ASSERT_TRUE(round.ok()) << round.status() << fed.Log(0) << fed.Log(1);
    EXPECT_TRUE(round->ok()) << round->message() << fed.Log(0) << fed.Log(1);
    EXPECT_GT(round->moved(), 0) << round->message() << fed.Log(0) << fed.Log(1);
    const std::vector<Job> stayed = sites_.Live(from), moved = sites_.Live(to);
    EXPECT_EQ(static_cast<int>(stayed.size() + moved.size()), count);
    EXPECT_EQ(static_cast<int>(moved.size()), round->moved());
    std::multiset<std::string> names;
    for (const auto* jobs : {&stayed, &moved})
      for (const auto& j : *jobs) names.insert(j.spec.name);
    for (int n = 0; n < count; ++n) EXPECT_EQ(names.count(absl::StrCat("move-", n)), 1u) << n;
    for (const auto& j : moved) {
      EXPECT_EQ(j.spec.owner, kUser) << j.spec.name;
      EXPECT_TRUE(absl::StartsWith(j.tag, "hyperfed:")) << j.tag;
    }
    // Let the destination run: its moved jobs run to completion.
    if (to == 0) {
      ASSERT_TRUE(sites_.slurm().Cmd({"scontrol", "update", "PartitionName=debug", "State=UP"}).ok());
    } else {
      ASSERT_TRUE(sites_.ge().Cmd({"qconf", "-at", "scheduler"}).ok());
    }
    const absl::Time end = absl::Now() + absl::Seconds(120);
    while (absl::Now() < end && !sites_.Live(to).empty()) absl::SleepFor(absl::Milliseconds(500));
    EXPECT_TRUE(sites_.Live(to).empty()) << "moved jobs did not all finish";
    const std::string where = to == 0 ? "slurm" : "gridengine";
    for (const auto& j : moved) {
      const std::string n = j.spec.name.substr(std::string("move-").size());
      EXPECT_EQ(ReadText(absl::StrCat(sites_.work(), "/out/job-", n, ".txt")),
                absl::StrCat("job ", n, " ran as ", kUser, " at ", where, "\n"))
          << j.spec.name;
    }
    for (const auto& j : stayed) {
      const std::string n = j.spec.name.substr(std::string("move-").size());
      EXPECT_FALSE(std::filesystem::exists(absl::StrCat(sites_.work(), "/out/job-", n, ".txt")))
          << j.spec.name << " stayed and must not have run";
    }
  }

  MixedSites sites_;
};

TEST_F(MixedFederationTest, SlurmJobsMoveToGridEngineAndRunAsTheirOwner) {
  sites_.SubmitAtSlurm(0, 8);
  MoveAndRun(0, 8);
}

TEST_F(MixedFederationTest, GridEngineJobsMoveToSlurmAndRunAsTheirOwner) {
  sites_.SubmitAtGridEngine(0, 8);
  MoveAndRun(1, 8);
}

int Count(const std::vector<Job>& jobs, JobState s) {
  int n = 0;
  for (const auto& j : jobs) n += j.state == s;
  return n;
}

// The crash tests at every transfer step, with Grid Engine's site the one
// that crashes: the source for the out_* points (jobs move from Grid Engine
// to Slurm), the destination for the in_* points (from Slurm to Grid
// Engine). Every job is then exactly once across both schedulers, none is
// left held, and no migration tag is on two jobs of the Grid Engine site.
class MixedCrashTest : public ::testing::TestWithParam<CrashCase> {
 protected:
  void SetUp() override {
    if (std::string why = MixedMissing(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(sites_.Start());
  }
  MixedSites sites_;
};

TEST_P(MixedCrashTest, EveryJobExactlyOnceByTagAcrossBothSchedulers) {
  const CrashCase c = GetParam();
  constexpr int kGe = 1;
  const int source = c.site == 0 ? kGe : 0;
  if (source == kGe) {
    sites_.SubmitAtGridEngine(0, 8);
  } else {
    sites_.SubmitAtSlurm(0, 8);
  }
  const std::multiset<std::string> before = sites_.LiveKeys();
  ASSERT_EQ(before.size(), 8u);

  auto f = TestFederation::Start(sites_.Federation());
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  fed.Stop(kGe);
  ASSERT_TRUE(fed.StartSite(kGe, {{"HYPERFED_CRASH_AT", c.point}}).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30)).ok());
  // A site dies in this round: its end is not awaited here (and the call
  // fails when the coordinator dies before it answers).
  auto round = StartRound(fed, source);
  ASSERT_TRUE(fed.WaitExit(kGe, absl::Seconds(30)))
      << "the Grid Engine site never reached crash point " << c.point << "\n"
      << fed.Log(kGe);
  ASSERT_TRUE(fed.StartSite(kGe).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30)).ok());
  // The round goes on at the survivor until it learns the restarted site is
  // out of it; what it does meanwhile is part of what is checked below.
  if (round.ok())
    ASSERT_TRUE(WaitRoundOver(fed, source, *round, absl::Seconds(60))) << "round " << *round << " never ended";

  std::multiset<std::string> keys;
  int held = -1;
  for (const absl::Time end = absl::Now() + absl::Seconds(60); absl::Now() < end;) {
    keys = sites_.LiveKeys();
    held = Count(sites_.Live(0), JobState::kHeld) + Count(sites_.Live(1), JobState::kHeld);
    if (held == 0 && keys == before) break;
    absl::SleepFor(absl::Milliseconds(250));
  }
  EXPECT_EQ(held, 0) << "jobs left held after recovery\n" << fed.Log(0) << fed.Log(1);
  EXPECT_EQ(keys, before) << "a job lost or duplicated after a crash at " << c.point << "\n"
                          << fed.Log(0) << fed.Log(1);
  for (const auto& j : sites_.Live(kGe)) {
    if (j.tag.empty()) continue;  // a job that never moved
    auto same = sites_.ge_adapter().FindByTag(j.tag);
    ASSERT_TRUE(same.ok()) << same.status();
    EXPECT_EQ(same->size(), 1u) << "tag " << j.tag << " on " << same->size() << " jobs";
  }
}

INSTANTIATE_TEST_SUITE_P(Points, MixedCrashTest, ::testing::ValuesIn(TransferCrashCases()), CrashCaseName);

}  // namespace
}  // namespace hyperfed::testing
