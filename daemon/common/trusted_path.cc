#include "daemon/common/trusted_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hyperfed {
namespace {

namespace fs = std::filesystem;

std::string Quoted(const std::string& s) { return absl::StrCat("\"", absl::CEscape(s), "\""); }

}  // namespace

std::string CheckTrustedPath(const std::string& path) {
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return absl::StrCat(Quoted(path), ": ", ec.message());
  const uid_t me = ::geteuid();
  bool first = true;     // `cur` is `path` itself, or a folder of it not made yet
  bool missing = false;  // `path` does not exist: every folder found is above it
  for (fs::path cur = real;; cur = cur.parent_path()) {
    struct stat st;
    if (::stat(cur.c_str(), &st) != 0) {
      if (first && errno == ENOENT && cur != cur.parent_path()) {  // not made yet (a new state_dir)
        missing = true;
        continue;
      }
      return absl::StrCat(Quoted(cur.string()), ": ", std::strerror(errno));
    }
    if (missing) first = false;
    const std::string what =
        first ? Quoted(path) : absl::StrCat(Quoted(cur.string()), ", a folder above ", Quoted(path));
    if (st.st_uid != 0 && st.st_uid != me)
      return absl::StrCat(what, " is owned by uid ", st.st_uid,
                          ": what the daemon trusts must belong to root or to the daemon's own user");
    const bool sticky_folder = !first && S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX);
    const bool others_write = (st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid != 0);
    if (others_write && !sticky_folder)
      return absl::StrCat(what, " has mode ", absl::StrFormat("%04o", st.st_mode & 07777),
                          ": group or others may change it, so the daemon cannot trust it (chmod go-w)");
    first = false;
    if (cur == cur.parent_path()) break;
  }
  return "";
}

}  // namespace hyperfed
