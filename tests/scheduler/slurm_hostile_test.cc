// Issue 12, the scheduler's part: what a hostile peer (through a job spec)
// or a local Slurm user (through their own jobs) tries against the slurm
// adapter, and what stops it. Tests are named after the issue's row (or
// outcome) they prove. The HostileSlurmSpec ones need no Slurm; the
// HostileSlurm ones run a real single-node Slurm (scripts/slurm-cluster) and
// skip, saying why, without it; the ones that make Unix users (useradd) or
// submit as another user skip, saying why, when not run as root. At the end,
// the hostile-input suite Slurm shares with Grid Engine (hostile_adapter.h).

#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "daemon/scheduler/mark.h"
#include "daemon/scheduler/sim_adapter.h"
#include "daemon/scheduler/slurm_adapter.h"
#include "gtest/gtest.h"
#include "tests/scheduler/canned_squeue.h"
#include "tests/scheduler/hostile_adapter.h"
#include "tests/scheduler/slurm_cluster.h"
#include "tests/scheduler/temp_dir.h"

namespace hyperfed::scheduler::testing {
namespace {

using hyperfed::testing::ReadText;
using hyperfed::testing::SlurmCluster;
using hyperfed::testing::SlurmMissing;

void WriteExecutable(const std::string& path, const std::string& body) {
  std::ofstream(path) << body;
  chmod(path.c_str(), 0755);
}

// ---- Without Slurm: CheckSpec, the mark, the #SBATCH filter ----

class HostileSlurmSpec : public ::testing::Test {
 protected:
  // An adapter whose commands are fakes in dir_ (bin_dir): `sinfo` prints
  // one node of 4 CPUs and 16384 MB in partition "batch", `squeue` prints
  // the jobs Queue gave (canned_squeue.h).
  std::unique_ptr<SlurmAdapter> Adapter(std::map<std::string, std::string> options = {}) {
    WriteExecutable(dir_.Sub("sinfo"), R"(#!/bin/sh
echo '{"nodes": [{"name": "n1", "cpus": 4, "real_memory": 16384, "partitions": ["batch"], "state": "idle"},
                 {"name": "n2", "cpus": 64, "real_memory": 999999, "partitions": ["big"], "state": "idle"}]}'
)");
    WriteExecutable(dir_.Sub("squeue"), hyperfed::testing::CannedSqueueScript(dir_.Sub("queue.txt")));
    WriteExecutable(dir_.Sub("scontrol"), "#!/bin/sh\necho '#!/bin/sh'\necho true\n");
    options["bin_dir"] = dir_.path();
    if (!options.contains("run_as")) {
      options["run_as"] = "account";
      options["run_as_account"] = "nobody";
    }
    if (!options.contains("submit_partition")) options["submit_partition"] = "batch";
    auto a = SlurmAdapter::Open({.state_dir = dir_.path(), .options = options});
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *std::move(a) : nullptr;
  }
  // The jobs, as squeue --json's job objects (canned_squeue.h).
  void Queue(const std::string& json) { std::ofstream(dir_.Sub("queue.txt")) << hyperfed::testing::CannedSqueue(json); }
  static JobSpec Good() {
    return JobSpec{.name = "j", .script = "#!/bin/sh\ntrue\n", .cores = 1, .key = "site-a/1", .owner = "alice"};
  }

  TempDir dir_;
};

TEST_F(HostileSlurmSpec, Row1_CheckSpecRefusesEveryReservedEnvironmentName) {
  auto slurm = Adapter();
  ASSERT_NE(slurm, nullptr);
  TempDir sim_dir;
  auto sim = SimAdapter::Open({.state_dir = sim_dir.path()});
  ASSERT_TRUE(sim.ok()) << sim.status();
  const std::vector<std::string> refused = {
      // not [A-Za-z_][A-Za-z0-9_]*
      "", "1A", "A-B", "A B", "A=B", "A,B", std::string("A\0B", 3), "BASH_FUNC_f%%", "Ä",
      // loader and glibc
      "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "GLIBC_TUNABLES", "MALLOC_CHECK_",
      "GCONV_PATH",
      // the shell and the login
      "PATH", "IFS", "ENV", "BASH_ENV", "SHELL", "HOME", "USER", "LOGNAME", "SHELLOPTS", "PS4", "BASH_FUNC_x",
      // Slurm's own
      "SLURM_CONF", "SLURM_EXPORT_ENV", "SBATCH_QOS", "SBATCH_PARTITION", "SALLOC_ACCOUNT", "SRUN_CPUS_PER_TASK",
      "SPANK_X", "PMI_RANK", "PMIX_RANK",
      // sbatch --export keywords
      "ALL", "NONE", "NIL", "all", "None"};
  for (const std::string& name : refused) {
    JobSpec s = Good();
    s.env = {{"OK", "1"}, {name, "x"}};
    for (SchedulerAdapter* a :
         {static_cast<SchedulerAdapter*>(slurm.get()), static_cast<SchedulerAdapter*>(sim->get())}) {
      absl::Status st = a->CheckSpec(s);
      EXPECT_TRUE(absl::IsInvalidArgument(st)) << a->Name() << " took env name \"" << name << "\": " << st;
      EXPECT_TRUE(absl::StrContains(st.message(), "is refused")) << st;
    }
  }
  for (const char* name : {"A", "_X", "OMP_NUM_THREADS", "LDX", "PATHS", "MY_SLURM_THING"}) {
    JobSpec s = Good();
    s.env = {{name, "a value, with 'quotes' and\nnewlines"}};
    EXPECT_TRUE(slurm->CheckSpec(s).ok()) << name << ": " << slurm->CheckSpec(s);
  }
  JobSpec nul = Good();
  nul.env = {{"A", std::string("x\0y", 3)}};
  EXPECT_TRUE(absl::IsInvalidArgument(slurm->CheckSpec(nul)));
}

TEST_F(HostileSlurmSpec, Row1_ALocalUsersCommentPlantsNoEnvironment) {
  // Mallory's own job, with a comment in hyperfed's format naming PATH:
  // it must not move (exported, it would carry PATH to another site).
  Queue(R"({"jobs": [
    {"job_id": 5, "job_state": "PENDING", "state_reason": "None", "submit_time": 100, "batch_flag": true,
     "user_name": "mallory", "comment": "hyperfed1;e=PATH=/tmp/x;e=A=1"},
    {"job_id": 6, "job_state": "PENDING", "state_reason": "None", "submit_time": 101, "batch_flag": true,
     "user_name": "mallory", "comment": "hyperfed1;e=A=1"}]})");
  auto a = Adapter();
  ASSERT_NE(a, nullptr);
  auto jobs = a->GetJobs({"5", "6"});
  ASSERT_TRUE(jobs[0].ok()) << jobs[0].status();
  EXPECT_TRUE(jobs[0]->pinned);
  EXPECT_FALSE(jobs[1]->pinned) << "an allowed variable is the user's own business";
  auto spec = a->Export("5");
  EXPECT_TRUE(absl::IsFailedPrecondition(spec.status())) << spec.status();
  EXPECT_TRUE(absl::StrContains(spec.status().message(), "PATH")) << spec.status();
  EXPECT_TRUE(absl::IsFailedPrecondition(a->SetPinned("5", false)));
  EXPECT_EQ(*a->CountMigratable(), 1);
}

