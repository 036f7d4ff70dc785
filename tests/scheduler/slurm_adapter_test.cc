// The slurm adapter against a real single-node Slurm (scripts/slurm-cluster):
// the shared contract, then what is Slurm's own. Every test starts its own
// cluster (about 1.5 s) so tags and ids never leak between tests. Skipped,
// saying why, where Slurm is not installed; scripts/setup installs it.

#include "daemon/scheduler/slurm_adapter.h"

#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "daemon/scheduler/mark.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/scheduler/adapter_contract.h"
#include "tests/scheduler/canned_squeue.h"
#include "tests/scheduler/slurm_cluster.h"
#include "tests/scheduler/temp_dir.h"

namespace hyperfed::scheduler::testing {
namespace {

using hyperfed::testing::CannedSqueue;
using hyperfed::testing::kCannedSeparator;
using hyperfed::testing::SlurmCluster;
using hyperfed::testing::SlurmMissing;

// ---- The contract, on a real Slurm ----

class SlurmEnv : public AdapterContractEnv {
 public:
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> MakeAdapter() override {
    if (std::string why = SlurmMissing(); !why.empty()) return absl::FailedPreconditionError(why);
    auto c = SlurmCluster::Start("contract");
    if (!c.ok()) return c.status();
    cluster_ = *std::move(c);
    // Jobs that arrive run as an unprivileged account (never the daemon's):
    // it must be able to work in submit_dir.
    chmod(dir_.path().c_str(), 01777);  // sticky (as /tmp): the daemon still trusts its files there
    auto a = SlurmAdapter::Open({.state_dir = dir_.path(),
                                 .options = {{"slurm_conf", cluster_->conf()},
                                             {"submit_dir", dir_.path()},
                                             {"run_as", "account"},
                                             {"run_as_account", "nobody"}}});
    if (!a.ok()) return a.status();
    return std::unique_ptr<SchedulerAdapter>(*std::move(a));
  }
  std::string SkipReason() const override { return SlurmMissing(); }
  bool ListsScripts() const override { return false; }
  // squeue's start_time is 0 until a backfill pass has planned the job.
  Estimates StartEstimates() const override { return Estimates::kSometimes; }
  void LetTimePass(absl::Duration d) override { absl::SleepFor(d); }
  absl::Duration PollStep() const override { return absl::Milliseconds(200); }

 private:
  TempDir dir_;
  std::unique_ptr<SlurmCluster> cluster_;  // stopped before dir_ goes
};

INSTANTIATE_TEST_SUITE_P(Slurm, AdapterContractTest,
                         ::testing::Values(AdapterContractParam{"Slurm", [] { return std::make_unique<SlurmEnv>(); }}),
                         AdapterContractParamName);

// ---- Slurm's own ----

class SlurmAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = SlurmMissing(); !why.empty()) GTEST_SKIP() << why;
    chmod(dir_.path().c_str(), 01777);  // jobs run as nobody (run_as_account below); sticky, as /tmp
  }
  void StartCluster() {
    auto c = SlurmCluster::Start("own");
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = *std::move(c);
  }
  std::unique_ptr<SlurmAdapter> Adapter(std::map<std::string, std::string> options) {
    options["slurm_conf"] = cluster_->conf();
    if (!options.contains("submit_dir")) options["submit_dir"] = dir_.path();
    if (!options.contains("run_as")) {
      options["run_as"] = "account";
      options["run_as_account"] = "nobody";
    }
    auto a = SlurmAdapter::Open({.state_dir = dir_.path(), .options = options});
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *std::move(a) : nullptr;
  }
  // sbatch straight to the cluster, as a user would; returns the id.
  std::string Sbatch(const std::vector<std::string>& args, const std::string& script) {
    std::vector<std::string> argv = {"sbatch", "--parsable"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = cluster_->Cmd(argv, script, dir_.path());
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::string(absl::StripAsciiWhitespace(r->out)) : "";
  }

  TempDir dir_;
  std::unique_ptr<SlurmCluster> cluster_;
};

// What a receiving site checks before it submits any job of a transfer:
// the common rules, a script Slurm will take, environment names it can
// carry, and a comment within Slurm's limit with room for the tag. No Slurm
// is needed: nothing is run.
TEST(SlurmCheckSpecTest, RefusesWhatSbatchCouldNotTake) {
  TempDir dir;
  auto a =
      SlurmAdapter::Open({.state_dir = dir.path(),
                          .options = {{"bin_dir", dir.path()}, {"run_as", "account"}, {"run_as_account", "nobody"}}});
  ASSERT_TRUE(a.ok()) << a.status();
  JobSpec good{.name = "j", .script = "#!/bin/sh\ntrue\n", .env = {{"A", "1"}}, .key = "k"};
  EXPECT_TRUE((*a)->CheckSpec(good).ok()) << (*a)->CheckSpec(good);
  JobSpec s = good;
  s.script = "echo no interpreter line\n";
  EXPECT_TRUE(absl::IsInvalidArgument((*a)->CheckSpec(s)));
  s = good;
  s.env = {{"A,B", "1"}};
  EXPECT_TRUE(absl::IsInvalidArgument((*a)->CheckSpec(s)));
  s = good;
  s.env = {{"BIG", std::string(2000, 'v')}};
  absl::Status big = (*a)->CheckSpec(s);
  EXPECT_TRUE(absl::IsInvalidArgument(big));
  EXPECT_NE(big.message().find("Slurm comment"), std::string::npos) << big;
  s = good;
  s.cores = 0;
  EXPECT_TRUE(absl::IsInvalidArgument((*a)->CheckSpec(s)));
}

TEST(SlurmOptionsTest, BadOptionsAreRejectedNamingTheOption) {
  auto unknown = ParseSlurmOptions({{"partiton", "a"}});
  EXPECT_TRUE(absl::IsInvalidArgument(unknown.status()));
  EXPECT_TRUE(absl::StrContains(unknown.status().message(), "\"partiton\"")) << unknown.status();
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{{"timeout", "soon"},
                                                                             {"timeout", "0s"},
                                                                             {"timeout", "-1s"},
                                                                             {"speed", "0"},
                                                                             {"speed", "fast"},
                                                                             {"workdir_policy", "move"}}) {
    auto o = ParseSlurmOptions({{k, v}});
    EXPECT_TRUE(absl::IsInvalidArgument(o.status())) << k << "=" << v;
    EXPECT_TRUE(absl::StrContains(o.status().message(), "\"" + k + "\"")) << o.status();
  }
  auto no_submit = ParseSlurmOptions({{"partitions", "a,b"}});
  EXPECT_TRUE(absl::IsInvalidArgument(no_submit.status())) << "sbatch would pick the default partition";
  EXPECT_TRUE(absl::StrContains(no_submit.status().message(), "\"submit_partition\"")) << no_submit.status();
  auto outside = ParseSlurmOptions({{"partitions", "a,b"}, {"submit_partition", "c"}});
  EXPECT_TRUE(absl::IsInvalidArgument(outside.status())) << "a submit partition hyperfed would not see";
  auto good = ParseSlurmOptions({{"partitions", "a, b"},
                                 {"submit_partition", "b"},
                                 {"timeout", "5s"},
                                 {"pinned_partitions", "keep"},
                                 {"workdir_policy", "drop"}});
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->partitions, (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(good->timeout, absl::Seconds(5));
  EXPECT_FALSE(good->keep_workdir);
}

