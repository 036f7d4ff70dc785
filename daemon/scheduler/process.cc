#include "daemon/scheduler/process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace hyperfed::scheduler {
namespace {

// Closes the descriptors it holds on every way out.
struct Fds {
  std::vector<int> fds;
  ~Fds() {
    for (int fd : fds)
      if (fd >= 0) close(fd);
  }
  void Close(int& fd) {
    if (fd < 0) return;
    close(fd);
    for (int& f : fds)
      if (f == fd) f = -1;
    fd = -1;
  }
};

std::string Errno(const char* what) { return absl::StrCat(what, ": ", strerror(errno)); }

}  // namespace

std::string CommandLine(const std::vector<std::string>& argv) {
  std::vector<std::string> shown;
  for (const auto& a : argv) shown.push_back(a.size() > 80 ? a.substr(0, 77) + "..." : a);
  return absl::StrJoin(shown, " ");
}

absl::Status CommandFailure(const std::vector<std::string>& argv, const CommandResult& r) {
  std::string err(absl::StripAsciiWhitespace(r.err));
  if (err.size() > 2000) err = err.substr(0, 2000) + "...";
  return absl::UnavailableError(
      absl::StrCat("`", CommandLine(argv), "` exited with ", r.exit_code, ": ", err.empty() ? "(no stderr)" : err));
}

absl::StatusOr<CommandResult> RunCommand(const CommandSpec& spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("RunCommand: empty argv");
  const std::string shown = CommandLine(spec.argv);
  Fds fds;
  // stdin from an in-memory file: the child reads it at its own pace and
  // nothing here can block on (or get SIGPIPE from) a child that stops
  // reading.
  int in_fd = memfd_create("hyperfed-stdin", MFD_CLOEXEC);
  if (in_fd < 0) return absl::UnavailableError(absl::StrCat("cannot run `", shown, "`: ", Errno("memfd_create")));
  fds.fds.push_back(in_fd);
  for (size_t off = 0; off < spec.stdin_text.size();) {
    ssize_t n = write(in_fd, spec.stdin_text.data() + off, spec.stdin_text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrCat("cannot run `", shown, "`: ", Errno("write stdin")));
    off += static_cast<size_t>(n);
  }
  lseek(in_fd, 0, SEEK_SET);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0)
    return absl::UnavailableError(absl::StrCat("cannot run `", shown, "`: ", Errno("pipe")));
  fds.fds.insert(fds.fds.end(), {out_pipe[0], out_pipe[1]});
  if (pipe2(err_pipe, O_CLOEXEC) != 0)
    return absl::UnavailableError(absl::StrCat("cannot run `", shown, "`: ", Errno("pipe")));
  fds.fds.insert(fds.fds.end(), {err_pipe[0], err_pipe[1]});

  // The environment: ours with the overrides on top.
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = strchr(*e, '=');
    if (eq) env[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  for (const auto& [k, v] : spec.env) env[k] = v;
  std::vector<std::string> env_strs;
  for (const auto& [k, v] : env) env_strs.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_fd, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
  // The child starts with default signal handling and an empty mask, whatever
  // this process changed (gRPC ignores SIGPIPE, for instance).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot run `", shown, "`: ", strerror(rc),
                                               spec.cwd.empty() ? "" : absl::StrCat(" (in ", spec.cwd, ")")));
  }
  fds.Close(in_fd);
  fds.Close(out_pipe[1]);
  fds.Close(err_pipe[1]);

  CommandResult result;
  const absl::Time deadline = absl::Now() + spec.timeout;
  int out_fd = out_pipe[0], err_fd = err_pipe[0];
  bool timed_out = false;
  char buf[65536];
  while (out_fd >= 0 || err_fd >= 0) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      timed_out = true;
      break;
    }
    pollfd p[2];
    int n = 0;
    if (out_fd >= 0) p[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) p[n++] = {err_fd, POLLIN, 0};
    const int ms = static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1000));
    int ready = poll(p, n, ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    for (int i = 0; i < n; ++i) {
      if (p[i].revents == 0) continue;
      ssize_t got = read(p[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        if (p[i].fd == out_fd) fds.Close(out_fd);
        else fds.Close(err_fd);
        continue;
      }
      (p[i].fd == out_fd ? result.out : result.err).append(buf, static_cast<size_t>(got));
    }
  }
  // Both pipes closed: the child is exiting. Still bound by the deadline:
  // a child that closed its outputs but keeps running is killed too.
  int status = 0;
  for (;;) {
    if (timed_out) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return absl::DeadlineExceededError(absl::StrCat("`", shown, "` did not finish within ",
                                                      absl::FormatDuration(spec.timeout), " and was killed"));
    }
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return absl::UnavailableError(absl::StrCat("`", shown, "`: ", Errno("waitpid")));
    if (absl::Now() >= deadline) {
      timed_out = true;
      continue;
    }
    usleep(1000);
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace hyperfed::scheduler
