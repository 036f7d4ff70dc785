#pragma once

// Who may call what (docs/operations.md, "Secure"; docs/design.md §8):
// - a site certificate (CN = a roster site id) calls the Peer service only;
// - the Admin service needs the admin bearer token, or a client certificate
//   that carries the admin role: the URI subjectAltName kAdminRoleUri
//   (scripts/gen-certs puts it in admin.pem) on a certificate whose CN names
//   no roster site, so a site's certificate never passes.

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "config/config.h"

namespace hyperfed::server {

inline constexpr char kAdminRoleUri[] = "hyperfed:role:admin";
// Metadata the web view adds to its in-process Admin calls: the browser's
// address, which AdminService's login limit counts failures by. Taken only
// from in-process calls (the web view's own).
inline constexpr char kWebClientHeader[] = "hyperfed-web-client";

// True when the value of an "authorization" header is "Bearer <token>".
// Compares SHA-256 digests with CRYPTO_memcmp, so the time taken says
// nothing about how much of the token matched. `token` must not be empty.
bool BearerTokenMatches(std::string_view header_value, std::string_view token);

// True when a verified client certificate with common name `cn` and URI
// subjectAltNames `uris` is an operator's: it carries kAdminRoleUri and its
// CN is no site of the roster.
bool IsAdminCertificate(const std::string& cn, const std::vector<std::string>& uris, const config::Roster& roster);

// Failed admin logins per client address (docs/security.md, "Operators'
// credentials"): an address whose calls failed `max_failures` times within
// `window` is refused until the oldest of them is `window` old, so that a
// client with no certificate (the TLS handshake lets it in: tokens are an
// operator's other credential) cannot guess tokens at line rate. At most
// `max_addresses` addresses are tracked; beyond that, new ones share one
// entry, so that many addresses cannot push an attacker's out.
// Thread-safe.
class AuthFailureLimiter {
 public:
  AuthFailureLimiter(int max_failures = 20, absl::Duration window = absl::Minutes(1), size_t max_addresses = 4096)
      : max_failures_(max_failures), window_(window), max_addresses_(max_addresses) {}
  // True while `address` may try again at `now`.
  bool Allowed(const std::string& address, absl::Time now);
  void Failed(const std::string& address, absl::Time now);

 private:
  std::vector<absl::Time>& EntryLocked(const std::string& address);
  void ExpireLocked(std::vector<absl::Time>& times, absl::Time now) const;
  const int max_failures_;
  const absl::Duration window_;
  const size_t max_addresses_;
  std::mutex mu_;
  std::map<std::string, std::vector<absl::Time>> failures_;  // guarded by mu_; by address, oldest first
};

// The address of a gRPC peer string ("ipv4:10.0.0.1:5000" -> "10.0.0.1",
// "ipv6:[::1]:5000" -> "::1"), without its port; anything else as it is.
std::string PeerAddress(std::string_view grpc_peer);

}  // namespace hyperfed::server