TEST(SlurmCommentTest, RoundTripsEveryFieldAndIgnoresOtherComments) {
  SlurmJobMeta m;
  m.tag = "hyperfed:m-1:0";
  m.has_key = true;
  m.key = "site a/7;x";
  m.has_cost = true;
  m.cost = 10800.25;
  m.duration_ms = 1500;
  m.pinned = 1;
  m.no_workdir = true;
  m.env = {{"A", "x=y;z"}, {"NL", "a\nb"}, {"EMPTY", ""}, {"U", "größe 大 %41"}};
  const std::string c = EncodeSlurmComment(m);
  EXPECT_TRUE(absl::StartsWith(c, "hyperfed1;")) << c;
  EXPECT_FALSE(absl::StrContains(c, ' ')) << "scontrol update must see one word: " << c;
  SlurmJobMeta back;
  ASSERT_TRUE(DecodeSlurmComment(c, &back)) << c;
  EXPECT_EQ(back.tag, m.tag);
  EXPECT_EQ(back.key, m.key);
  EXPECT_EQ(back.cost, m.cost);
  EXPECT_EQ(back.duration_ms, m.duration_ms);
  EXPECT_EQ(back.pinned, 1);
  EXPECT_TRUE(back.no_workdir);
  EXPECT_EQ(back.env, m.env);
  EXPECT_FALSE(DecodeSlurmComment("a user's own comment", &back));
  EXPECT_FALSE(DecodeSlurmComment("hyperfed1;t=%4", &back)) << "a cut escape";
  EXPECT_FALSE(DecodeSlurmComment("", &back));
}

TEST(SlurmStateTest, EverySlurmStateMapsAndUnknownOnesCountAsRunning) {
  const std::vector<std::pair<std::string, JobState>> cases = {{"PENDING", JobState::kPending},
                                                               {"REQUEUED", JobState::kPending},
                                                               {"REQUEUE_FED", JobState::kPending},
                                                               {"REQUEUE_HOLD", JobState::kHeld},
                                                               {"SPECIAL_EXIT", JobState::kHeld},
                                                               {"RESV_DEL_HOLD", JobState::kHeld},
                                                               {"RUNNING", JobState::kRunning},
                                                               {"SUSPENDED", JobState::kRunning},
                                                               {"STOPPED", JobState::kRunning},
                                                               {"CONFIGURING", JobState::kRunning},
                                                               {"COMPLETING", JobState::kRunning},
                                                               {"SIGNALING", JobState::kRunning},
                                                               {"STAGE_OUT", JobState::kRunning},
                                                               {"RESIZING", JobState::kRunning},
                                                               {"COMPLETED", JobState::kDone},
                                                               {"FAILED", JobState::kDone},
                                                               {"TIMEOUT", JobState::kDone},
                                                               {"NODE_FAIL", JobState::kDone},
                                                               {"PREEMPTED", JobState::kDone},
                                                               {"BOOT_FAIL", JobState::kDone},
                                                               {"DEADLINE", JobState::kDone},
                                                               {"OUT_OF_MEMORY", JobState::kDone},
                                                               {"CANCELLED", JobState::kCancelled},
                                                               {"SOMETHING_NEW", JobState::kRunning},
                                                               {"", JobState::kRunning}};
  for (const auto& [state, want] : cases) EXPECT_EQ(MapSlurmState(state, "None"), want) << state;
  EXPECT_EQ(MapSlurmState("PENDING", "JobHeldUser"), JobState::kHeld);
  EXPECT_EQ(MapSlurmState("PENDING", "JobHeldAdmin"), JobState::kHeld);
  EXPECT_EQ(MapSlurmState("REQUEUED", "JobHeldAdmin"), JobState::kHeld);
  EXPECT_EQ(MapSlurmState("PENDING", "Resources"), JobState::kPending);
}

// The queue read (SqueueFormat, ParseSqueue): every field comes back whole,
// whatever bytes it holds, '|', newlines, "(null)" and a record forged with
// a guessed separator included; only the read's own separator, made afresh
// from 131 random bits for every read, cannot be in a field, and a field
// that held it would fail the read rather than shift the fields.
TEST(SlurmQueueParseTest, FieldsHoldAnyBytesButTheReadsOwnSeparator) {
  const std::string sep = SlurmQueueSeparator();
  EXPECT_NE(sep, SlurmQueueSeparator()) << "a new separator for every read";
  EXPECT_GE(sep.size(), 23u);
  EXPECT_EQ(sep.find_first_of(",:"), std::string::npos) << sep << " would end a --Format field";
  EXPECT_FALSE(absl::ascii_isdigit(sep[0]) || sep[0] == '.') << sep << " would be read as a width";
  // The fields in the format's order, each "Name:0<sep>".
  std::vector<std::string> fields;
  for (absl::string_view f : absl::StrSplit(SqueueFormat(sep), absl::StrCat(sep, ","))) {
    absl::ConsumeSuffix(&f, sep);
    ASSERT_TRUE(absl::ConsumeSuffix(&f, ":0")) << f << ": printed whole, never cut to a width";
    fields.push_back(std::string(f));
  }
  const std::string forged = "x~AAAAAAAAAAAAAAAAAAAAAA|\n999~AAAAAAAAAAAAAAAAAAAAAA";
  // squeue's "not set": (null) for text, N/A for ids and numbers.
  const std::set<std::string> text = {"Dependency", "Licenses", "Feature", "Comment", "admin_comment"};
  auto record = [&](std::map<std::string, std::string> v) {
    std::string out;
    for (const std::string& f : fields)
      absl::StrAppend(&out, v.contains(f) ? v[f] : text.contains(f) ? "(null)" : "N/A", sep);
    return out + "\n";
  };
  const std::string out = record({{"JobID", "12"},
                                  {"State", "PENDING"},
                                  {"Reason", "JobHeldUser"},
                                  {"SubmitTime", "1795750943"},
                                  {"Name", "evil|name\nwith newline\t" + forged},
                                  {"NumCPUs", "2"},
                                  {"MinMemory", "100M"},
                                  {"tres-alloc", "cpu=2,mem=200M,node=1,billing=2"},
                                  {"TimeLimit", "1:30:00"},
                                  {"WorkDir", "/tmp/a|b\nc"},
                                  {"BatchFlag", "1"},
                                  {"NumTasks", "1"},
                                  {"NumNodes", "1"},
                                  {"Comment", "hyperfed1;e=A=x|y\nz" + forged},
                                  {"admin_comment", "(null)"}}) +
                          record({{"JobID", "13"},
                                  {"State", "RUNNING"},
                                  {"Name", "(null)"},
                                  {"TimeLimit", "2-00:01:00"},
                                  {"BatchFlag", "0"},
                                  {"Dependency", "afterok:12(unfulfilled)"},
                                  {"ArrayTaskID", "0-3"},
                                  {"Comment", "(null)"}});
  auto jobs = ParseSqueue(out, sep);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u) << "the forged record is part of a name and a comment, not a job";
  const SlurmQueueJob& a = (*jobs)[0];
  EXPECT_EQ(a.id, "12");
  EXPECT_EQ(a.state, "PENDING");
  EXPECT_EQ(a.reason, "JobHeldUser");
  EXPECT_EQ(a.submit_s, 1795750943);
  EXPECT_EQ(a.start_s, 0) << "N/A";
  EXPECT_EQ(a.name, "evil|name\nwith newline\t" + forged);
  EXPECT_EQ(a.comment, "hyperfed1;e=A=x|y\nz" + forged);
  EXPECT_EQ(a.workdir, "/tmp/a|b\nc");
  EXPECT_EQ(a.cpus, 2);
  EXPECT_EQ(a.min_memory_mb, 100);
  EXPECT_EQ(a.tres_memory_mb, 200);
  EXPECT_EQ(a.time_limit_s, 5400);
  EXPECT_TRUE(a.batch);
  EXPECT_EQ(a.dependency, "");
  EXPECT_EQ(a.admin_comment, "");
  EXPECT_EQ(NotPortable(a), "");
  const SlurmQueueJob& b = (*jobs)[1];
  EXPECT_EQ(b.id, "13");
  EXPECT_EQ(b.name, "(null)") << "a name is taken as printed";
  EXPECT_EQ(b.time_limit_s, 2 * 86400 + 60);
  EXPECT_FALSE(b.batch);
  EXPECT_EQ(b.comment, "");
  EXPECT_EQ(NotPortable(b), "a dependency");
  // The read's own separator in a field, a record cut short, a job id that
  // is not a number: the read fails, naming squeue's output.
  for (const std::string& bad :
       {record({{"JobID", "12"}, {"Name", absl::StrCat("a", sep, "b")}}), record({{"JobID", "12"}}).substr(20),
        record({{"JobID", "12_3"}}), absl::StrCat("12", sep, "\n"), std::string("12|PENDING|x\n")}) {
    auto got = ParseSqueue(bad, sep);
    EXPECT_TRUE(absl::IsFailedPrecondition(got.status())) << absl::CEscape(bad) << ": " << got.status();
    EXPECT_TRUE(absl::StrContains(got.status().message(), "unsupported squeue output")) << got.status();
  }
  auto none = ParseSqueue("", sep);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
}

