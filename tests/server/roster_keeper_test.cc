// Where a site's roster comes from (daemon/server/roster_keeper.h): only the
// operators' signed rosters, newer than the one in force, stored before
// they are used.

#include "daemon/server/roster_keeper.h"

#include <functional>

#include "daemon/roster/roster_doc.h"
#include "gtest/gtest.h"
#include "tests/config/test_files.h"
#include "tests/roster/keys.h"

namespace hyperfed::server {
namespace {

using config::testing::TempDir;
using config::testing::WriteFile;

class RosterKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(dir_ / "roster-pub.pem", keys_.public_pem);
    config_.site.id = "site-0";
    config_.state_dir = dir_.path();
    config_.security.roster_key = dir_ / "roster-pub.pem";
    for (int i = 0; i < 2; ++i)
      config_.roster.sites.push_back(
          {.id = "site-" + std::to_string(i), .label = i, .endpoint = "10.0.0.1:" + std::to_string(7100 + i)});
  }
  // Version `v` of this site's federation, for an hour from now, unless a
  // test says otherwise.
  v1::SignedRoster Version(int64_t v, int sites, const std::string& key_pem = "",
                           const std::function<void(config::Roster&)>& tweak = nullptr) {
    config::Roster r;
    r.version = v;
    r.federation = config_.federation;
    r.expires_unix_ms = absl::ToUnixMillis(absl::Now() + absl::Hours(1));
    for (int i = 0; i < sites; ++i)
      r.sites.push_back({.id = "site-" + std::to_string(i), .label = i, .endpoint = "10.0.0.1:" + std::to_string(7100 + i)});
    if (tweak) tweak(r);
    return *roster::Sign(r, key_pem.empty() ? keys_.private_pem : key_pem);
  }
  std::unique_ptr<RosterKeeper> Open(federation::LiveConfig* live) {
    auto k = RosterKeeper::Open(config_, live);
    EXPECT_TRUE(k.ok()) << k.status();
    return k.ok() ? *std::move(k) : nullptr;
  }

  TempDir dir_;
  testing::RosterKeys keys_ = testing::NewRosterKeys();
  config::Config config_;
};

TEST_F(RosterKeeperTest, TakesOnlyNewerSignedRostersAndStoresThemForTheNextStart) {
  federation::LiveConfig live(config_);
  auto keeper = Open(&live);
  ASSERT_NE(keeper, nullptr);
  EXPECT_FALSE(keeper->Current().has_value()) << "the YAML's roster, unsigned";
  auto took = keeper->Offer(Version(2, 3), "site-1");
  ASSERT_TRUE(took.ok()) << took.status();
  EXPECT_TRUE(*took);
  EXPECT_EQ(live.roster()->version, 2);
  EXPECT_EQ(live.roster()->sites.size(), 3u);
  took = keeper->Offer(Version(1, 4), "site-1");
  ASSERT_TRUE(took.ok());
  EXPECT_FALSE(*took) << "older";
  EXPECT_EQ(keeper->Offer(Version(5, 4, testing::NewRosterKeys().private_pem), "site-1").status().code(),
            absl::StatusCode::kInvalidArgument)
      << "another key";
  EXPECT_EQ(live.roster()->version, 2);
  // A restart starts from the stored roster, not the YAML's.
  federation::LiveConfig after(config_);
  auto again = Open(&after);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(after.roster()->version, 2);
  EXPECT_EQ(after.roster()->sites.size(), 3u);
  ASSERT_TRUE(again->Current().has_value());
}

TEST_F(RosterKeeperTest, ReplaceComparesTheVersionInForceAndRunsTheCheck) {
  federation::LiveConfig live(config_);
  auto keeper = Open(&live);
  auto ok = [](const config::Roster&) { return absl::OkStatus(); };
  EXPECT_EQ(keeper->Replace(Version(1, 3), 7, ok).status().code(), absl::StatusCode::kAborted)
      << "the operator read another version";
  auto refuse = [](const config::Roster&) { return absl::InvalidArgumentError("ceiling"); };
  EXPECT_EQ(keeper->Replace(Version(1, 3), 0, refuse).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(live.roster()->version, 0) << "nothing changed";
  auto v = keeper->Replace(Version(1, 3), 0, ok);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, 1);
  auto second = keeper->Replace(Version(2, 4), 0, ok);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAborted);
  EXPECT_NE(second.status().message().find("run the command again"), std::string::npos) << second.status();
}