TEST_F(HostileSlurmSpec, Row2_OnlyAMarkMadeHereForTheJobsOwnUserCounts) {
  auto key = MarkKey::LoadOrCreate(dir_.Sub("mark.key"));
  ASSERT_TRUE(key.ok()) << key.status();
  SlurmJobMeta real;
  real.tag = "hyperfed:site-0:7:0";
  real.has_key = true;
  real.key = "site-0/7";
  real.mark = key->Sign(SlurmMarkMessage(real, "nobody"));
  SlurmJobMeta forged = real;
  forged.mark = "";
  SlurmJobMeta other_key = real;
  other_key.mark = MarkKey::FromBytesForTesting(std::string(32, 'k')).Sign(SlurmMarkMessage(real, "nobody"));
  auto job = [](int id, const std::string& user, const SlurmJobMeta& m) {
    return absl::StrCat(R"({"job_id": )", id, R"(, "job_state": "PENDING", "state_reason": "None", "submit_time": )",
                        id, R"(, "user_name": ")", user, R"(", "comment": ")", EncodeSlurmComment(m), R"("})");
  };
  // Mallory's forgery (no mark), her copy of the real job's comment (a mark
  // made for nobody's job), one with a mark under another key, and the real
  // job, last in queue order.
  Queue(absl::StrCat(R"({"jobs": [)", job(1, "mallory", forged), ",", job(2, "mallory", real), ",",
                     job(3, "nobody", other_key), ",", job(4, "nobody", real), "]}"));
  auto a = Adapter();
  ASSERT_NE(a, nullptr);
  auto found = a->FindByTag(real.tag);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].id, "4");
  auto got = a->GetJobs({"1", "2", "3", "4"});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i]->tag, "") << "job " << i + 1 << " is not one hyperfed submitted";
  EXPECT_EQ(got[3]->tag, real.tag);
  // A retried submit answers the real job, without running sbatch (there is
  // none in bin_dir: running it would fail).
  auto id = a->Submit(Good(), real.tag, true);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "4");
}

TEST_F(HostileSlurmSpec, Row2_MarkKeyIsPrivateAndRefusedWhenOthersCanReadIt) {
  const std::string path = dir_.Sub("state/mark.key");
  auto key = MarkKey::LoadOrCreate(path);
  ASSERT_TRUE(key.ok()) << key.status();
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(dir_.Sub("state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "a folder made for the key is private too";
  EXPECT_EQ(ReadText(path).size(), MarkKey::kKeyBytes);
  auto again = MarkKey::LoadOrCreate(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->Sign("m"), key->Sign("m")) << "the same key after a restart";
  chmod(path.c_str(), 0640);
  auto open = MarkKey::LoadOrCreate(path);
  EXPECT_TRUE(absl::IsFailedPrecondition(open.status())) << open.status();
  EXPECT_TRUE(absl::StrContains(open.status().message(), "0640")) << open.status();
  auto a = SlurmAdapter::Open({.options = {{"mark_key", path}}});
  EXPECT_FALSE(a.ok()) << "the daemon refuses to start";
}

TEST_F(HostileSlurmSpec, Row7_CheckSpecRefusesWhatSbatchWouldNotRun) {
  auto a = Adapter();
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->CheckSpec(Good()).ok()) << a->CheckSpec(Good());
  auto refused = [&](const JobSpec& s, const std::string& says) {
    absl::Status st = a->CheckSpec(s);
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
    EXPECT_TRUE(absl::StrContains(st.message(), says)) << st;
  };
  JobSpec s = Good();
  s.cores = 5;  // the largest node of partition batch has 4 (n2's 64 are in another partition)
  refused(s, "largest node of partition batch has 4");
  s = Good();
  s.cores = 4;
  s.memory_mb = 16384;
  EXPECT_TRUE(a->CheckSpec(s).ok()) << a->CheckSpec(s);
  s.memory_mb = 16385;
  refused(s, "16384 MB");
  s = Good();
  s.memory_mb = kSlurmMaxMemoryMb + 1;
  refused(s, "Slurm's largest");
  s = Good();
  s.time_limit_s = kSlurmMaxTimeMinutes * 60;
  EXPECT_TRUE(a->CheckSpec(s).ok()) << a->CheckSpec(s);
  s.time_limit_s += 1;  // rounds up to one minute more
  refused(s, "time limit");
  s.time_limit_s = INT64_MAX;
  refused(s, "time limit");
  s = Good();
  s.name = std::string(kMaxNameLength + 1, 'n');
  refused(s, "name");
  // A comment that fits now but not once the longest tag and the mark are in.
  s = Good();
  for (int len = 300; len < 1024; ++len) {
    s.env = {{"V", std::string(len, 'v')}};
    SlurmJobMeta m;
    m.has_key = m.has_cost = true;
    m.key = s.key, m.cost = s.cost, m.no_workdir = true, m.env = s.env, m.owner = s.owner;
    if (EncodeSlurmComment(m).size() + 60 > kSlurmMaxComment) break;
  }
  refused(s, "Slurm comment");
}

TEST_F(HostileSlurmSpec, Row10_OnlyAllowedSbatchDirectivesSurvive) {
  const std::string script =
      "#!/bin/bash\n"
      "#SBATCH --qos=high\n"
      "#SBATCH --output=/etc/evil\n"
      "#SBATCH --requeue\n"
      "#SBATCH --time=5 --partition=other\n"
      "#SBATCH--partition=other\n"
      "#SBATCH --part=other\n"
      "#SBATCH -p other\n"
      "#SBATCH --mail-type=END,FAIL\n"
      "#SBATCH --mail-type=END --exclusive\n"
      "#SBATCH --signal=B:USR1@60\n"
      "#SBATCH --open-mode=append\n"
      "#SBATCH --mail-type=$(reboot)\n"
      "  #SBATCH --gres=gpu:8\n"
      "#sbatch --uid=0\n"
      "\n"
      "# a comment\n"
      "#SBATCH --no-requeue \n"
      "echo start\n"
      "#SBATCH --exclusive\n";
  const std::string want =
      "#!/bin/bash\n"
      "# hyperfed removed: #SBATCH --qos=high\n"
      "# hyperfed removed: #SBATCH --output=/etc/evil\n"
      "#SBATCH --requeue\n"
      "# hyperfed removed: #SBATCH --time=5 --partition=other\n"
      "# hyperfed removed: #SBATCH--partition=other\n"
      "# hyperfed removed: #SBATCH --part=other\n"
      "# hyperfed removed: #SBATCH -p other\n"
      "#SBATCH --mail-type=END,FAIL\n"
      "# hyperfed removed: #SBATCH --mail-type=END --exclusive\n"
      "#SBATCH --signal=B:USR1@60\n"
      "#SBATCH --open-mode=append\n"
      "# hyperfed removed: #SBATCH --mail-type=$(reboot)\n"
      "# hyperfed removed:   #SBATCH --gres=gpu:8\n"
      "# hyperfed removed: #sbatch --uid=0\n"
      "\n"
      "# a comment\n"
      "#SBATCH --no-requeue \n"
      "echo start\n"
      "#SBATCH --exclusive\n";
  EXPECT_EQ(FilterSbatchDirectives(script), want);
  EXPECT_EQ(FilterSbatchDirectives(want), want) << "filtering twice changes nothing (a job may move again)";
  const std::string plain = "#!/bin/sh\nsleep 1";
  EXPECT_EQ(FilterSbatchDirectives(plain), plain);
  EXPECT_EQ(FilterSbatchDirectives("#!/bin/sh\n#SBATCH --mem=0"), "#!/bin/sh\n# hyperfed removed: #SBATCH --mem=0");
}

TEST_F(HostileSlurmSpec, Outcome9_OwnersAreUserNamesAndMapOnlyToOrdinaryUsers) {
  auto a = Adapter();
  ASSERT_NE(a, nullptr);
  for (const std::string& owner :
       std::vector<std::string>{"Alice", "root;x", "a b", "-x", std::string(33, 'a'), std::string("a\0", 2)}) {
    JobSpec s = Good();
    s.owner = owner;
    EXPECT_TRUE(absl::IsInvalidArgument(a->CheckSpec(s))) << owner;
  }
  // No run_as: nothing runs here, and the error says what to configure.
  Queue(R"({"jobs": []})");
  auto none = SlurmAdapter::Open({.state_dir = dir_.path(), .options = {{"bin_dir", dir_.path()}}});
  ASSERT_TRUE(none.ok()) << none.status();
  absl::Status st = (*none)->CheckSpec(Good());
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "run_as")) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "never runs them as its own account")) << st;
  EXPECT_TRUE(absl::IsInvalidArgument((*none)->Submit(Good(), "t", true).status()));
  // run_as: owner with a mapping file (lines name the source site: issue
  // 34). A map line naming root or a service account is refused at load
  // (Issue34_UsersMapLinesNameTheirSourceSite); one naming a user made later
  // is checked at every job.
  if (std::string why = EnsureUser("alice"); !why.empty()) GTEST_SKIP() << why;
  std::ofstream(dir_.Sub("users.map")) << "# site:remote local\nsite-a:alice alice\nsite-a:ghost no-such-user-here\n";
  auto owner = Adapter({{"run_as", "owner"}, {"users_map", dir_.Sub("users.map")}});
  ASSERT_NE(owner, nullptr);
  JobSpec good = Good();
  good.source_site = "site-a";
  EXPECT_TRUE(owner->CheckSpec(good).ok()) << owner->CheckSpec(good);
  auto refused = [&](const std::string& who, const std::string& says) {
    JobSpec s = good;
    s.owner = who;
    absl::Status st = owner->CheckSpec(s);
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << who << ": " << st;
    EXPECT_TRUE(absl::StrContains(st.message(), says)) << st;
  };
  refused("carol", "not in users_map");
  refused("", "no owner");
  refused("ghost", "does not exist");
  // same-name: the owner's own name, never root, never nobody (uid 65534,
  // above UID_MAX: issue 34).
  auto same = Adapter({{"run_as", "owner"}, {"users_map", "same-name"}});
  ASSERT_NE(same, nullptr);
  JobSpec s = Good();
  EXPECT_TRUE(same->CheckSpec(s).ok()) << same->CheckSpec(s);
  s.owner = "nobody";
  EXPECT_TRUE(absl::IsInvalidArgument(same->CheckSpec(s))) << same->CheckSpec(s);
  s.owner = "root";
  EXPECT_TRUE(absl::IsInvalidArgument(same->CheckSpec(s)));
  // Config errors name the option (and the map file's line).
  for (const auto& [opts, says] : std::vector<std::pair<std::map<std::string, std::string>, std::string>>{
           {{{"run_as", "me"}}, "\"run_as\""},
           {{{"run_as", "owner"}}, "needs \"users_map\""},
           {{{"run_as", "account"}}, "needs \"run_as_account\""},
           {{{"run_as", "account"}, {"run_as_account", "Root"}}, "\"run_as_account\""},
           {{{"users_map", "same-name"}}, "only with run_as: owner"},
           {{{"run_as", "owner"}, {"users_map", dir_.Sub("nope")}}, "cannot read"}}) {
    auto o = ParseSlurmOptions(opts);
    EXPECT_TRUE(absl::IsInvalidArgument(o.status())) << says;
    EXPECT_TRUE(absl::StrContains(o.status().message(), says)) << o.status();
  }
  std::ofstream(dir_.Sub("bad.map")) << "site-a:alice bob\n\nbob\n";
  auto bad = ParseSlurmOptions({{"run_as", "owner"}, {"users_map", dir_.Sub("bad.map")}});
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "bad.map:3: not two words")) << bad.status();
  auto root_account =
      SlurmAdapter::Open({.state_dir = dir_.path(), .options = {{"run_as", "account"}, {"run_as_account", "root"}}});
  EXPECT_TRUE(absl::IsInvalidArgument(root_account.status())) << root_account.status();
}

