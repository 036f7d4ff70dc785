#pragma once

// The slurm adapter's options (scheduler.options with `adapter: slurm`;
// docs/adapters.md, "Slurm"), read apart from the adapter so that
// `hyperfedd --check` reads them without running a command. The gridengine
// adapter shares them for what both do the same way (run as, marks,
// working folders).
//
// Options (the config's scheduler.options, all strings):
//   slurm_conf        path of slurm.conf, given to every command as SLURM_CONF
//                     ("" = Slurm's default)
//   bin_dir           folder of the Slurm commands ("" = the fixed PATH
//                     below, never the daemon's)
//   timeout           per command, e.g. "30s" (default 30s); a command still
//                     running then is killed and the call fails
//                     (DeadlineExceeded naming the command)
//   partitions        comma-separated partitions hyperfed manages; other
//                     jobs are never listed or moved ("" = every
//                     partition). Jobs hyperfed submitted (marked in their
//                     comment) stay reachable by tag and id wherever they
//                     are, so a retried submit never runs a job twice.
//                     Needs submit_partition.
//   users             comma-separated users whose jobs hyperfed manages
//                     ("" = every user's).
//   run_as            who jobs that arrive run as: "owner" (the local user
//                     users_map gives the spec's owner) or "account"
//                     (run_as_account). Unset: arriving jobs are refused.
//                     Never the daemon's own account, never root.
//   users_map         "same-name", or a file of "site:remote_user
//                     local_user" lines (run_as owner); site is the
//                     sending site's roster id (JobSpec::source_site, as
//                     the migrator authenticated it) or * for any site; a
//                     line without one is a load error (issue 34)
//   run_as_account    an unprivileged local user (run_as account)
//   uid_min, uid_max  the uids a peer's spec may run as (run_as owner:
//                     same-name and map targets); default login.defs'
//                     UID_MIN..UID_MAX (LoginDefsUidRange)
//   deny_users        comma-separated accounts no moved job runs as, added
//                     to kSlurmDeniedUsers
//   mark_key          the migration mark's key file (default
//                     <state_dir>/mark.key; see mark.h)
//   submit_partition  partition for jobs that arrive ("" = cluster default;
//                     required, and one of them, when partitions is set)
//   submit_account    account for jobs that arrive ("" = the user's default)
//   pinned_partitions comma-separated partitions whose jobs never move
//   pin_marker        a job whose name starts with it is pinned ("" = off)
//   workdir_policy    "keep" (default): a job's working directory travels
//                     and must exist at the destination (shared or mirrored
//                     paths); "drop": it runs in submit_dir at the destination
//   submit_dir        working directory of sbatch, i.e. of jobs that arrive
//                     without one ("" = the daemon's working directory)
//   speed             capacity speed factor, > 0 (default 1)

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hyperfed::scheduler {

// The UID_MIN..UID_MAX of the login.defs file at `path`: the uids useradd
// gives ordinary users. What the file does not say (or says out of range:
// 0, not a number) is Debian's default, 1000..60000.
std::pair<uint32_t, uint32_t> LoginDefsUidRange(const std::string& path = "/etc/login.defs");

enum class SlurmRunAs { kUnset, kOwner, kAccount };

// Accounts no moved job ever runs as, whatever deny_users adds: the
// scheduler's and its authentication's own (issue 34, finding 1: a job run
// as munge reads munge.key, which forges any Slurm credential).
inline constexpr const char* kSlurmDeniedUsers[] = {"root", "slurm", "slurmdbd", "slurmrestd", "munge"};

// A users_map line's local user, with its line number for errors.
struct SlurmMapTarget {
  std::string user;
  int line = 0;
};

struct SlurmOptions {
  std::string slurm_conf;
  std::string bin_dir;
  absl::Duration timeout = absl::Seconds(30);
  std::set<std::string> partitions;
  std::set<std::string> users;
  SlurmRunAs run_as = SlurmRunAs::kUnset;
  bool users_map_set = false;
  bool same_name = false;  // users_map: same-name
  // (source site or "*", remote user) -> local user, from the file.
  std::map<std::pair<std::string, std::string>, SlurmMapTarget> users_map;
  std::string users_map_file;
  std::string run_as_account;
  // Accounts a peer's spec may pick (run_as: owner): uids in
  // uid_min..uid_max (default login.defs' UID_MIN..UID_MAX) and not in
  // deny_users (kSlurmDeniedUsers plus the option's).
  uint32_t uid_min = 1000, uid_max = 60000;
  std::set<std::string> deny_users;
  std::string mark_key;
  std::string submit_partition;
  std::string submit_account;
  std::set<std::string> pinned_partitions;
  std::string pin_marker;
  bool keep_workdir = true;
  std::string submit_dir;
  double speed = 1.0;
};

// Parses scheduler.options; InvalidArgument naming the first unknown or
// malformed option. check_combination=false skips the checks between
// options (submit_partition against partitions), for checking one at a time.
absl::StatusOr<SlurmOptions> ParseSlurmOptions(const std::map<std::string, std::string>& options,
                                               bool check_combination = true);

}  // namespace hyperfed::scheduler
