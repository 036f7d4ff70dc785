#include "daemon/scheduler/exec_options.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "daemon/common/trusted_path.h"
#include "daemon/scheduler/registry.h"
#include "daemon/scheduler/subprocess.h"

namespace hyperfed::scheduler {

namespace {
constexpr int64_t kMaxTimeoutMs = 3'600'000;  // an hour
}  // namespace

const std::vector<std::string>& ExecOperations() {
  static const auto* ops = new std::vector<std::string>{"list",   "capacity", "hold",        "release", "cancel",
                                                        "export", "submit",   "find_by_tag", "pin"};
  return *ops;
}

const std::vector<std::string>& ExecOptionalOperations() {
  static const auto* ops = new std::vector<std::string>{"widest", "arrival"};
  return *ops;
}

absl::StatusOr<ExecOptions> ParseExecOptions(const std::map<std::string, std::string>& options) {
  ExecOptions o;
  std::map<std::string, std::string> per_op;
  std::string common;
  bool have_common = false;
  std::set<std::string> extra;  // optional operations `command` also answers
  for (const auto& [name, value] : options) {
    if (name == "extra_operations") {
      for (absl::string_view v : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
        const std::string op(absl::StripAsciiWhitespace(v));
        if (std::find(ExecOptionalOperations().begin(), ExecOptionalOperations().end(), op) ==
            ExecOptionalOperations().end()) {
          return OptionError("extra_operations", absl::StrCat("scheduler option \"extra_operations\": \"", op,
                                                              "\" is not an optional operation (",
                                                              absl::StrJoin(ExecOptionalOperations(), ", "), ")"));
        }
        extra.insert(op);
      }
    } else if (name == "command") {
      common = value;
      have_common = true;
    } else if (name == "timeout_ms") {
      int64_t ms = 0;
      if (!absl::SimpleAtoi(value, &ms) || ms < 1 || ms > kMaxTimeoutMs) {
        return OptionError("timeout_ms", absl::StrCat("scheduler option \"timeout_ms\": want an integer in [1, ",
                                                      kMaxTimeoutMs, "], got \"", value, "\""));
      }
      o.timeout = absl::Milliseconds(ms);
    } else if (name == "pass_env") {
      for (absl::string_view v : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
        const std::string var(absl::StripAsciiWhitespace(v));
        if (var.empty() ||
            !std::all_of(var.begin(), var.end(), [](char c) { return absl::ascii_isalnum(c) || c == '_'; })) {
          return OptionError("pass_env",
                             absl::StrCat("scheduler option \"pass_env\": \"", var, "\" is not a variable name"));
        }
        o.pass_env.push_back(var);
      }
    } else {
      bool known = false;
      for (const std::string& op : ExecOperations()) {
        if (name == op + "_command") known = true;
      }
      for (const std::string& op : ExecOptionalOperations()) {
        if (name == op + "_command") known = true;
      }
      if (!known) {
        return OptionError(
            name,
            absl::StrCat("scheduler option \"", name,
                         "\" is unknown to the exec adapter (known: command, extra_operations, pass_env, timeout_ms, ",
                         "and OP_command for OP in ", absl::StrJoin(ExecOperations(), ", "), ", ",
                         absl::StrJoin(ExecOptionalOperations(), ", "), ")"));
      }
      per_op[name] = value;
    }
  }
  if (!extra.empty() && !have_common) {
    return OptionError("extra_operations",
                       "scheduler option \"extra_operations\": names operations of \"command\", which is not set");
  }
  std::vector<std::string> ops = ExecOperations();
  for (const std::string& op : ExecOptionalOperations()) {
    // An optional operation has a command only when asked for: existing
    // commands need not know it.
    if (per_op.contains(op + "_command") || extra.contains(op)) ops.push_back(op);
  }
  for (const std::string& op : ops) {
    const std::string key = op + "_command";
    std::vector<std::string> argv;
    if (auto it = per_op.find(key); it != per_op.end()) {
      auto split = SplitCommandLine(it->second);
      if (!split.ok()) {
        return OptionError(key, absl::StrCat("scheduler option \"", key, "\": ", split.status().message()));
      }
      argv = *std::move(split);
    } else if (have_common) {
      auto split = SplitCommandLine(common);
      if (!split.ok()) {
        return OptionError("command", absl::StrCat("scheduler option \"command\": ", split.status().message()));
      }
      argv = *std::move(split);
      argv.push_back(op);
    } else {
      return OptionError(
          key, absl::StrCat("scheduler option \"", key, "\" (or \"command\") is required by the exec adapter"));
    }
    // A path that cannot run is a config error now, not a failed round later.
    if (argv[0].find('/') != std::string::npos && access(argv[0].c_str(), X_OK) != 0) {
      return OptionError(per_op.contains(key) ? key : "command",
                         absl::StrCat("scheduler option \"", per_op.contains(key) ? key : "command", "\": ", argv[0],
                                      " is not an executable file"));
    }
    // The daemon runs it (as root on most sites): no one else may change it.
    if (argv[0].find('/') != std::string::npos)
      if (std::string why = CheckTrustedPath(argv[0]); !why.empty())
        return OptionError(per_op.contains(key) ? key : "command",
                           absl::StrCat("scheduler option \"", per_op.contains(key) ? key : "command", "\": ", why));
    o.commands[op] = std::move(argv);
  }
  return o;
}

}  // namespace hyperfed::scheduler
