// The hostile-input suite (hostile_adapter.h): what a peer's job spec tries
// against an adapter on a real scheduler. Instantiated by each adapter's own
// test file (slurm_hostile_test.cc, gridengine_adapter_test.cc). Every test
// checks the scheduler itself afterwards, with its own commands: nothing of
// the hostile input reached it.

#include "tests/scheduler/hostile_adapter.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "daemon/scheduler/subprocess.h"

namespace hyperfed::scheduler::testing {

// Each adapter's test file instantiates the suite; a binary built without
// any adapter must still link.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(HostileAdapterTest);

namespace {

// Every file named `name` under `dir`, at any depth.
std::vector<std::string> FilesNamed(const std::string& dir, const std::string& name) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename() == name) out.push_back(it->path().string());
  }
  return out;
}

// The assertion every refusal makes: InvalidArgument (final: the job goes
// back to its source, never retried), with a message that says `says`.
void ExpectRefused(const absl::Status& st, const std::string& says, const std::string& what) {
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << what << ": " << st;
  EXPECT_TRUE(absl::StrContains(st.message(), says)) << what << ": want \"" << says << "\" in: " << st;
}

}  // namespace

void HostileAdapterTest::SetUp() {
  host_ = GetParam().make_host();
  ASSERT_NE(host_, nullptr);
  if (std::string why = host_->SkipReason(); !why.empty()) GTEST_SKIP() << why;
  // Jobs run as other users; sticky (as /tmp), so the daemon still trusts
  // its own files there.
  chmod(dir_.path().c_str(), 01777);
  absl::Status st = host_->Start(dir_.path());
  ASSERT_TRUE(st.ok()) << st;
}

void HostileAdapterTest::TearDown() { host_.reset(); }

JobSpec HostileAdapterTest::Spec(const std::string& name, const std::string& marker) const {
  JobSpec s;
  s.name = name;
  s.script = marker.empty() ? "#!/bin/sh\ntrue\n" : absl::StrCat("#!/bin/sh\nid -un > '", dir_.Sub(marker), "'\n");
  s.cores = 1;
  s.key = "site-a/" + name;
  s.owner = "alice";
  s.source_site = "site-a";
  return s;
}

std::vector<std::string> HostileAdapterTest::HostJobs() {
  auto ids = host_->HostJobIds();
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<std::string>{"(the scheduler could not say)"};
}

bool HostileAdapterTest::WaitDone(SchedulerAdapter* a, const std::string& tag) {
  for (const absl::Time end = absl::Now() + absl::Seconds(60); absl::Now() < end;) {
    auto j = a->FindByTag(tag);
    if (j.ok() && j->size() == 1 && (*j)[0].state == JobState::kDone) return true;
    absl::SleepFor(absl::Milliseconds(250));
  }
  return false;
}

// A peer names the owner; the site's users_map says which names from which
// site run here. Anything else is refused before qsub or sbatch runs, in a
// batch beside a job that is allowed and goes through.
TEST_P(HostileAdapterTest, PeerOwnerTheSitePolicyDoesNotAllowQueuesNothing) {
  for (const char* u : {"alice", "carol"})
    if (std::string why = EnsureUser(u); !why.empty()) GTEST_SKIP() << why;
  std::ofstream(dir_.Sub("users.map")) << "# site:remote local\nsite-a:alice alice\n";
  auto a = host_->MakeAdapter({{"run_as", "owner"}, {"run_as_account", ""}, {"users_map", dir_.Sub("users.map")}});
  ASSERT_TRUE(a.ok()) << a.status();
  struct Case {
    std::string owner, source, says;
  };
  const std::vector<Case> cases = {
      {"carol", "site-a", "not in users_map"},  // a real local user, but not one the map lets site-a name
      {"alice", "site-c", "not in users_map"},  // site-a's alice, claimed by another site
      {"alice", "", "not in users_map"},        // no authenticated source
      {"", "site-a", "no owner"},
      {"Alice", "site-a", "not a user name"},
      {"alice;id", "site-a", "not a user name"}};
  std::vector<std::pair<JobSpec, std::string>> batch;
  for (size_t i = 0; i < cases.size(); ++i) {
    JobSpec s = Spec(absl::StrCat("owner-", i), absl::StrCat("ran-", i));
    s.owner = cases[i].owner;
    s.source_site = cases[i].source;
    ExpectRefused((*a)->CheckSpec(s), cases[i].says, absl::StrCat("CheckSpec, owner \"", s.owner, "\""));
    batch.push_back({s, absl::StrCat("t-owner-", i)});
  }
  JobSpec allowed = Spec("allowed");
  allowed.script = "#!/bin/sh\nsleep 60\n";  // still there when the scheduler is asked
  batch.push_back({allowed, "t-allowed"});
  auto got = (*a)->SubmitMany(batch, /*held=*/false);
  ASSERT_EQ(got.size(), batch.size());
  for (size_t i = 0; i < cases.size(); ++i)
    ExpectRefused(got[i].status(), cases[i].says, absl::StrCat("Submit, owner \"", cases[i].owner, "\""));
  ASSERT_TRUE(got.back().ok()) << "the allowed job fails alone if at all: " << got.back().status();
  EXPECT_EQ(HostJobs(), std::vector<std::string>{*got.back()}) << "only the allowed job reached the scheduler";
  auto d = host_->Describe(*got.back());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->user, "alice");
  absl::SleepFor(absl::Seconds(2));
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_FALSE(std::filesystem::exists(dir_.Sub(absl::StrCat("ran-", i)))) << "refused job " << i << " ran";
}

