// The exec adapter: the shared contract suite run against exec_sched (a
// small scheduler written as a script, tests/scheduler/exec_sched/sched.py,
// whose jobs really run), and what is particular to exec: options, how a
// command's failure, silence, garbage or slowness is reported.

#include "daemon/scheduler/exec_adapter.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "daemon/scheduler/subprocess.h"
#include "gtest/gtest.h"
#include "tests/scheduler/adapter_contract.h"
#include "tests/scheduler/temp_dir.h"

namespace hyperfed::scheduler::testing {
namespace {

std::string SchedScript() {
  return (std::filesystem::path(__FILE__).parent_path() / "exec_sched" / "sched.py").string();
}

// exec_sched over the queue in `state`, as argv. python3 -S: it needs
// nothing from site-packages, and skipping them saves much of each call's
// start-up.
std::vector<std::string> SchedArgv(const std::string& state, int slots = 2) {
  return {"python3", "-S", SchedScript(), "--state", state, "--slots", absl::StrCat(slots)};
}

// The same as a command line for the adapter's `command` option.
std::string SchedCommand(const std::string& state) { return QuoteCommandLine(SchedArgv(state)); }

std::vector<std::string> SchedShutdown(const std::string& state) {
  std::vector<std::string> argv = SchedArgv(state);
  argv.push_back("shutdown");
  return argv;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether `pid` is still a live process (a zombie waiting for a reaper that
// never comes, as under some container inits, counts as gone).
bool ProcessLives(pid_t pid) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  if (stat.empty()) return false;
  const size_t close_paren = stat.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < stat.size() && stat[close_paren + 2] != 'Z';
}

// A fresh exec_sched queue per test. On destruction it kills every job still
// running, by the process group ids the scheduler recorded.
class ExecSchedEnv : public AdapterContractEnv {
 public:
  // estimates: sched.py reports start times and answers the optional
  // widest and arrival operations (extra_operations); without, it is a
  // scheduler written before they existed and the interface's defaults
  // apply.
  explicit ExecSchedEnv(bool estimates = true) : estimates_(estimates) {}
  ~ExecSchedEnv() override {
    auto r = RunCommand({.argv = SchedShutdown(State()), .timeout = absl::Seconds(20)});
    if (!r.ok() || r->exit_code != 0) {
      ADD_FAILURE() << "exec_sched shutdown failed: "
                    << (r.ok() ? absl::StrCat("exit ", r->exit_code, ": ", r->err) : r.status().ToString());
    }
  }

  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> MakeAdapter() override {
    std::map<std::string, std::string> options = {{"timeout_ms", "20000"}};
    if (estimates_) {
      options["command"] = SchedCommand(State());
      options["extra_operations"] = "widest,arrival";
    } else {
      std::vector<std::string> argv = SchedArgv(State());
      argv.push_back("--no-estimates");
      options["command"] = QuoteCommandLine(argv);
    }
    auto a = ExecAdapter::Create({.state_dir = dir_.Sub("daemon"), .options = options});
    if (!a.ok()) return a.status();
    return std::unique_ptr<SchedulerAdapter>(*std::move(a));
  }
  Estimates StartEstimates() const override { return estimates_ ? Estimates::kAlways : Estimates::kNever; }
  // sched.py runs a wide job on every slot it has.
  bool RefusesWiderThanWidest() const override { return false; }

  void LetTimePass(absl::Duration d) override { absl::SleepFor(d); }
  absl::Duration MaxWait() const override { return absl::Seconds(30); }

  std::string State() const { return dir_.Sub("sched"); }

 private:
  const bool estimates_;
  TempDir dir_;
};

INSTANTIATE_TEST_SUITE_P(Exec, AdapterContractTest,
                         ::testing::Values(AdapterContractParam{"Exec",
                                                                [] { return std::make_unique<ExecSchedEnv>(); }},
                                           AdapterContractParam{"ExecWithoutEstimates",
                                                                [] { return std::make_unique<ExecSchedEnv>(false); }}),
                         AdapterContractParamName);

// ---- Options ----

absl::Status CreateStatus(const std::map<std::string, std::string>& options) {
  return ExecAdapter::Create({.state_dir = "/nonexistent", .options = options}).status();
}

TEST(ExecAdapterOptionsTest, MissingCommandIsNamed) {
  absl::Status s = CreateStatus({});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "\"list_command\" (or \"command\")")) << s;
  // Some operations given alone: the first missing one is named.
  s = CreateStatus({{"list_command", "true"}});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "\"capacity_command\"")) << s;
}

TEST(ExecAdapterOptionsTest, UnknownOptionIsNamed) {
  absl::Status s = CreateStatus({{"command", "true"}, {"hold_comand", "true"}});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "\"hold_comand\"")) << s;
}

