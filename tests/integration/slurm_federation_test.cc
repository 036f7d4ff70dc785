// Two real Slurm clusters (scripts/slurm-cluster) as two sites of a real
// federation (hyperfedd with the slurm adapter). Skipped, saying why, where
// Slurm is not installed; scripts/setup installs it, so CI runs these.
//
// Every job is submitted to Slurm directly with sbatch, as a user would.
// The partitions are DOWN so that jobs stay pending (migratable) instead of
// starting at once; bringing site B's partition UP is the "release" that
// lets the moved jobs run there.

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "daemon/scheduler/slurm_adapter.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"
#include "tests/scheduler/slurm_cluster.h"

namespace hyperfed::testing {
namespace {

using scheduler::Job;
using scheduler::JobState;

class SlurmSites {
 public:
  // Two clusters, partitions down, a shared work folder; empty on failure
  // (with a test failure recorded).
  bool Start() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hyperfed-slurm-work-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return false;
    // Moved jobs run as nobody (run_as_account below, never the daemon's
    // account): it works and writes here.
    chmod(tmpl.c_str(), 01777);
    work_ = tmpl;
    std::filesystem::create_directories(work_ + "/out");
    chmod((work_ + "/out").c_str(), 01777);
    for (const char* name : {"slurm-a", "slurm-b"}) {
      auto c = SlurmCluster::Start(name);
      if (!c.ok()) {
        ADD_FAILURE() << c.status();
        return false;
      }
      clusters_.push_back(*std::move(c));
      if (auto r = clusters_.back()->Cmd({"scontrol", "update", "PartitionName=debug", "State=DOWN"}); !r.ok()) {
        ADD_FAILURE() << r.status();
        return false;
      }
      // The site's own mark key, so that this adapter sees the marks its
      // daemon makes (tags of moved jobs).
      auto a = scheduler::SlurmAdapter::Open({.options = Options(clusters_.size() - 1)});
      if (!a.ok()) {
        ADD_FAILURE() << a.status();
        return false;
      }
      adapters_.push_back(*std::move(a));
    }
    return true;
  }
  ~SlurmSites() {
    clusters_.clear();
    if (!work_.empty() && getenv("HYPERFED_KEEP_TEST_DIR") == nullptr) {
      std::error_code ec;
      std::filesystem::remove_all(work_, ec);
    }
  }

  // Site i's adapter options, for its daemon and for the test's adapter.
  std::map<std::string, std::string> Options(size_t i) const {
    return {{"slurm_conf", clusters_[i]->conf()},
            {"submit_dir", work_},
            {"timeout", "30s"},
            {"run_as", "account"},
            {"run_as_account", "nobody"},
            {"mark_key", absl::StrCat(work_, "/keys/", clusters_[i]->name(), ".key")}};
  }

  FederationOptions Federation() const {
    FederationOptions o{.sites = 2};
    o.adapter = "slurm";
    for (size_t i = 0; i < clusters_.size(); ++i) o.adapter_options.push_back(Options(i));
    return o;
  }

  static std::string Script(const std::string& work, int n) {
    return absl::StrCat("#!/bin/sh\n#SBATCH --output=", work, "/out/slurm-%j.log\n", "echo \"job ", n,
                        " ran at $SLURM_CLUSTER_NAME\" > ", work, "/out/job-", n, ".txt\n");
  }

  // `count` jobs named move-<n> at site 0, submitted with sbatch.
  void SubmitAtA(int count) {
    for (int n = 0; n < count; ++n) {
      auto r =
          clusters_[0]->Cmd({"sbatch", "--parsable", absl::StrCat("--job-name=move-", n)}, Script(work_, n), work_);
      ASSERT_TRUE(r.ok()) << r.status();
    }
  }

  // Site i's live (pending, held, running) jobs, as its adapter sees them.
  std::vector<Job> Live(int i) {
    auto jobs = adapters_[i]->ListJobs();
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    return jobs.ok() ? *jobs : std::vector<Job>{};
  }

  // Keys of the live jobs of both clusters; a key seen twice shows twice.
  std::multiset<std::string> LiveKeys() {
    std::multiset<std::string> keys;
    for (int i = 0; i < 2; ++i)
      for (const auto& j : Live(i)) keys.insert(j.spec.key);
    return keys;
  }

  SlurmCluster& cluster(int i) { return *clusters_[i]; }
  scheduler::SlurmAdapter& adapter(int i) { return *adapters_[i]; }
  const std::string& work() const { return work_; }

 private:
  std::vector<std::unique_ptr<SlurmCluster>> clusters_;
  std::vector<std::unique_ptr<scheduler::SlurmAdapter>> adapters_;
  std::string work_;
};

int Count(const std::vector<Job>& jobs, JobState s) {
  int n = 0;
  for (const auto& j : jobs) n += j.state == s;
  return n;
}

class SlurmFederationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = SlurmMissing(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(sites_.Start());
  }
  SlurmSites sites_;
};

