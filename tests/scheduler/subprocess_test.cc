// The runner both command-driven adapters (exec, slurm) use, on real child
// processes.

#include "daemon/scheduler/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/scheduler/temp_dir.h"

namespace hyperfed::scheduler::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

bool ProcessGone(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    if (kill(pid, 0) != 0) return true;
    // A zombie still answers kill(0); its state in /proc says Z.
    if (absl::StrContains(Slurp(absl::StrCat("/proc/", pid, "/stat")), ") Z ")) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

TEST(RunCommandTest, CapturesOutputsExitCodeAndStdin) {
  auto r = RunCommand({.argv = {"sh", "-c", "cat; echo oops >&2; exit 3"}, .stdin_text = "line 1\nline 2"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out, "line 1\nline 2");
  EXPECT_EQ(r->err, "oops\n");
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->term_signal, 0);
  const absl::Status st = CommandFailure({"sh", "-c", "x"}, *r);
  EXPECT_TRUE(absl::IsUnavailable(st));
  EXPECT_TRUE(absl::StrContains(st.message(), "`sh -c x` exited with 3: oops")) << st;
  auto missing = RunCommand({.argv = {"/no/such/command"}});
  EXPECT_TRUE(absl::IsUnavailable(missing.status())) << missing.status();
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "/no/such/command"));
}

TEST(RunCommandTest, SignalledCommandHasTheSignalAndNoExitCode) {
  auto r = RunCommand({.argv = {"sh", "-c", "echo bye >&2; kill -TERM $$"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, -1);
  EXPECT_EQ(r->term_signal, SIGTERM);
  const absl::Status st = CommandFailure({"sh", "-c", "x"}, *r);
  EXPECT_TRUE(absl::IsUnavailable(st));
  EXPECT_TRUE(absl::StrContains(st.message(), "`sh -c x` was killed by signal 15: bye")) << st;
}

TEST(RunCommandTest, EnvironmentOverridesGoOnTopOfOursAndCwdIsApplied) {
  TempDir dir;
  setenv("HF_SUBPROCESS_KEPT", "kept", 1);
  setenv("HF_SUBPROCESS_REPLACED", "old", 1);
  auto r = RunCommand({.argv = {"sh", "-c",
                                "printf '%s|%s|%s|' \"$HF_SUBPROCESS_KEPT\" \"$HF_SUBPROCESS_REPLACED\" "
                                "\"$HF_X\"; pwd; env | grep -c '^HF_SUBPROCESS_REPLACED='"},
                       .env = {{"HF_SUBPROCESS_REPLACED", "new"}, {"HF_X", "a b"}},
                       .cwd = dir.path()});
  unsetenv("HF_SUBPROCESS_KEPT");
  unsetenv("HF_SUBPROCESS_REPLACED");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out, absl::StrCat("kept|new|a b|", dir.path(), "\n1\n")) << "one value per variable, the override's";

  auto bad = RunCommand({.argv = {"true"}, .cwd = dir.Sub("missing")});
  EXPECT_TRUE(absl::IsUnavailable(bad.status())) << bad.status();
  EXPECT_TRUE(absl::StrContains(bad.status().message(), dir.Sub("missing"))) << bad.status();
}

TEST(RunCommandTest, PathOverrideDecidesWhereTheCommandIsFound) {
  TempDir dir;
  const std::string tool = dir.Sub("hf-subprocess-probe");
  {
    std::ofstream f(tool);
    f << "#!/bin/sh\necho found-in-override\n";
  }
  ASSERT_EQ(chmod(tool.c_str(), 0755), 0);
  auto r = RunCommand({.argv = {"hf-subprocess-probe"}, .env = {{"PATH", "/nonexistent:" + dir.path()}}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out, "found-in-override\n");
  auto missing = RunCommand({.argv = {"sh", "-c", "true"}, .env = {{"PATH", dir.path()}}});
  EXPECT_TRUE(absl::IsUnavailable(missing.status())) << "sh is not in the overriding PATH: " << missing.status();
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "not found in PATH=" + dir.path())) << missing.status();
}

TEST(RunCommandTest, OutputCapIsAParameterAndUnlimitedKeepsEverything) {
  auto capped = RunCommand({.argv = {"head", "-c", "100000", "/dev/zero"}, .max_output = 1000});
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_EQ(capped->out.size(), 1000u);
  EXPECT_TRUE(capped->out_truncated);
  // Past the default cap of 64 MiB, as `squeue --json` on a big cluster is.
  const size_t big = size_t{65} << 20;
  auto all = RunCommand({.argv = {"head", "-c", std::to_string(big), "/dev/zero"},
                         .timeout = absl::Seconds(60),
                         .max_output = kUnlimitedOutput});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->out.size(), big);
  EXPECT_FALSE(all->out_truncated);
}

TEST(RunCommandTest, TimeoutKillsTheWholeProcessGroup) {
  TempDir dir;
  const std::string pids = dir.Sub("pids");
  const absl::Time start = absl::Now();
  auto r = RunCommand({.argv = {"sh", "-c", "sleep 30 & echo $! > " + pids + "; echo $$ >> " + pids + "; wait"},
                       .timeout = absl::Milliseconds(500)});
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "sleep 30")) << r.status();
  EXPECT_LT(took, absl::Seconds(5));
  std::ifstream f(pids);
  pid_t background = 0, shell = 0;
  f >> background >> shell;
  ASSERT_GT(background, 0);
  ASSERT_GT(shell, 0);
  EXPECT_TRUE(ProcessGone(shell)) << "the command " << shell << " is still there";
  EXPECT_TRUE(ProcessGone(background)) << "what it started, " << background << ", is still there";
}

TEST(RunCommandTest, NoDescriptorBeyondStderrIsInherited) {
  const int fd = open("/dev/null", O_RDONLY);  // no O_CLOEXEC on purpose
  ASSERT_GE(fd, 0);
  ASSERT_EQ(dup2(fd, 37), 37);
  auto r = RunCommand({.argv = {"sh", "-c", "if [ -e /proc/$$/fd/37 ]; then echo open; else echo closed; fi"}});
  close(37);
  close(fd);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out, "closed\n");
}

TEST(RunCommandTest, ChildReapedElsewhereIsAnErrorNotASpinOrAKill) {
  // With SIGCHLD ignored the kernel reaps children itself, so waitpid fails
  // with ECHILD: the runner must give up at once rather than loop until its
  // deadline and then signal a PID that may be someone else's.
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGCHLD, &ignore, &old), 0);
  const absl::Time start = absl::Now();
  auto r = RunCommand({.argv = {"true"}, .timeout = absl::Seconds(20)});
  const absl::Duration took = absl::Now() - start;
  sigaction(SIGCHLD, &old, nullptr);
  EXPECT_TRUE(absl::IsInternal(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "waiting for `true` failed")) << r.status();
  EXPECT_LT(took, absl::Seconds(5));
}

TEST(RunCommandTest, EmptyCommandIsInvalid) { EXPECT_TRUE(absl::IsInvalidArgument(RunCommand({}).status())); }

TEST(CommandLineTest, QuotesAndCutsLongArguments) {
  const std::string long_arg(200, 'x');
  const std::string shown = CommandLine({"sbatch", "a b", long_arg});
  EXPECT_TRUE(absl::StartsWith(shown, "sbatch 'a b' xxx")) << shown;
  EXPECT_TRUE(absl::EndsWith(shown, "x...")) << shown;
  EXPECT_LT(shown.size(), 100u);
}

}  // namespace
}  // namespace hyperfed::scheduler::testing
