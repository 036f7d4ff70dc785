#pragma once

// The exec adapter's options (scheduler.options with `adapter: exec`;
// docs/adapters.md, "exec"), read apart from the adapter so that
// `hyperfedd --check` reads them without running anything.

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hyperfed::scheduler {

struct ExecOptions {
  // Operation name -> argv before the operation's own arguments.
  std::map<std::string, std::vector<std::string>> commands;
  absl::Duration timeout = absl::Seconds(30);
  std::vector<std::string> pass_env;
};

// The operation names, in the order the docs list them.
const std::vector<std::string>& ExecOperations();
// The operations a site's commands may leave out: widest, arrival.
const std::vector<std::string>& ExecOptionalOperations();

// Parses scheduler.options; InvalidArgument naming the first unknown,
// missing or malformed option.
absl::StatusOr<ExecOptions> ParseExecOptions(const std::map<std::string, std::string>& options);

}  // namespace hyperfed::scheduler
