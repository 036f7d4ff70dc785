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

TEST(AuthFailureLimiterTest, AnAddressIsRefusedAfterItsFailuresUntilTheWindowPasses) {
  AuthFailureLimiter l(3, absl::Minutes(1));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(l.Allowed("10.0.0.1", t0 + absl::Seconds(i)));
    l.Failed("10.0.0.1", t0 + absl::Seconds(i));
  }
  EXPECT_FALSE(l.Allowed("10.0.0.1", t0 + absl::Seconds(3)));
  EXPECT_TRUE(l.Allowed("10.0.0.2", t0 + absl::Seconds(3))) << "other addresses are not held";
  EXPECT_FALSE(l.Allowed("10.0.0.1", t0 + absl::Seconds(59)));
  EXPECT_TRUE(l.Allowed("10.0.0.1", t0 + absl::Seconds(60))) << "the first failure is a minute old";
}

TEST(AuthFailureLimiterTest, ManyAddressesShareOneEntryAndCannotPushAnotherOut) {
  AuthFailureLimiter l(2, absl::Minutes(1), /*max_addresses=*/4);
  const absl::Time t = absl::FromUnixSeconds(1000);
  l.Failed("attacker", t);
  l.Failed("attacker", t);
  for (int i = 0; i < 100; ++i) l.Failed("spoof-" + std::to_string(i), t);
  EXPECT_FALSE(l.Allowed("attacker", t)) << "its failures are still counted";
}

TEST(PeerAddressTest, TheHostWithoutItsPort) {
  EXPECT_EQ(PeerAddress("ipv4:10.0.0.1:5000"), "10.0.0.1");
  EXPECT_EQ(PeerAddress("ipv6:[::1]:5000"), "::1");
  EXPECT_EQ(PeerAddress("ipv6:%5B::1%5D:5000"), "%5B::1%5D:5000");
  EXPECT_EQ(PeerAddress("unix:/run/x.sock"), "unix:/run/x.sock");
}

}  // namespace
}  // namespace hyperfed::server