TEST(ExecAdapterOptionsTest, BadTimeoutIsNamed) {
  for (const char* bad : {"0", "-5", "abc", "", "3600001", "1.5"}) {
    absl::Status s = CreateStatus({{"command", "true"}, {"timeout_ms", bad}});
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << bad << ": " << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "\"timeout_ms\"")) << s;
  }
  EXPECT_TRUE(CreateStatus({{"command", "true"}, {"timeout_ms", "1"}}).ok());
}

TEST(ExecAdapterOptionsTest, BadCommandLineIsNamed) {
  absl::Status s = CreateStatus({{"command", "sched 'unterminated"}});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "\"command\"")) << s;
  s = CreateStatus({{"command", "true"}, {"pin_command", "   "}});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "\"pin_command\"")) << s;
  s = CreateStatus({{"command", "/nonexistent/sched"}});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/nonexistent/sched is not an executable file")) << s;
}

// The daemon runs the command, as root on most sites: a command another
// user could change is refused (docs/security.md, issue 34 finding 6f).
TEST(ExecAdapterOptionsTest, ACommandOthersCanChangeIsRefused) {
  char dir[] = "/tmp/hyperfed-exec-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string cmd = std::string(dir) + "/sched";
  {
    std::ofstream f(cmd);
    f << "#!/bin/sh\nexit 0\n";
  }
  ASSERT_EQ(chmod(cmd.c_str(), 0755), 0);
  EXPECT_TRUE(CreateStatus({{"command", cmd}}).ok());
  ASSERT_EQ(chmod(cmd.c_str(), 0777), 0);
  absl::Status s = CreateStatus({{"command", cmd}});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "\"command\": \"" + cmd + "\" has mode 0777")) << s;
  ASSERT_EQ(chmod(cmd.c_str(), 0755), 0);
  ASSERT_EQ(chmod(dir, 0777), 0);  // anyone could put another file in its place
  s = CreateStatus({{"command", "true"}, {"list_command", cmd}});
  EXPECT_TRUE(absl::StrContains(s.message(), "\"list_command\": ")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "a folder above")) << s;
  std::filesystem::remove_all(dir);
}

TEST(ExecAdapterOptionsTest, CommandGetsTheOperationAppendedAndPerOperationCommandsOverride) {
  auto o = ParseExecOptions({{"command", "sched --state '/a b'"}, {"list_command", "my-list -v"}});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->commands.at("hold"), (std::vector<std::string>{"sched", "--state", "/a b", "hold"}));
  EXPECT_EQ(o->commands.at("find_by_tag"), (std::vector<std::string>{"sched", "--state", "/a b", "find_by_tag"}));
  EXPECT_EQ(o->commands.at("list"), (std::vector<std::string>{"my-list", "-v"}));
  EXPECT_EQ(o->timeout, absl::Seconds(30));
}

TEST(ExecAdapterOptionsTest, RegisteredUnderExec) {
  AdapterRegistry r;
  ASSERT_TRUE(r.Register(std::make_unique<ExecAdapterFactory>()).ok());
  EXPECT_TRUE(r.Has("exec"));
  auto a = r.Create("exec", {.options = {{"command", "true"}}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)->Name(), "exec");
  EXPECT_TRUE(absl::IsInvalidArgument(r.Create("exec", {.options = {}}).status()));
}

// ---- Command lines ----

