// The gridengine adapter against a real single-node Grid Engine
// (scripts/gridengine-cluster): the shared contract, what is Grid Engine's
// own, then the shared hostile-input suite (hostile_adapter.h). Every test
// starts its own cluster (about 4 s) so tags and ids never leak between
// tests. Skipped, saying why, where Grid Engine is
// not installed or the tests do not run as root; scripts/setup installs it.

#include "daemon/scheduler/gridengine_adapter.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "tests/scheduler/adapter_contract.h"
#include "tests/scheduler/gridengine_cluster.h"
#include "tests/scheduler/hostile_adapter.h"
#include "tests/scheduler/temp_dir.h"

namespace hyperfed::scheduler::testing {
namespace {

using hyperfed::testing::GridEngineCluster;
using hyperfed::testing::GridEngineMissing;

// ---- The contract, on a real Grid Engine ----

class GridEngineEnv : public AdapterContractEnv {
 public:
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> MakeAdapter() override {
    if (std::string why = GridEngineMissing(); !why.empty()) return absl::FailedPreconditionError(why);
    auto c = GridEngineCluster::Start("contract");
    if (!c.ok()) return c.status();
    cluster_ = *std::move(c);
    // Jobs run as an unprivileged account (never the daemon's): it must be
    // able to work (and write its output) in submit_dir.
    chmod(dir_.path().c_str(), 01777);
    auto options = cluster_->Options();
    options.insert({{"submit_dir", dir_.path()}, {"run_as", "account"}, {"run_as_account", "nobody"}});
    auto a = GridEngineAdapter::Open({.state_dir = dir_.path(), .options = options});
    if (!a.ok()) return a.status();
    return std::unique_ptr<SchedulerAdapter>(*std::move(a));
  }
  std::string SkipReason() const override { return GridEngineMissing(); }
  bool ListsScripts() const override { return false; }
  // Grid Engine predicts no start times (no advance reservation).
  Estimates StartEstimates() const override { return Estimates::kNever; }
  void LetTimePass(absl::Duration d) override { absl::SleepFor(d); }
  absl::Duration PollStep() const override { return absl::Milliseconds(250); }

 private:
  TempDir dir_;
  std::unique_ptr<GridEngineCluster> cluster_;  // stopped before dir_ goes
};

INSTANTIATE_TEST_SUITE_P(GridEngine, AdapterContractTest,
                         ::testing::Values(AdapterContractParam{"GridEngine",
                                                                [] { return std::make_unique<GridEngineEnv>(); }}),
                         AdapterContractParamName);

// ---- Without a cluster ----

TEST(GridEngineFilterTest, EveryDirectiveLineIsNeutralised) {
  const std::string script =
      "#!/bin/sh\n#$ -q secret.q\n  #$ -l h_rt=1\n#$-u root\necho '#$ not at the start'\n#$ -pe big 99";
  EXPECT_EQ(FilterQsubDirectives(script),
            "#!/bin/sh\n# hyperfed removed: #$ -q secret.q\n# hyperfed removed:   #$ -l h_rt=1\n"
            "# hyperfed removed: #$-u root\necho '#$ not at the start'\n# hyperfed removed: #$ -pe big 99");
  EXPECT_EQ(FilterQsubDirectives("#!/bin/sh\necho hi\n"), "#!/bin/sh\necho hi\n");
}

TEST(GridEngineXmlTest, ParsesQstatShapes) {
  auto doc = ParseXml(
      "<?xml version='1.0'?>\n<job_info xmlns:xsd=\"x\"><queue_info/><job_info>"
      "<job_list state=\"pending\"><JB_job_number>12</JB_job_number><JB_name>a&amp;b &lt;c&gt; &#233;</JB_name>"
      "</job_list></job_info></job_info>");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->name, "job_info");
  const XmlNode* inner = doc->Child("job_info");
  ASSERT_NE(inner, nullptr);
  const XmlNode* j = inner->Child("job_list");
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(j->attrs.at("state"), "pending");
  EXPECT_EQ(j->ChildText("JB_job_number"), "12");
  EXPECT_EQ(j->ChildText("JB_name"), "a&b <c> \xC3\xA9");
  EXPECT_EQ(j->ChildText("missing"), "");
}

TEST(GridEngineXmlTest, MalformedXmlIsAnError) {
  for (const std::string bad : {"", "<a>", "<a></b>", "<a x=1></a>", "<a>&bogus;</a>", "<a></a><b/>", "<a>&#0;</a>"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(ParseXml(bad).status()));
  }
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  EXPECT_FALSE(ParseXml(deep).ok());
}

TEST(GridEngineStateTest, StatesMap) {
  EXPECT_EQ(MapGridEngineState("qw"), JobState::kPending);
  EXPECT_EQ(MapGridEngineState("hqw"), JobState::kHeld);
  EXPECT_EQ(MapGridEngineState("Eqw"), JobState::kHeld);
  EXPECT_EQ(MapGridEngineState("r"), JobState::kRunning);
  EXPECT_EQ(MapGridEngineState("t"), JobState::kRunning);
  EXPECT_EQ(MapGridEngineState("dr"), JobState::kRunning) << "a running job being deleted still runs";
  EXPECT_EQ(MapGridEngineState("dqw"), JobState::kCancelled);
  EXPECT_EQ(MapGridEngineState("z"), JobState::kDone);
  EXPECT_EQ(MapGridEngineState("??"), JobState::kRunning) << "unknown: never moved or cancelled";
}

TEST(GridEngineOptionsTest, UnknownAndMissingOptionsAreRefused) {
  EXPECT_TRUE(absl::IsInvalidArgument(ParseGridEngineOptions({}).status())) << "sge_root is required";
  auto bad = ParseGridEngineOptions({{"sge_root", "/x"}, {"slurm_conf", "/y"}});
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "unknown to the gridengine adapter")) << bad.status();
  EXPECT_TRUE(absl::IsInvalidArgument(ParseGridEngineOptions({{"sge_root", "/x"}, {"qmaster_port", "6x"}}).status()));
  auto ok = ParseGridEngineOptions({{"sge_root", "/x"}, {"run_as", "account"}, {"run_as_account", "nobody"}});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_TRUE(ok->common.deny_users.contains("sgeadmin"));
  EXPECT_TRUE(ok->common.deny_users.contains("root"));
  EXPECT_EQ(ok->queue, "all.q");
  EXPECT_EQ(ok->pe, "smp");
}

