#include "daemon/server/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>

namespace hyperfed::server {
namespace {

void Digest(std::string_view s, unsigned char out[SHA256_DIGEST_LENGTH]) {
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), out);
}

}  // namespace

bool BearerTokenMatches(std::string_view header_value, std::string_view token) {
  if (token.empty()) return false;
  constexpr std::string_view kScheme = "Bearer ";
  if (header_value.substr(0, kScheme.size()) != kScheme) return false;
  // Digests of equal length: the comparison's time depends on neither the
  // token's length nor the first byte that differs.
  unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
  Digest(header_value.substr(kScheme.size()), a);
  Digest(token, b);
  return CRYPTO_memcmp(a, b, sizeof a) == 0;
}

bool IsAdminCertificate(const std::string& cn, const std::vector<std::string>& uris, const config::Roster& roster) {
  if (roster.FindSite(cn)) return false;
  return std::find(uris.begin(), uris.end(), kAdminRoleUri) != uris.end();
}

std::vector<absl::Time>& AuthFailureLimiter::EntryLocked(const std::string& address) {
  auto it = failures_.find(address);
  if (it != failures_.end()) return it->second;
  if (failures_.size() >= max_addresses_) {
    for (auto i = failures_.begin(); i != failures_.end();)  // forget the quiet ones first
      i = i->second.empty() ? failures_.erase(i) : std::next(i);
    if (failures_.size() >= max_addresses_) return failures_[""];
  }
  return failures_[address];
}

void AuthFailureLimiter::ExpireLocked(std::vector<absl::Time>& times, absl::Time now) const {
  auto keep = std::find_if(times.begin(), times.end(), [&](absl::Time t) { return now - t < window_; });
  times.erase(times.begin(), keep);
}

bool AuthFailureLimiter::Allowed(const std::string& address, absl::Time now) {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<absl::Time>& times = EntryLocked(address);
  ExpireLocked(times, now);
  return static_cast<int>(times.size()) < max_failures_;
}

void AuthFailureLimiter::Failed(const std::string& address, absl::Time now) {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<absl::Time>& times = EntryLocked(address);
  ExpireLocked(times, now);
  if (static_cast<int>(times.size()) < max_failures_) times.push_back(now);
}

std::string PeerAddress(std::string_view p) {
  std::string_view rest = p;
  if (rest.substr(0, 5) == "ipv4:") {
    rest.remove_prefix(5);
    return std::string(rest.substr(0, rest.rfind(':')));
  }
  if (rest.substr(0, 5) == "ipv6:") {
    rest.remove_prefix(5);
    if (!rest.empty() && rest.front() == '[') {
      const size_t end = rest.find(']');
      if (end != std::string_view::npos) return std::string(rest.substr(1, end - 1));
    }
    return std::string(rest);
  }
  return std::string(p);
}

}  // namespace hyperfed::server