// Root, the system accounts and the scheduler's own service accounts never
// run a peer's job, whatever the owner's name says and whatever the
// operator's map or account option says.
TEST_P(HostileAdapterTest, RootAndSystemAccountsRunNoJob) {
  if (std::string why = EnsureUser("alice"); !why.empty()) GTEST_SKIP() << why;
  auto a = host_->MakeAdapter({{"run_as", "owner"}, {"run_as_account", ""}, {"users_map", "same-name"}});
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<std::string> owners = {"root", "daemon", "bin", "sys", "nobody", "www-data", "systemd-network"};
  for (const std::string& s : host_->ServiceAccounts()) owners.push_back(s);
  int tried = 0;
  for (const std::string& owner : owners) {
    const passwd* pw = getpwnam(owner.c_str());
    if (pw == nullptr) continue;
    ++tried;
    JobSpec s = Spec("as-" + owner, "ran-" + owner);
    s.owner = owner;
    absl::Status check = (*a)->CheckSpec(s);
    EXPECT_TRUE(absl::IsInvalidArgument(check)) << owner << " (uid " << pw->pw_uid << "): " << check;
    // Which rule says no: root always, then deny_users, then the uid range.
    EXPECT_TRUE(absl::StrContains(check.message(), "root") || absl::StrContains(check.message(), "deny_users") ||
                absl::StrContains(check.message(), "uid_min") || absl::StrContains(check.message(), "uid_max"))
        << check;
    ExpectRefused((*a)->Submit(s, "t-" + owner, /*held=*/false).status(), "", "Submit as " + owner);
  }
  EXPECT_GE(tried, 4) << "too few system accounts on this machine to mean anything";
  // The operator cannot make them run a peer's jobs either: refused when the
  // adapter is made (the daemon does not start).
  for (const std::string& user : std::vector<std::string>{"root", host_->ServiceAccounts()[0]}) {
    auto b = host_->MakeAdapter({{"run_as", "account"}, {"run_as_account", user}});
    EXPECT_TRUE(absl::IsInvalidArgument(b.status())) << "run_as_account " << user << ": " << b.status();
    std::ofstream(dir_.Sub("root.map")) << "site-a:alice " << user << "\n";
    auto c = host_->MakeAdapter({{"run_as", "owner"}, {"run_as_account", ""}, {"users_map", dir_.Sub("root.map")}});
    EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << "users_map to " << user << ": " << c.status();
  }
  EXPECT_TRUE(HostJobs().empty()) << "a job reached the scheduler";
  absl::SleepFor(absl::Seconds(2));
  for (const std::string& owner : owners)
    EXPECT_FALSE(std::filesystem::exists(dir_.Sub("ran-" + owner))) << "a job ran as " << owner;
}