TEST(SplitCommandLineTest, QuotesAndBackslashesWithoutAShell) {
  auto v = SplitCommandLine(R"(  a 'b c' "d \"e\" \\ $HOME" f\ g '' x'y'"z"  )");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, (std::vector<std::string>{"a", "b c", R"(d "e" \ $HOME)", "f g", "", "xyz"}));
  EXPECT_TRUE(absl::IsInvalidArgument(SplitCommandLine("a \"b").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(SplitCommandLine("a\\").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(SplitCommandLine(" \t").status()));
}

TEST(SplitCommandLineTest, QuotedLineSplitsBackToTheSameWords) {
  const std::vector<std::string> words = {"plain", "with space", "it's", "", "$x", "a\"b", "back\\slash"};
  auto v = SplitCommandLine(QuoteCommandLine(words));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, words);
}

// ---- Commands that misbehave. Each test gives the adapter small `sh -c`
// commands of its own (no scheduler behind them).

class ExecAdapterTest : public ::testing::Test {
 protected:
  // An adapter whose every operation runs `fallback` (default: fails) unless
  // `per_op` says otherwise.
  std::unique_ptr<ExecAdapter> Make(std::map<std::string, std::string> per_op, const std::string& timeout_ms = "5000") {
    std::map<std::string, std::string> options = {{"command", "sh -c 'echo not configured >&2; exit 1' op"},
                                                  {"timeout_ms", timeout_ms}};
    for (auto& [op, cmd] : per_op) options[op + "_command"] = cmd;
    auto a = ExecAdapter::Create({.state_dir = dir_.path(), .options = options});
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *std::move(a) : nullptr;
  }
  // `sh -c SCRIPT op`: the operation's own arguments are $1, $2, ...
  static std::string Sh(const std::string& script) { return QuoteCommandLine({"sh", "-c", script, "op"}); }
  // The same as a script file (for longer bodies); its path.
  std::string Script(const std::string& name, const std::string& body) {
    const std::string path = dir_.Sub(name);
    std::ofstream(path) << "#!/bin/sh\n" << body;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return QuoteCommandLine({path});
  }

  TempDir dir_;
};

// ---- Optional operations: widest, arrival; start_ms in list ----

TEST_F(ExecAdapterTest, OptionalOperationsRunOnlyWhenConfigured) {
  // `command` fails for every operation: without widest/arrival commands
  // the defaults apply and nothing runs.
  auto a = Make({{"capacity", Sh("echo '{\"units\": 6}'")}});
  EXPECT_EQ(a->WidestJob().value_or(-1), 6) << "capacity's units";
  EXPECT_TRUE(absl::IsUnimplemented(a->ArrivalStarts({1}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(a->ArrivalStarts({0}).status()));
  auto b = Make({{"widest", Sh("echo '{\"cores\": 3}'")},
                 {"arrival", Sh("echo \"{\\\"starts_ms\\\": [$(( $1 * 1000 )), $(( $2 * 1000 ))]}\"")}});
  EXPECT_EQ(b->WidestJob().value_or(-1), 3);
  EXPECT_EQ(b->ArrivalStarts({1, 3}).value_or(std::vector<int64_t>{}), (std::vector<int64_t>{1000, 3000}));
  EXPECT_TRUE(absl::IsInvalidArgument(b->ArrivalStarts({1, 4}).status())) << "wider than widest: nothing runs";
  EXPECT_TRUE(b->ArrivalStarts({}).value_or(std::vector<int64_t>{1}).empty());
}

TEST_F(ExecAdapterTest, UnreadableOptionalAnswersAreInternalErrors) {
  for (const std::string bad : {"nothing", "{\"cores\": 0}", "{\"cores\": \"many\"}", "{\"widest\": 2}"}) {
    SCOPED_TRACE(bad);
    auto a = Make({{"widest", Sh("echo '" + bad + "'")}});
    EXPECT_TRUE(absl::IsInternal(a->WidestJob().status())) << a->WidestJob().status();
  }
  for (const std::string bad : {"{\"starts_ms\": [1]}", "{\"starts_ms\": [1, 0]}", "{\"starts\": [1, 2]}", "[]"}) {
    SCOPED_TRACE(bad);
    auto a = Make({{"widest", Sh("echo '{\"cores\": 2}'")}, {"arrival", Sh("echo '" + bad + "'")}});
    EXPECT_TRUE(absl::IsInternal(a->ArrivalStarts({1, 2}).status())) << a->ArrivalStarts({1, 2}).status();
  }
  auto a = Make({{"list", Sh("echo '{\"jobs\": [{\"id\": \"1\", \"state\": \"pending\", \"start_ms\": -5}]}'")}});
  EXPECT_TRUE(absl::IsInternal(a->Pending().status())) << a->Pending().status();
}

TEST_F(ExecAdapterTest, PendingTakesStartMsFromListAndSkipsWhatCannotMove) {
  auto a = Make(
      {{"list",
        Sh("echo '{\"jobs\": ["
           "{\"id\": \"1\", \"state\": \"running\", \"start_ms\": 5},"
           "{\"id\": \"2\", \"state\": \"pending\", \"start_ms\": 7000, \"spec\": {\"cores\": 2, \"key\": \"k2\"}},"
           "{\"id\": \"3\", \"state\": \"held\"},"
           "{\"id\": \"4\", \"state\": \"pending\", \"pinned\": true},"
           "{\"id\": \"5\", \"state\": \"pending\", \"queued_at_ms\": 9}]}'")}});
  auto p = a->Pending();
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 2u);
  EXPECT_EQ((*p)[0].id, "2");
  EXPECT_EQ((*p)[0].start_ms, 7000);
  EXPECT_EQ((*p)[0].cores, 2);
  EXPECT_EQ((*p)[0].key, "k2");
  EXPECT_EQ((*p)[1].id, "5");
  EXPECT_EQ((*p)[1].start_ms, 0) << "absent: unknown";
  EXPECT_EQ((*p)[1].queued_at_ms, 9);
}

TEST(ExecAdapterOptionsTest, ExtraOperationsNeedCommandAndKnownNames) {
  EXPECT_TRUE(absl::IsInvalidArgument(CreateStatus({{"command", "true"}, {"extra_operations", "widest,bogus"}})));
  EXPECT_TRUE(absl::IsInvalidArgument(CreateStatus({{"list_command", "true"}, {"extra_operations", "widest"}})));
  auto o = ParseExecOptions({{"command", "sched"}, {"extra_operations", "arrival"}});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->commands.at("arrival"), (std::vector<std::string>{"sched", "arrival"}));
  EXPECT_FALSE(o->commands.contains("widest"));
  EXPECT_FALSE(ParseExecOptions({{"command", "sched"}})->commands.contains("arrival"));
}

TEST_F(ExecAdapterTest, FailedCommandNamesCommandExitCodeAndStderr) {
  auto a = Make({{"list", Sh("echo 'queue server down' >&2; echo ignored; exit 3")}});
  auto jobs = a->ListJobs();
  ASSERT_FALSE(jobs.ok());
  EXPECT_TRUE(absl::IsUnavailable(jobs.status())) << jobs.status();
  const std::string msg(jobs.status().message());
  EXPECT_TRUE(absl::StrContains(msg, "list command `sh -c ")) << msg;
  EXPECT_TRUE(absl::StrContains(msg, "exited with 3: queue server down")) << msg;
}

TEST_F(ExecAdapterTest, StderrIsTrimmedToItsLastPart) {
  auto a = Make({{"capacity", Sh("i=0; while [ $i -lt 2000 ]; do echo line $i >&2; i=$((i+1)); done; exit 1")}});
  auto c = a->GetCapacity();
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::StrContains(c.status().message(), "line 1999")) << "the end of stderr is kept";
  EXPECT_FALSE(absl::StrContains(c.status().message(), "line 0\n"));
  EXPECT_LT(c.status().message().size(), kMaxStderr + 500);
}

