#pragma once

// The sim adapter's options (scheduler.options with `adapter: sim`;
// docs/operations.md, "Configure"), read apart from the adapter so that
// `hyperfedd --check` reads them without opening anything.

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace hyperfed::scheduler {

inline constexpr int64_t kMaxSimCores = 1'000'000;

struct SimOptions {
  int64_t cores = 4;
  double speed = 1.0;
  double time_scale = 1.0;
  std::string pin_marker;
};

// Parses scheduler.options; InvalidArgument naming the first unknown or
// malformed option.
absl::StatusOr<SimOptions> ParseSimOptions(const std::map<std::string, std::string>& options);

}  // namespace hyperfed::scheduler
