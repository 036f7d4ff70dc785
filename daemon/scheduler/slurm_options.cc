#include "daemon/scheduler/slurm_options.h"

#include <algorithm>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "daemon/common/trusted_path.h"
#include "daemon/scheduler/adapter.h"
#include "daemon/scheduler/registry.h"

namespace hyperfed::scheduler {
namespace {

std::set<std::string> SplitList(const std::string& v) {
  std::set<std::string> out;
  for (absl::string_view p : absl::StrSplit(v, ',', absl::SkipWhitespace()))
    out.insert(std::string(absl::StripAsciiWhitespace(p)));
  return out;
}

// A login name as useradd takes it: what users_map and run_as_account hold.
bool SaneUserName(absl::string_view u) {
  if (u.empty() || u.size() > kMaxOwnerLength || !(absl::ascii_islower(u[0]) || u[0] == '_')) return false;
  return std::all_of(u.begin(), u.end(),
                     [](char c) { return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_' || c == '-'; });
}

// A roster site id ([A-Za-z0-9._-]+, as the config checks it).
bool SaneSiteId(absl::string_view s) {
  return !s.empty() && s.size() <= 200 && std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

// users_map's file: "site:remote_user local_user" per line, site a roster
// id or "*" for any site; blank lines and lines starting with '#' are
// skipped. A line without a site is an error: the sender picks the owner,
// so a line must say which site it believes for that name (issue 34,
// finding 2). Errors name the file and line.
absl::Status ReadUsersMap(const std::string& path, std::map<std::pair<std::string, std::string>, SlurmMapTarget>* out) {
  std::ifstream f(path);
  if (!f) return absl::InvalidArgumentError(absl::StrCat("cannot read users_map file ", path));
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    absl::string_view l = absl::StripAsciiWhitespace(line);
    if (l.empty() || l[0] == '#') continue;
    std::vector<std::string> words = absl::StrSplit(l, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", n, ": ", why,
                                                     "; want \"site:remote_user local_user\" (site: the sending "
                                                     "site's roster id, or * for any site)"));
    };
    if (words.size() != 2) return bad("not two words");
    const size_t colon = words[0].find(':');
    if (colon == std::string::npos) {
      return bad(absl::StrCat("\"", words[0], "\" names no site: qualify it as \"site-id:", words[0],
                              "\" (or \"*:", words[0], "\" to take the name from any site)"));
    }
    const std::string site = words[0].substr(0, colon), remote = words[0].substr(colon + 1);
    if (site != "*" && !SaneSiteId(site))
      return bad(absl::StrCat("\"", site, "\" is not a site id ([A-Za-z0-9._-]+) or *"));
    for (const std::string& w : {remote, words[1]})
      if (!SaneUserName(w)) return bad(absl::StrCat("\"", w, "\" is not a user name ([a-z_][a-z0-9_-]{0,31})"));
    if (!out->emplace(std::make_pair(site, remote), SlurmMapTarget{words[1], n}).second)
      return bad(absl::StrCat("\"", words[0], "\" is mapped twice"));
  }
  return absl::OkStatus();
}

// The number of an option uid_min or uid_max: 1..4294967294 (0 is root,
// 4294967295 is (uid_t)-1).
absl::Status ParseUid(const std::string& name, const std::string& value, uint32_t* out) {
  uint64_t v = 0;
  if (!absl::SimpleAtoi(value, &v) || v < 1 || v > 4294967294u) {
    return OptionError(
        name, absl::StrCat("scheduler option \"", name, "\": want a uid in 1..4294967294, got \"", value, "\""));
  }
  *out = static_cast<uint32_t>(v);
  return absl::OkStatus();
}

}  // namespace

std::pair<uint32_t, uint32_t> LoginDefsUidRange(const std::string& path) {
  std::pair<uint32_t, uint32_t> out = {1000, 60000};
  std::ifstream f(path);
  std::string line;
  while (f && std::getline(f, line)) {
    std::vector<std::string> words = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (words.size() < 2 || (words[0] != "UID_MIN" && words[0] != "UID_MAX")) continue;
    uint32_t v = 0;
    if (!ParseUid(words[0], words[1], &v).ok()) continue;
    (words[0] == "UID_MIN" ? out.first : out.second) = v;
  }
  return out;
}

absl::StatusOr<SlurmOptions> ParseSlurmOptions(const std::map<std::string, std::string>& options,
                                               bool check_combination) {
  SlurmOptions o;
  std::tie(o.uid_min, o.uid_max) = LoginDefsUidRange();
  for (const char* u : kSlurmDeniedUsers) o.deny_users.insert(u);
  for (const auto& [name, value] : options) {
    if (name == "slurm_conf") {
      o.slurm_conf = value;
    } else if (name == "bin_dir") {
      // The daemon runs sbatch and the rest from it, as root: no one else
      // may change them (docs/security.md, issue 34 finding 6f).
      if (std::string why = CheckTrustedPath(value); !why.empty())
        return OptionError("bin_dir", absl::StrCat("scheduler option \"bin_dir\": ", why));
      o.bin_dir = value;
    } else if (name == "timeout") {
      absl::Duration d;
      if (!absl::ParseDuration(value, &d) || d <= absl::ZeroDuration() || d > absl::Hours(1)) {
        return OptionError(
            "timeout", absl::StrCat("scheduler option \"timeout\": want a duration in (0, 1h] such as \"30s\", got \"",
                                    value, "\""));
      }
      o.timeout = d;
    } else if (name == "partitions") {
      o.partitions = SplitList(value);
    } else if (name == "users") {
      o.users = SplitList(value);
    } else if (name == "run_as") {
      if (value != "owner" && value != "account") {
        return OptionError(
            "run_as", absl::StrCat("scheduler option \"run_as\": want \"owner\" or \"account\", got \"", value, "\""));
      }
      o.run_as = value == "owner" ? SlurmRunAs::kOwner : SlurmRunAs::kAccount;
    } else if (name == "users_map") {
      o.users_map_set = true;
      if (value == "same-name") {
        o.same_name = true;
      } else if (std::string why = CheckTrustedPath(value); !why.empty()) {
        // Who a peer's job runs as: no one else may add a line.
        return OptionError("users_map", absl::StrCat("scheduler option \"users_map\": ", why));
      } else if (auto st = ReadUsersMap(value, &o.users_map); !st.ok()) {
        return OptionError("users_map", absl::StrCat("scheduler option \"users_map\": ", st.message()));
      } else {
        o.users_map_file = value;
      }
    } else if (name == "run_as_account") {
      if (!SaneUserName(value)) {
        return OptionError("run_as_account", absl::StrCat("scheduler option \"run_as_account\": \"", value,
                                                          "\" is not a user name ([a-z_][a-z0-9_-]{0,31})"));
      }
      o.run_as_account = value;
    } else if (name == "mark_key") {
      o.mark_key = value;
    } else if (name == "submit_partition") {
      o.submit_partition = value;
    } else if (name == "submit_account") {
      o.submit_account = value;
    } else if (name == "pinned_partitions") {
      o.pinned_partitions = SplitList(value);
    } else if (name == "pin_marker") {
      o.pin_marker = value;
    } else if (name == "workdir_policy") {
      if (value != "keep" && value != "drop") {
        return OptionError(
            "workdir_policy",
            absl::StrCat("scheduler option \"workdir_policy\": want \"keep\" or \"drop\", got \"", value, "\""));
      }
      o.keep_workdir = value == "keep";
    } else if (name == "submit_dir") {
      o.submit_dir = value;
    } else if (name == "uid_min" || name == "uid_max") {
      if (auto st = ParseUid(name, value, name == "uid_min" ? &o.uid_min : &o.uid_max); !st.ok()) return st;
    } else if (name == "deny_users") {
      for (const std::string& u : SplitList(value)) {
        if (!SaneUserName(u)) {
          return OptionError("deny_users", absl::StrCat("scheduler option \"deny_users\": \"", u,
                                                        "\" is not a user name ([a-z_][a-z0-9_-]{0,31})"));
        }
        o.deny_users.insert(u);
      }
    } else if (name == "speed") {
      double d = 0;
      if (!absl::SimpleAtod(value, &d) || !std::isfinite(d) || d <= 0) {
        return OptionError("speed",
                           absl::StrCat("scheduler option \"speed\": want a finite number > 0, got \"", value, "\""));
      }
      o.speed = d;
    } else {
      return OptionError(
          name, absl::StrCat(
                    "scheduler option \"", name,
                    "\" is unknown to the slurm adapter (known: bin_dir, deny_users, mark_key, partitions, pin_marker, "
                    "pinned_partitions, run_as, run_as_account, slurm_conf, speed, submit_account, submit_dir, "
                    "submit_partition, timeout, uid_max, uid_min, users, users_map, workdir_policy)"));
    }
  }
  // Checked whatever check_combination says: the built-in deny list alone
  // refuses these (deny_users' additions are checked with the combination).
  for (const auto& [from, target] : o.users_map) {
    if (o.deny_users.contains(target.user)) {
      return OptionError(
          "users_map",
          absl::StrCat("scheduler option \"users_map\": ", o.users_map_file, ":", target.line, ": local user \"",
                       target.user,
                       "\" is listed in deny_users (a service account; docs/adapters.md, \"Who moved jobs run as\")"));
    }
  }
  if (o.deny_users.contains(o.run_as_account)) {
    return OptionError("run_as_account", absl::StrCat("scheduler option \"run_as_account\": \"", o.run_as_account,
                                                      "\" is listed in deny_users (a service account; "
                                                      "docs/adapters.md, \"Who moved jobs run as\")"));
  }
  if (!check_combination) return o;
  if (o.uid_min > o.uid_max) {
    return OptionError("uid_max", absl::StrCat("scheduler option \"uid_max\": ", o.uid_max, " is below uid_min, ",
                                               o.uid_min, " (the defaults are login.defs' UID_MIN and UID_MAX)"));
  }
  if (o.run_as == SlurmRunAs::kOwner && !o.users_map_set) {
    return OptionError("run_as",
                       "scheduler option \"run_as\": \"owner\" needs \"users_map\" (same-name, or a file of "
                       "\"remote_user local_user\" lines)");
  }
  if (o.run_as == SlurmRunAs::kAccount && o.run_as_account.empty()) {
    return OptionError(
        "run_as", "scheduler option \"run_as\": \"account\" needs \"run_as_account\" (an unprivileged local user)");
  }
  if (o.run_as != SlurmRunAs::kOwner && o.users_map_set)
    return OptionError("users_map", "scheduler option \"users_map\": used only with run_as: owner");
  if (o.run_as != SlurmRunAs::kAccount && !o.run_as_account.empty())
    return OptionError("run_as_account", "scheduler option \"run_as_account\": used only with run_as: account");
  if (!o.partitions.empty() && o.submit_partition.empty()) {
    // Without it sbatch puts a job in Slurm's default partition, which need
    // not be managed: every job hyperfed submits must land where it looks.
    // Blamed on the option that needs it, the one the file sets.
    return OptionError("partitions",
                       "scheduler option \"submit_partition\": required when \"partitions\" is set (one of them)");
  }
  if (!o.submit_partition.empty() && !o.partitions.empty() && !o.partitions.contains(o.submit_partition)) {
    return OptionError("submit_partition", absl::StrCat("scheduler option \"submit_partition\": \"", o.submit_partition,
                                                        "\" is not one of \"partitions\"; hyperfed would lose "
                                                        "sight of the jobs it submits"));
  }
  return o;
}

}  // namespace hyperfed::scheduler
