#include "daemon/scheduler/gridengine_options.h"

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon/scheduler/registry.h"

namespace hyperfed::scheduler {
namespace {

// A TCP port, 1..65535, in decimal digits only.
bool IsPort(const std::string& s) {
  uint32_t port = 0;
  return !s.empty() && s.size() <= 5 && s.find_first_not_of("0123456789") == std::string::npos &&
         absl::SimpleAtoi(s, &port) && port >= 1 && port <= 65535;
}

}  // namespace

absl::StatusOr<GridEngineOptions> ParseGridEngineOptions(const std::map<std::string, std::string>& options) {
  static const std::set<std::string> kCommon = {"bin_dir",    "timeout",        "users",      "run_as",     "users_map",
                                                "uid_min",    "run_as_account", "uid_max",    "deny_users", "mark_key",
                                                "pin_marker", "workdir_policy", "submit_dir", "speed"};
  GridEngineOptions o;
  std::map<std::string, std::string> common;
  for (const auto& [name, value] : options) {
    if (name == "sge_root") {
      o.sge_root = value;
    } else if (name == "sge_cell") {
      o.sge_cell = value;
    } else if (name == "qmaster_port" || name == "execd_port") {
      if (!value.empty() && !IsPort(value))
        return OptionError(name, absl::StrCat("scheduler option \"", name, "\": want a port, got \"", value, "\""));
      (name == "qmaster_port" ? o.qmaster_port : o.execd_port) = value;
    } else if (name == "queue") {
      o.queue = value;
    } else if (name == "pe") {
      o.pe = value;
    } else if (name == "script_dir") {
      o.script_dir = value;
    } else if (kCommon.contains(name)) {
      common[name] = value;
    } else {
      return OptionError(
          name, absl::StrCat(
                    "scheduler option \"", name,
                    "\" is unknown to the gridengine adapter (known: bin_dir, deny_users, execd_port, mark_key, pe, "
                    "pin_marker, qmaster_port, queue, run_as, run_as_account, script_dir, sge_cell, sge_root, speed, "
                    "submit_dir, timeout, uid_max, uid_min, users, users_map, workdir_policy)"));
    }
  }
  if (o.sge_root.empty()) return OptionError("sge_root", "scheduler option \"sge_root\": required (SGE_ROOT)");
  if (o.queue.empty() || o.pe.empty())
    return OptionError("queue", "scheduler options \"queue\" and \"pe\" may not be empty");
  std::string deny = common["deny_users"];
  for (const char* u : kGridEngineDeniedUsers) absl::StrAppend(&deny, deny.empty() ? "" : ",", u);
  common["deny_users"] = deny;
  auto c = ParseSlurmOptions(common);
  if (!c.ok()) return c.status();
  o.common = *std::move(c);
  return o;
}

}  // namespace hyperfed::scheduler