TEST(SlurmQueueParseTest, DurationsAndMemoryAsSqueuePrintsThem) {
  EXPECT_EQ(SlurmDurationSeconds("5:00"), 300);
  EXPECT_EQ(SlurmDurationSeconds("1:30:00"), 5400);
  EXPECT_EQ(SlurmDurationSeconds("2-00:01:00"), 172860);
  EXPECT_EQ(SlurmDurationSeconds("24855-03:14:00"), 2147483640);
  for (const char* none : {"UNLIMITED", "NOT_SET", "INVALID", "Partition_Limit", "", "1", "a:b", "-1:00", "1::00"})
    EXPECT_EQ(SlurmDurationSeconds(none), 0) << none;
  EXPECT_EQ(SlurmMemoryMb("0"), 0);
  EXPECT_EQ(SlurmMemoryMb("300M"), 300);
  EXPECT_EQ(SlurmMemoryMb("1500M"), 1500);
  EXPECT_EQ(SlurmMemoryMb("16G"), 16384);
  EXPECT_EQ(SlurmMemoryMb("1.50G"), 1536);
  EXPECT_EQ(SlurmMemoryMb("2T"), 2097152);
  EXPECT_EQ(SlurmMemoryMb("2048K"), 2);
  for (const char* none : {"", "N/A", "M", "-5M", "5X", "nanG"}) EXPECT_EQ(SlurmMemoryMb(none), 0) << none;
}

// Jobs a single-node Slurm cannot make on demand: a fake `squeue` in bin_dir
// prints canned jobs (canned_squeue.h), and the adapter reads them.
class CannedSqueueTest : public ::testing::Test {
 protected:
  // squeue prints the jobs of `squeue_json` the first time and those of
  // `later_json` (when given) every time after.
  std::unique_ptr<SlurmAdapter> AdapterPrinting(const std::string& squeue_json, const std::string& later_json = "") {
    std::ofstream(dir_.Sub("queue.txt")) << CannedSqueue(squeue_json);
    Later(later_json.empty() ? squeue_json : later_json);
    {
      std::ofstream f(dir_.Sub("squeue"));
      f << "#!/bin/sh\nd=\"" << dir_.path() << "\"\n"
        << "if [ -e \"$d/read\" ]; then f=\"$d/later.txt\"; else touch \"$d/read\"; f=\"$d/queue.txt\"; fi\n"
        << "sep=${SQUEUE_FORMAT2%%,*}\nsep=${sep#JobID:0}\nsed \"s/" << kCannedSeparator << "/$sep/g\" \"$f\"\n";
    }
    {
      // scancel and scontrol hold succeed and change nothing, as when the
      // job's state moved between slurmctld's answer and the command.
      std::ofstream f(dir_.Sub("scancel"));
      f << "#!/bin/sh\nexit 0\n";
    }
    EXPECT_EQ(chmod(dir_.Sub("scancel").c_str(), 0755), 0);
    EXPECT_EQ(chmod(dir_.Sub("squeue").c_str(), 0755), 0);
    {
      // `scontrol write batch_script ID -` prints the job's script.
      std::ofstream f(dir_.Sub("scontrol"));
      // Job 9's script is gone (slurmctld says so and prints nothing).
      f << "#!/bin/sh\n[ \"$1\" = hold ] && exit 0\n"
        << "if [ \"$3\" = 9 ]; then echo 'scontrol: error: no batch script for job 9' >&2; exit 0; fi\n"
        << "echo '#!/bin/sh'\necho \"echo job $3\"\n";
    }
    EXPECT_EQ(chmod(dir_.Sub("scontrol").c_str(), 0755), 0);
    auto a = SlurmAdapter::Open({.state_dir = dir_.path(), .options = {{"bin_dir", dir_.path()}}});
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *std::move(a) : nullptr;
  }
  // What squeue prints from its second read on.
  void Later(const std::string& squeue_json) { std::ofstream(dir_.Sub("later.txt")) << CannedSqueue(squeue_json); }
  TempDir dir_;
};

// squeue prints a job's state as a word (job_state_string) in every version
// since 22.05: base states and the flags that decide, mapped by
// MapSlurmState.
TEST_F(CannedSqueueTest, SqueueStatesMapToJobStates) {
  const std::string jobs = R"({"jobs": [
    {"job_id": 1, "job_state": "PENDING", "state_reason": "Resources", "submit_time": 100, "cpus": 1},
    {"job_id": 2, "job_state": "PENDING", "state_reason": "JobHeldUser", "submit_time": 101, "cpus": 1},
    {"job_id": 3, "job_state": "REQUEUED", "state_reason": "None", "submit_time": 102, "cpus": 1},
    {"job_id": 4, "job_state": "RUNNING", "state_reason": "None", "submit_time": 103, "cpus": 1},
    {"job_id": 5, "job_state": "NEW_STATE", "state_reason": "None", "submit_time": 104, "cpus": 1}]})";
  auto a = AdapterPrinting(jobs);
  ASSERT_NE(a, nullptr);
  auto n = a->CountMigratable();
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 2) << "jobs 1 and 3 are pending; 2 held, 4 running, 5 unknown (running)";
  auto got = a->GetJobs({"1", "2", "3", "4", "5"});
  ASSERT_EQ(got.size(), 5u);
  const JobState want[] = {JobState::kPending, JobState::kHeld, JobState::kPending, JobState::kRunning,
                           JobState::kRunning};
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status();
    EXPECT_EQ(got[i]->state, want[i]) << "job " << i + 1;
    EXPECT_EQ(got[i]->queued_at_ms, (100 + i) * 1000) << "job " << i + 1;
  }
}

TEST_F(CannedSqueueTest, CancelThatDidNotTakeIsRetryableAndARunningJobIsNot) {
  const std::string pending = R"({"jobs": [
    {"job_id": 7, "job_state": "PENDING", "state_reason": "Resources", "submit_time": 100, "cpus": 1},
    {"job_id": 8, "job_state": "PENDING", "state_reason": "JobHeldUser", "submit_time": 100, "cpus": 1}],
    "errors": []})";
  const std::string started = R"({"jobs": [
    {"job_id": 7, "job_state": "RUNNING", "state_reason": "None", "submit_time": 100, "cpus": 1},
    {"job_id": 8, "job_state": "COMPLETED", "state_reason": "None", "submit_time": 100, "cpus": 1}],
    "errors": []})";
  {
    auto a = AdapterPrinting(pending);
    ASSERT_NE(a, nullptr);
    auto st = a->CancelMany({"7", "8"});
    ASSERT_EQ(st.size(), 2u);
    for (const auto& s : st) {
      EXPECT_TRUE(absl::IsUnavailable(s)) << "still pending or held: retry, never a DUPLICATE: " << s;
      EXPECT_TRUE(absl::StrContains(s.message(), "after scancel")) << s;
    }
    std::filesystem::remove(dir_.Sub("read"));
    absl::Status hold = a->Hold("7");
    EXPECT_TRUE(absl::IsUnavailable(hold)) << hold;
  }
  std::filesystem::remove(dir_.Sub("read"));
  {
    auto a = AdapterPrinting(pending, started);
    ASSERT_NE(a, nullptr);
    auto st = a->CancelMany({"7", "8"});
    ASSERT_EQ(st.size(), 2u);
    EXPECT_TRUE(absl::IsFailedPrecondition(st[0])) << st[0];
    EXPECT_TRUE(absl::StrContains(st[0].message(), "running")) << st[0];
    EXPECT_TRUE(absl::IsFailedPrecondition(st[1])) << st[1];
    EXPECT_TRUE(absl::StrContains(st[1].message(), "done")) << st[1];
  }
}