TEST_F(RosterKeeperTest, TwoRostersOfOneVersionEndTheSameEverywhere) {
  const v1::SignedRoster a = Version(3, 3), b = Version(3, 4);
  const v1::SignedRoster& first = a.body() < b.body() ? a : b;
  // Whichever a site hears first, it ends with the one whose body sorts first.
  for (const auto& order : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    TempDir state;
    config_.state_dir = state.path();
    federation::LiveConfig live(config_);
    auto keeper = Open(&live);
    ASSERT_TRUE(keeper->Offer(*order.first, "x").ok());
    ASSERT_TRUE(keeper->Offer(*order.second, "y").ok());
    EXPECT_EQ(keeper->Current()->body(), first.body());
  }
}

TEST_F(RosterKeeperTest, AStoredRosterThatDoesNotVerifyStopsTheStart) {
  WriteFile(dir_ / "roster.signed", "garbage");
  federation::LiveConfig live(config_);
  auto k = RosterKeeper::Open(config_, &live);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(k.status().message().find("roster.signed does not decode"), std::string::npos) << k.status();
  WriteFile(dir_ / "roster.signed", Version(4, 2, testing::NewRosterKeys().private_pem).SerializeAsString());
  k = RosterKeeper::Open(config_, &live);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(k.status().message().find("not the operators'"), std::string::npos) << k.status();
  // Without a roster key no signed roster is taken at all.
  config_.security.roster_key.clear();
  std::filesystem::remove(dir_ / "roster.signed");
  auto keyless = Open(&live);
  EXPECT_EQ(keyless->Offer(Version(1, 2), "x").status().code(), absl::StatusCode::kFailedPrecondition);
}

// Issue 34 (finding 6): a site takes only its own federation's rosters, and
// only before they expire; a new site (version 0) likewise.
TEST_F(RosterKeeperTest, ARosterOfAnotherFederationIsRefusedAndChangesNothing) {
  config_.federation = "fed-a";
  federation::LiveConfig live(config_);
  auto keeper = Open(&live);
  ASSERT_NE(keeper, nullptr);
  auto other = keeper->Offer(Version(3, 3, "", [](config::Roster& r) { r.federation = "fed-b"; }), "site-1");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument) << other.status();
  EXPECT_NE(other.status().message().find("federation 'fed-b'"), std::string::npos) << other.status();
  EXPECT_NE(other.status().message().find("'fed-a'"), std::string::npos) << other.status();
  EXPECT_EQ(keeper
                ->Replace(Version(1, 3, "", [](config::Roster& r) { r.federation = "fed-b"; }), 0,
                          [](const config::Roster&) { return absl::OkStatus(); })
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(live.roster()->version, 0) << "nothing changed";
  EXPECT_FALSE(std::filesystem::exists(dir_ / "roster.signed")) << "nothing stored";
  auto own = keeper->Offer(Version(3, 3), "site-1");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_TRUE(*own);
  EXPECT_EQ(live.roster()->federation, "fed-a");
}

