#include "daemon/scheduler/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace hyperfed::scheduler {

absl::StatusOr<std::vector<std::string>> SplitCommandLine(const std::string& line) {
  std::vector<std::string> argv;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) argv.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const size_t end = line.find('\'', i + 1);
      if (end == std::string::npos) return absl::InvalidArgumentError("unterminated ' quote");
      word.append(line, i + 1, end - i - 1);
      in_word = true;
      i = end;
    } else if (c == '"') {
      in_word = true;
      for (++i;; ++i) {
        if (i >= line.size()) return absl::InvalidArgumentError("unterminated \" quote");
        if (line[i] == '"') break;
        if (line[i] == '\\' && i + 1 < line.size() && (line[i + 1] == '"' || line[i + 1] == '\\')) ++i;
        word += line[i];
      }
    } else if (c == '\\') {
      if (i + 1 >= line.size()) return absl::InvalidArgumentError("trailing backslash");
      word += line[++i];
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) argv.push_back(std::move(word));
  if (argv.empty()) return absl::InvalidArgumentError("empty command");
  return argv;
}

std::string QuoteCommandLine(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (const std::string& a : argv) {
    const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
      return absl::ascii_isalnum(static_cast<unsigned char>(c)) || strchr("-_./=:,+@%", c) != nullptr;
    });
    if (plain) {
      words.push_back(a);
      continue;
    }
    std::string q = "'";
    for (char c : a) {
      if (c == '\'')
        q += "'\\''";
      else
        q += c;
    }
    words.push_back(q + "'");
  }
  return absl::StrJoin(words, " ");
}

std::string CommandLine(const std::vector<std::string>& argv) {
  std::vector<std::string> shown;
  for (const std::string& a : argv) shown.push_back(a.size() > 80 ? a.substr(0, 77) + "..." : a);
  return QuoteCommandLine(shown);
}

absl::Status CommandFailure(const std::vector<std::string>& argv, const CommandResult& r) {
  std::string err(absl::StripAsciiWhitespace(r.err));
  if (err.empty()) err = "(no stderr)";
  if (r.term_signal != 0) {
    return absl::UnavailableError(
        absl::StrCat("`", CommandLine(argv), "` was killed by signal ", r.term_signal, ": ", err));
  }
  return absl::UnavailableError(absl::StrCat("`", CommandLine(argv), "` exited with ", r.exit_code, ": ", err));
}

namespace {

// Closes the fds it holds on every way out.
struct Fds {
  int in_w = -1, out_r = -1, err_r = -1, pidfd = -1;
  ~Fds() {
    for (int fd : {in_w, out_r, err_r, pidfd}) {
      if (fd >= 0) close(fd);
    }
  }
};

void CloseFd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

// write() without letting SIGPIPE kill the daemon when the command has
// closed its stdin: the signal is blocked in this thread and, if the write
// raised one, taken off the queue.
ssize_t WriteNoSigpipe(int fd, const char* data, size_t n) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t w = write(fd, data, n);
  const int saved = errno;
  if (w < 0 && saved == EPIPE) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) == -1 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return w;
}

// Reads what is there now. Returns false at end of file or on an error.
bool ReadSome(int fd, std::string* into, size_t cap, bool keep_tail, bool* truncated) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      if (keep_tail) {
        into->append(buf, static_cast<size_t>(n));
        if (into->size() > 2 * cap) into->erase(0, into->size() - cap);
      } else if (into->size() < cap) {
        const size_t take = std::min(cap - into->size(), static_cast<size_t>(n));
        into->append(buf, take);
        if (take < static_cast<size_t>(n)) *truncated = true;
      } else {
        *truncated = true;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;  // EOF or error
  }
}

// Never leaves a command running or unreaped behind an error.
void KillAndReap(pid_t pid) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);  // in case it left its group
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) == -1 && errno == EINTR) {
  }
}

// The child's environment: ours (when inherited) with the overrides on top.
std::vector<std::string> BuildEnv(const std::map<std::string, std::string>& overrides, bool inherit) {
  std::vector<std::string> env;
  for (char** e = environ; inherit && e != nullptr && *e != nullptr; ++e) {
    const char* eq = strchr(*e, '=');
    const std::string name = eq == nullptr ? std::string(*e) : std::string(*e, static_cast<size_t>(eq - *e));
    if (!overrides.contains(name)) env.push_back(*e);
  }
  for (const auto& [k, v] : overrides) env.push_back(k + "=" + v);
  return env;
}