TEST_F(CannedSqueueTest, JobsWithoutAReadableScriptArePinnedAndBreakNothingElse) {
  // Job 9 is one hyperfed submitted: its comment carries a mark made with
  // the key the adapter will load (mark.h).
  auto key = MarkKey::LoadOrCreate(dir_.Sub("mark.key"));
  ASSERT_TRUE(key.ok()) << key.status();
  SlurmJobMeta m;
  m.tag = "t9";
  m.mark = key->Sign(SlurmMarkMessage(m, "alice"));
  auto a = AdapterPrinting(absl::StrCat(R"({"jobs": [
    {"job_id": 1, "job_state": "PENDING", "state_reason": "Resources", "submit_time": 100, "batch_flag": true},
    {"job_id": 9, "job_state": "PENDING", "state_reason": "Resources", "submit_time": 101, "batch_flag": true,
     "user_name": "alice", "comment": ")",
                                        EncodeSlurmComment(m), R"("},
    {"job_id": 10, "job_state": "PENDING", "state_reason": "Resources", "submit_time": 102, "batch_flag": false}],
    "errors": []})"));
  ASSERT_NE(a, nullptr);
  auto jobs = a->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_FALSE((*jobs)[0].pinned);
  EXPECT_FALSE((*jobs)[1].pinned) << "not known to be unreadable yet";
  EXPECT_TRUE((*jobs)[2].pinned) << "no batch script: srun/salloc";
  auto found = a->FindByTag("t9");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_TRUE(a->GetJobs({"9"})[0].ok());
  auto specs = a->ExportMany({"1", "9", "10"});
  ASSERT_EQ(specs.size(), 3u);
  ASSERT_TRUE(specs[0].ok()) << specs[0].status();
  EXPECT_EQ(specs[0]->script, "#!/bin/sh\necho job 1\n");
  EXPECT_TRUE(absl::IsFailedPrecondition(specs[1].status())) << specs[1].status();
  EXPECT_TRUE(absl::StrContains(specs[1].status().message(), "no batch script for job 9")) << specs[1].status();
  EXPECT_TRUE(absl::StrContains(specs[1].status().message(), "pinned")) << specs[1].status();
  EXPECT_TRUE(absl::IsFailedPrecondition(specs[2].status())) << specs[2].status();
  auto after = a->ListJobs();
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 3u);
  EXPECT_FALSE((*after)[0].pinned);
  EXPECT_TRUE((*after)[1].pinned) << "its script cannot be read: it cannot move";
  auto n = a->CountMigratable();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  // Pins that cannot be lifted say why instead of "succeeding".
  absl::Status unpin = a->SetPinned("9", false);
  EXPECT_TRUE(absl::IsFailedPrecondition(unpin)) << unpin;
  EXPECT_TRUE(absl::StrContains(unpin.message(), "batch script slurmctld cannot give")) << unpin;
  unpin = a->SetPinned("10", false);
  EXPECT_TRUE(absl::IsFailedPrecondition(unpin)) << unpin;
  EXPECT_TRUE(absl::StrContains(unpin.message(), "no batch script")) << unpin;
}

TEST_F(CannedSqueueTest, ScriptCacheTellsReusedIdsApartBySubmitTime) {
  auto a = AdapterPrinting(
      R"({"jobs": [{"job_id": 1, "job_state": "PENDING", "state_reason": "None", "submit_time": 100}]})",
      R"({"jobs": [{"job_id": 1, "job_state": "PENDING", "state_reason": "None", "submit_time": 100}]})");
  ASSERT_NE(a, nullptr);
  {
    // Each call prints another script, so a cached one is recognisable.
    std::ofstream f(dir_.Sub("scontrol"));
    f << "#!/bin/sh\nn=$(cat \"" << dir_.Sub("calls") << "\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \""
      << dir_.Sub("calls") << "\"\necho '#!/bin/sh'\necho \"call $n\"\n";
  }
  auto first = a->Export("1");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->script, "#!/bin/sh\ncall 1\n");
  auto again = a->Export("1");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->script, "#!/bin/sh\ncall 1\n") << "the same job: cached";
  // slurmctld started afresh (-c): id 1 is another job now.
  Later(R"({"jobs": [{"job_id": 1, "job_state": "PENDING", "state_reason": "None", "submit_time": 500}]})");
  auto other = a->Export("1");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->script, "#!/bin/sh\ncall 2\n") << "a new job under an old id: fetched again";
}

TEST_F(CannedSqueueTest, CapacityCountsOnlyNodesThatCanTakeJobs) {
  auto a = AdapterPrinting(R"({"jobs": []})");
  ASSERT_NE(a, nullptr);
  {
    std::ofstream f(dir_.Sub("nodes.json"));
    f << R"({"nodes": [
      {"name": "a", "cpus": 4, "state": "idle", "state_flags": []},
      {"name": "b", "cpus": 8, "state": "mixed", "state_flags": ["DRAIN"]},
      {"name": "c", "cpus": 16, "state": "down", "state_flags": []},
      {"name": "d", "cpus": 32, "state": "idle", "state_flags": ["FAIL"]},
      {"name": "e", "cpus": 2, "state": ["IDLE", "DRAIN"]},
      {"name": "f", "cpus": {"set": true, "number": 1}, "state": ["ALLOCATED"]}]})";
  }
  {
    std::ofstream f(dir_.Sub("sinfo"));
    f << "#!/bin/sh\ncat \"" << dir_.Sub("nodes.json") << "\"\n";
  }
  ASSERT_EQ(chmod(dir_.Sub("sinfo").c_str(), 0755), 0);
  auto cap = a->GetCapacity();
  ASSERT_TRUE(cap.ok()) << cap.status();
  EXPECT_EQ(cap->units, 5) << "a (4) and f (1); drained, down and failed nodes take no jobs";
}

TEST_F(CannedSqueueTest, AnUnknownFormatFailsLoudlyInsteadOfLookingDone) {
  auto a = AdapterPrinting(R"({"jobs": []})");
  ASSERT_NE(a, nullptr);
  // A squeue that ignores the format asked for (its default table), or
  // prints a record cut short: the read fails, no job is guessed.
  for (const std::string& printed :
       {std::string("JOBID PARTITION NAME USER ST TIME NODES\n    1 debug x root PD 0:00 1\n"),
        absl::StrCat("1", kCannedSeparator, "N/A", kCannedSeparator, "\n")}) {
    for (const char* file : {"queue.txt", "later.txt"}) std::ofstream(dir_.Sub(file)) << printed;
    auto n = a->CountMigratable();
    EXPECT_TRUE(absl::IsFailedPrecondition(n.status())) << n.status();
    EXPECT_TRUE(absl::StrContains(n.status().message(), "unsupported squeue output")) << n.status();
    auto jobs = a->GetJobs({"1"});
    EXPECT_TRUE(absl::IsFailedPrecondition(jobs[0].status())) << jobs[0].status();
  }
}