TEST_F(RosterKeeperTest, ARosterPastItsExpiryIsRefusedAndChangesNothing) {
  federation::LiveConfig live(config_);
  auto keeper = Open(&live);
  ASSERT_NE(keeper, nullptr);
  const v1::SignedRoster old = Version(
      5, 3, "", [](config::Roster& r) { r.expires_unix_ms = absl::ToUnixMillis(absl::Now() - absl::Minutes(1)); });
  auto took = keeper->Offer(old, "site-1");
  EXPECT_EQ(took.status().code(), absl::StatusCode::kInvalidArgument) << took.status();
  EXPECT_NE(took.status().message().find("expired"), std::string::npos) << took.status();
  EXPECT_EQ(keeper->Replace(old, 0, [](const config::Roster&) { return absl::OkStatus(); }).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(live.roster()->version, 0) << "a new site takes no old roster a seed shows it";
  EXPECT_FALSE(std::filesystem::exists(dir_ / "roster.signed"));
}

TEST_F(RosterKeeperTest, ARosterSignedBeforeRostersNamedAFederationIsRefusedWithWhatToDo) {
  federation::LiveConfig live(config_);
  auto keeper = Open(&live);
  ASSERT_NE(keeper, nullptr);
  const v1::SignedRoster legacy = Version(2, 3, "", [](config::Roster& r) {
    r.federation.clear();
    r.expires_unix_ms = 0;
  });
  auto took = keeper->Offer(legacy, "site-1");
  EXPECT_EQ(took.status().code(), absl::StatusCode::kInvalidArgument) << took.status();
  EXPECT_NE(took.status().message().find("names no federation"), std::string::npos) << took.status();
  EXPECT_NE(took.status().message().find("hyperfedctl roster renew"), std::string::npos) << took.status();
  EXPECT_EQ(live.roster()->version, 0);
}

// The roster in force when it expires, or when the site is upgraded from a
// version whose rosters named no federation: it stays in force, and the
// site says why the operators must sign a new one (docs/design.md §6.9).
TEST_F(RosterKeeperTest, AStoredRosterThatHasExpiredStaysInForceAndTheSiteWarns) {
  FakeEnv env(absl::Now());
  {
    federation::LiveConfig live(config_);
    auto keeper = RosterKeeper::Open(config_, &live, &env);
    ASSERT_TRUE(keeper.ok()) << keeper.status();
    ASSERT_TRUE((*keeper)->Offer(Version(3, 3), "site-1").ok());
    EXPECT_EQ((*keeper)->ExpiryWarning(), "");
    env.Advance(absl::Hours(2));  // past its hour
    EXPECT_NE((*keeper)->ExpiryWarning().find("roster version 3 expired at"), std::string::npos)
        << (*keeper)->ExpiryWarning();
    EXPECT_EQ(live.roster()->version, 3) << "still in force";
  }
  federation::LiveConfig after(config_);
  auto again = RosterKeeper::Open(config_, &after, &env);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(after.roster()->version, 3) << "a restart keeps it";
  EXPECT_NE((*again)->ExpiryWarning().find("hyperfedctl roster renew"), std::string::npos);
  // It travels no further: a site without it refuses it.
  TempDir other;
  config_.state_dir = other.path();
  federation::LiveConfig fresh(config_);
  auto joiner = RosterKeeper::Open(config_, &fresh, &env);
  ASSERT_TRUE(joiner.ok());
  EXPECT_EQ((*joiner)->Offer(*(*again)->Current(), "site-0").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fresh.roster()->version, 0);
}

TEST_F(RosterKeeperTest, AStoredRosterSignedBeforeFederationNamesStaysInForceAsThisSitesUntilRenewed) {
  config_.federation = "fed-a";
  WriteFile(dir_ / "roster.signed", Version(4, 3, "", [](config::Roster& r) {
                                      r.federation.clear();
                                      r.expires_unix_ms = 0;
                                    }).SerializeAsString());
  federation::LiveConfig live(config_);
  auto keeper = Open(&live);
  ASSERT_NE(keeper, nullptr);
  EXPECT_EQ(live.roster()->version, 4);
  EXPECT_EQ(live.roster()->federation, "fed-a") << "hyperfedctl reads it from here to renew";
  EXPECT_NE(keeper->ExpiryWarning().find("signed before rosters named their federation"), std::string::npos)
      << keeper->ExpiryWarning();
  // The operators' renewal: the next version, named and with an expiry.
  auto v = keeper->Replace(Version(5, 3), 4, [](const config::Roster&) { return absl::OkStatus(); });
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(keeper->ExpiryWarning(), "");
}

TEST_F(RosterKeeperTest, AStoredRosterOfAnotherFederationStopsTheStart) {
  WriteFile(dir_ / "roster.signed",
            Version(4, 3, "", [](config::Roster& r) { r.federation = "fed-b"; }).SerializeAsString());
  federation::LiveConfig live(config_);
  auto k = RosterKeeper::Open(config_, &live);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(k.status().message().find("of federation 'fed-b', and this site is of federation 'default'"),
            std::string::npos)
      << k.status();
}

}  // namespace
}  // namespace hyperfed::server