// ---- Grid Engine's own ----

class GridEngineAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = GridEngineMissing(); !why.empty()) GTEST_SKIP() << why;
    auto c = GridEngineCluster::Start("own");
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = *std::move(c);
    chmod(dir_.path().c_str(), 01777);
  }
  absl::StatusOr<std::unique_ptr<GridEngineAdapter>> Open(std::map<std::string, std::string> extra = {}) {
    auto options = cluster_->Options();
    options.insert({{"submit_dir", dir_.path()}, {"run_as", "account"}, {"run_as_account", "nobody"}});
    for (auto& [k, v] : extra) {
      if (v.empty()) {
        options.erase(k);  // "": the option unset
      } else {
        options[k] = v;
      }
    }
    return GridEngineAdapter::Open({.state_dir = dir_.path(), .options = options});
  }
  JobSpec Spec(const std::string& name, const std::string& body = "sleep 36000\n") {
    JobSpec s;
    s.name = name;
    s.script = "#!/bin/sh\n" + body;
    s.key = "site-a/" + name;
    s.owner = "alice";
    return s;
  }
  // The job's tag as FindByTag sees it, waiting up to 60 s for `state`.
  bool WaitState(GridEngineAdapter* a, const std::string& tag, JobState state) {
    for (int i = 0; i < 240; ++i) {
      auto j = a->FindByTag(tag);
      if (j.ok() && j->size() == 1 && (*j)[0].state == state) return true;
      absl::SleepFor(absl::Milliseconds(250));
    }
    return false;
  }

  TempDir dir_;
  std::unique_ptr<GridEngineCluster> cluster_;
};

TEST_F(GridEngineAdapterTest, JobsRunAsTheRunAsUserNeverRoot) {
  auto a = Open();
  ASSERT_TRUE(a.ok()) << a.status();
  const std::string out = dir_.Sub("whoami.txt");
  auto id = (*a)->Submit(Spec("who", absl::StrCat("id -un > '", out, "'\n")), "who");
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(WaitState(a->get(), "who", JobState::kDone));
  std::ifstream in(out);
  std::string who;
  std::getline(in, who);
  EXPECT_EQ(who, "nobody");
  // Root and the Grid Engine admin account are never a moved job's user.
  for (const char* user : {"root", "sgeadmin"}) {
    SCOPED_TRACE(user);
    auto bad = Open({{"run_as_account", user}});
    EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  }
}