// A script's own directives (#SBATCH, #$) would choose the account, the
// queue, where output goes, the name, the time limit and the size: none of
// them reaches the scheduler; the job runs as the spec and the site say.
TEST_P(HostileAdapterTest, ScriptDirectivesChangeNeitherAccountQueueOutputNorName) {
  auto a = host_->MakeAdapter({});
  ASSERT_TRUE(a.ok()) << a.status();
  const std::string evil = dir_.Sub("evil.out");
  JobSpec s = Spec("directives");
  s.script =
      absl::StrCat("#!/bin/sh\n", host_->Directives("evil", evil, "renamed"), "id -un > '", dir_.Sub("ran"), "'\n");
  s.time_limit_s = 600;
  auto id = (*a)->Submit(s, "t-directives", /*held=*/true);
  ASSERT_TRUE(id.ok()) << id.status();
  auto job = host_->Describe(*id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->name, "directives");
  EXPECT_EQ(job->user, "nobody") << "the site's run_as account";
  EXPECT_EQ(job->queue, host_->Queue()) << "not " << host_->OtherQueue() << ", as the script asked";
  EXPECT_NE(job->account, "evil");
  EXPECT_FALSE(absl::StrContains(job->stdout_path, "evil")) << job->stdout_path;
  EXPECT_FALSE(absl::StrContains(job->stderr_path, "evil")) << job->stderr_path;
  EXPECT_EQ(job->time_limit_s, 600) << "the spec's time limit, not the script's";
  // It runs, with none of them: under the site's shell, its output not
  // where the script asked.
  ASSERT_TRUE((*a)->Release(*id).ok());
  ASSERT_TRUE(WaitDone(a->get(), "t-directives"));
  EXPECT_EQ(FilesNamed(dir_.path(), "ran").size(), 1u) << "the job did not run";
  EXPECT_FALSE(std::filesystem::exists(evil)) << "output went where the script's directive said";
  EXPECT_EQ(HostJobs(), std::vector<std::string>{*id}) << "one job, not an array or a copy";
}

// Shell metacharacters in a name, a working folder and variable values are
// data: no shell between the adapter and the scheduler runs them. Each spec
// is either refused by CheckSpec (and then by Submit, with nothing queued)
// or queued with its name exactly as given; none runs a command.
TEST_P(HostileAdapterTest, ShellMetacharactersInNamesPathsAndValuesRunNoCommand) {
  auto a = host_->MakeAdapter({});
  ASSERT_TRUE(a.ok()) << a.status();
  const std::string folder = dir_.Sub("w;touch pwned $(touch pwned) `touch pwned` 'q\" &|<>");
  ASSERT_TRUE(std::filesystem::create_directory(folder));
  chmod(folder.c_str(), 0777);
  // Names every scheduler takes as they are (the test fails if CheckSpec
  // refuses one); a shell would run `touch pwned` for each (${IFS} is a
  // blank to a shell).
  const std::vector<std::string> plain_names = {"x;touch${IFS}pwned",
                                                "x$(touch${IFS}pwned)",
                                                "x`touch${IFS}pwned`",
                                                "x|touch${IFS}pwned",
                                                "x&&touch${IFS}pwned",
                                                "x>pwned",
                                                "x'\"",
                                                "-x",
                                                "x#y",
                                                "x%n"};
  // Names a scheduler may refuse (blanks, control characters, UTF-8 and the
  // separators of its own syntax): CheckSpec then refuses them first.
  const std::vector<std::string> other_names = {"x;touch pwned",
                                                "x$(touch pwned)",
                                                "x\ntouch pwned",
                                                "x\rtouch",
                                                "x/../../pwned",
                                                "x:y",
                                                "x@y",
                                                "x*",
                                                "x?",
                                                "x\\y",
                                                "gr\xC3\xB6\xC3\x9F"
                                                "e"};
  std::vector<std::pair<JobSpec, std::string>> accepted;
  int n = 0;
  for (const auto* names : {&plain_names, &other_names}) {
    for (const std::string& name : *names) {
      JobSpec s = Spec(name);
      s.key = absl::StrCat("site-a/meta-", n);
      s.script = "#!/bin/sh\necho \"$V\" > /dev/null\n";
      s.env = {{"V", "$(touch pwned); `touch pwned` | touch pwned"}};
      if (n % 2 == 1) s.workdir = folder;
      const std::string tag = absl::StrCat("t-meta-", n++);
      absl::Status check = (*a)->CheckSpec(s);
      if (names == &plain_names) {
        EXPECT_TRUE(check.ok()) << "name \"" << name << "\": " << check;
      }
      if (!check.ok()) {
        ExpectRefused(check, "name", "CheckSpec, name \"" + name + "\"");
        ExpectRefused((*a)->Submit(s, tag, true).status(), "", "Submit, name \"" + name + "\"");
        continue;
      }
      accepted.push_back({s, tag});
    }
  }
  auto got = (*a)->SubmitMany(accepted, /*held=*/true);
  ASSERT_EQ(got.size(), accepted.size());
  std::set<std::string> ids;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << "CheckSpec took name \"" << accepted[i].first.name
                             << "\" and Submit refused it: " << got[i].status();
    ids.insert(*got[i]);
    auto job = host_->Describe(*got[i]);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->name, accepted[i].first.name) << "the scheduler took the name otherwise";
  }
  auto host = HostJobs();
  EXPECT_EQ(std::set<std::string>(host.begin(), host.end()), ids) << "only the accepted jobs, each once";
  for (const std::string& id : ids) ASSERT_TRUE((*a)->Release(id).ok()) << id;
  for (const auto& [spec, tag] : accepted) EXPECT_TRUE(WaitDone(a->get(), tag)) << spec.name;
  EXPECT_TRUE(FilesNamed(dir_.path(), "pwned").empty()) << "a shell ran a name, a folder or a value";
  EXPECT_TRUE(FilesNamed("/tmp", "pwned").empty()) << "a shell ran a name, a folder or a value";
}

