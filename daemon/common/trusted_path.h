#pragma once

// The one rule for the files and folders the daemon trusts: its config,
// keys, token and roster key, its state_dir, and what an adapter runs or
// reads (the exec adapter's commands, Slurm's bin_dir and users_map). A
// daemon running as root would otherwise run or believe what a local user
// wrote (docs/security.md, issue 34 finding 6f).

#include <string>

namespace hyperfed {

// "" when only root and this process's user can change `path`, else why
// not, naming the first culprit. `path` (after symbolic links) and every
// folder above it must be owned by root or this process's user and
// writable by no one else (group root aside); a folder above it that others
// may write must be sticky (/tmp), so that no one else can replace what is
// in it. A path not made yet (a new state_dir) is judged by the folders
// above it.
std::string CheckTrustedPath(const std::string& path);

}  // namespace hyperfed