TEST_F(SlurmFederationTest, FortyJobsAtOneSiteSplitEvenlyAndRunAtTheOther) {
  sites_.SubmitAtA(40);
  std::map<std::string, std::string> original;  // name -> script as Slurm stores it at A
  for (const auto& j : sites_.Live(0)) {
    auto w = sites_.cluster(0).Cmd({"scontrol", "write", "batch_script", j.id, "-"});
    ASSERT_TRUE(w.ok()) << w.status();
    original[j.spec.name] = w->out;
  }
  ASSERT_EQ(original.size(), 40u);
  ASSERT_EQ(sites_.Live(1).size(), 0u);

  auto f = TestFederation::Start(sites_.Federation());
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  const absl::Time t0 = absl::Now();
  auto round = RunRound(fed, 0);
  ASSERT_TRUE(round.ok()) << round.status() << fed.Log(0) << fed.Log(1);
  EXPECT_TRUE(round->ok()) << round->message();
  EXPECT_EQ(round->moved(), 20) << round->message();
  std::cout << "one round moving 20 Slurm jobs took " << absl::FormatDuration(absl::Now() - t0) << "\n";

  // 20 in each Slurm queue, each name exactly once across both.
  const std::vector<Job> at_a = sites_.Live(0), at_b = sites_.Live(1);
  EXPECT_EQ(at_a.size(), 20u);
  EXPECT_EQ(at_b.size(), 20u);
  EXPECT_EQ(Count(at_a, JobState::kPending), 20);
  EXPECT_EQ(Count(at_b, JobState::kPending), 20);
  std::multiset<std::string> names;
  for (const auto* jobs : {&at_a, &at_b})
    for (const auto& j : *jobs) names.insert(j.spec.name);
  EXPECT_EQ(names.size(), 40u);
  for (const auto& [name, script] : original) EXPECT_EQ(names.count(name), 1u) << name;
  // Each moved job: the script byte for byte but for the #SBATCH lines
  // hyperfed neutralises (the --output one), tagged, keyed by its origin,
  // running as the site's run_as_account, owned by its user at A.
  for (const auto& j : at_b) {
    auto w = sites_.cluster(1).Cmd({"scontrol", "write", "batch_script", j.id, "-"});
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->out, scheduler::FilterSbatchDirectives(original[j.spec.name])) << j.spec.name;
    EXPECT_TRUE(absl::StrContains(w->out, "# hyperfed removed: #SBATCH --output=")) << w->out;
    EXPECT_EQ(j.spec.owner, "root") << "the user it had at A";
    EXPECT_TRUE(absl::StartsWith(j.tag, "hyperfed:")) << j.tag;
    EXPECT_TRUE(absl::StartsWith(j.spec.key, "slurm-a/")) << j.spec.key;
  }

  // Release at B: its jobs run to completion and write their files.
  ASSERT_TRUE(sites_.cluster(1).Cmd({"scontrol", "update", "PartitionName=debug", "State=UP"}).ok());
  const absl::Time end = absl::Now() + absl::Seconds(120);
  while (absl::Now() < end && !sites_.Live(1).empty()) absl::SleepFor(absl::Milliseconds(250));
  EXPECT_TRUE(sites_.Live(1).empty()) << "jobs at B did not all finish";
  for (const auto& j : at_b) {
    auto done = sites_.adapter(1).GetJobs({j.id});
    ASSERT_TRUE(done[0].ok()) << done[0].status();
    EXPECT_EQ(done[0]->state, JobState::kDone) << j.spec.name;
    const std::string n = j.spec.name.substr(std::string("move-").size());
    const std::string out = ReadText(absl::StrCat(sites_.work(), "/out/job-", n, ".txt"));
    EXPECT_EQ(out, absl::StrCat("job ", n, " ran at slurm-b\n")) << j.spec.name;
  }
  for (const auto& j : at_a) {
    const std::string n = j.spec.name.substr(std::string("move-").size());
    EXPECT_FALSE(std::filesystem::exists(absl::StrCat(sites_.work(), "/out/job-", n, ".txt")))
        << j.spec.name << " stayed at A and must not have run";
  }
}