// Issue 34, finding 1: with run_as: owner and same-name a peer chose the
// account (owner "munge" read munge.key: root on the cluster). Only
// accounts in uid_min..uid_max and not in deny_users run moved jobs.
TEST_F(HostileSlurmSpec, Issue34_SameNameTakesOnlyOrdinaryAccounts) {
  if (std::string why = EnsureUser("alice"); !why.empty()) GTEST_SKIP() << why;
  Queue(R"({"jobs": []})");  // a submit with a tag reads the queue first
  auto same = Adapter({{"run_as", "owner"}, {"users_map", "same-name"}});
  ASSERT_NE(same, nullptr);
  JobSpec s = Good();
  s.source_site = "site-b";
  EXPECT_TRUE(same->CheckSpec(s).ok()) << same->CheckSpec(s);
  int refused = 0;
  for (const char* owner : {"munge", "slurm", "daemon", "bin", "nobody", "root", "www-data"}) {
    if (getpwnam(owner) == nullptr) continue;
    s.owner = owner;
    absl::Status st = same->CheckSpec(s);
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << owner << ": " << st;
    EXPECT_TRUE(absl::StrContains(st.message(), "uid_min") || absl::StrContains(st.message(), "deny_users") ||
                absl::StrContains(st.message(), "root"))
        << st;
    EXPECT_TRUE(absl::IsInvalidArgument(same->Submit(s, absl::StrCat("t-", owner), true).status())) << owner;
    ++refused;
  }
  EXPECT_GE(refused, 4);
  // The operator's own list and range.
  s.owner = "alice";
  auto deny = Adapter({{"run_as", "owner"}, {"users_map", "same-name"}, {"deny_users", "carol, alice"}});
  ASSERT_NE(deny, nullptr);
  absl::Status st = deny->CheckSpec(s);
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "deny_users")) << st;
  const uint32_t alice_uid = getpwnam("alice")->pw_uid;
  auto range = Adapter({{"run_as", "owner"},
                        {"users_map", "same-name"},
                        {"uid_min", absl::StrCat(alice_uid + 1)},
                        {"uid_max", absl::StrCat(alice_uid + 100)}});
  ASSERT_NE(range, nullptr);
  st = range->CheckSpec(s);
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), absl::StrCat("uid ", alice_uid))) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "uid_min")) << st;
  // Config errors name the option.
  for (const auto& [opts, says] : std::vector<std::pair<std::map<std::string, std::string>, std::string>>{
           {{{"uid_min", "abc"}}, "\"uid_min\""},
           {{{"uid_min", "0"}}, "\"uid_min\""},
           {{{"uid_max", "-5"}}, "\"uid_max\""},
           {{{"uid_max", "4294967295"}}, "\"uid_max\""},
           {{{"uid_min", "2000"}, {"uid_max", "1999"}}, "\"uid_max\""},
           {{{"deny_users", "alice,Bad User"}}, "\"deny_users\""}}) {
    auto o = ParseSlurmOptions(opts);
    EXPECT_TRUE(absl::IsInvalidArgument(o.status())) << says;
    EXPECT_TRUE(absl::StrContains(o.status().message(), says)) << o.status();
  }
  // One option at a time (how the daemon's config check names the line):
  // the range is checked with the combination only.
  EXPECT_TRUE(ParseSlurmOptions({{"uid_min", "70000"}}, /*check_combination=*/false).ok());
  EXPECT_TRUE(ParseSlurmOptions({{"uid_min", "70000"}, {"uid_max", "80000"}}).ok());
  // run_as_account: never a listed service account.
  auto munge = ParseSlurmOptions({{"run_as", "account"}, {"run_as_account", "munge"}});
  EXPECT_TRUE(absl::IsInvalidArgument(munge.status())) << munge.status();
  EXPECT_TRUE(absl::StrContains(munge.status().message(), "deny_users")) << munge.status();
}