TEST_F(GridEngineAdapterTest, RunAsOwnerNeverRunsAsRootOrAServiceAccount) {
  auto a = Open({{"run_as", "owner"}, {"users_map", "same-name"}, {"run_as_account", ""}, {"uid_max", "65534"}});
  ASSERT_TRUE(a.ok()) << a.status();
  for (const char* owner : {"root", "sgeadmin", "daemon"}) {
    SCOPED_TRACE(owner);
    JobSpec s = Spec("as-owner");
    s.owner = owner;
    EXPECT_TRUE(absl::IsInvalidArgument((*a)->CheckSpec(s))) << (*a)->CheckSpec(s);
    EXPECT_TRUE(absl::IsInvalidArgument((*a)->Submit(s, absl::StrCat("own-", owner), true).status()));
  }
  JobSpec ok = Spec("as-owner");
  ok.owner = "nobody";
  auto id = (*a)->Submit(ok, "own-nobody", /*held=*/true);
  ASSERT_TRUE(id.ok()) << id.status();
  auto jobs = (*a)->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u) << "only the job of an ordinary user was submitted";
  auto stat = cluster_->Cmd({"qstat", "-j", *id, "-xml"});
  ASSERT_TRUE(stat.ok()) << stat.status();
  EXPECT_TRUE(absl::StrContains(stat->out, "<JB_owner>nobody</JB_owner>")) << stat->out.substr(0, 600);
}

TEST_F(GridEngineAdapterTest, ARefusedJobFailsAloneInItsBatch) {
  auto a = Open();
  ASSERT_TRUE(a.ok()) << a.status();
  JobSpec bad_name = Spec("a/b");
  JobSpec bad_env = Spec("env");
  bad_env.env = {{"SGE_ROOT", "/tmp/evil"}};
  JobSpec too_wide = Spec("wide");
  too_wide.cores = 64;
  auto r = (*a)->SubmitMany(
      {{Spec("good-1"), "g1"}, {bad_name, "b1"}, {bad_env, "b2"}, {too_wide, "b3"}, {Spec("good-2"), "g2"}},
      /*held=*/true);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_TRUE(r[0].ok()) << r[0].status();
  EXPECT_TRUE(absl::IsInvalidArgument(r[1].status())) << r[1].status();
  EXPECT_TRUE(absl::IsInvalidArgument(r[2].status())) << r[2].status();
  EXPECT_TRUE(absl::IsInvalidArgument(r[3].status())) << r[3].status();
  EXPECT_TRUE(r[4].ok()) << r[4].status();
  auto jobs = (*a)->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ(jobs->size(), 2u);
}