TEST_F(ExecAdapterTest, ExitCodesTenAndElevenMeanNotFoundAndWrongStateForJobOperations) {
  auto a = Make({{"hold", Sh("echo \"no job $1\" >&2; exit 10")},
                 {"release", Sh("echo \"job $1 runs\" >&2; exit 11")},
                 {"cancel", Sh("exit 1")},
                 {"export", Sh("exit 10")},
                 {"pin", Sh("exit 11")},
                 {"list", Sh("exit 10")},
                 {"find_by_tag", Sh("exit 11")}});
  absl::Status s = a->Hold("42");
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "no job 42")) << s;
  s = a->Release("42");
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "job 42 runs")) << s;
  EXPECT_TRUE(absl::IsUnavailable(a->Cancel("42"))) << "any other exit is a failure, not an answer";
  EXPECT_TRUE(absl::IsNotFound(a->Export("42").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(a->SetPinned("42", true)));
  // Not about one job: 10 and 11 mean nothing special.
  EXPECT_TRUE(absl::IsUnavailable(a->ListJobs().status()));
  EXPECT_TRUE(absl::IsUnavailable(a->FindByTag("t").status()));
}

TEST_F(ExecAdapterTest, CommandKilledBySignalIsAFailure) {
  auto a = Make({{"list", Sh("kill -9 $$")}});
  auto jobs = a->ListJobs();
  EXPECT_TRUE(absl::IsUnavailable(jobs.status())) << jobs.status();
  EXPECT_TRUE(absl::StrContains(jobs.status().message(), "killed by signal 9")) << jobs.status();
}

TEST_F(ExecAdapterTest, CommandThatCannotStartIsAFailure) {
  auto a = Make({{"list", "hyperfed-no-such-command-anywhere"}});
  auto jobs = a->ListJobs();
  EXPECT_TRUE(absl::IsUnavailable(jobs.status())) << jobs.status();
  EXPECT_TRUE(absl::StrContains(jobs.status().message(), "cannot start hyperfed-no-such-command-anywhere"))
      << jobs.status();
}

TEST_F(ExecAdapterTest, TimeoutKillsTheCommandAndWhatItStarted) {
  const std::string pid_file = dir_.Sub("bg.pid");
  auto a = Make({{"list", Sh(absl::StrCat("sleep 60 & echo $! > ", pid_file, "; sleep 60"))}}, "300");
  const absl::Time start = absl::Now();
  auto jobs = a->ListJobs();
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(jobs.status())) << jobs.status();
  EXPECT_TRUE(absl::StrContains(jobs.status().message(), "list command `sh -c")) << jobs.status();
  EXPECT_TRUE(absl::StrContains(jobs.status().message(), "timed out after 300ms")) << jobs.status();
  EXPECT_LT(took, absl::Seconds(5));
  int bg = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(pid_file)), &bg)) << ReadFile(pid_file);
  for (int i = 0; i < 50 && ProcessLives(bg); ++i) absl::SleepFor(absl::Milliseconds(20));
  EXPECT_FALSE(ProcessLives(bg)) << "the command's background child " << bg << " outlived the timeout";
  if (ProcessLives(bg)) kill(bg, SIGKILL);
}