// Issue 34, finding 5: a local user writes their own job's comment. Its k=,
// c= and d= fields must not give the job another job's key (the
// federation's identity of a job: "exactly once" is checked by it) nor its
// cost and duration: a job hyperfed did not submit (no valid mark) gets
// them from Slurm's own fields.
TEST_F(HostileSlurmSpec, Issue34_AUsersCommentGivesNoKeyCostOrDuration) {
  auto key = MarkKey::LoadOrCreate(dir_.Sub("mark.key"));
  ASSERT_TRUE(key.ok()) << key.status();
  SlurmJobMeta real;
  real.tag = "hyperfed:site-0:7:0";
  real.has_key = true;
  real.key = "site-0/7";
  real.has_cost = true;
  real.cost = 5;
  real.mark = key->Sign(SlurmMarkMessage(real, "nobody"));
  Queue(absl::StrCat(
      R"({"jobs": [
    {"job_id": 5, "job_state": "PENDING", "state_reason": "None", "submit_time": 100, "batch_flag": true,
     "cluster": "c1", "cpus": 2, "time_limit": 10, "user_name": "mallory",
     "comment": "hyperfed1;k=site-0/7;c=1e300;d=99999;e=A=1"},
    {"job_id": 6, "job_state": "PENDING", "state_reason": "None", "submit_time": 101, "batch_flag": true,
     "cluster": "c1", "cpus": 1, "user_name": "nobody", "comment": ")",
      EncodeSlurmComment(real), R"("}]})"));
  auto a = Adapter();
  ASSERT_NE(a, nullptr);
  auto jobs = a->GetJobs({"5", "6"});
  ASSERT_TRUE(jobs[0].ok() && jobs[1].ok());
  EXPECT_EQ(jobs[0]->spec.key, "c1/5") << "k= claimed job 6's key";
  EXPECT_EQ(jobs[0]->spec.cost, 2.0 * 600);
  EXPECT_EQ(jobs[0]->spec.duration_ms, 0);
  EXPECT_EQ(jobs[0]->spec.env, (std::map<std::string, std::string>{{"A", "1"}})) << "the user's own variables stay";
  EXPECT_EQ(jobs[1]->spec.key, "site-0/7") << "a marked job keeps its key";
  EXPECT_EQ(jobs[1]->spec.cost, 5);
  auto spec = a->Export("5");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->key, "c1/5");
  EXPECT_EQ(spec->cost, 1200);
  auto pending = a->Pending();
  ASSERT_TRUE(pending.ok()) << pending.status();
  ASSERT_EQ(pending->size(), 2u);
  EXPECT_NE((*pending)[0].key, (*pending)[1].key);
}

TEST(SlurmLoginDefs, UidRangeIsLoginDefsOrTheDebianDefault) {
  TempDir dir;
  std::ofstream(dir.Sub("login.defs"))
      << "# UID_MIN 5\nUID_MIN\t\t 1500\n#UID_MAX 7\nUID_MAX 50000 \nSYS_UID_MIN 100\n";
  EXPECT_EQ(LoginDefsUidRange(dir.Sub("login.defs")), std::make_pair(uint32_t{1500}, uint32_t{50000}));
  std::ofstream(dir.Sub("half.defs")) << "UID_MAX 9000\n";
  EXPECT_EQ(LoginDefsUidRange(dir.Sub("half.defs")), std::make_pair(uint32_t{1000}, uint32_t{9000}));
  EXPECT_EQ(LoginDefsUidRange(dir.Sub("none")), std::make_pair(uint32_t{1000}, uint32_t{60000}));
  std::ofstream(dir.Sub("bad.defs")) << "UID_MIN 0\nUID_MAX x\n";
  EXPECT_EQ(LoginDefsUidRange(dir.Sub("bad.defs")), std::make_pair(uint32_t{1000}, uint32_t{60000}));
}

