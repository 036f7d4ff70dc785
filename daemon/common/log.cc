#include "daemon/common/log.h"

#include <cstdio>
#include <mutex>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace hyperfed {

void Log(const std::string& line) {
  static std::mutex mu;
  const std::string ts = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  std::lock_guard<std::mutex> l(mu);
  std::fprintf(stderr, "%s %s\n", ts.c_str(), line.c_str());
  std::fflush(stderr);
}

}  // namespace hyperfed