TEST_F(ExecAdapterTest, BackgroundChildHoldingStdoutDoesNotDelayTheAnswer) {
  // A command may leave something running (a scheduler starting a job);
  // the answer is what the command printed before it exited.
  const std::string pid_file = dir_.Sub("bg.pid");
  auto a = Make({{"list", Sh(absl::StrCat("sleep 30 & echo $! > ", pid_file, "; echo '{\"jobs\": []}'"))}});
  const absl::Time start = absl::Now();
  auto jobs = a->ListJobs();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_TRUE(jobs->empty());
  int bg = 0;
  if (absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(pid_file)), &bg) && bg > 0) kill(bg, SIGKILL);
}

TEST_F(ExecAdapterTest, MalformedOutputIsAnErrorNamingTheCommandAndTheFault) {
  struct Case {
    std::string out;
    std::string want;  // in the message
  };
  const Case cases[] = {
      {"", "printed nothing"},
      {"not json", "bad JSON"},
      {"[]", "bad JSON"},
      {R"({"jobs": [{"id": "1", "state": "pending", "bogus": 1}]})", "bogus"},
      {R"({"jobs": [{"id": "1", "state": "pending", "spec": {"cores": "many"}}]})", "bad JSON"},
      {R"({"jobs": [{"id": "1", "state": "queued"}]})", "state \"queued\" is not one of"},
      {R"({"jobs": [{"id": "", "state": "pending"}]})", "jobs[0]"},
      {R"({"jobs": [{"id": "1", "state": "held"}, {"id": "-2", "state": "held"}]})", "jobs[1]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.out);
    std::ofstream(dir_.Sub("out.json")) << c.out;
    auto a = Make({{"list", Sh(absl::StrCat("cat ", dir_.Sub("out.json")))}});
    auto jobs = a->ListJobs();
    ASSERT_FALSE(jobs.ok());
    EXPECT_TRUE(absl::IsInternal(jobs.status())) << jobs.status();
    EXPECT_TRUE(absl::StrContains(jobs.status().message(), "list command `sh -c 'cat ")) << jobs.status();
    EXPECT_TRUE(absl::StrContains(jobs.status().message(), "` printed")) << jobs.status();
    EXPECT_TRUE(absl::StrContains(jobs.status().message(), c.want)) << jobs.status();
  }
}

TEST_F(ExecAdapterTest, CapacityMustBePositive) {
  auto a = Make({{"capacity", Sh("echo '{\"units\": 0}'")}});
  EXPECT_TRUE(absl::IsInternal(a->GetCapacity().status()));
  a = Make({{"capacity", Sh("echo '{\"units\": 4, \"speed\": -1}'")}});
  EXPECT_TRUE(absl::IsInternal(a->GetCapacity().status()));
  a = Make({{"capacity", Sh("echo '{\"units\": \"8\"}'")}});  // 64-bit integers may be strings
  auto c = a->GetCapacity();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->units, 8);
  EXPECT_EQ(c->speed, 1.0) << "speed defaults to 1";
}

TEST_F(ExecAdapterTest, ListLeavesOutFinishedJobsAndKeepsTheCommandsOrder) {
  auto a = Make({{"list", Sh(R"(echo '{"jobs": [
      {"id": "9", "state": "running", "queued_at_ms": 5, "tag": "t9", "spec": {"name": "n9", "cores": 2}},
      {"id": "3", "state": "done"}, {"id": "4", "state": "cancelled"},
      {"id": "7", "state": "held", "pinned": true, "queued_at_ms": "6"}]}')")}});
  auto jobs = a->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, "9");
  EXPECT_EQ((*jobs)[0].state, JobState::kRunning);
  EXPECT_EQ((*jobs)[0].tag, "t9");
  EXPECT_EQ((*jobs)[0].spec.cores, 2);
  EXPECT_EQ((*jobs)[1].id, "7");
  EXPECT_TRUE((*jobs)[1].pinned);
  EXPECT_EQ((*jobs)[1].queued_at_ms, 6);
}

TEST_F(ExecAdapterTest, UnsafeIdsAndTagsNeverReachACommand) {
  const std::string mark = dir_.Sub("ran");
  const std::string touch = Sh(absl::StrCat("touch ", mark, "; exit 1"));
  auto a = Make({{"hold", touch},
                 {"release", touch},
                 {"cancel", touch},
                 {"export", touch},
                 {"pin", touch},
                 {"find_by_tag", touch},
                 {"submit", touch}});
  for (const std::string& id : {std::string(), std::string("-rf"), std::string("--all"), std::string("1\0", 2)}) {
    EXPECT_TRUE(absl::IsNotFound(a->Hold(id)));
    EXPECT_TRUE(absl::IsNotFound(a->Release(id)));
    EXPECT_TRUE(absl::IsNotFound(a->Cancel(id)));
    EXPECT_TRUE(absl::IsNotFound(a->Export(id).status()));
    EXPECT_TRUE(absl::IsNotFound(a->SetPinned(id, false)));
    EXPECT_TRUE(absl::IsInvalidArgument(a->FindByTag(id).status()));
  }
  EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(JobSpec{.name = "x"}, "-t").status()));
  EXPECT_FALSE(std::filesystem::exists(mark));
}

