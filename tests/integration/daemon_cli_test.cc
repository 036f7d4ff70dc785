// hyperfedd's command line (daemon/main.cc): `--config FILE [--check]`,
// usage errors as "hyperfedd: ..." plus the usage line, exit status 2; a
// daemon that cannot start says why in one line and exits non-zero (issue
// 33).

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

constexpr char kUsageLine[] = "usage: hyperfedd --config FILE [--check] | --settings\n";

TEST(DaemonCliTest, UsageErrorsNameTheProblemAndExitTwo) {
  const std::string cases[][2] = {
      {"", "hyperfedd: --config FILE is required\n"},
      {"--check", "hyperfedd: --config FILE is required\n"},
      {"--frobnicate", "hyperfedd: unknown argument '--frobnicate'\n"},
      {"--config /nonexistent/site.yaml extra", "hyperfedd: unknown argument 'extra'\n"},
      {"--config", "hyperfedd: --config"},
  };
  for (const auto& c : cases) {
    Out o = Shell(absl::StrCat(HyperfeddPath(), " ", c[0]));
    EXPECT_EQ(o.code, 2) << c[0] << ": " << o.text;
    EXPECT_EQ(o.text.rfind(c[1], 0), 0u) << c[0] << ": " << o.text;
    EXPECT_NE(o.text.find(kUsageLine), std::string::npos) << c[0] << ": " << o.text;
    EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 2) << c[0] << ": " << o.text;
  }
}

TEST(DaemonCliTest, HelpPrintsTheUsageAndExitsZero) {
  for (const char* flag : {"--help", "-h"}) {
    Out o = Shell(absl::StrCat(HyperfeddPath(), " ", flag));
    EXPECT_EQ(o.code, 0) << o.text;
    EXPECT_EQ(o.text, kUsageLine);
  }
}

// The reference table of docs/operations.md ("Every setting"), with no
// config needed.
TEST(DaemonCliTest, SettingsPrintsTheReferenceTableAndExitsZero) {
  Out o = Shell(absl::StrCat(HyperfeddPath(), " --settings"));
  EXPECT_EQ(o.code, 0) << o.text;
  EXPECT_EQ(o.text.rfind("| key | value | default | on SIGHUP | what it sets |\n", 0), 0u) << o.text;
  EXPECT_NE(o.text.find("| `balancer.interval` | a duration | `30s` | at once |"), std::string::npos) << o.text;
}

TEST(DaemonCliTest, CheckTakesConfigInEitherSpelling) {
  char dir[] = "/tmp/hyperfedd-cli-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/site.yaml";
  std::ofstream(path) << "site: {id: site-a, label: 0, listen: \"127.0.0.1:7001\"}\n"
                      << "roster:\n"
                      << "  - {id: site-a, label: 0, endpoint: \"127.0.0.1:7001\"}\n"
                      << "state_dir: state\n"
                      << "security: {insecure: true}\n";
  for (const std::string& args :
       {absl::StrCat("--config ", path, " --check"), absl::StrCat("--check --config=", path)}) {
    Out o = Shell(absl::StrCat(HyperfeddPath(), " ", args));
    EXPECT_EQ(o.code, 0) << args << ": " << o.text;
    EXPECT_NE(o.text.find(path + ": OK (site site-a"), std::string::npos) << args << ": " << o.text;
  }
  std::remove(path.c_str());
  rmdir(dir);
}

