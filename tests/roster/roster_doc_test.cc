// The signed roster: signing, verifying, and the operators' edits
// (daemon/roster/roster_doc.h).

#include "daemon/roster/roster_doc.h"

#include "gtest/gtest.h"
#include "tests/roster/keys.h"

namespace hyperfed::roster {
namespace {

config::Roster Four() {
  config::Roster r;
  for (int i = 0; i < 4; ++i)
    r.sites.push_back({.id = "site-" + std::to_string(i), .label = i, .endpoint = "10.0.0.1:" + std::to_string(7100 + i)});
  return r;
}

TEST(RosterDocTest, ASignedRosterVerifiesWithItsKeyOnly) {
  const testing::RosterKeys keys = testing::NewRosterKeys(), other = testing::NewRosterKeys();
  ASSERT_FALSE(keys.private_pem.empty());
  config::Roster r = Four();
  r.version = 3;
  r.sites[2].drained = true;
  r.sites[1].max_capacity = 64;
  auto doc = Sign(r, keys.private_pem);
  ASSERT_TRUE(doc.ok()) << doc.status();
  auto back = Verify(*doc, keys.public_pem);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->version, 3);
  ASSERT_EQ(back->sites.size(), 4u);
  EXPECT_TRUE(back->sites[2].drained);
  EXPECT_EQ(back->sites[1].max_capacity, 64);
  EXPECT_EQ(back->sites[3].endpoint, "10.0.0.1:7103");

  auto wrong = Verify(*doc, other.public_pem);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("not the operators'"), std::string::npos) << wrong.status();
  // One byte of the body changed: the signature no longer holds.
  v1::SignedRoster tampered = *doc;
  tampered.mutable_body()->back() ^= 1;
  EXPECT_EQ(Verify(tampered, keys.public_pem).status().code(), absl::StatusCode::kInvalidArgument);
  // A key that is no Ed25519 public key is an error, not a pass.
  EXPECT_EQ(Verify(*doc, "no key").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Verify(*doc, keys.private_pem).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RosterDocTest, ASignedRosterMustKeepEveryRosterRule) {
  const testing::RosterKeys keys = testing::NewRosterKeys();
  config::Roster r = Four();
  r.version = 1;
  r.sites[3].label = 1;  // two sites at label 1
  auto doc = Sign(r, keys.private_pem);
  ASSERT_TRUE(doc.ok());
  auto got = Verify(*doc, keys.public_pem);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("sites[3].label: duplicate label 1"), std::string::npos) << got.status();
  config::Roster zero = Four();  // version 0 is the YAML's, never signed
  doc = Sign(zero, keys.private_pem);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(Verify(*doc, keys.public_pem).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RosterDocTest, AddTakesTheLowestFreeLabelAndGrowsTheCube) {
  config::Roster r = Four();
  ASSERT_EQ(r.Dimension(), 2);
  auto five = WithSite(r, "site-e", "10.0.0.2:7101", std::nullopt, std::nullopt);
  ASSERT_TRUE(five.ok()) << five.status();
  EXPECT_EQ(five->version, 1);
  EXPECT_EQ(five->FindSite("site-e")->label, 4);
  EXPECT_EQ(five->Dimension(), 3) << "label 4 needs a 3-cube";
  auto gap = WithoutSite(*five, "site-1");
  ASSERT_TRUE(gap.ok());
  auto refill = WithSite(*gap, "site-f", "10.0.0.3:7101", std::nullopt, 512.0);
  ASSERT_TRUE(refill.ok());
  EXPECT_EQ(refill->FindSite("site-f")->label, 1) << "the lowest free label";
  EXPECT_EQ(refill->FindSite("site-f")->max_capacity, 512);
  EXPECT_EQ(refill->version, 3);
  EXPECT_EQ(WithSite(r, "site-9", "10.0.0.4:1", 2, std::nullopt).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "label 2 is taken";
  EXPECT_EQ(WithSite(r, "site-0", "10.0.0.4:1", std::nullopt, std::nullopt).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "already there";
  EXPECT_EQ(WithSite(r, "bad id", "10.0.0.4:1", std::nullopt, std::nullopt).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WithSite(r, "site-9", "nowhere", std::nullopt, std::nullopt).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RosterDocTest, DrainThenRemove) {
  config::Roster r = Four();
  auto drained = Drained(r, "site-2");
  ASSERT_TRUE(drained.ok());
  EXPECT_TRUE(drained->FindSite("site-2")->drained);
  EXPECT_FALSE(drained->FindSite("site-1")->drained);
  auto gone = WithoutSite(*drained, "site-2");
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->version, 2);
  EXPECT_EQ(gone->FindSite("site-2"), nullptr);
  ASSERT_NE(gone->FindDeparted("site-2"), nullptr) << "kept for its migrations in flight";
  EXPECT_EQ(gone->FindDeparted("site-2")->endpoint, "10.0.0.1:7102");
  auto back = WithSite(*gone, "site-2", "10.0.0.5:7102", std::nullopt, std::nullopt);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->FindDeparted("site-2"), nullptr) << "a site that comes back is no longer departed";
  // A signed roster naming a site both present and departed is refused.
  config::Roster both = *back;
  both.version = 9;
  both.departed.push_back(both.sites[0]);
  const testing::RosterKeys keys = testing::NewRosterKeys();
  auto st = Verify(*Sign(both, keys.private_pem), keys.public_pem).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("is also a site"), std::string::npos) << st;
  EXPECT_EQ(Drained(r, "site-x").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(WithoutSite(r, "site-x").status().code(), absl::StatusCode::kNotFound);
  config::Roster one;
  one.sites.push_back({.id = "solo", .label = 0, .endpoint = "10.0.0.1:1"});
  EXPECT_EQ(WithoutSite(one, "solo").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RosterDocTest, TheFederationExpiryAndAllowedModesTravelSignedAndModesAreChecked) {
  const testing::RosterKeys keys = testing::NewRosterKeys();
  config::Roster r = Four();
  r.version = 2;
  r.federation = "fed-a";
  r.expires_unix_ms = 1'800'000'000'000;
  r.allowed_modes = {"exact", "mcwa"};
  auto back = Verify(*Sign(r, keys.private_pem), keys.public_pem);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->federation, "fed-a");
  EXPECT_EQ(back->expires_unix_ms, 1'800'000'000'000);
  EXPECT_EQ(back->allowed_modes, (std::vector<std::string>{"exact", "mcwa"}));
  EXPECT_TRUE(back->AllowsMode("mcwa"));
  EXPECT_FALSE(back->AllowsMode("improved-dem"));
  // The next version keeps them (the client sets a new expiry).
  auto next = WithSite(*back, "site-4", "10.0.0.1:7104", std::nullopt, std::nullopt);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->federation, "fed-a");
  EXPECT_EQ(next->allowed_modes, back->allowed_modes);
  // A mode no coordinator can run is refused with the roster.
  r.allowed_modes = {"exact", "fastest"};
  auto bad = Verify(*Sign(r, keys.private_pem), keys.public_pem);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("allowed_modes[1]"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace hyperfed::roster
