#include "daemon/scheduler/sim_options.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon/scheduler/registry.h"

namespace hyperfed::scheduler {

absl::StatusOr<SimOptions> ParseSimOptions(const std::map<std::string, std::string>& options) {
  SimOptions o;
  auto positive_double = [](const std::string& name, const std::string& v, double* out) {
    double d = 0;
    if (!absl::SimpleAtod(v, &d) || !std::isfinite(d) || d <= 0) {
      return OptionError(name,
                         absl::StrCat("scheduler option \"", name, "\": want a finite number > 0, got \"", v, "\""));
    }
    *out = d;
    return absl::OkStatus();
  };
  // `slots` is the older name of `cores` (configs and tests still use it).
  if (options.contains("cores") && options.contains("slots")) {
    return OptionError(
        "cores", "scheduler options \"cores\" and \"slots\" are the same option (slots is its older name): give one");
  }
  for (const auto& [name, value] : options) {
    if (name == "cores" || name == "slots") {
      int64_t n = 0;
      if (!absl::SimpleAtoi(value, &n) || n < 1 || n > kMaxSimCores) {
        return OptionError(name, absl::StrCat("scheduler option \"", name, "\": want an integer in [1, ", kMaxSimCores,
                                              "], got \"", value, "\""));
      }
      o.cores = n;
    } else if (name == "speed") {
      if (auto s = positive_double(name, value, &o.speed); !s.ok()) return s;
    } else if (name == "time_scale") {
      if (auto s = positive_double(name, value, &o.time_scale); !s.ok()) return s;
    } else if (name == "pin_marker") {
      o.pin_marker = value;
    } else {
      return OptionError(
          name, absl::StrCat("scheduler option \"", name,
                             "\" is unknown to the sim adapter (known: cores, pin_marker, slots, speed, time_scale)"));
    }
  }
  return o;
}

}  // namespace hyperfed::scheduler