TEST_F(ExecAdapterTest, SubmitGetsTagAndHeldOnArgvAndTheSpecAsJsonOnStdin) {
  const std::string args = dir_.Sub("args"), in = dir_.Sub("stdin");
  auto a = Make({{"submit", Sh(absl::StrCat("echo \"$1|$2\" > ", args, "; cat > ", in, "; echo '{\"id\": \"77\"}'"))},
                 {"find_by_tag", Sh("echo '{\"jobs\": []}'")}});
  JobSpec s{.name = "n\"1",
            .script = "#!/bin/sh\necho hi\n",
            .cores = 2,
            .memory_mb = 3'000'000'000'000,
            .time_limit_s = 60,
            .workdir = "/w",
            .env = {{"K", "v\tx"}},
            .duration_ms = 5,
            .cost = 0.1,
            .key = "k"};
  auto id = a->Submit(s, "mig-1", /*held=*/true);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "77");
  EXPECT_EQ(ReadFile(args), "mig-1|true\n");
  const std::string json = ReadFile(in);
  EXPECT_EQ(json, *JobSpecToJson(s));
  EXPECT_TRUE(absl::StrContains(json, "\"memory_mb\":3000000000000")) << "64-bit integers are JSON numbers";
  EXPECT_TRUE(absl::StrContains(json, "\"cost\":0.1,")) << json;
  EXPECT_TRUE(absl::StrContains(json, R"("name":"n\"1")")) << json;
  EXPECT_TRUE(absl::StrContains(json, R"("K":"v\tx")")) << json;

  ASSERT_TRUE(a->Submit(s, "", /*held=*/false).ok());
  EXPECT_EQ(ReadFile(args), "|false\n") << "untagged: an empty argument";
}