// Needs no Slurm: the options are checked before anything runs.
TEST(SlurmConfigTest, ABadSlurmOptionNamesFileLineAndOption) {
  std::string dir = (std::filesystem::temp_directory_path() / "hyperfed-slurm-conf-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/site.yaml";
  auto write = [&](const std::string& options) {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs(absl::StrCat("site: {id: s, label: 0, listen: \"127.0.0.1:7001\"}\n",
                       "roster:\n  - {id: s, label: 0, endpoint: \"127.0.0.1:7001\"}\n",
                       "scheduler:\n  adapter: slurm\n  options:\n", options,
                       "state_dir: state\nsecurity: {insecure: true}\n")
              .c_str(),
          f);
    fclose(f);
  };
  auto check = [&] {
    auto r = scheduler::RunCommand({.argv = {HyperfeddPath(), "--config", path, "--check"}});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::make_pair(r->exit_code, r->err + r->out) : std::make_pair(-1, std::string());
  };
  write("    slurm_conf: /etc/slurm/slurm.conf\n    timeout: soon\n");
  auto [code, text] = check();
  EXPECT_EQ(code, 2);
  EXPECT_TRUE(absl::StrContains(text, "site.yaml:8: scheduler.options.timeout: ")) << text;
  EXPECT_TRUE(absl::StrContains(text, "\"soon\"")) << text;
  write("    partitons: batch\n");
  std::tie(code, text) = check();
  EXPECT_EQ(code, 2);
  EXPECT_TRUE(absl::StrContains(text, "site.yaml:7: scheduler.options.partitons: ")) << text;
  write("    partitions: batch\n    submit_partition: other\n");
  std::tie(code, text) = check();
  EXPECT_EQ(code, 2);
  EXPECT_TRUE(absl::StrContains(text, "site.yaml:8: scheduler.options.submit_partition: ")) << text;
  write("    partitions: batch\n");
  std::tie(code, text) = check();
  EXPECT_EQ(code, 2);
  EXPECT_TRUE(absl::StrContains(text, "site.yaml:7: scheduler.options.partitions: ")) << text;
  EXPECT_TRUE(absl::StrContains(text, "\"submit_partition\": required")) << text;
  write("    partitions: batch\n    submit_partition: batch\n");
  std::tie(code, text) = check();
  EXPECT_EQ(code, 0) << text;
  // Who moved jobs run as (issue 12, outcome 9): the option to blame.
  write("    slurm_conf: /etc/slurm/slurm.conf\n    run_as: owner\n");
  std::tie(code, text) = check();
  EXPECT_EQ(code, 2);
  EXPECT_TRUE(absl::StrContains(text, "site.yaml:8: scheduler.options.run_as: ")) << text;
  EXPECT_TRUE(absl::StrContains(text, "needs \"users_map\"")) << text;
  write("    run_as: owner\n    users_map: /nonexistent/users.map\n");
  std::tie(code, text) = check();
  EXPECT_EQ(code, 2);
  EXPECT_TRUE(absl::StrContains(text, "site.yaml:8: scheduler.options.users_map: ")) << text;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

class SlurmCrashTest : public ::testing::TestWithParam<CrashCase> {
 protected:
  void SetUp() override {
    if (std::string why = SlurmMissing(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(sites_.Start());
  }
  SlurmSites sites_;
};

TEST_P(SlurmCrashTest, EveryJobExactlyOnceByTagAcrossBothClusters) {
  const CrashCase c = GetParam();
  sites_.SubmitAtA(8);
  const std::multiset<std::string> before = sites_.LiveKeys();
  ASSERT_EQ(before.size(), 8u);

  auto f = TestFederation::Start(sites_.Federation());
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  fed.Stop(c.site);
  ASSERT_TRUE(fed.StartSite(c.site, {{"HYPERFED_CRASH_AT", c.point}}).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30)).ok());
  // A site dies in this round: its end is not awaited here (and the call
  // fails when the coordinator dies before it answers).
  auto round = StartRound(fed, c.site == 0 ? 1 : 0);
  ASSERT_TRUE(fed.WaitExit(c.site, absl::Seconds(30)))
      << "site-" << c.site << " never reached crash point " << c.point << "\n"
      << fed.Log(c.site);
  ASSERT_TRUE(fed.StartSite(c.site).ok());
  ASSERT_TRUE(fed.WaitHealthy(absl::Seconds(30)).ok());
  // The round goes on at the survivor until it learns the restarted site is
  // out of it; what it does meanwhile is part of what is checked below.
  if (round.ok())
    ASSERT_TRUE(WaitRoundOver(fed, c.site == 0 ? 1 : 0, *round, absl::Seconds(60)))
        << "round " << *round << " never ended";

  // Recovery runs at start and every 5 s: wait until nothing is held.
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
  // By tag: every job at B carries its migration tag, and no tag is on two
  // jobs of B (a resubmission would add a second one, cancelled or not).
  for (const auto& j : sites_.Live(1)) {
    ASSERT_FALSE(j.tag.empty()) << j.id;
    auto same = sites_.adapter(1).FindByTag(j.tag);
    ASSERT_TRUE(same.ok()) << same.status();
    EXPECT_EQ(same->size(), 1u) << "tag " << j.tag << " on " << same->size() << " jobs";
  }
}

INSTANTIATE_TEST_SUITE_P(Points, SlurmCrashTest, ::testing::ValuesIn(TransferCrashCases()), CrashCaseName);

}  // namespace
}  // namespace hyperfed::testing