// config/examples/exec-demo.yaml with one line changed: the findings of
// issue 33 (2026-11-26). --check said OK, and the start died of SIGSEGV
// with no word.
TEST(DaemonCliTest, BadAdapterOptionFailsCheckAndStartNamingFileLineAndKey) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string example = ReadFile(SourceDir() + "/config/examples/exec-demo.yaml");
  ASSERT_NE(example.find("    timeout_ms: \"10000\"\n"), std::string::npos);
  const int line = 26;  // timeout_ms's
  ASSERT_EQ(std::count(example.begin(), example.begin() + example.find("timeout_ms"), '\n'), line - 1);
  struct Case {
    std::string replacement;
    std::string key;
    int line;
    std::string says;
  };
  const Case cases[] = {
      {"    timeout_ms: \"ten seconds\"\n", "timeout_ms", line,
       "scheduler option \"timeout_ms\": want an integer in [1, "},
      {"    timeout_ms: \"10000\"\n    bogus_option: \"1\"\n", "bogus_option", line + 1,
       "scheduler option \"bogus_option\" is unknown to the exec adapter"},
  };
  for (const Case& c : cases) {
    const std::string path = dir.path() + "/exec-demo.yaml";
    std::string text = absl::StrReplaceAll(
        example, {{"    timeout_ms: \"10000\"\n", c.replacement}, {"./state/exec-demo", dir.path() + "/state"}});
    std::ofstream(path) << text;
    const std::string want =
        absl::StrCat("hyperfedd: ", path, ":", c.line, ": scheduler.options.", c.key, ": ", c.says);
    for (const std::string& args : {absl::StrCat("--config ", path, " --check"), absl::StrCat("--config ", path)}) {
      Out o = RunDaemon(args);
      EXPECT_EQ(o.code, 2) << args << ": " << o.text;
      EXPECT_EQ(o.text.rfind(want, 0), 0u) << args << ": " << o.text;
      EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << args << ": " << o.text;
    }
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/state")) << c.key << ": nothing made";
  }
}

// Every way Create and Start can fail: one line saying why, exit status 2
// for what --check finds too (the config's fault), 1 for what only a start
// finds.
TEST(DaemonCliTest, StartFailuresSayWhyInOneLineAndExitNonZero) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const int free_port = Listener().port();  // closed again: free
  // An unreadable state_dir: the test runs as root, for whom no mode makes
  // a folder unreadable, so the state_dir lies under a regular file.
  {
    std::ofstream(dir.path() + "/file") << "not a folder\n";
    const std::string state = dir.path() + "/file/state";
    const std::string path = SiteConfig(dir.path(), free_port, state);
    for (const std::string& args : {absl::StrCat("--config ", path, " --check"), absl::StrCat("--config ", path)}) {
      Out o = RunDaemon(args);
      EXPECT_EQ(o.code, 2) << args << ": " << o.text;
      EXPECT_EQ(o.text, absl::StrCat("hyperfedd: state_dir ", state, ": \"", state, "\": Not a directory\n")) << args;
    }
  }
  // A journal that cannot be opened (a folder in its place): only a start
  // finds it. Create failed, and destroying the half-made daemon crashed.
  {
    const std::string state = dir.path() + "/journal-folder";
    std::filesystem::create_directories(state + "/journal.db");
    std::filesystem::permissions(state, std::filesystem::perms::owner_all);
    const std::string path = SiteConfig(dir.path(), free_port, state);
    Out o = RunDaemon(absl::StrCat("--config ", path, " --check"));
    EXPECT_EQ(o.code, 0) << o.text;
    o = RunDaemon(absl::StrCat("--config ", path));
    EXPECT_EQ(o.code, 1) << o.text;
    EXPECT_EQ(LastLine(o.text).rfind(absl::StrCat("hyperfedd: journal: cannot create ", state, "/journal.db"), 0), 0u)
        << o.text;
    EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << o.text;
  }
  // The gRPC port in use.
  {
    Listener taken;
    ASSERT_GT(taken.port(), 0);
    const std::string path = SiteConfig(dir.path(), taken.port(), dir.path() + "/state-port");
    Out o = RunDaemon(absl::StrCat("--config ", path));
    EXPECT_EQ(o.code, 1) << o.text;
    EXPECT_EQ(LastLine(o.text), absl::StrCat("hyperfedd: cannot listen on 127.0.0.1:", taken.port(), " (in use?)"))
        << o.text;
    EXPECT_FALSE(absl::StrContains(o.text, "stopped")) << o.text;
  }
  // The metrics port in use.
  {
    Listener taken;
    ASSERT_GT(taken.port(), 0);
    const std::string listen = absl::StrCat("127.0.0.1:", taken.port());
    const std::string path = SiteConfig(dir.path(), free_port, dir.path() + "/state-metrics", "", listen);
    Out o = RunDaemon(absl::StrCat("--config ", path));
    EXPECT_EQ(o.code, 1) << o.text;
    EXPECT_EQ(LastLine(o.text), absl::StrCat("hyperfedd: metrics endpoint ", listen, ": cannot listen (in use?)"))
        << o.text;
    EXPECT_FALSE(absl::StrContains(o.text, "stopped")) << o.text;
  }
}