// Issue 34, finding 2: the sender chose the owner, so a map line names the
// site it trusts for that name; the adapter is told the authenticated
// source site (JobSpec::source_site, set by the migrator).
TEST_F(HostileSlurmSpec, Issue34_UsersMapLinesNameTheirSourceSite) {
  for (const char* u : {"alice", "bob"})
    if (std::string why = EnsureUser(u); !why.empty()) GTEST_SKIP() << why;
  Queue(R"({"jobs": []})");  // a submit with a tag reads the queue first
  std::ofstream(dir_.Sub("users.map")) << "# site:remote local\nsite-b:alice alice\n*:bob bob\nsite-c:carol bob\n";
  auto a = Adapter({{"run_as", "owner"}, {"users_map", dir_.Sub("users.map")}});
  ASSERT_NE(a, nullptr);
  JobSpec s = Good();
  s.source_site = "site-b";
  EXPECT_TRUE(a->CheckSpec(s).ok()) << a->CheckSpec(s);
  for (const char* other : {"site-c", "", "*"}) {
    s.source_site = other;
    absl::Status st = a->CheckSpec(s);
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << other << ": " << st;
    EXPECT_TRUE(absl::StrContains(st.message(), "not in users_map")) << st;
    EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(s, "t", true).status()));
  }
  s.owner = "bob";
  s.source_site = "site-x";
  EXPECT_TRUE(a->CheckSpec(s).ok()) << a->CheckSpec(s);
  s.owner = "carol";
  s.source_site = "site-c";
  EXPECT_TRUE(a->CheckSpec(s).ok()) << a->CheckSpec(s);
  s.source_site = "site-b";
  EXPECT_TRUE(absl::IsInvalidArgument(a->CheckSpec(s)));
  // Load errors name the file and line.
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"site-b:alice alice\nalice alice\n", "users.map:2: \"alice\" names no site"},
           {"site-b:alice alice\nsite-b:alice bob\n", "users.map:2: \"site-b:alice\" is mapped twice"},
           {"si te:alice alice\n", "users.map:1: not two words"},
           {"s!te:alice alice\n", "users.map:1: \"s!te\" is not a site id"},
           {":alice alice\n", "users.map:1: \"\" is not a site id"},
           {"site-b:Alice alice\n", "users.map:1: \"Alice\" is not a user name"},
           {"site-b:alice root\n", "users.map:1: local user \"root\" is listed in deny_users"},
           {"site-b:alice munge\n", "users.map:1: local user \"munge\" is listed in deny_users"}}) {
    std::ofstream(dir_.Sub("users.map")) << text;
    auto o = ParseSlurmOptions({{"run_as", "owner"}, {"users_map", dir_.Sub("users.map")}});
    EXPECT_TRUE(absl::IsInvalidArgument(o.status())) << text;
    EXPECT_TRUE(absl::StrContains(o.status().message(), says)) << o.status();
  }
  // A map or a bin_dir another user could change is refused (finding 6f):
  // they say who a peer's job runs as and what the daemon runs as root.
  std::ofstream(dir_.Sub("users.map")) << "site-b:alice alice\n";
  ASSERT_EQ(chmod(dir_.Sub("users.map").c_str(), 0666), 0);
  auto writable = ParseSlurmOptions({{"run_as", "owner"}, {"users_map", dir_.Sub("users.map")}});
  EXPECT_TRUE(
      absl::StrContains(writable.status().message(), "\"users_map\": \"" + dir_.Sub("users.map") + "\" has mode 0666"))
      << writable.status();
  ASSERT_EQ(chmod(dir_.Sub("users.map").c_str(), 0644), 0);
  ASSERT_TRUE(ParseSlurmOptions({{"run_as", "owner"}, {"users_map", dir_.Sub("users.map")}}).ok());
  std::filesystem::create_directories(dir_.Sub("bin"));
  ASSERT_EQ(chmod(dir_.Sub("bin").c_str(), 0775 | S_IWOTH), 0);
  auto bin = ParseSlurmOptions({{"bin_dir", dir_.Sub("bin")}});
  EXPECT_TRUE(absl::StrContains(bin.status().message(), "\"bin_dir\": ")) << bin.status();
  EXPECT_TRUE(absl::StrContains(bin.status().message(), "has mode 0777")) << bin.status();
  // A target outside uid_min..uid_max is refused at start, naming the line.
  std::ofstream(dir_.Sub("users.map")) << "site-b:alice alice\nsite-b:x nobody\n";
  auto nobody = SlurmAdapter::Open(
      {.state_dir = dir_.path(),
       .options = {{"bin_dir", dir_.path()}, {"run_as", "owner"}, {"users_map", dir_.Sub("users.map")}}});
  EXPECT_TRUE(absl::IsInvalidArgument(nobody.status())) << nobody.status();
  EXPECT_TRUE(absl::StrContains(nobody.status().message(), "users.map:2:")) << nobody.status();
  EXPECT_TRUE(absl::StrContains(nobody.status().message(), "uid_min")) << nobody.status();
}

// Issue 34, finding 4: sbatch 22.05 reads "#SBATCH" and "#SLURM" lines
// (src/sbatch/opt.c, _opt_batch_script: at the start of the line, to the
// first line that is not blank and not a comment) and, without
// --ignore-pbs, "#PBS" and "#BSUB" lines (src/sbatch/xlate.c: anywhere in
// the first 100 lines that do not start with '#').
TEST_F(HostileSlurmSpec, Issue34_FilterCoversEveryPrefixSbatchReads) {
  const std::string script =
      "#!/bin/sh\n"
      "#SLURM --array=0-9\n"
      "#SLURM--exclusive\n"
      "#slurm --priority=TOP\n"
      "  #SLURM -p other\n"
      "#SLURMX --mem=0\n"
      "#PBS -t 0-9\n"
      "#BSUB -J x\n"
      "#SBATCH --requeue\n"
      "echo hi\n"
      "#PBS -l nodes=2\n"
      "  #BSUB -n 4\n"
      "#SLURM --array=1-2\n";
  const std::string want =
      "#!/bin/sh\n"
      "# hyperfed removed: #SLURM --array=0-9\n"
      "# hyperfed removed: #SLURM--exclusive\n"
      "# hyperfed removed: #slurm --priority=TOP\n"
      "# hyperfed removed:   #SLURM -p other\n"
      "# hyperfed removed: #SLURMX --mem=0\n"
      "# hyperfed removed: #PBS -t 0-9\n"
      "# hyperfed removed: #BSUB -J x\n"
      "#SBATCH --requeue\n"
      "echo hi\n"
      "# hyperfed removed: #PBS -l nodes=2\n"
      "# hyperfed removed:   #BSUB -n 4\n"
      "#SLURM --array=1-2\n";
  EXPECT_EQ(FilterSbatchDirectives(script), want);
  EXPECT_EQ(FilterSbatchDirectives(want), want);
  // #PBS lines count up to the 101st line that does not start with '#'.
  std::string body = "#!/bin/sh\n";
  for (int i = 0; i < 100; ++i) body += "true\n";
  const std::string late = body + "#PBS -t 0-9\ntrue\n#PBS -t 0-9\n";
  EXPECT_EQ(FilterSbatchDirectives(late), body + "# hyperfed removed: #PBS -t 0-9\ntrue\n#PBS -t 0-9\n");
}

// ---- On a real Slurm ----

class HostileSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = SlurmMissing(); !why.empty()) GTEST_SKIP() << why;
    auto c = SlurmCluster::Start("hostile");
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = *std::move(c);
    chmod(dir_.path().c_str(),
          01777);  // jobs run as other users; sticky (as /tmp), so the daemon still trusts its files there
  }
  std::unique_ptr<SlurmAdapter> Adapter(std::map<std::string, std::string> options = {}) {
    options["slurm_conf"] = cluster_->conf();
    if (!options.contains("submit_dir")) options["submit_dir"] = dir_.path();
    if (!options.contains("run_as")) {
      options["run_as"] = "account";
      options["run_as_account"] = "nobody";
    }
    auto a = SlurmAdapter::Open({.state_dir = dir_.Sub("state"), .options = options});
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *std::move(a) : nullptr;
  }
  // `scontrol show job ID` as KEY=VALUE pairs.
  std::map<std::string, std::string> ShowJob(const std::string& id) {
    std::map<std::string, std::string> out;
    auto r = cluster_->Cmd({"scontrol", "show", "job", id});
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return out;
    for (absl::string_view word : absl::StrSplit(r->out, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
      const size_t eq = word.find('=');
      if (eq != absl::string_view::npos) out[std::string(word.substr(0, eq))] = std::string(word.substr(eq + 1));
    }
    return out;
  }
  std::string Squeue(const std::string& id, const std::string& format) {
    auto r = cluster_->Cmd({"squeue", "-h", "-j", id, "-o", format});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::string(absl::StripAsciiWhitespace(r->out)) : "";
  }
  bool WaitDone(SchedulerAdapter* a, const std::string& id) {
    for (const absl::Time end = absl::Now() + absl::Seconds(60); absl::Now() < end;) {
      auto j = a->GetJobs({id});
      if (j[0].ok() && j[0]->state == JobState::kDone) return true;
      absl::SleepFor(absl::Milliseconds(200));
    }
    return false;
  }
  static bool Root() { return geteuid() == 0; }

  TempDir dir_;
  std::unique_ptr<SlurmCluster> cluster_;  // stopped before dir_ goes
};

