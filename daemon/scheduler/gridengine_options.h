#pragma once

// The gridengine adapter's options (scheduler.options with `adapter:
// gridengine`; docs/adapters.md, "Grid Engine"), read apart from the
// adapter so that `hyperfedd --check` reads them without running a command.
//
// Options (the config's scheduler.options, all strings):
//   sge_root, sge_cell   the cluster (SGE_ROOT; SGE_CELL, default "default")
//   qmaster_port, execd_port  SGE_QMASTER_PORT, SGE_EXECD_PORT ("" = Grid
//                        Engine's own lookup)
//   queue                the cluster queue hyperfed manages and submits to
//                        (default all.q); its queue instances are the
//                        capacity
//   pe                   the parallel environment for jobs of several cores
//                        (default smp)
//   script_dir           where the qmaster keeps job scripts (default:
//                        <qmaster_spool_dir of the cell's bootstrap>/job_scripts)
//   bin_dir              folder of the commands (default /usr/lib/gridengine
//                        when it holds qsub: Debian's /usr/bin/q* wrappers
//                        cost a quarter second per call; else the fixed PATH)
//   and the slurm adapter's timeout, users, run_as, users_map,
//   run_as_account, uid_min, uid_max, deny_users, mark_key, pin_marker,
//   workdir_policy, submit_dir, speed.

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/scheduler/slurm_options.h"

namespace hyperfed::scheduler {

// Accounts no moved job runs as, added to the slurm adapter's list.
inline constexpr const char* kGridEngineDeniedUsers[] = {"sgeadmin"};

struct GridEngineOptions {
  std::string sge_root, sge_cell = "default", qmaster_port, execd_port;
  std::string queue = "all.q";
  std::string pe = "smp";
  std::string script_dir;
  // bin_dir, timeout, users, run as, mark_key, pin_marker, workdir_policy,
  // submit_dir, speed: the slurm adapter's, parsed by ParseSlurmOptions.
  SlurmOptions common;
};
absl::StatusOr<GridEngineOptions> ParseGridEngineOptions(const std::map<std::string, std::string>& options);

}  // namespace hyperfed::scheduler