// SubmitMany's qsubs run kGridEngineParallelCommands at a time (a qsub
// wrapper in bin_dir counts how many run at once and holds each 0.3 s), each
// job with its own result in input order: one the qmaster refuses fails
// alone, and a tag repeated in the batch gets the first job's id, or is
// tried again when that one failed, as one-by-one submission would.
TEST_F(GridEngineAdapterTest, QsubsRunInParallelAndARefusedJobFailsAlone) {
  // The scheduler is stopped: the jobs stay pending for the whole test.
  ASSERT_TRUE(cluster_->Cmd({"qconf", "-kt", "scheduler"}).ok());
  TempDir bin;
  chmod(bin.path().c_str(), 0755);  // qsub runs as the job's user (nobody)
  const std::string running = dir_.Sub("running");
  const std::string counts = dir_.Sub("qsub.counts");
  ASSERT_TRUE(std::filesystem::create_directory(running));
  chmod(running.c_str(), 01777);
  for (const char* cmd : {"qsub", "qstat", "qhold", "qrls", "qdel", "qalter", "qconf"}) {
    std::ofstream f(bin.Sub(cmd));
    f << "#!/bin/sh\n";
    if (std::string(cmd) == "qsub") {
      // Running now: this one and those that have not left yet. A script
      // saying REFUSE asks for a queue that does not exist.
      f << "mine=" << running << "/$$\ntouch \"$mine\"; ls " << running << " | wc -l >> " << counts << "\n"
        << "in=$(mktemp); cat > \"$in\"\nextra=\"\"\ngrep -q REFUSE \"$in\" && extra=\"-q nosuch.q\"\nsleep 0.3\n"
        << "/usr/lib/gridengine/qsub \"$@\" $extra < \"$in\"; rc=$?\nrm -f \"$in\" \"$mine\"\nexit $rc\n";
    } else {
      f << "exec /usr/lib/gridengine/" << cmd << " \"$@\"\n";
    }
    f.close();
    ASSERT_EQ(chmod(bin.Sub(cmd).c_str(), 0755), 0);
  }
  auto a = Open({{"bin_dir", bin.path()}});
  ASSERT_TRUE(a.ok()) << a.status();
  // Ten jobs t0..t9, t4 refused; then t2 again (the same job) and t4 again
  // (tried again, refused again).
  std::vector<std::pair<JobSpec, std::string>> batch;
  for (int i = 0; i < 10; ++i) {
    batch.push_back({Spec(absl::StrCat("j", i), absl::StrCat("# job ", i, i == 4 ? " REFUSE" : "", "\ntrue\n")),
                     absl::StrCat("t", i)});
  }
  batch.push_back(batch[2]);
  batch.push_back(batch[4]);
  auto ids = (*a)->SubmitMany(batch, /*held=*/false);
  ASSERT_EQ(ids.size(), 12u);
  // Each submitted job's ledger record was written by its thread, when its
  // qsub returned (what finds it by tag once it has ended), before any read of the queue.
  int records = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir_.Sub("gridengine-jobs"), ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() == ".json") ++records;
  }
  EXPECT_EQ(records, 9);
  for (size_t i : {size_t{4}, size_t{11}})
    EXPECT_TRUE(absl::IsInvalidArgument(ids[i].status())) << "the qmaster refused it: final; " << ids[i].status();
  ASSERT_TRUE(ids[10].ok()) << ids[10].status();
  EXPECT_EQ(*ids[10], *ids[2]) << "a tag earlier in the batch: that job, not another";
  std::vector<std::string> submitted;
  for (int i = 0; i < 10; ++i) {
    if (i == 4) continue;
    ASSERT_TRUE(ids[i].ok()) << i << ": " << ids[i].status();
    submitted.push_back(*ids[i]);
  }
  int top = 0, runs = 0;
  std::ifstream in(counts);
  for (int n; in >> n; ++runs) top = std::max(top, n);
  EXPECT_GT(top, 1) << "qsub ran one at a time";
  EXPECT_LE(top, static_cast<int>(kGridEngineParallelCommands));
  EXPECT_EQ(runs, 11) << "t0..t9 once each, t4 again";
  // In input order: the job at place i carries tag t<i>; nine jobs, each
  // tag once.
  auto jobs = (*a)->GetJobs(submitted);
  for (size_t k = 0; k < jobs.size(); ++k) {
    ASSERT_TRUE(jobs[k].ok()) << jobs[k].status();
    const int i = static_cast<int>(k < 4 ? k : k + 1);
    EXPECT_EQ(jobs[k]->tag, absl::StrCat("t", i));
    EXPECT_EQ(jobs[k]->spec.name, absl::StrCat("j", i));
    EXPECT_EQ(jobs[k]->state, JobState::kPending);
  }
  auto listed = (*a)->ListJobs();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 9u);
}

TEST_F(GridEngineAdapterTest, DirectivesInTheScriptDoNotReachQsub) {
  auto a = Open();
  ASSERT_TRUE(a.ok()) << a.status();
  // An unknown queue and a one-second limit: either would change where or
  // how long the job runs.
  auto id = (*a)->Submit(Spec("dir", "#$ -q nosuch.q\n#$ -l h_rt=1\nsleep 36000\n"), "dir", /*held=*/true);
  ASSERT_TRUE(id.ok()) << id.status();
  auto spec = (*a)->Export(*id);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(absl::StrContains(spec->script, "# hyperfed removed: #$ -q nosuch.q")) << spec->script;
  EXPECT_EQ(spec->time_limit_s, 0);
}