// What sbatch --test-only prints, read as UTC; anything else is Internal.
TEST(SlurmTestOnlyTest, StartTimeIsReadAndAnythingElseIsAnInternalError) {
  auto t = ParseSbatchTestOnlyStart(
      "sbatch: Job 12 to start at 2024-05-01T10:00:00 using 4 processors on nodes n1 in partition debug\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, int64_t{1'714'557'600'000});
  for (const std::string bad : {"", "sbatch: error: Batch job submission failed", "Job 3 to start at soon using",
                                "Job 3 to start at 2024-13-01T10:00:00 using", "to start at "}) {
    auto r = ParseSbatchTestOnlyStart(bad);
    EXPECT_TRUE(absl::IsInternal(r.status())) << bad << ": " << r.status();
  }
}

// Start estimates from the real Slurm: squeue's start_time once the backfill
// scheduler has planned the jobs (its pass runs every 30 s by default), and
// sbatch --test-only for a job that would arrive now.
TEST_F(SlurmAdapterTest, StartEstimatesFollowTheBlockersTimeLimits) {
  StartCluster();
  auto a = Adapter({});
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->WidestJob().value_or(-1), 4);
  const int64_t t0 = absl::ToUnixMillis(absl::Now());
  for (int i = 0; i < 4; ++i) {
    JobSpec s{.name = absl::StrCat("blk", i), .script = "#!/bin/sh\nsleep 3600\n", .time_limit_s = 600};
    ASSERT_TRUE(a->Submit(s, absl::StrCat("blk-", i)).ok());
  }
  JobSpec wait{.name = "w", .script = "#!/bin/sh\nsleep 1\n", .time_limit_s = 300};
  auto w = a->Submit(wait, "w");
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<PendingJob> pending;
  for (int n = 0; n < 90; ++n) {
    auto p = a->Pending();
    ASSERT_TRUE(p.ok()) << p.status();
    pending = *p;
    if (pending.size() == 1 && pending[0].start_ms > 0) break;
    absl::SleepFor(absl::Seconds(1));
  }
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].id, *w);
  ASSERT_GT(pending[0].start_ms, 0) << "no estimate after 90 s";
  // The blockers end by their 10-minute limit: about then.
  EXPECT_GE(pending[0].start_ms, t0 + 590'000);
  EXPECT_LE(pending[0].start_ms, absl::ToUnixMillis(absl::Now()) + 610'000);
  auto arrival = a->ArrivalStarts({1, 4});
  ASSERT_TRUE(arrival.ok()) << arrival.status();
  EXPECT_GE((*arrival)[0], t0 + 590'000);
  EXPECT_GE((*arrival)[1], (*arrival)[0]);
  EXPECT_LE((*arrival)[1], absl::ToUnixMillis(absl::Now()) + 24 * 3'600'000) << "within a day";
  EXPECT_TRUE(absl::IsInvalidArgument(a->ArrivalStarts({5}).status()));
  std::cout << "slurm estimates: pending +" << (pending[0].start_ms - t0) / 1000 << " s, arrival +"
            << ((*arrival)[0] - t0) / 1000 << " s / +" << ((*arrival)[1] - t0) / 1000 << " s\n";
}

TEST_F(SlurmAdapterTest, CommandFailureNamesCommandExitCodeAndStderr) {
  StartCluster();
  // A partition the cluster does not have: sbatch itself refuses.
  auto a = Adapter({{"submit_partition", "nosuch"}});
  ASSERT_NE(a, nullptr);
  JobSpec s{.name = "huge", .script = "#!/bin/sh\ntrue\n", .cores = 1, .key = "k"};
  auto id = a->Submit(s, "huge", false);
  ASSERT_FALSE(id.ok());
  // slurmctld refused the spec: final (adapter.h, Submit), not a retry.
  EXPECT_TRUE(absl::IsInvalidArgument(id.status())) << id.status();
  const std::string msg(id.status().message());
  EXPECT_TRUE(absl::StrContains(msg, "`sbatch --parsable --job-name=huge --cpus-per-task=1")) << msg;
  EXPECT_TRUE(absl::StrContains(msg, "--partition=nosuch")) << msg;
  EXPECT_TRUE(absl::StrContains(msg, "exited with 1: sbatch: error: ")) << msg;
  EXPECT_TRUE(absl::StrContains(msg, "invalid partition")) << msg;
  auto jobs = a->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_TRUE(jobs->empty());
}

// Hold, release and cancel go to Slurm as one command per batch of jobs
// (scontrol and scancel take lists), and a job the command refuses fails
// alone: here the `scontrol hold` of three jobs finds one cancelled just
// before it runs (a bin_dir wrapper around the real commands does that).
TEST_F(SlurmAdapterTest, ABatchedHoldIsOneCommandAndOneRefusedJobFailsAlone) {
  StartCluster();
  const std::string later = "--begin=now+1hour";  // pending, and holdable, for the whole test
  const std::string a = Sbatch({later}, "#!/bin/sh\ntrue\n");
  const std::string b = Sbatch({later}, "#!/bin/sh\ntrue\n");
  const std::string c = Sbatch({later}, "#!/bin/sh\ntrue\n");
  ASSERT_FALSE(a.empty() || b.empty() || c.empty());
  TempDir bin;
  const std::string log = bin.Sub("calls");
  for (const char* cmd : {"squeue", "sinfo", "sbatch", "scancel", "scontrol"}) {
    std::ofstream f(bin.Sub(cmd));
    f << "#!/bin/sh\necho \"" << cmd << " $*\" >> " << log << "\n";
    if (std::string(cmd) == "scontrol")  // job b goes just before the hold reaches Slurm
      f << "[ \"$1\" = hold ] && /usr/bin/scancel " << b << "\n";
    f << "exec /usr/bin/" << cmd << " \"$@\"\n";
    f.close();
    ASSERT_EQ(chmod(bin.Sub(cmd).c_str(), 0755), 0);
  }
  auto adapter = Adapter({{"bin_dir", bin.path()}});
  ASSERT_NE(adapter, nullptr);
  const std::vector<absl::Status> held = adapter->HoldMany({a, b, c});
  ASSERT_EQ(held.size(), 3u);
  EXPECT_TRUE(held[0].ok()) << held[0];
  EXPECT_FALSE(held[1].ok()) << "job " << b << " was cancelled before the hold";
  EXPECT_TRUE(held[2].ok()) << held[2];
  auto jobs = adapter->GetJobs({a, b, c});
  ASSERT_EQ(jobs.size(), 3u);
  ASSERT_TRUE(jobs[0].ok() && jobs[2].ok());
  EXPECT_EQ(jobs[0]->state, JobState::kHeld);
  EXPECT_EQ(jobs[2]->state, JobState::kHeld);
  // One command for the three.
  std::ifstream in(log);
  int holds = 0;
  for (std::string line; std::getline(in, line);) holds += absl::StartsWith(line, "scontrol hold") ? 1 : 0;
  EXPECT_EQ(holds, 1);
  // Release and cancel take the two held jobs in one command each.
  for (const absl::Status& st : adapter->ReleaseMany({a, c})) EXPECT_TRUE(st.ok()) << st;
  for (const absl::Status& st : adapter->CancelMany({a, c})) EXPECT_TRUE(st.ok()) << st;
  std::ifstream again(log);
  int releases = 0, cancels = 0;
  for (std::string line; std::getline(again, line);) {
    releases += absl::StartsWith(line, "scontrol release") ? 1 : 0;
    cancels += absl::StartsWith(line, "scancel --state=PENDING") ? 1 : 0;
  }
  EXPECT_EQ(releases, 1);
  EXPECT_EQ(cancels, 1);
}

// SubmitMany and ExportMany run their per-job commands (sbatch, `scontrol
// write batch_script`) several at a time, yet each job keeps its own result:
// one that slurmctld refuses fails alone, the others are submitted, answered
// in input order, each tag once. bin_dir wrappers around the real commands
// count how many of them run at once (each lasts at least 0.3 s) and send
// the job whose script says REFUSE to a partition the cluster lacks.
TEST_F(SlurmAdapterTest, PerJobCommandsRunInParallelAndARefusedJobFailsAlone) {
  StartCluster();
  // Down: the jobs stay pending for the whole test.
  ASSERT_TRUE(cluster_->Cmd({"scontrol", "update", "PartitionName=debug", "State=DOWN"}).ok());
  TempDir bin;
  for (const char* cmd : {"squeue", "sinfo", "sbatch", "scancel", "scontrol"}) {
    std::ofstream f(bin.Sub(cmd));
    f << "#!/bin/sh\n";
    const std::string running = bin.Sub(std::string("running-") + cmd);
    const std::string mine = running + "/$$";
    // Running now: this one and those that have not left yet.
    const std::string count = absl::StrCat("mkdir -p ", running, "; touch ", mine, "; ls ", running, " | wc -l >> ",
                                           bin.Sub(std::string(cmd) + ".counts"), "\n");
    if (std::string(cmd) == "sbatch") {
      f << count << "in=$(mktemp); cat > \"$in\"\nextra=\"\"\n"
        << "grep -q REFUSE \"$in\" && extra=--partition=nosuch\nsleep 0.3\n"
        << "/usr/bin/sbatch \"$@\" $extra < \"$in\"; rc=$?\nrm -f \"$in\" " << mine << "\nexit $rc\n";
    } else if (std::string(cmd) == "scontrol") {
      f << "[ \"$1\" = write ] || exec /usr/bin/scontrol \"$@\"\n"
        << count << "sleep 0.3\n/usr/bin/scontrol \"$@\"; rc=$?\nrm -f " << mine << "\nexit $rc\n";
    } else {
      f << "exec /usr/bin/" << cmd << " \"$@\"\n";
    }
    f.close();
    ASSERT_EQ(chmod(bin.Sub(cmd).c_str(), 0755), 0);
  }
  // The most that ran at once, and how many ran, of a wrapped command.
  auto most = [&](const std::string& cmd) {
    std::ifstream in(bin.Sub(cmd + ".counts"));
    int top = 0, runs = 0;
    for (int n; in >> n; ++runs) top = std::max(top, n);
    return std::make_pair(top, runs);
  };
  auto a = Adapter({{"bin_dir", bin.path()}});
  ASSERT_NE(a, nullptr);
  // Ten jobs t0..t9, t4 refused; then t2 again (the same job) and t4 again
  // (tried again, refused again), as one-by-one submission would.
  std::vector<std::pair<JobSpec, std::string>> batch;
  auto script = [](int i) { return absl::StrCat("#!/bin/sh\n# job ", i, i == 4 ? " REFUSE" : "", "\ntrue\n"); };
  for (int i = 0; i < 10; ++i)
    batch.push_back(
        {{.name = absl::StrCat("j", i), .script = script(i), .key = absl::StrCat("k", i)}, absl::StrCat("t", i)});
  batch.push_back(batch[2]);
  batch.push_back(batch[4]);
  auto ids = a->SubmitMany(batch);
  ASSERT_EQ(ids.size(), 12u);
  for (size_t i : {size_t{4}, size_t{11}}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ids[i].status())) << "slurmctld refused it: final; " << ids[i].status();
    EXPECT_TRUE(absl::StrContains(ids[i].status().message(), "invalid partition")) << ids[i].status();
  }
  ASSERT_TRUE(ids[10].ok()) << ids[10].status();
  EXPECT_EQ(*ids[10], *ids[2]) << "a tag earlier in the batch: that job, not another";
  std::vector<std::string> submitted;
  for (int i = 0; i < 10; ++i) {
    if (i == 4) continue;
    ASSERT_TRUE(ids[i].ok()) << i << ": " << ids[i].status();
    submitted.push_back(*ids[i]);
  }
  const auto [sbatch_top, sbatch_runs] = most("sbatch");
  EXPECT_GT(sbatch_top, 1) << "sbatch ran one at a time";
  EXPECT_LE(sbatch_top, static_cast<int>(kSlurmParallelCommands));
  EXPECT_EQ(sbatch_runs, 11) << "t0..t9 once each, t4 again";
  // In input order: the job at place i carries tag t<i>; nine jobs, each tag once.
  auto jobs = a->GetJobs(submitted);
  for (size_t k = 0; k < jobs.size(); ++k) {
    ASSERT_TRUE(jobs[k].ok()) << jobs[k].status();
    const int i = static_cast<int>(k < 4 ? k : k + 1);
    EXPECT_EQ(jobs[k]->tag, absl::StrCat("t", i));
    EXPECT_EQ(jobs[k]->spec.name, absl::StrCat("j", i));
    EXPECT_EQ(jobs[k]->state, JobState::kPending);
  }
  auto listed = a->ListJobs();
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::multiset<std::string> tags;
  for (const Job& j : *listed) tags.insert(j.tag);
  EXPECT_EQ(tags.size(), 9u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(tags.count(absl::StrCat("t", i)), i == 4 ? 0u : 1u) << i;

  // The scripts come back the same way: in order, fetched in parallel, and
  // an unknown job fails alone.
  std::vector<std::string> wanted = submitted;
  wanted.insert(wanted.begin() + 1, "999999");
  auto specs = a->ExportMany(wanted);
  ASSERT_EQ(specs.size(), wanted.size());
  EXPECT_TRUE(absl::IsNotFound(specs[1].status())) << specs[1].status();
  for (size_t k = 0; k < specs.size(); ++k) {
    if (k == 1) continue;
    ASSERT_TRUE(specs[k].ok()) << specs[k].status();
    const size_t at = k == 0 ? 0 : k - 1;  // place in `submitted`
    const int i = static_cast<int>(at < 4 ? at : at + 1);
    EXPECT_EQ(specs[k]->script, script(i)) << wanted[k];
  }
  const auto [write_top, write_runs] = most("scontrol");
  EXPECT_GT(write_top, 1) << "scontrol write batch_script ran one at a time";
  EXPECT_EQ(write_runs, 9);
}

TEST_F(SlurmAdapterTest, AHungControllerIsATimeoutNotAHang) {
  StartCluster();
  auto a = Adapter({{"timeout", "1s"}});
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->ListJobs().ok());
  const pid_t ctld = cluster_->CtldPid();
  ASSERT_GT(ctld, 0);
  ASSERT_EQ(kill(ctld, SIGSTOP), 0);
  const absl::Time start = absl::Now();
  auto jobs = a->ListJobs();
  const absl::Duration took = absl::Now() - start;
  // A batch of untagged submits (no queue read first): the first sbatch
  // times out and the others do not wait again.
  JobSpec s{.name = "x", .script = "#!/bin/sh\ntrue\n", .cores = 1, .key = "k"};
  const absl::Time batch_start = absl::Now();
  auto ids = a->SubmitMany({{s, ""}, {s, ""}, {s, ""}}, true);
  const absl::Duration batch_took = absl::Now() - batch_start;
  kill(ctld, SIGCONT);
  EXPECT_TRUE(absl::IsDeadlineExceeded(jobs.status())) << jobs.status();
  EXPECT_TRUE(absl::StrContains(jobs.status().message(),
                                "`squeue --noheader --all --states=all` timed out after 1s and was killed"))
      << jobs.status();
  EXPECT_LT(took, absl::Seconds(4));
  ASSERT_EQ(ids.size(), 3u);
  for (const auto& id : ids) {
    EXPECT_TRUE(absl::IsDeadlineExceeded(id.status())) << id.status();
    EXPECT_TRUE(absl::StrContains(id.status().message(), "`sbatch --parsable")) << id.status();
  }
  EXPECT_LT(batch_took, absl::Seconds(3));
  EXPECT_TRUE(a->ListJobs().ok()) << "works again once slurmctld answers";
}

