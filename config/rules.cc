#include "config/rules.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hyperfed::config {

namespace fs = std::filesystem;

std::string Quote(absl::string_view s) { return absl::StrCat("\"", absl::CEscape(s), "\""); }

bool ValidId(const std::string& id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  return std::all_of(id.begin(), id.end(),
                     [](char ch) { return absl::ascii_isalnum(ch) || ch == '.' || ch == '_' || ch == '-'; });
}

std::string CheckHostPort(const std::string& s, bool allow_port_zero) {
  std::string expected = absl::StrCat("expected host:port, got ", Quote(s));
  std::string host, port;
  if (!s.empty() && s[0] == '[') {
    size_t close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      return expected;
    }
    host = s.substr(1, close - 1);
    port = s.substr(close + 2);
  } else {
    size_t colon = s.rfind(':');
    if (colon == std::string::npos) return expected;
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
    // An unbracketed IPv6 address is ambiguous ("::1:7001").
    if (host.find(':') != std::string::npos) return expected;
  }
  if (host.empty() || port.empty()) return expected;
  bool host_ok = std::all_of(host.begin(), host.end(), [](char ch) {
    return absl::ascii_isalnum(ch) || ch == '.' || ch == '-' || ch == '_' || ch == ':' || ch == '%';
  });
  if (!host_ok) return absl::StrCat("bad host in ", Quote(s));
  bool digits = std::all_of(port.begin(), port.end(), [](char ch) { return absl::ascii_isdigit(ch); });
  int value = 0;
  if (!digits || port.size() > 5 || !absl::SimpleAtoi(port, &value)) {
    return absl::StrCat("port must be a number, got ", Quote(s));
  }
  int low = allow_port_zero ? 0 : 1;
  if (value < low || value > 65535) {
    return absl::StrCat("port ", value, " is out of range ", low, "..65535 in ", Quote(s));
  }
  return "";
}

std::string CheckReadableFile(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return absl::StrCat(Quote(path), " does not exist");
  if (!fs::is_regular_file(st)) return absl::StrCat(Quote(path), " is not a regular file");
  if (::access(path.c_str(), R_OK) != 0) {
    return absl::StrCat(Quote(path), " is not readable: ", std::strerror(errno));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::StrCat(Quote(path), " cannot be opened");
  return "";
}

std::string HostOf(const std::string& s) {
  if (!s.empty() && s[0] == '[') {
    size_t close = s.find(']');
    return close == std::string::npos ? "" : s.substr(1, close - 1);
  }
  size_t colon = s.rfind(':');
  return colon == std::string::npos ? s : s.substr(0, colon);
}

std::string IdProblem(const std::string& id) {
  if (!ValidId(id))
    return absl::StrCat("site id must be 1 to ", kMaxIdLength, " characters of [A-Za-z0-9._-], got ", Quote(id));
  // The operator certificate's CN: a site of that name could pass as the
  // operator, or the operator's certificate as the site.
  if (id == kAdminCommonName) return absl::StrCat(Quote(id), " is reserved for the operator's certificate");
  return "";
}

std::string LabelProblem(int label) {
  if (label < 0 || label >= kMaxLabel) return absl::StrCat("label must be in 0..", kMaxLabel - 1, ", got ", label);
  return "";
}
}  // namespace hyperfed::config