TEST_F(GridEngineAdapterTest, AUsersForgedContextIsNotAMark) {
  auto a = Open();
  ASSERT_TRUE(a.ok()) << a.status();
  // A local user's own job claiming the tag of a migration.
  scheduler::CommandSpec spec{
      .argv = {"setpriv", "--reuid=65534", "--regid=65534", "--init-groups", "qsub", "-terse", "-h", "-N", "forged",
               "-ac", "hyperfed=hyperfed1;t=mig-x;k=site-a/other;o=alice;m=" + std::string(64, 'a')},
      .stdin_text = "#!/bin/sh\nsleep 100\n",
      .env = cluster_->Env(),
      .cwd = dir_.path(),
      .timeout = absl::Seconds(30)};
  auto r = scheduler::RunCommand(spec);
  ASSERT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? r->err : r.status().ToString());
  auto found = (*a)->FindByTag("mig-x");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(found->empty()) << "a forged mark is not hyperfed's";
  auto id = (*a)->Submit(Spec("real"), "mig-x", /*held=*/true);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_NE(*id, std::string(absl::StripAsciiWhitespace(r->out))) << "the real job is submitted";
  auto jobs = (*a)->ListJobs();
  ASSERT_TRUE(jobs.ok());
  for (const Job& j : *jobs) {
    if (j.spec.name == "forged") {
      EXPECT_EQ(j.tag, "");
      EXPECT_EQ(j.spec.owner, "nobody") << "an unmarked job's owner is its user";
      EXPECT_NE(j.spec.key, "site-a/other");
    }
  }
}

TEST_F(GridEngineAdapterTest, TagsSurviveARestartOfTheAdapter) {
  std::string id;
  {
    auto a = Open();
    ASSERT_TRUE(a.ok()) << a.status();
    auto got = (*a)->Submit(Spec("restart", "true\n"), "mig-r");
    ASSERT_TRUE(got.ok()) << got.status();
    id = *got;
    ASSERT_TRUE(WaitState(a->get(), "mig-r", JobState::kDone));
  }
  // A new adapter over the same state folder: the finished job (which qstat
  // shows without its context) is still found by its tag.
  auto b = Open();
  ASSERT_TRUE(b.ok()) << b.status();
  auto again = (*b)->Submit(Spec("restart", "true\n"), "mig-r");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, id);
}

TEST_F(GridEngineAdapterTest, ALedgerNeverAnswersForAnotherCluster) {
  // Two clusters, one state folder (and mark key): migration tags repeat
  // between federations, and a record of the first cluster's job must not
  // stop a submit at the second (found by the Slurm-to-Grid-Engine
  // benchmark, where it lost the moved jobs).
  auto a = Open();
  ASSERT_TRUE(a.ok()) << a.status();
  auto first = (*a)->Submit(Spec("one"), "hyperfed:site-0:1:0", /*held=*/true);
  ASSERT_TRUE(first.ok()) << first.status();
  auto other = GridEngineCluster::Start("other");
  ASSERT_TRUE(other.ok()) << other.status();
  auto options = (*other)->Options();
  options.insert({{"submit_dir", dir_.path()}, {"run_as", "account"}, {"run_as_account", "nobody"}});
  auto b = GridEngineAdapter::Open({.state_dir = dir_.path(), .options = options});
  ASSERT_TRUE(b.ok()) << b.status();
  auto found = (*b)->FindByTag("hyperfed:site-0:1:0");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(found->empty()) << "the other cluster's job";
  auto second = (*b)->Submit(Spec("one"), "hyperfed:site-0:1:0", /*held=*/true);
  ASSERT_TRUE(second.ok()) << second.status();
  auto stat = (*other)->Cmd({"qstat", "-j", *second, "-xml"});
  ASSERT_TRUE(stat.ok()) << "the job was not submitted to the second cluster: " << stat.status();
  EXPECT_TRUE(absl::StrContains(stat->out, "<JB_job_name>one</JB_job_name>"));
}

// ---- The shared hostile-input suite (hostile_adapter.h) on a real Grid Engine ----

// The texts of every element named `name` under `n`, in document order.
void TextsNamed(const XmlNode& n, const std::string& name, std::vector<std::string>* out) {
  for (const XmlNode& c : n.children) {
    if (c.name == name) out->push_back(c.text);
    TextsNamed(c, name, out);
  }
}
std::string FirstText(const XmlNode& n, const std::string& name) {
  std::vector<std::string> all;
  TextsNamed(n, name, &all);
  return all.empty() ? "" : all[0];
}