// Fields longer than a site takes are refused by CheckSpec and by Submit
// with InvalidArgument naming the field, nothing queued: a command that
// could not even start (an argument or variable past the kernel's 128 KiB)
// would look like a scheduler that is down, and the transfer would be
// retried for ever. The longest name and key taken come back exactly.
TEST_P(HostileAdapterTest, OverlongFieldsAreRefusedAndNothingIsQueued) {
  auto a = host_->MakeAdapter({});
  ASSERT_TRUE(a.ok()) << a.status();
  struct Case {
    std::string what, says;
    std::function<void(JobSpec*)> make;
  };
  const std::vector<Case> cases = {
      {"name", "name", [](JobSpec* s) { s->name = std::string(kMaxNameLength + 1, 'n'); }},
      {"key", "key", [](JobSpec* s) { s->key = std::string(kMaxKeyLength + 1, 'k'); }},
      {"owner", "owner", [](JobSpec* s) { s->owner = std::string(kMaxOwnerLength + 1, 'a'); }},
      {"script", "script", [](JobSpec* s) { s->script = "#!/bin/sh\n" + std::string(kMaxScriptBytes, '#'); }},
      {"one variable", "environment",
       [](JobSpec* s) {
         s->env = {{"BIG", std::string(200 << 10, 'v')}};
       }},
      {"many variables", "environment",
       [](JobSpec* s) {
         for (int i = 0; i < 64; ++i) s->env[absl::StrCat("V", i)] = std::string(60 << 10, 'v');
       }},
      {"workdir", "workdir", [](JobSpec* s) { s->workdir = "/" + std::string(5000, 'w'); }},
      {"cores", "cores", [](JobSpec* s) { s->cores = 1 << 30; }},
      {"time limit", "time limit", [](JobSpec* s) { s->time_limit_s = int64_t{1} << 62; }},
      {"memory", "memory", [](JobSpec* s) { s->memory_mb = int64_t{1} << 62; }},
  };
  std::vector<std::pair<JobSpec, std::string>> batch;
  for (size_t i = 0; i < cases.size(); ++i) {
    JobSpec s = Spec(absl::StrCat("long-", i), absl::StrCat("ran-", i));
    cases[i].make(&s);
    ExpectRefused((*a)->CheckSpec(s), cases[i].says, "CheckSpec, overlong " + cases[i].what);
    batch.push_back({s, absl::StrCat("t-long-", i)});
  }
  auto got = (*a)->SubmitMany(batch, /*held=*/false);
  ASSERT_EQ(got.size(), batch.size());
  for (size_t i = 0; i < cases.size(); ++i)
    ExpectRefused(got[i].status(), cases[i].says, "Submit, overlong " + cases[i].what);
  EXPECT_TRUE(HostJobs().empty()) << "a job reached the scheduler";
  // At the limit: taken, and read back as sent.
  JobSpec longest = Spec(std::string(kMaxNameLength, 'n'));
  longest.key = std::string(kMaxKeyLength, 'k');
  auto id = (*a)->Submit(longest, "t-longest", /*held=*/true);
  ASSERT_TRUE(id.ok()) << id.status();
  auto back = (*a)->GetJobs({*id});
  ASSERT_TRUE(back[0].ok()) << back[0].status();
  EXPECT_EQ(back[0]->spec.name, longest.name);
  EXPECT_EQ(back[0]->spec.key, longest.key);
  auto job = host_->Describe(*id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->name, longest.name);
  absl::SleepFor(absl::Seconds(1));
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_FALSE(std::filesystem::exists(dir_.Sub(absl::StrCat("ran-", i)))) << cases[i].what;
}

}  // namespace hyperfed::scheduler::testing