// posix_spawnp searches the daemon's own PATH; a PATH override must be the
// one that decides, so the search is done here for it. An empty PATH entry
// means the current directory, as in a shell.
std::string FindInPath(const std::string& name, const std::string& path) {
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    const std::string file = dir.empty() ? name : absl::StrCat(dir, "/", name);
    struct stat st;
    if (stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(file.c_str(), X_OK) == 0) return file;
  }
  return "";
}

}  // namespace

absl::StatusOr<CommandResult> RunCommand(const CommandSpec& spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("RunCommand: empty command");
  const std::string shown = CommandLine(spec.argv);
  const size_t max_output = spec.max_output == kUnlimitedOutput ? SIZE_MAX : spec.max_output;
  std::string program = spec.argv[0];
  bool search_path = program.find('/') == std::string::npos;
  if (auto it = spec.env.find("PATH"); search_path && it != spec.env.end()) {
    program = FindInPath(spec.argv[0], it->second);
    if (program.empty()) {
      return absl::UnavailableError(absl::StrCat("cannot start ", spec.argv[0], ": not found in PATH=", it->second));
    }
    search_path = false;
  }
  if (search_path && !spec.inherit_env) {
    // posix_spawnp would search this process's PATH, which the caller chose
    // not to pass on: a folder in it must not decide what runs.
    return absl::UnavailableError(absl::StrCat("cannot start ", spec.argv[0], ": no PATH in its environment"));
  }
  const absl::Time deadline = absl::Now() + spec.timeout;
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return absl::UnavailableError(absl::StrCat("pipe: ", strerror(errno)));
  if (pipe2(out, O_CLOEXEC) != 0) {
    const int e = errno;
    close(in[0]), close(in[1]);
    return absl::UnavailableError(absl::StrCat("pipe: ", strerror(e)));
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    return absl::UnavailableError(absl::StrCat("pipe: ", strerror(e)));
  }

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  // Whatever the daemon has open (sockets, the journal) is none of the
  // command's business, even where a library forgot O_CLOEXEC.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, spec.cwd.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // A group of its own, so that a timeout kills whatever it started too.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  // The daemon ignores SIGPIPE; a command should not inherit that.
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2}) sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env = BuildEnv(spec.env, spec.inherit_env);
  std::vector<char*> cenv;
  for (std::string& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  std::vector<char*> cargv;
  for (const std::string& a : spec.argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = search_path ? posix_spawnp(&pid, program.c_str(), &fa, &attr, cargv.data(), cenv.data())
                             : posix_spawn(&pid, program.c_str(), &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(in[0]), close(out[1]), close(err[1]);
  Fds fds{.in_w = in[1], .out_r = out[0], .err_r = err[0]};
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot start ", spec.argv[0], ": ", strerror(rc),
                                               spec.cwd.empty() ? "" : absl::StrCat(" (in ", spec.cwd, ")")));
  }

  for (int fd : {fds.in_w, fds.out_r, fds.err_r}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  // A pidfd wakes poll() the moment the command exits; without one (an old
  // kernel) we look every 10 ms.
  // (glibc 2.36's <sys/pidfd.h> is not C++-safe, hence the raw syscall.)
  fds.pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));

  const std::string& input = spec.stdin_text;
  CommandResult r;
  size_t written = 0;
  if (input.empty()) CloseFd(&fds.in_w);
  int wstatus = 0;
  bool exited = false;
  bool ignored_truncation = false;
  for (;;) {
    if (!exited) {
      const pid_t w = waitpid(pid, &wstatus, WNOHANG);
      if (w < 0 && errno != EINTR) {
        // Someone else reaped it (SIGCHLD ignored, a waitpid(-1) elsewhere):
        // its PID may already belong to another process, so it is not
        // signalled, and there is no exit status to report.
        const int e = errno;
        return absl::InternalError(absl::StrCat("waiting for `", shown, "` failed: ", strerror(e)));
      }
      exited = w == pid;
    }
    if (exited) {
      // Everything it wrote is in the pipes now; background processes it
      // left behind may hold them open for ever, so read what is there.
      if (fds.out_r >= 0) ReadSome(fds.out_r, &r.out, max_output, false, &r.out_truncated);
      if (fds.err_r >= 0) ReadSome(fds.err_r, &r.err, kMaxStderr, true, &ignored_truncation);
      break;
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      KillAndReap(pid);
      return absl::DeadlineExceededError(
          absl::StrCat("`", shown, "` timed out after ", absl::FormatDuration(spec.timeout), " and was killed"));
    }
    pollfd p[4];
    int n = 0;
    int in_i = -1, out_i = -1, err_i = -1;
    if (fds.in_w >= 0) in_i = n, p[n++] = {fds.in_w, POLLOUT, 0};
    if (fds.out_r >= 0) out_i = n, p[n++] = {fds.out_r, POLLIN, 0};
    if (fds.err_r >= 0) err_i = n, p[n++] = {fds.err_r, POLLIN, 0};
    if (fds.pidfd >= 0) p[n++] = {fds.pidfd, POLLIN, 0};
    int wait_ms = static_cast<int>(std::min<double>(std::ceil(absl::ToDoubleMilliseconds(left)), 1e6));
    if (fds.pidfd < 0) wait_ms = std::min(wait_ms, 10);
    if (poll(p, n, wait_ms) < 0 && errno != EINTR) {
      const int e = errno;
      KillAndReap(pid);
      return absl::InternalError(absl::StrCat("running `", shown, "`: poll: ", strerror(e)));
    }
    if (in_i >= 0 && p[in_i].revents != 0) {
      ssize_t w = WriteNoSigpipe(fds.in_w, input.data() + written, input.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      // A command that does not read all its input is its own business.
      if (written == input.size() || (w < 0 && errno != EAGAIN && errno != EINTR)) CloseFd(&fds.in_w);
    }
    if (out_i >= 0 && p[out_i].revents != 0 && !ReadSome(fds.out_r, &r.out, max_output, false, &r.out_truncated)) {
      CloseFd(&fds.out_r);
    }
    if (err_i >= 0 && p[err_i].revents != 0 && !ReadSome(fds.err_r, &r.err, kMaxStderr, true, &ignored_truncation)) {
      CloseFd(&fds.err_r);
    }
  }
  if (r.err.size() > kMaxStderr) r.err.erase(0, r.err.size() - kMaxStderr);
  if (WIFEXITED(wstatus)) {
    r.exit_code = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    r.term_signal = WTERMSIG(wstatus);
  }
  return r;
}