TEST_F(HostileSlurm, Row1_PeerEnvNeverReachesSbatch) {
  // (a) Names a job may not set are refused before any command runs.
  auto a = Adapter();
  ASSERT_NE(a, nullptr);
  for (const char* name : {"PATH", "LD_PRELOAD", "SLURM_CONF", "SBATCH_QOS", "ALL"}) {
    JobSpec s{.name = "bad", .script = "#!/bin/sh\ntrue\n", .key = "k"};
    s.env = {{name, "/tmp/x"}};
    EXPECT_TRUE(absl::IsInvalidArgument(a->CheckSpec(s))) << name;
    EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(s, absl::StrCat("t-", name), true).status())) << name;
  }
  EXPECT_TRUE(a->ListJobs()->empty()) << "nothing was submitted";

  // (b) The daemon's own environment does not reach the commands either: a
  // planted sbatch in its PATH, SBATCH_* options, a preload. bin_dir holds
  // wrappers that record their environment and run the real commands.
  const std::string plant = dir_.Sub("plant"), wrap = dir_.Sub("wrap");
  std::filesystem::create_directories(plant);
  std::filesystem::create_directories(wrap);
  for (const char* cmd : {"sbatch", "squeue", "sinfo", "scontrol", "scancel"}) {
    WriteExecutable(absl::StrCat(plant, "/", cmd), absl::StrCat("#!/bin/sh\ntouch ", dir_.Sub("planted-ran"), "\n"));
    std::string real;
    for (const char* d : {"/usr/bin", "/usr/local/bin", "/bin"})
      if (real.empty() && access(absl::StrCat(d, "/", cmd).c_str(), X_OK) == 0) real = absl::StrCat(d, "/", cmd);
    WriteExecutable(absl::StrCat(wrap, "/", cmd), absl::StrCat("#!/bin/sh\nenv > ", dir_.Sub(absl::StrCat(cmd, ".env")),
                                                               "\nexec ", real, " \"$@\"\n"));
  }
  const std::string old_path = getenv("PATH") ? getenv("PATH") : "";
  setenv("PATH", absl::StrCat(plant, ":", old_path).c_str(), 1);
  setenv("SBATCH_PARTITION", "nosuch", 1);
  setenv("SBATCH_HOLD", "1", 1);
  setenv("HYPERFED_TEST_DAEMON_SECRET", "secret", 1);
  auto wrapped = Adapter({{"bin_dir", wrap}});
  auto plain = Adapter();  // no bin_dir: the fixed PATH, not the daemon's
  ASSERT_NE(wrapped, nullptr);
  ASSERT_NE(plain, nullptr);
  const std::string out = dir_.Sub("job.out");
  JobSpec s{.name = "env",
            .script = absl::StrCat("#!/bin/sh\nprintf '%s|%s' \"$GREETING\" \"$OMP_NUM_THREADS\" > ", out, "\n"),
            .key = "k-env"};
  s.env = {{"GREETING", "it's \"quoted\", with commas\nand a newline"}, {"OMP_NUM_THREADS", "2"}};
  auto id = wrapped->Submit(s, "t-env", false);
  auto id2 = plain->Submit(s, "t-env-2", true);
  auto cap = plain->GetCapacity();
  setenv("PATH", old_path.c_str(), 1);
  unsetenv("SBATCH_PARTITION");
  unsetenv("SBATCH_HOLD");
  unsetenv("HYPERFED_TEST_DAEMON_SECRET");
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(id2.ok()) << id2.status();
  EXPECT_TRUE(cap.ok()) << cap.status();
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("planted-ran"))) << "the planted sbatch in the daemon's PATH ran";
  const std::string sbatch_env = ReadText(dir_.Sub("sbatch.env"));
  ASSERT_FALSE(sbatch_env.empty());
  for (absl::string_view line : absl::StrSplit(sbatch_env, '\n', absl::SkipEmpty())) {
    const std::string name(line.substr(0, line.find('=')));
    // The shell running the wrapper adds PWD (and perhaps SHLVL, _ or OLDPWD).
    EXPECT_TRUE(name == "PATH" || name == "LANG" || name == "LC_ALL" || name == "SLURM_CONF" || name == "PWD" ||
                name == "SHLVL" || name == "_" || name == "OLDPWD")
        << "sbatch saw " << line;
  }
  EXPECT_TRUE(absl::StrContains(sbatch_env, "SLURM_CONF=" + cluster_->conf() + "\n")) << sbatch_env;
  EXPECT_FALSE(absl::StrContains(sbatch_env, plant)) << sbatch_env;
  EXPECT_EQ(ShowJob(*id)["Partition"], "debug") << "SBATCH_PARTITION of the daemon reached sbatch";
  // The job still gets its variables, values intact.
  ASSERT_TRUE(WaitDone(wrapped.get(), *id));
  EXPECT_EQ(ReadText(out), "it's \"quoted\", with commas\nand a newline|2");
  EXPECT_EQ(Squeue(*id2, "%u"), "nobody");
}

TEST_F(HostileSlurm, Row2_ForgedTagByALocalUserLosesNoJob) {
  if (!Root()) GTEST_SKIP() << "submitting as another user (sbatch --uid) needs root; running as uid " << geteuid();
  auto a = Adapter();
  ASSERT_NE(a, nullptr);
  const std::string tag = "hyperfed:site-0:7:0";
  // A local user ("daemon", uid 1 on Debian) submits first, with the tag
  // the migration will use, in hyperfed's comment format.
  auto forged = cluster_->Cmd({"sbatch", "--parsable", "--hold", "--uid=daemon", "--chdir=/tmp",
                               "--comment=hyperfed1;t=" + tag + ";k=site-0/7"},
                              "#!/bin/sh\ntrue\n", "/tmp");
  ASSERT_TRUE(forged.ok()) << forged.status();
  const std::string forged_id(absl::StripAsciiWhitespace(forged->out));
  auto before = a->FindByTag(tag);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_TRUE(before->empty()) << "a local user's job was taken for the migrated one";
  JobSpec s{.name = "moved", .script = "#!/bin/sh\ntrue\n", .key = "site-0/7", .owner = "alice"};
  auto id = a->Submit(s, tag, true);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_NE(*id, forged_id) << "the real job was never submitted";
  EXPECT_EQ(Squeue(*id, "%u"), "nobody");
  // The user copies the real job's comment, mark and all, onto a new job:
  // the mark names the real job's user, not theirs.
  const std::string comment = ShowJob(*id)["Comment"];
  ASSERT_TRUE(absl::StrContains(comment, ";m=")) << comment;
  auto copied =
      cluster_->Cmd({"sbatch", "--parsable", "--hold", "--uid=daemon", "--chdir=/tmp", "--comment=" + comment},
                    "#!/bin/sh\ntrue\n", "/tmp");
  ASSERT_TRUE(copied.ok()) << copied.status();
  auto found = a->FindByTag(tag);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].id, *id);
  auto again = a->Submit(s, tag, true);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *id) << "a retried submit finds the real job, and only it";
  auto exported = a->Export(*id);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->owner, "alice") << "the owner travels in the marked comment";
}

