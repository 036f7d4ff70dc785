#pragma once

// The rules of single values that both the settings tables (settings.cc)
// and the checks across fields (config.cc) apply: one place each.

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace hyperfed::config {

inline constexpr int kMaxLabel = 1 << 20;                     // labels are < 2^20
inline constexpr char kAdminCommonName[] = "hyperfed-admin";  // scripts/gen-certs' admin.pem
inline constexpr size_t kMaxIdLength = 64;

// "text" with C escapes, for error messages.
std::string Quote(absl::string_view s);
bool ValidId(const std::string& id);
// Checks "host:port" (IPv6 hosts in brackets). A bind address may use port
// 0 (the kernel picks one, which tests use); a dialled endpoint may not.
// "" when fine, else the reason.
std::string CheckHostPort(const std::string& s, bool allow_port_zero);
// "" when `path` is a regular file this process can read, else the reason.
std::string CheckReadableFile(const std::string& path);
// The host of "host:port" or "[v6]:port", without brackets.
std::string HostOf(const std::string& s);
// "" when `id` may name a site, else why not.
std::string IdProblem(const std::string& id);
std::string LabelProblem(int label);

}  // namespace hyperfed::config