// A Slurm whose controller does not answer does not stop a start (it may
// come up after the daemon): the daemon runs, and its log says so once.
// The controller is a real one's absence: slurm.conf names a port no one
// listens on.
TEST(DaemonCliTest, SchedulerThatDoesNotAnswerIsSaidOnceAndTheDaemonRuns) {
  if (access("/usr/bin/squeue", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/squeue (scripts/setup installs Slurm)";
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const int nobody = Listener().port();  // closed again: no one listens
  std::ofstream(dir.path() + "/slurm.conf") << "ClusterName=nobody\nSlurmctldHost=localhost(127.0.0.1)\n"
                                            << "SlurmctldPort=" << nobody << "\nAuthType=auth/none\n"
                                            << "NodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n";
  const std::string path =
      SiteConfig(dir.path(), Listener().port(), dir.path() + "/state",
                 absl::StrCat("scheduler:\n  adapter: slurm\n  options:\n    slurm_conf: ", dir.path(),
                              "/slurm.conf\n    timeout: 3s\n"
                              "balancer: {heartbeat_interval: 300ms}\n"));
  ASSERT_EQ(RunDaemon(absl::StrCat("--config ", path, " --check")).code, 0);
  DaemonProcess d(path, dir.path() + "/log");
  const std::string said = "the scheduler does not answer (";
  EXPECT_TRUE(d.WaitLog(said)) << d.Log();
  std::this_thread::sleep_for(std::chrono::seconds(4));  // a heartbeat or two more: not said again
  EXPECT_TRUE(d.Running()) << d.Log();
  EXPECT_EQ(d.Stop(), 0) << d.Log();
  const std::string text = d.Log();
  size_t n = 0;
  for (size_t at = text.find(said); at != std::string::npos; at = text.find(said, at + 1)) ++n;
  EXPECT_EQ(n, 1u) << text;
}

// Issue 33: started twice with one config, both processes served one port
// (gRPC's SO_REUSEPORT) over one state_dir. The second is refused, naming
// the first; once the first has stopped, a start works again.
TEST(DaemonCliTest, SecondDaemonOnOneStateDirIsRefusedNamingTheFirst) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string state = dir.path() + "/state";
  const std::string path = SiteConfig(dir.path(), Listener().port(), state);
  {
    DaemonProcess first(path, dir.path() + "/first.log");
    ASSERT_TRUE(first.WaitLog("serving on port")) << first.Log();
    Out o = RunDaemon(absl::StrCat("--config ", path));
    EXPECT_EQ(o.code, 1) << o.text;
    EXPECT_EQ(o.text, absl::StrCat("hyperfedd: state_dir ", state, " is in use by another hyperfedd (PID ", first.pid(),
                                   "): one daemon per state_dir; stop that one first\n"));
    EXPECT_TRUE(first.Running()) << first.Log();
    EXPECT_EQ(first.Stop(), 0) << first.Log();
  }
  DaemonProcess again(path, dir.path() + "/again.log");
  EXPECT_TRUE(again.WaitLog("serving on port")) << again.Log();
  EXPECT_EQ(again.Stop(), 0) << again.Log();
}

// A port another process holds with SO_REUSEPORT (as hyperfedd itself did,
// gRPC's and cpp-httplib's default) is in use for hyperfedd.
TEST(DaemonCliTest, PortsSharedWithReusePortAreInUse) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  {
    Listener taken(/*reuse_port=*/true);
    ASSERT_GT(taken.port(), 0);
    const std::string path = SiteConfig(dir.path(), taken.port(), dir.path() + "/state-grpc");
    Out o = RunDaemon(absl::StrCat("--config ", path));
    EXPECT_EQ(o.code, 1) << o.text;
    EXPECT_EQ(LastLine(o.text), absl::StrCat("hyperfedd: cannot listen on 127.0.0.1:", taken.port(), " (in use?)"))
        << o.text;
  }
  {
    Listener taken(/*reuse_port=*/true);
    ASSERT_GT(taken.port(), 0);
    const std::string listen = absl::StrCat("127.0.0.1:", taken.port());
    const std::string path = SiteConfig(dir.path(), Listener().port(), dir.path() + "/state-metrics", "", listen);
    Out o = RunDaemon(absl::StrCat("--config ", path));
    EXPECT_EQ(o.code, 1) << o.text;
    EXPECT_EQ(LastLine(o.text), absl::StrCat("hyperfedd: metrics endpoint ", listen, ": cannot listen (in use?)"))
        << o.text;
  }
}

}  // namespace
}  // namespace hyperfed::testing