TEST_F(HostileSlurm, Row10_PeerDirectivesHaveNoEffect) {
  ASSERT_TRUE(cluster_->Cmd({"scontrol", "create", "PartitionName=other", "Nodes=ALL"}).ok());
  auto a = Adapter();  // no submit_partition: the cluster's default, debug
  ASSERT_NE(a, nullptr);
  const std::string evil = dir_.Sub("evil-%j.out");
  JobSpec s{.name = "directives",
            .script = absl::StrCat("#!/bin/sh\n#SBATCH --qos=high\n#SBATCH --output=", evil, "\n#SBATCH --error=", evil,
                                   "\n#SBATCH --partition=other\n#SBATCH --exclusive\n#SBATCH --mem=0\n"
                                   "#SBATCH --time=7\n#SBATCH --requeue\n#PBS -q other\ntrue\n"),
            .cores = 1,
            .time_limit_s = 120,
            .key = "k"};
  auto id = a->Submit(s, "t-directives", true);
  ASSERT_TRUE(id.ok()) << id.status();
  auto job = ShowJob(*id);
  EXPECT_EQ(job["Partition"], "debug");
  EXPECT_NE(job["QOS"], "high");
  EXPECT_FALSE(absl::StrContains(job["StdOut"], "evil")) << job["StdOut"];
  EXPECT_FALSE(absl::StrContains(job["StdErr"], "evil")) << job["StdErr"];
  EXPECT_NE(job["OverSubscribe"], "NO") << "--exclusive applied";
  EXPECT_EQ(job["TimeLimit"], "00:02:00") << "the spec's time limit, not the script's";
  EXPECT_EQ(job["Requeue"], "1") << "an allowed directive still applies";
  auto script = cluster_->Cmd({"scontrol", "write", "batch_script", *id, "-"});
  ASSERT_TRUE(script.ok());
  EXPECT_TRUE(absl::StrContains(script->out, "# hyperfed removed: #SBATCH --partition=other")) << script->out;
}

TEST_F(HostileSlurm, Outcome9_MovedJobRunsAsItsOwner) {
  if (!Root()) GTEST_SKIP() << "creating users (useradd) and sbatch --uid need root; running as uid " << geteuid();
  for (const char* user : {"alice", "bob"}) {
    if (getpwnam(user) != nullptr) continue;
    auto r = RunCommand({.argv = {"useradd", "-M", "-s", "/bin/sh", user}});
    ASSERT_TRUE(r.ok() && r->exit_code == 0) << "useradd " << user << ": " << (r.ok() ? r->err : r.status().ToString());
  }
  std::ofstream(dir_.Sub("users.map")) << "site-a:alice alice\nsite-b:site-b-bob bob\n";
  auto a = Adapter({{"run_as", "owner"}, {"users_map", dir_.Sub("users.map")}});
  ASSERT_NE(a, nullptr);
  JobSpec s{
      .name = "owned", .script = "#!/bin/sh\ntrue\n", .key = "site-a/1", .owner = "alice", .source_site = "site-a"};
  auto id = a->Submit(s, "t-alice", true);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(Squeue(*id, "%u"), "alice");
  s.owner = "site-b-bob";
  s.source_site = "site-b";
  auto bob = a->Submit(s, "t-bob", true);
  ASSERT_TRUE(bob.ok()) << bob.status();
  EXPECT_EQ(Squeue(*bob, "%u"), "bob");
  EXPECT_EQ(a->Export(*bob)->owner, "site-b-bob") << "the owner as the spec gave it travels on";
  // Issue 34, finding 2: alice from site-c is not site-a's alice.
  s.owner = "alice";
  s.source_site = "site-c";
  EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(s, "t-alice-c", true).status()));
  s.source_site = "site-a";
  for (const char* who : {"carol", ""}) {
    s.owner = who;
    absl::Status st = a->CheckSpec(s);
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << who << ": " << st;
    EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(s, absl::StrCat("t-", who), true).status())) << who;
  }
  auto same = Adapter({{"run_as", "owner"}, {"users_map", "same-name"}});
  ASSERT_NE(same, nullptr);
  s.owner = "bob";
  auto same_id = same->Submit(s, "t-same", true);
  ASSERT_TRUE(same_id.ok()) << same_id.status();
  EXPECT_EQ(Squeue(*same_id, "%u"), "bob");
  // Nothing else was submitted, and nothing as root.
  auto all = cluster_->Cmd({"squeue", "-h", "-o", "%u"});
  ASSERT_TRUE(all.ok());
  EXPECT_FALSE(absl::StrContains(all->out, "root")) << all->out;
  std::vector<std::string> users = absl::StrSplit(absl::StripAsciiWhitespace(all->out), '\n', absl::SkipEmpty());
  EXPECT_EQ(users.size(), 3u) << all->out;
}

// Issue 34, finding 1, on the real Slurm: a peer's spec with owner "munge"
// (Debian's munge package makes the user) would run as munge and read
// /etc/munge/munge.key. Refused at CheckSpec and at Submit; nothing runs.
TEST_F(HostileSlurm, Issue34_PeerCannotRunAJobAsMunge) {
  if (!Root()) GTEST_SKIP() << "sbatch --uid needs root; running as uid " << geteuid();
  ASSERT_NE(getpwnam("munge"), nullptr) << "the munge package makes the munge user";
  auto a = Adapter({{"run_as", "owner"}, {"users_map", "same-name"}});
  ASSERT_NE(a, nullptr);
  const std::string out = dir_.Sub("stolen");
  JobSpec s{.name = "steal",
            .script = absl::StrCat("#!/bin/sh\nid -un > ", out, "\ncat /etc/munge/munge.key >> ", out, "\n"),
            .key = "site-b/1",
            .owner = "munge",
            .source_site = "site-b"};
  absl::Status check = a->CheckSpec(s);
  EXPECT_TRUE(absl::IsInvalidArgument(check)) << check;
  // munge is a service account by default (kSlurmDeniedUsers), and its uid
  // (102 on Debian) is below UID_MIN.
  EXPECT_TRUE(absl::StrContains(check.message(), "deny_users")) << check;
  auto id = a->Submit(s, "t-munge", false);
  EXPECT_TRUE(absl::IsInvalidArgument(id.status())) << id.status();
  for (const char* service : {"daemon", "nobody", "slurm"}) {
    if (getpwnam(service) == nullptr) continue;
    s.owner = service;
    EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(s, absl::StrCat("t-", service), false).status())) << service;
  }
  auto all = cluster_->Cmd({"squeue", "-h", "-o", "%i %u"});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(absl::StripAsciiWhitespace(all->out), "") << "a job was submitted: " << all->out;
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_FALSE(std::filesystem::exists(out)) << ReadText(out);
}