TEST_F(ExecAdapterTest, TaggedSubmitReturnsTheJobFindByTagKnowsWithoutSubmitting) {
  const std::string mark = dir_.Sub("submitted");
  auto a = Make({{"submit", Sh(absl::StrCat("touch ", mark, "; echo '{\"id\": \"new\"}'"))},
                 {"find_by_tag", Sh(R"(echo "{\"jobs\": [{\"id\": \"5\", \"state\": \"done\", \"tag\": \"$1\"}]}")")}});
  auto id = a->Submit(JobSpec{.name = "x"}, "mig-9");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "5");
  EXPECT_FALSE(std::filesystem::exists(mark));
}

TEST_F(ExecAdapterTest, ConcurrentSubmitsOfOneTagRunSubmitOnce) {
  // A submit command that does not look the tag up itself, and is slow
  // enough that unserialized look-ups would all see "no job yet".
  const std::string f = dir_.Sub("queued");
  auto a = Make({{"submit", Script("submit", absl::StrCat(R"(sleep 0.05; echo $$ >> )", f, R"(
echo "{\"id\": \"$$\"}"
)"))},
                 {"find_by_tag", Script("find", absl::StrCat("f=", f, R"(
if [ -s "$f" ]; then
  echo "{\"jobs\": [{\"id\": \"$(head -n1 "$f")\", \"state\": \"held\", \"tag\": \"$1\"}]}"
else
  echo '{"jobs": []}'
fi
)"))}});
  std::vector<std::thread> threads;
  std::vector<std::string> ids(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto id = a->Submit(JobSpec{.name = "c"}, "mig-same", /*held=*/true);
      ids[t] = id.ok() ? *id : id.status().ToString();
    });
  }
  for (auto& th : threads) th.join();
  const std::string queued = ReadFile(f);
  EXPECT_EQ(std::count(queued.begin(), queued.end(), '\n'), 1) << queued;
  for (const auto& id : ids) EXPECT_EQ(id, std::string(absl::StripAsciiWhitespace(queued)));
}

TEST_F(ExecAdapterTest, FindByTagKeepsOnlyExactMatches) {
  auto a = Make({{"find_by_tag", Sh(R"(echo '{"jobs": [{"id": "1", "state": "held", "tag": "t"},
                                             {"id": "2", "state": "held", "tag": "t-2"}]}')")}});
  auto jobs = a->FindByTag("t");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].id, "1");
}

TEST_F(ExecAdapterTest, BadSpecIsRefusedBeforeAnyCommand) {
  const std::string mark = dir_.Sub("ran");
  auto a = Make({{"submit", Sh(absl::StrCat("touch ", mark))}, {"find_by_tag", Sh(absl::StrCat("touch ", mark))}});
  EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(JobSpec{.script = "\xff\xfe"}, "t").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(JobSpec{.env = {{"K", "\xc0\x80"}}}, "t").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(JobSpec{.cost = std::nan("")}, "t").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(JobSpec{.cores = 0}, "t").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(JobSpec{.memory_mb = -1}, "t").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(a->Submit(JobSpec{.cost = -2}, "").status()));
  // CheckSpec, which a receiving site asks before submitting anything,
  // refuses the same specs.
  EXPECT_TRUE(absl::IsInvalidArgument(a->CheckSpec(JobSpec{.script = "\xff\xfe"})));
  EXPECT_TRUE(absl::IsInvalidArgument(a->CheckSpec(JobSpec{.cores = 0})));
  EXPECT_TRUE(a->CheckSpec(JobSpec{.script = "#!/bin/sh\n"}).ok());
  EXPECT_FALSE(std::filesystem::exists(mark));
}

TEST_F(ExecAdapterTest, SpecWithControlCharactersRoundTripsThroughJson) {
  JobSpec s{.name =
                "a\x01"
                "b",
            .script = std::string("nul\0in", 6) + "\x7f",
            .env = {{"\xe5\xa4\xa7", "\xf0\x9f\x99\x82"}}};
  std::ofstream(dir_.Sub("spec.json")) << *JobSpecToJson(s);
  auto a = Make({{"export", Sh(absl::StrCat("cat ", dir_.Sub("spec.json")))}});
  auto got = a->Export("1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, s);
}

TEST_F(ExecAdapterTest, LargeSpecAndLargeOutputPassWithoutDeadlock) {
  // Both far beyond a pipe's buffer, and the command writes before it
  // reads: stdin must be written while stdout is read, or the two processes
  // wait for each other for ever.
  const std::string in = dir_.Sub("stdin");
  auto a =
      Make({{"submit",
             Sh(absl::StrCat("head -c 3000000 /dev/zero | tr '\\0' ' '; cat > ", in, "; echo '{\"id\": \"big\"}'"))}});
  JobSpec s{.name = "big", .script = std::string(3'000'000, 'x')};
  auto id = a->Submit(s, "");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "big");
  EXPECT_EQ(std::filesystem::file_size(in), JobSpecToJson(s)->size());
}

TEST_F(ExecAdapterTest, CommandThatDoesNotReadItsInputIsFine) {
  // Writing to a pipe nobody reads raises SIGPIPE, which would end this
  // test binary (and a daemon that did not ignore it).
  auto a = Make({{"submit", Sh("echo '{\"id\": \"9\"}'")}});
  auto id = a->Submit(JobSpec{.name = "big", .script = std::string(3'000'000, 'x')}, "");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "9");
}

// ---- exec_sched itself ----

TEST(ExecSchedTest, ShutdownKillsRunningJobs) {
  TempDir dir;
  const std::string pid_file = dir.Sub("job.pid");
  auto a = ExecAdapter::Create({.state_dir = dir.Sub("daemon"), .options = {{"command", SchedCommand(dir.Sub("q"))}}});
  ASSERT_TRUE(a.ok()) << a.status();
  JobSpec s{.name = "long", .script = absl::StrCat("echo $$ > ", pid_file, "\nexec sleep 600\n"), .cores = 1};
  ASSERT_TRUE((*a)->Submit(s, "long").ok());
  int pid = 0;
  for (int i = 0; i < 100 && !absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(pid_file)), &pid); ++i) {
    absl::SleepFor(absl::Milliseconds(50));
    (void)(*a)->ListJobs();
  }
  ASSERT_GT(pid, 0) << "the job never started";
  EXPECT_TRUE(ProcessLives(pid));
  auto r = RunCommand({.argv = SchedShutdown(dir.Sub("q")), .timeout = absl::Seconds(20)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->err;
  for (int i = 0; i < 50 && ProcessLives(pid); ++i) absl::SleepFor(absl::Milliseconds(20));
  EXPECT_FALSE(ProcessLives(pid));
  if (ProcessLives(pid)) kill(pid, SIGKILL);
}

TEST(ExecSchedTest, JobsRunWithTheirEnvironmentAndWorkdir) {
  TempDir dir;
  const std::string work = dir.Sub("work");
  std::filesystem::create_directories(work);
  auto a = ExecAdapter::Create({.state_dir = dir.Sub("daemon"), .options = {{"command", SchedCommand(dir.Sub("q"))}}});
  ASSERT_TRUE(a.ok()) << a.status();
  JobSpec s{.name = "env",
            .script = "#!/bin/sh\necho \"$GREETING\" > result\n",
            .cores = 1,
            .workdir = work,
            .env = {{"GREETING", "hello there"}}};
  ASSERT_TRUE((*a)->Submit(s, "env").ok());
  std::string state;
  for (int i = 0; i < 100; ++i) {
    auto jobs = (*a)->FindByTag("env");
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    state = JobStateName((*jobs)[0].state);
    if (state == "done") break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(state, "done");
  EXPECT_EQ(ReadFile(work + "/result"), "hello there\n");
}

// Issue 12, row 7 (adapter side): exit 12 from submit is the scheduler's
// refusal of the spec, final (InvalidArgument); other failures may be retried.
TEST_F(ExecAdapterTest, Row7_SubmitExitTwelveIsAFinalRefusal) {
  auto a = Make({{"submit", Sh("cat >/dev/null; echo 'no queue gpu' >&2; exit 12")},
                 {"find_by_tag", Sh("echo '{\"jobs\": []}'")}});
  JobSpec s{.name = "j", .script = "true", .key = "k"};
  auto id = a->Submit(s, "t", false);
  EXPECT_TRUE(absl::IsInvalidArgument(id.status())) << id.status();
  EXPECT_TRUE(absl::StrContains(id.status().message(), "no queue gpu")) << id.status();
  auto b = Make({{"submit", Sh("cat >/dev/null; exit 1")}, {"find_by_tag", Sh("echo '{\"jobs\": []}'")}});
  EXPECT_TRUE(absl::IsUnavailable(b->Submit(s, "t", false).status()));
  // 12 means nothing special for an operation on one job.
  auto c = Make({{"hold", Sh("exit 12")}});
  EXPECT_TRUE(absl::IsUnavailable(c->Hold("1")));
}

// Issue 12, row 1: commands get a fixed environment, the daemon's only by
// name (pass_env), and a spec's variables only inside the JSON.
TEST_F(ExecAdapterTest, Row1_CommandsRunWithAFixedEnvironment) {
  const std::string out = dir_.Sub("env.txt");
  setenv("HYPERFED_TEST_SECRET", "leaked", 1);
  setenv("HYPERFED_TEST_PASSED", "passed", 1);
  const std::string old_path = getenv("PATH") ? getenv("PATH") : "";
  setenv("PATH", (dir_.path() + ":" + old_path).c_str(), 1);
  std::ofstream(dir_.Sub("env")) << "#!/bin/sh\necho planted > " << dir_.Sub("planted") << "\n";
  std::filesystem::permissions(dir_.Sub("env"), std::filesystem::perms::owner_all);
  auto a = Make({{"capacity", Sh("env > " + out + "; echo '{\"units\": 1}'")}});
  auto cap = a->GetCapacity();
  auto passing = ExecAdapter::Create({.options = {{"command", Sh("env > " + out + ".2; echo '{\"units\": 1}'")},
                                                  {"pass_env", "HYPERFED_TEST_PASSED"}}});
  ASSERT_TRUE(passing.ok()) << passing.status();
  auto cap2 = (*passing)->GetCapacity();
  auto bare = Make({{"capacity", "env"}});  // looked up in the fixed PATH, not the daemon's
  (void)bare->GetCapacity();
  setenv("PATH", old_path.c_str(), 1);
  unsetenv("HYPERFED_TEST_SECRET");
  unsetenv("HYPERFED_TEST_PASSED");
  ASSERT_TRUE(cap.ok()) << cap.status();
  ASSERT_TRUE(cap2.ok()) << cap2.status();
  const std::string env = ReadFile(out);
  EXPECT_FALSE(absl::StrContains(env, "HYPERFED_TEST_SECRET")) << env;
  EXPECT_TRUE(absl::StrContains(env, absl::StrCat("PATH=", kExecSafePath, "\n"))) << env;
  EXPECT_TRUE(absl::StrContains(ReadFile(out + ".2"), "HYPERFED_TEST_PASSED=passed"));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("planted"))) << "a command was looked up in the daemon's PATH";
}

// The owner travels through the exec JSON both ways.
TEST_F(ExecAdapterTest, OwnerIsInTheSpecJson) {
  JobSpec s{.name = "j", .script = "true", .key = "k", .owner = "alice"};
  auto json = JobSpecToJson(s);
  ASSERT_TRUE(json.ok());
  EXPECT_TRUE(absl::StrContains(*json, "\"owner\":\"alice\"")) << *json;
}

}  // namespace
}  // namespace hyperfed::scheduler::testing