std::vector<absl::StatusOr<std::string>> SubmitTaggedInWaves(
    const std::vector<std::string>& tags, std::map<std::string, std::string> by_tag, size_t at_once,
    absl::Status* stuck, const std::function<absl::StatusOr<std::string>(size_t)>& submit) {
  std::vector<absl::StatusOr<std::string>> out(tags.size(), absl::InternalError("not submitted"));
  std::vector<size_t> todo(tags.size());
  for (size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  while (!todo.empty()) {
    std::vector<size_t> wave, later;
    std::set<std::string> wave_tags;
    for (size_t i : todo) {
      const std::string& tag = tags[i];
      if (auto it = tag.empty() ? by_tag.end() : by_tag.find(tag); it != by_tag.end()) {
        out[i] = it->second;
      } else if (!tag.empty() && !wave_tags.insert(tag).second) {
        later.push_back(i);
      } else {
        wave.push_back(i);
      }
    }
    std::vector<absl::StatusOr<std::string>> got =
        RunParallel<std::string>(wave.size(), at_once, stuck, [&](size_t k) { return submit(wave[k]); });
    for (size_t k = 0; k < wave.size(); ++k) {
      const std::string& tag = tags[wave[k]];
      if (got[k].ok() && !tag.empty()) by_tag.emplace(tag, *got[k]);
      out[wave[k]] = std::move(got[k]);
    }
    todo = std::move(later);
  }
  return out;
}

}  // namespace hyperfed::scheduler
