#pragma once

// Who may call what (docs/operations.md, "Secure"; docs/design.md §8):
// - a site certificate (CN = a roster site id) calls the Peer service only;
// - the Admin service needs the admin bearer token, or a client certificate
//   that carries the admin role: the URI subjectAltName kAdminRoleUri
//   (scripts/gen-certs puts it in admin.pem) on a certificate whose CN names
//   no roster site, so a site's certificate never passes.

#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace hyperfed::server {

inline constexpr char kAdminRoleUri[] = "hyperfed:role:admin";

// True when the value of an "authorization" header is "Bearer <token>".
// Compares SHA-256 digests with CRYPTO_memcmp, so the time taken says
// nothing about how much of the token matched. `token` must not be empty.
bool BearerTokenMatches(std::string_view header_value, std::string_view token);

// True when a verified client certificate with common name `cn` and URI
// subjectAltNames `uris` is an operator's: it carries kAdminRoleUri and its
// CN is no site of the roster.
bool IsAdminCertificate(const std::string& cn, const std::vector<std::string>& uris, const config::Roster& roster);

}  // namespace hyperfed::server
