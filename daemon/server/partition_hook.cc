#include "daemon/server/partition_hook.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>

#include "absl/strings/strip.h"

namespace hyperfed::server {

bool PartitionedFrom(const std::string& site) {
  static const char* path = std::getenv("HYPERFED_PARTITION_FILE");
  if (path == nullptr || *path == '\0') return false;
  static std::mutex mu;
  static std::set<std::string> cut;
  static timespec seen{-1, 0};
  static bool existed = false;
  std::lock_guard<std::mutex> l(mu);
  struct stat st;
  const bool exists = stat(path, &st) == 0;
  if (exists != existed || (exists && (st.st_mtim.tv_sec != seen.tv_sec || st.st_mtim.tv_nsec != seen.tv_nsec))) {
    cut.clear();
    if (exists) {
      std::ifstream in(path);
      std::string line;
      while (std::getline(in, line)) {
        std::string id(absl::StripAsciiWhitespace(line));
        if (!id.empty()) cut.insert(id);
      }
      seen = st.st_mtim;
    }
    existed = exists;
  }
  return cut.count(site) > 0;
}

}  // namespace hyperfed::server