TEST_F(SlurmAdapterTest, ANativeJobExportsItsScriptAndResources) {
  StartCluster();
  auto a = Adapter({});
  ASSERT_NE(a, nullptr);
  const std::string script = "#!/bin/bash\n#SBATCH --comment=mine\necho \"native $1\"\n\n# end, no newline";
  const std::string id = Sbatch({"--hold", "--job-name=native", "--cpus-per-task=2", "--mem=100", "--time=5"}, script);
  ASSERT_FALSE(id.empty());
  auto spec = a->Export(id);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto written = cluster_->Cmd({"scontrol", "write", "batch_script", id, "-"});
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(spec->script, script);
  EXPECT_EQ(written->out, script);
  EXPECT_EQ(spec->name, "native");
  EXPECT_EQ(spec->cores, 2);
  EXPECT_EQ(spec->memory_mb, 100);
  EXPECT_EQ(spec->time_limit_s, 300);
  EXPECT_EQ(spec->workdir, dir_.path()) << "workdir_policy keep";
  EXPECT_TRUE(spec->env.empty());
  EXPECT_EQ(spec->key, "own/" + id) << "<cluster>/<id> for a job that never met hyperfed";
  EXPECT_EQ(spec->cost, 600.0) << "cores x time limit in seconds";
  auto listed = a->ListJobs();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].tag, "") << "a user's comment is not a tag";
  EXPECT_EQ((*listed)[0].state, JobState::kHeld);

  auto dropped = Adapter({{"workdir_policy", "drop"}});
  ASSERT_NE(dropped, nullptr);
  auto spec2 = dropped->Export(id);
  ASSERT_TRUE(spec2.ok());
  EXPECT_EQ(spec2->workdir, "");
}

