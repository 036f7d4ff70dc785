#include "daemon/server/protocol.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hyperfed::server {
namespace {

// The major version of "MAJOR.MINOR"; -1 when malformed.
int Major(const std::string& v) {
  const size_t dot = v.find('.');
  int major = 0, minor = 0;
  if (dot == std::string::npos || !absl::SimpleAtoi(v.substr(0, dot), &major) ||
      !absl::SimpleAtoi(v.substr(dot + 1), &minor) || major < 0 || minor < 0)
    return -1;
  return major;
}

}  // namespace

const std::string& ProtocolVersion() {
  static const std::string v = [] {
    const char* fake = std::getenv("HYPERFED_TEST_PROTOCOL");
    return std::string(fake && Major(fake) >= 0 ? fake : kProtocolVersion);
  }();
  return v;
}

absl::Status CheckProtocol(const std::string& theirs) {
  const std::string t = theirs.empty() ? "1.0" : theirs;
  const int major = Major(t);
  if (major < 0) return absl::InvalidArgumentError(absl::StrCat("protocol \"", t.substr(0, 20), "\" is not MAJOR.MINOR"));
  if (major != Major(ProtocolVersion()))
    return absl::FailedPreconditionError(absl::StrCat("protocol ", t, " at the caller, ", ProtocolVersion(),
                                                      " here: sites of another major version cannot take part "
                                                      "together (docs/operations.md, \"Upgrade\")"));
  return absl::OkStatus();
}

}  // namespace hyperfed::server
