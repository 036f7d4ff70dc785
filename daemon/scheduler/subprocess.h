#pragma once

// Running a scheduler's command for an adapter (exec, slurm, gridengine): no
// shell, argv as given, input on stdin, stdout and stderr captured, a hard
// time limit; and running one command per job of a batch several at a time
// (RunParallel, SubmitTaggedInWaves), which the slurm and gridengine adapters
// share.
//
// Thread-safety: RunCommand may be called from any thread; it blocks the
// calling thread only. RunParallel and SubmitTaggedInWaves call their
// function from several threads at once, all joined before they return.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace hyperfed::scheduler {

// Splits a command line into argv the way a user expects from a shell, but
// without one: words split on blanks; '...' keeps everything literally;
// "..." keeps everything but lets \" and \\ through; a backslash outside
// quotes keeps the next character. No variables, globs or redirections.
// InvalidArgument for an unterminated quote, a trailing backslash or an
// empty command.
absl::StatusOr<std::vector<std::string>> SplitCommandLine(const std::string& line);

// The command line as a user could paste it into a shell (each word that
// needs it single-quoted).
std::string QuoteCommandLine(const std::vector<std::string>& argv);

// The command line as errors show it: QuoteCommandLine with every argument
// over 80 characters cut short (a whole batch script would drown the rest).
std::string CommandLine(const std::vector<std::string>& argv);

inline constexpr size_t kMaxStderr = 4096;
inline constexpr size_t kUnlimitedOutput = 0;

struct CommandSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH unless it holds a '/'
  std::string stdin_text;         // written to the child's stdin, which is then closed
  // Variables set (or replaced) on top of this process's environment. A PATH
  // given here is also the one argv[0] is looked up in.
  std::map<std::string, std::string> env;
  // false: the child's environment is exactly `env`, nothing of this
  // process's (the adapters run scheduler commands so: docs/adapters.md,
  // "How commands are run"); argv[0] without a '/' is then looked up in
  // env's PATH only, and cannot start when env has none.
  bool inherit_env = true;
  std::string cwd;  // "" = this process's working directory
  absl::Duration timeout = absl::Seconds(30);
  // Stdout beyond this many bytes is dropped (out_truncated is then set);
  // kUnlimitedOutput keeps all of it.
  size_t max_output = size_t{64} << 20;
};

struct CommandResult {
  int exit_code = -1;          // the exit status, or -1 when killed by a signal
  int term_signal = 0;         // the signal that ended it, or 0
  std::string out;             // stdout, at most max_output bytes
  std::string err;             // the last kMaxStderr bytes of stderr
  bool out_truncated = false;  // stdout went past max_output (the rest was dropped)
};

// Runs the command until it exits. The child runs in a process group of its
// own with default signal handling and an empty signal mask; it gets the
// environment described above and no file descriptor beyond 0-2. When it
// exits, processes it left in the background keep running (and their output
// is not waited for). Errors, each naming the command:
// - DeadlineExceeded when `timeout` passes first; the whole process group is
//   then killed with SIGKILL and the child reaped;
// - Unavailable when it cannot be started (not found, bad cwd, ...);
// - Internal when waiting for it fails (the child is then killed, never a
//   PID that may have been reused);
// - InvalidArgument for an empty argv.
// A non-zero exit is NOT an error here: the result carries it, and
// CommandFailure turns it into one.
absl::StatusOr<CommandResult> RunCommand(const CommandSpec& spec);

// Unavailable: "`<command>` exited with N: <stderr>" or "`<command>` was
// killed by signal S: <stderr>".
absl::Status CommandFailure(const std::vector<std::string>& argv, const CommandResult& r);

// Calls run(i) for every i in [0, n), at most `at_once` at a time (the
// calling thread is one of them), and returns the results in input order;
// every thread has ended on return. Once a call returns DeadlineExceeded,
// the scheduler is not answering: items not started yet get that error
// without running (each would wait as long again), and so does every later
// call given the same `stuck`. With no thread to be had it runs fewer at a
// time, never fewer items.
template <typename T>
std::vector<absl::StatusOr<T>> RunParallel(size_t n, size_t at_once, absl::Status* stuck,
                                           const std::function<absl::StatusOr<T>(size_t)>& run) {
  std::vector<absl::StatusOr<T>> out(n, absl::InternalError("not run"));
  absl::Mutex mu;  // guards *stuck
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      absl::Status timed_out;
      {
        absl::MutexLock l(&mu);
        timed_out = *stuck;
      }
      out[i] = timed_out.ok() ? run(i) : timed_out;
      if (absl::IsDeadlineExceeded(out[i].status())) {
        absl::MutexLock l(&mu);
        if (stuck->ok()) *stuck = out[i].status();
      }
    }
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < std::min(n, at_once); ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no thread to be had: fewer at a time, never fewer done
    }
  }
  work();
  for (std::thread& t : helpers) t.join();
  return out;
}

// A batch submit with tags, one command per job, `at_once` at a time
// (RunParallel), with the answers one-by-one submission would give.
// `tags[i]` is item i's tag ("" = none); `by_tag` holds the tags jobs
// already carry (tag -> the first job's id). An item whose tag a job
// already carries is answered with that job's id, unsubmitted. The rest go
// in waves: a wave takes every item left whose tag no job and no earlier
// item of the wave carries; an item whose tag appears earlier waits for the
// next wave, which answers it with that item's id, or submits it when that
// item failed. Nearly every batch is one wave (a migration's tags are
// distinct). submit(i) submits item i and returns the new job's id; it runs
// on several threads at once.
std::vector<absl::StatusOr<std::string>> SubmitTaggedInWaves(
    const std::vector<std::string>& tags, std::map<std::string, std::string> by_tag, size_t at_once,
    absl::Status* stuck, const std::function<absl::StatusOr<std::string>(size_t)>& submit);

}  // namespace hyperfed::scheduler