// Hostile names, comments and folders on a real Slurm: jobs whose name,
// comment and working directory hold '|', newlines, tabs and a whole record
// forged with a guessed separator are read exactly as `squeue --json` shows
// them, and no forged record becomes a job. The format squeue gets (with
// the read's separator) is never on its command line, and each read has
// its own (a bin_dir wrapper logs both).
TEST_F(SlurmAdapterTest, HostileNamesCommentsAndFoldersReadExactlyAsSqueueJsonShowsThem) {
  StartCluster();
  ASSERT_TRUE(cluster_->Cmd({"scontrol", "update", "PartitionName=debug", "State=DOWN"}).ok());
  const std::string forged = "~AAAAAAAAAAAAAAAAAAAAAA\n999~AAAAAAAAAAAAAAAAAAAAAAPENDING|None|1|";
  const std::string folder = dir_.Sub("a|b\nc\t(null)");
  ASSERT_TRUE(std::filesystem::create_directory(folder));
  chmod(folder.c_str(), 0777);
  const std::string script = "#!/bin/sh\ntrue\n";
  const std::vector<std::string> ids = {
      Sbatch({"--job-name=evil|name\nwith newline\t" + forged, "--comment=hyperfed1;e=A=x|y\nz" + forged, "--mem=300",
              "--time=90", "--chdir=" + folder},
             script),
      Sbatch({"--job-name=(null)", "--comment=N/A", "--mem-per-cpu=100", "--cpus-per-task=2", "--hold"}, script),
      Sbatch({"--job-name=" + forged + forged, "--time=2-00:01:00"}, script)};
  for (const std::string& id : ids) ASSERT_FALSE(id.empty());
  TempDir bin;
  const std::string log = bin.Sub("calls");
  {
    std::ofstream f(bin.Sub("squeue"));
    f << "#!/bin/sh\necho \"argv: $*\" >> " << log << "\necho \"format: $SQUEUE_FORMAT2\" >> " << log
      << "\nexec /usr/bin/squeue \"$@\"\n";
  }
  ASSERT_EQ(chmod(bin.Sub("squeue").c_str(), 0755), 0);
  auto a = Adapter({{"bin_dir", bin.path()}});
  ASSERT_NE(a, nullptr);
  auto listed = a->ListJobs();
  ASSERT_TRUE(listed.ok()) << listed.status();
  auto got = a->GetJobs(ids);
  auto q = cluster_->Cmd({"squeue", "--json"});
  ASSERT_TRUE(q.ok()) << q.status();
  const nlohmann::json jobs = nlohmann::json::parse(q->out)["jobs"];
  EXPECT_EQ(listed->size(), jobs.size()) << "one job per job, none forged";
  ASSERT_EQ(got.size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status();
    const nlohmann::json* j = nullptr;
    for (const auto& x : jobs)
      if (absl::StrCat(x["job_id"].get<int64_t>()) == ids[i]) j = &x;
    ASSERT_NE(j, nullptr) << ids[i];
    const JobSpec& s = got[i]->spec;
    EXPECT_EQ(s.name, (*j)["name"].get<std::string>()) << i;
    EXPECT_EQ(s.workdir, (*j)["current_working_directory"].get<std::string>()) << i;
    EXPECT_EQ(s.cores, (*j)["cpus"].get<int64_t>()) << i;
    const int64_t per_node = (*j)["memory_per_node"].is_number() ? (*j)["memory_per_node"].get<int64_t>() : 0;
    const int64_t per_cpu = (*j)["memory_per_cpu"].is_number() ? (*j)["memory_per_cpu"].get<int64_t>() : 0;
    EXPECT_EQ(s.memory_mb, per_node > 0 ? per_node : per_cpu * s.cores) << i;
    const int64_t minutes = (*j)["time_limit"].is_number() ? (*j)["time_limit"].get<int64_t>() : 0;
    EXPECT_EQ(s.time_limit_s, minutes * 60) << i;
    EXPECT_EQ(got[i]->queued_at_ms, (*j)["submit_time"].get<int64_t>() * 1000) << i;
    EXPECT_EQ(s.key, absl::StrCat((*j)["cluster"].get<std::string>(), "/", ids[i])) << i;
    EXPECT_EQ(got[i]->state, i == 1 ? JobState::kHeld : JobState::kPending) << i;
  }
  EXPECT_EQ(got[0]->spec.name, "evil|name\nwith newline\t" + forged);
  EXPECT_EQ(got[0]->spec.workdir, folder);
  EXPECT_EQ(got[0]->spec.env, (std::map<std::string, std::string>{{"A", "x|y\nz" + forged}}))
      << "the user's own comment, whole";
  EXPECT_EQ(got[1]->spec.name, "(null)");
  EXPECT_EQ(got[1]->spec.memory_mb, 200) << "100 MB per CPU, 2 CPUs";
  EXPECT_EQ(got[2]->spec.time_limit_s, 2 * 86400 + 60);
  // The separator stays off the command line, and each read has its own.
  std::ifstream in(log);
  std::set<std::string> formats;
  int reads = 0;
  for (std::string line; std::getline(in, line);) {
    if (absl::StartsWith(line, "argv: ")) {
      ++reads;
      EXPECT_EQ(line, "argv: --noheader --all --states=all");
    }
    if (absl::StartsWith(line, "format: JobID:0")) formats.insert(line);
  }
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(formats.size(), 2u) << "a new separator for every read";
}

TEST_F(SlurmAdapterTest, PinMarkerAndPinnedPartitionNeverMove) {
  StartCluster();
  ASSERT_TRUE(cluster_->Cmd({"scontrol", "create", "PartitionName=keep", "Nodes=ALL"}).ok());
  // The partition is down so that nothing starts and every job stays pending.
  for (const char* p : {"debug", "keep"})
    ASSERT_TRUE(cluster_->Cmd({"scontrol", "update", absl::StrCat("PartitionName=", p), "State=DOWN"}).ok());
  auto a = Adapter({{"pin_marker", "local-"}, {"pinned_partitions", "keep"}});
  ASSERT_NE(a, nullptr);
  const std::string script = "#!/bin/sh\ntrue\n";
  const std::string free_id = Sbatch({"--job-name=free"}, script);
  const std::string marked = Sbatch({"--job-name=local-1"}, script);
  const std::string kept = Sbatch({"--job-name=other", "--partition=keep"}, script);
  // What a spec cannot describe is pinned too.
  const std::string dep = Sbatch({"--job-name=dep", "--dependency=afterok:" + free_id}, script);
  const std::string arr = Sbatch({"--job-name=arr", "--array=0-1"}, script);
  const std::string tasks = Sbatch({"--job-name=tasks", "--ntasks=2"}, script);
  auto jobs = a->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  std::map<std::string, Job> by_id;
  for (const auto& j : *jobs) by_id[j.id] = j;
  EXPECT_FALSE(by_id[free_id].pinned);
  EXPECT_TRUE(by_id[marked].pinned);
  EXPECT_TRUE(by_id[kept].pinned);
  for (const std::string& id : {dep, arr, tasks}) {
    ASSERT_TRUE(by_id.contains(id)) << id;
    EXPECT_TRUE(by_id[id].pinned) << by_id[id].spec.name;
  }
  for (const std::string& id : {dep, arr, tasks}) ASSERT_TRUE(cluster_->Cmd({"scancel", id}).ok());
  jobs = a->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  for (const auto& j : *jobs) EXPECT_EQ(j.state, JobState::kPending) << j.id;
  auto n = a->CountMigratable();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  // The operator may unpin a marked job, not one in a pinned partition.
  EXPECT_TRUE(a->SetPinned(marked, false).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(a->SetPinned(kept, false)));
  EXPECT_EQ(*a->CountMigratable(), 2);
  EXPECT_TRUE(a->SetPinned(free_id, true).ok());
  EXPECT_EQ(*a->CountMigratable(), 1);
}

