#include "daemon/server/auth.h"

#include "gtest/gtest.h"

namespace hyperfed::server {
namespace {

TEST(BearerTokenTest, OnlyTheExactTokenMatches) {
  const std::string token = "0123456789abcdef0123456789abcdef";
  EXPECT_TRUE(BearerTokenMatches("Bearer " + token, token));
  EXPECT_FALSE(BearerTokenMatches(token, token));  // no scheme
  EXPECT_FALSE(BearerTokenMatches("Basic " + token, token));
  EXPECT_FALSE(BearerTokenMatches("Bearer " + token + "0", token));                // longer
  EXPECT_FALSE(BearerTokenMatches("Bearer " + token.substr(1), token));            // shorter
  EXPECT_FALSE(BearerTokenMatches("Bearer " + token.substr(0, 31) + "0", token));  // last byte differs
  EXPECT_FALSE(BearerTokenMatches("Bearer ", token));
  EXPECT_FALSE(BearerTokenMatches("Bearer ", ""));  // no token configured: nothing matches
  EXPECT_FALSE(BearerTokenMatches("", ""));
}

TEST(AdminCertificateTest, OnlyTheAdminRoleOnANonSiteCertificatePasses) {
  config::Config c;
  c.roster.sites = {{"site-0", 0, "127.0.0.1:1", 1}, {"site-1", 1, "127.0.0.1:2", 1}};
  EXPECT_TRUE(IsAdminCertificate("hyperfed-admin", {kAdminRoleUri}, c.roster));
  EXPECT_TRUE(IsAdminCertificate("alice", {"spiffe://x/y", kAdminRoleUri}, c.roster));
  // The CN alone is no role (a CA may sign any name) ...
  EXPECT_FALSE(IsAdminCertificate("hyperfed-admin", {}, c.roster));
  EXPECT_FALSE(IsAdminCertificate("hyperfed-admin", {"hyperfed:role:peer"}, c.roster));
  // ... and a site's certificate never passes, even with the role.
  EXPECT_FALSE(IsAdminCertificate("site-1", {}, c.roster));
  EXPECT_FALSE(IsAdminCertificate("site-1", {kAdminRoleUri}, c.roster));
}

}  // namespace
}  // namespace hyperfed::server
