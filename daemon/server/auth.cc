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

}  // namespace hyperfed::server