class GridEngineHost : public HostileHost {
 public:
  std::string SkipReason() const override { return GridEngineMissing(); }
  absl::Status Start(const std::string& work_dir) override {
    work_ = work_dir;
    auto c = GridEngineCluster::Start("hostile");
    if (!c.ok()) return c.status();
    cluster_ = *std::move(c);
    // other.q: all.q's copy under another name, on the same host.
    auto q = cluster_->Cmd({"qconf", "-sq", "all.q"});
    if (!q.ok()) return q.status();
    std::string conf;
    for (absl::string_view line : absl::StrSplit(q->out, '\n'))
      absl::StrAppend(&conf, absl::StartsWith(line, "qname ") ? "qname other.q" : line, "\n");
    std::ofstream(work_ + "/other.q") << conf;
    return cluster_->Cmd({"qconf", "-Aq", work_ + "/other.q"}).status();
  }
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> MakeAdapter(std::map<std::string, std::string> options) override {
    std::map<std::string, std::string> o = cluster_->Options();
    o.insert({{"submit_dir", work_}, {"run_as", "account"}, {"run_as_account", "nobody"}});
    for (const auto& [k, v] : options) {
      if (v.empty()) {
        o.erase(k);
      } else {
        o[k] = v;
      }
    }
    auto a = GridEngineAdapter::Open({.state_dir = work_ + "/state", .options = o});
    if (!a.ok()) return a.status();
    return std::unique_ptr<SchedulerAdapter>(*std::move(a));
  }
  absl::StatusOr<std::vector<std::string>> HostJobIds() override {
    // Pending, running and finished (zombies: finished_jobs keeps them).
    auto r = cluster_->Cmd({"qstat", "-u", "*", "-s", "prsz", "-xml"});
    if (!r.ok()) return r.status();
    auto doc = ParseXml(r->out);
    if (!doc.ok()) return doc.status();
    std::vector<std::string> ids;
    TextsNamed(*doc, "JB_job_number", &ids);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
  }
  absl::StatusOr<HostJob> Describe(const std::string& id) override {
    auto r = cluster_->Cmd({"qstat", "-j", id, "-xml"});
    if (!r.ok()) return r.status();
    auto doc = ParseXml(r->out);
    if (!doc.ok()) return doc.status();
    const XmlNode* info = doc->Child("djob_info");
    if (info == nullptr || info->children.empty()) return absl::NotFoundError("qstat -j shows no job " + id);
    const XmlNode& j = info->children[0];
    HostJob h;
    h.id = id;
    h.user = j.ChildText("JB_owner");
    h.name = j.ChildText("JB_job_name");
    h.account = j.ChildText("JB_account");
    if (const XmlNode* q = j.Child("JB_hard_queue_list")) h.queue = FirstText(*q, "QR_name");
    if (const XmlNode* p = j.Child("JB_stdout_path_list")) h.stdout_path = FirstText(*p, "PN_path");
    if (const XmlNode* p = j.Child("JB_stderr_path_list")) h.stderr_path = FirstText(*p, "PN_path");
    if (const XmlNode* l = j.Child("JB_hard_resource_list")) {
      for (const XmlNode& el : l->children) {
        if (el.ChildText("CE_name") != "h_rt") continue;
        double v = 0;
        if (absl::SimpleAtod(el.ChildText("CE_doubleval"), &v)) h.time_limit_s = static_cast<int64_t>(v);
      }
    }
    return h;
  }
  std::string Queue() const override { return "all.q"; }
  std::string OtherQueue() const override { return "other.q"; }
  std::string Directives(const std::string& account, const std::string& path, const std::string& name) const override {
    return absl::StrCat("#$ -A ", account, "\n#$ -q other.q\n#$ -o ", path, "\n#$ -e ", path, "\n#$ -j y\n#$ -N ", name,
                        "\n#$ -l h_rt=1\n#$ -pe smp 4\n#$ -S /bin/false\n  #$ -q other.q\n#$-A ", account, "\n");
  }
  std::vector<std::string> ServiceAccounts() const override { return {"sgeadmin"}; }

 private:
  std::string work_;
  std::unique_ptr<GridEngineCluster> cluster_;
};

INSTANTIATE_TEST_SUITE_P(GridEngine, HostileAdapterTest,
                         ::testing::Values(HostileParam{"GridEngine",
                                                        [] { return std::make_unique<GridEngineHost>(); }}),
                         HostileParamName);

}  // namespace
}  // namespace hyperfed::scheduler::testing
