#include "daemon/migration/crash_point.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "absl/strings/numbers.h"

namespace hyperfed::migration {

namespace {
std::function<void(std::string_view)>& Hook() {
  static auto* hook = new std::function<void(std::string_view)>;
  return *hook;
}
}  // namespace

void SetCrashPointHook(std::function<void(std::string_view)> hook) { Hook() = std::move(hook); }

void CrashPoint(std::string_view name) {
  if (const auto& hook = Hook()) return hook(name);
  const char* env = std::getenv(kCrashEnvVar);
  if (env == nullptr || *env == '\0') return;
  std::string_view spec(env);
  int64_t nth = 1;
  if (size_t colon = spec.rfind(':'); colon != std::string_view::npos) {
    if (!absl::SimpleAtoi(std::string(spec.substr(colon + 1)), &nth) || nth < 1) return;
    spec = spec.substr(0, colon);
  }
  if (spec != name) return;
  // Counted per process: a restarted process starts again at 1.
  static std::mutex mu;
  static std::map<std::string, int64_t, std::less<>>* hits = new std::map<std::string, int64_t, std::less<>>;
  int64_t n;
  {
    std::lock_guard<std::mutex> l(mu);
    n = ++(*hits)[std::string(name)];
  }
  if (n != nth) return;
  const char* sig = std::getenv(kCrashSignalEnvVar);
  kill(getpid(), sig != nullptr && std::string_view(sig) == "STOP" ? SIGSTOP : SIGKILL);
}

}  // namespace hyperfed::migration