TEST_F(SlurmAdapterTest, PartitionsAndAccountMapWhereJobsGoAndWhatIsSeen) {
  StartCluster();
  ASSERT_TRUE(cluster_->Cmd({"scontrol", "create", "PartitionName=fed", "Nodes=ALL"}).ok());
  auto a = Adapter({{"partitions", "fed"}, {"submit_partition", "fed"}, {"submit_account", "physics"}});
  ASSERT_NE(a, nullptr);
  const std::string other = Sbatch({"--hold", "--job-name=outside"}, "#!/bin/sh\ntrue\n");  // in debug
  JobSpec s{.name = "in", .script = "#!/bin/sh\ntrue\n", .cores = 1, .key = "k-in"};
  auto id = a->Submit(s, "t-in", true);
  ASSERT_TRUE(id.ok()) << id.status();
  auto q = cluster_->Cmd({"squeue", "--json"});
  ASSERT_TRUE(q.ok());
  auto doc = nlohmann::json::parse(q->out);
  bool seen = false;
  for (const auto& j : doc["jobs"]) {
    if (std::to_string(j["job_id"].get<int64_t>()) != *id) continue;
    seen = true;
    EXPECT_EQ(j["partition"], "fed");
    EXPECT_EQ(j["account"], "physics");
  }
  EXPECT_TRUE(seen);
  auto jobs = a->ListJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u) << "the job in partition debug is not hyperfed's";
  EXPECT_EQ((*jobs)[0].id, *id);
  EXPECT_TRUE(absl::IsNotFound(a->Hold(other)));
  EXPECT_TRUE(absl::IsNotFound(a->Cancel(other)));
  auto cap = a->GetCapacity();
  ASSERT_TRUE(cap.ok()) << cap.status();
  EXPECT_EQ(cap->units, 4);
  // Another user's job (root may submit for anyone) is not hyperfed's
  // when `users` names only the account moved jobs run as.
  const std::string other_user =
      Sbatch({"--hold", "--uid=daemon", "--partition=fed", "--chdir=/tmp"}, "#!/bin/sh\ntrue\n");
  ASSERT_FALSE(other_user.empty());
  auto all_users = a->ListJobs();
  ASSERT_TRUE(all_users.ok());
  EXPECT_EQ(all_users->size(), 2u);
  auto nobodys = Adapter({{"partitions", "fed"}, {"submit_partition", "fed"}, {"users", "nobody"}});
  ASSERT_NE(nobodys, nullptr);
  auto only_nobody = nobodys->ListJobs();
  ASSERT_TRUE(only_nobody.ok());
  ASSERT_EQ(only_nobody->size(), 1u);
  EXPECT_EQ((*only_nobody)[0].id, *id);
  EXPECT_TRUE(absl::IsNotFound(nobodys->Hold(other_user)));
  auto none = Adapter({{"partitions", "nosuch"}, {"submit_partition", "nosuch"}});
  ASSERT_NE(none, nullptr);
  EXPECT_TRUE(absl::IsFailedPrecondition(none->GetCapacity().status()));
}

TEST_F(SlurmAdapterTest, TaggedJobOutsideThePartitionsIsStillFoundAndNotSubmittedTwice) {
  StartCluster();
  ASSERT_TRUE(cluster_->Cmd({"scontrol", "create", "PartitionName=fed", "Nodes=ALL"}).ok());
  // Submitted by an adapter for "debug" (or an older config); the one
  // running now manages "fed" only.
  auto before = Adapter({{"partitions", "debug"}, {"submit_partition", "debug"}});
  ASSERT_NE(before, nullptr);
  JobSpec s{.name = "moved", .script = "#!/bin/sh\ntrue\n", .cores = 1, .key = "k-moved"};
  auto id = before->Submit(s, "t-outside", true);
  ASSERT_TRUE(id.ok()) << id.status();
  auto a = Adapter({{"partitions", "fed"}, {"submit_partition", "fed"}});
  ASSERT_NE(a, nullptr);
  auto listed = a->ListJobs();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(listed->empty()) << "a job outside the partitions is never listed (nor moved)";
  auto found = a->FindByTag("t-outside");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].id, *id);
  auto again = a->Submit(s, "t-outside", true);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *id) << "a retried submit must not run sbatch again";
  auto batch = a->SubmitMany({{s, "t-outside"}}, true);
  ASSERT_EQ(batch.size(), 1u);
  ASSERT_TRUE(batch[0].ok()) << batch[0].status();
  EXPECT_EQ(*batch[0], *id);
  auto jobs = a->GetJobs({*id});
  ASSERT_TRUE(jobs[0].ok()) << jobs[0].status();
  EXPECT_EQ(jobs[0]->state, JobState::kHeld);
  auto q = cluster_->Cmd({"squeue", "--json"});
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(nlohmann::json::parse(q->out)["jobs"].size(), 1u) << "still exactly one job";
}

TEST_F(SlurmAdapterTest, OversizedCommentIsRefusedBeforeSubmitting) {
  StartCluster();
  auto a = Adapter({});
  ASSERT_NE(a, nullptr);
  JobSpec s{.name = "big", .script = "#!/bin/sh\ntrue\n", .cores = 1, .key = "k"};
  s.env["BIG"] = std::string(2000, 'x');
  auto id = a->Submit(s, "big", true);
  EXPECT_TRUE(absl::IsInvalidArgument(id.status())) << id.status();
  s.env = {{"A,B", "1"}};
  EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(s, "comma", true).status()));
  s.env.clear();
  s.script = "echo no shebang\n";
  EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(s, "noshebang", true).status()));
  auto jobs = a->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

TEST_F(SlurmAdapterTest, EnvironmentReachesTheJob) {
  StartCluster();
  auto a = Adapter({});
  ASSERT_NE(a, nullptr);
  const std::string out = dir_.Sub("env.out");
  JobSpec s{.name = "env",
            .script = "#!/bin/sh\nprintf '%s|%s|%s' \"$A\" \"$SPACED\" \"${HOME_NOT_SET-unset}\" > " + out + "\n",
            .cores = 1,
            .key = "k-env"};
  s.env = {{"A", "1,2"}, {"SPACED", "x y"}};
  auto id = a->Submit(s, "env", false);
  ASSERT_TRUE(id.ok()) << id.status();
  const absl::Time end = absl::Now() + absl::Seconds(60);
  std::string got;
  while (absl::Now() < end) {
    auto j = a->FindByTag("env");
    if (j.ok() && j->size() == 1 && (*j)[0].state == JobState::kDone) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_EQ(hyperfed::testing::ReadText(out), "1,2|x y|unset");
}

}  // namespace
}  // namespace hyperfed::scheduler::testing