// Issue 34, finding 4, on the real Slurm 22.05: "#SLURM" lines are
// directives too, and so are "#PBS" lines unless --ignore-pbs; a peer's
// script with them makes one plain job.
TEST_F(HostileSlurm, Issue34_SlurmAndPbsLinesMakeOneJob) {
  auto a = Adapter();
  ASSERT_NE(a, nullptr);
  JobSpec s{.name = "array",
            .script =
                "#!/bin/sh\n#SLURM --array=0-9\n#SLURM --exclusive\n#SLURM --priority=TOP\n"
                "#PBS -t 0-9\n#PBS -l nodes=2\nsleep 30\n",
            .cores = 1,
            .key = "site-b/2"};
  auto id = a->Submit(s, "t-array", false);
  ASSERT_TRUE(id.ok()) << id.status();
  auto all = cluster_->Cmd({"squeue", "-h", "-r", "-o", "%i"});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(absl::StripAsciiWhitespace(all->out), *id) << "one job, not an array: " << all->out;
  auto job = ShowJob(*id);
  EXPECT_FALSE(job.contains("ArrayJobId")) << job["ArrayJobId"];
  EXPECT_NE(job["OverSubscribe"], "NO") << "--exclusive applied";
  EXPECT_NE(job["Priority"], "4294967294") << "--priority=TOP applied";
  EXPECT_EQ(job["NumNodes"].substr(0, 1), "1") << job["NumNodes"];
  EXPECT_TRUE(cluster_->Cmd({"scancel", *id}).ok());
}

TEST_F(HostileSlurm, Row7_WhatSbatchRefusesIsFinalAndWhatItCannotRunIsRefusedFirst) {
  auto a = Adapter({{"submit_partition", "nosuch"}});
  ASSERT_NE(a, nullptr);
  JobSpec s{.name = "j", .script = "#!/bin/sh\ntrue\n", .key = "k"};
  auto id = a->Submit(s, "t-nosuch", true);
  EXPECT_TRUE(absl::IsInvalidArgument(id.status())) << id.status();
  EXPECT_TRUE(absl::StrContains(id.status().message(), "invalid partition")) << id.status();
  // More cores or memory than the node has: sbatch takes it, and it would
  // wait for ever (PartitionConfig, BadConstraints); CheckSpec refuses it.
  auto b = Adapter();
  ASSERT_NE(b, nullptr);
  s.cores = 5;
  EXPECT_TRUE(absl::IsInvalidArgument(b->Submit(s, "t-cores", true).status()));
  s.cores = 4;
  s.memory_mb = 16385;
  EXPECT_TRUE(absl::IsInvalidArgument(b->Submit(s, "t-mem", true).status()));
  s.memory_mb = 16384;
  auto fits = b->Submit(s, "t-fits", true);
  EXPECT_TRUE(fits.ok()) << fits.status();
  // A controller that does not answer is not a refusal.
  const pid_t ctld = cluster_->CtldPid();
  ASSERT_GT(ctld, 0);
  auto c = Adapter({{"timeout", "1s"}});
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(kill(ctld, SIGSTOP), 0);
  auto stuck = c->Submit(s, "", true);
  kill(ctld, SIGCONT);
  EXPECT_FALSE(absl::IsInvalidArgument(stuck.status())) << stuck.status();
}

// ---- The shared hostile-input suite (hostile_adapter.h) on a real Slurm ----

class SlurmHost : public HostileHost {
 public:
  std::string SkipReason() const override {
    if (std::string why = SlurmMissing(); !why.empty()) return why;
    if (geteuid() != 0) return "sbatch --uid (jobs run as their owner) needs root";
    return "";
  }
  absl::Status Start(const std::string& work_dir) override {
    work_ = work_dir;
    auto c = SlurmCluster::Start("hostile-suite");
    if (!c.ok()) return c.status();
    cluster_ = *std::move(c);
    return cluster_->Cmd({"scontrol", "create", "PartitionName=other", "Nodes=ALL"}).status();
  }
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> MakeAdapter(std::map<std::string, std::string> options) override {
    std::map<std::string, std::string> o = {
        {"slurm_conf", cluster_->conf()}, {"submit_dir", work_}, {"run_as", "account"}, {"run_as_account", "nobody"}};
    for (const auto& [k, v] : options) {
      if (v.empty()) {
        o.erase(k);
      } else {
        o[k] = v;
      }
    }
    auto a = SlurmAdapter::Open({.state_dir = work_ + "/state", .options = o});
    if (!a.ok()) return a.status();
    return std::unique_ptr<SchedulerAdapter>(*std::move(a));
  }
  absl::StatusOr<std::vector<std::string>> HostJobIds() override {
    auto r = cluster_->Cmd({"squeue", "-h", "--states=all", "-o", "%i"});
    if (!r.ok()) return r.status();
    return std::vector<std::string>(absl::StrSplit(r->out, '\n', absl::SkipWhitespace()));
  }
  absl::StatusOr<HostJob> Describe(const std::string& id) override {
    // --json: names and paths with any character come back whole.
    auto r = cluster_->Cmd({"squeue", "--json"});
    if (!r.ok()) return r.status();
    const nlohmann::json doc = nlohmann::json::parse(r->out, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return absl::InternalError("squeue --json printed no JSON");
    for (const auto& j : doc["jobs"]) {
      if (absl::StrCat(j["job_id"].get<int64_t>()) != id) continue;
      HostJob h;
      h.id = id;
      h.user = j.value("user_name", "");
      h.name = j.value("name", "");
      h.queue = j.value("partition", "");
      h.account = j.value("account", "");
      h.stdout_path = j.value("standard_output", "");
      h.stderr_path = j.value("standard_error", "");
      if (j.contains("time_limit") && j["time_limit"].is_number()) h.time_limit_s = j["time_limit"].get<int64_t>() * 60;
      return h;
    }
    return absl::NotFoundError(absl::StrCat("squeue has no job ", id));
  }
  std::string Queue() const override { return "debug"; }
  std::string OtherQueue() const override { return "other"; }
  std::string Directives(const std::string& account, const std::string& path, const std::string& name) const override {
    return absl::StrCat("#SBATCH --account=", account, "\n#SBATCH --partition=other\n#SBATCH --output=", path,
                        "\n#SBATCH --error=", path, "\n#SBATCH --job-name=", name,
                        "\n#SBATCH --time=0:01\n#SBATCH --exclusive\n#SBATCH --uid=0\n#SLURM --partition=other\n",
                        "#SLURM --account=", account, "\n#PBS -q other\n");
  }
  std::vector<std::string> ServiceAccounts() const override { return {"slurm", "munge"}; }

 private:
  std::string work_;
  std::unique_ptr<SlurmCluster> cluster_;
};

INSTANTIATE_TEST_SUITE_P(Slurm, HostileAdapterTest,
                         ::testing::Values(HostileParam{"Slurm", [] { return std::make_unique<SlurmHost>(); }}),
                         HostileParamName);

}  // namespace
}  // namespace hyperfed::scheduler::testing
