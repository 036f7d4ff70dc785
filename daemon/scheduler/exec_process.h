#pragma once

// Running an operator's command for the exec adapter: no shell, argv as
// given, input on stdin, stdout and stderr captured, a hard time limit.
//
// Thread-safety: RunCommand may be called from any thread; it blocks the
// calling thread only.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
// needs it single-quoted), for error messages.
std::string QuoteCommandLine(const std::vector<std::string>& argv);

struct CommandResult {
  int exit_code = -1;   // the exit status, or -1 when killed by a signal
  int term_signal = 0;  // the signal that ended it, or 0
  std::string out;      // stdout, at most max_output bytes
  std::string err;      // the last kMaxStderr bytes of stderr
  bool out_truncated = false;  // stdout went past max_output (the rest was dropped)
};

inline constexpr size_t kMaxStderr = 4096;

// Runs argv[0] (looked up in PATH when it has no '/') with argv, writes
// `input` to its stdin and closes it, and collects its output until it
// exits. The child runs in a process group of its own with default signal
// handling; it inherits the environment and no file descriptor beyond 0-2.
// When it exits, processes it left in the background keep running (and
// their output is not waited for). When `timeout` passes first, the whole
// process group is killed with SIGKILL and reaped: DeadlineExceeded.
// Unavailable when the command cannot be started.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv, const std::string& input,
                                         absl::Duration timeout, size_t max_output = 64 << 20);

}  // namespace hyperfed::scheduler
