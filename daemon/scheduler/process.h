#pragma once

// Runs a command as a child process (posix_spawn, no shell), feeds it stdin,
// captures stdout and stderr, and enforces a deadline. Adapters that drive a
// scheduler through its own commands (slurm) use it.
//
// Thread-safety: RunCommand may be called from any thread at once.

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hyperfed::scheduler {

struct CommandSpec {
  std::vector<std::string> argv;  // argv[0] is searched in PATH unless it holds a '/'
  std::string stdin_text;         // given to the child on stdin (it reads it like a file)
  // Variables set (or replaced) on top of this process's environment.
  std::map<std::string, std::string> env;
  std::string cwd;                // "" = this process's working directory
  absl::Duration timeout = absl::Seconds(30);
};

struct CommandResult {
  int exit_code = 0;              // 128 + n when killed by signal n
  std::string out;
  std::string err;
};

// The command line as it is shown in errors: argv joined by spaces, each
// argument over 80 characters cut short.
std::string CommandLine(const std::vector<std::string>& argv);

// Runs the command to its end. Errors: kUnavailable when it cannot be
// started (the text names the command and the reason); kDeadlineExceeded,
// naming the command and the timeout, when it is still running at the
// deadline (it is then killed with SIGKILL by its PID and reaped, so no
// child is left behind). A non-zero exit is NOT an error here: the result
// carries it, and CommandFailure turns it into one.
absl::StatusOr<CommandResult> RunCommand(const CommandSpec& spec);

// kUnavailable: "`<command>` exited with <code>: <stderr>".
absl::Status CommandFailure(const std::vector<std::string>& argv, const CommandResult& r);

}  // namespace hyperfed::scheduler
