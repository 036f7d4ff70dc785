// The settings tables (config/settings.h): every row reads its example,
// the reload rule comes from the row, and docs/operations.md holds the
// table the code generates.

#include "config/settings.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/config/test_files.h"

namespace hyperfed::config {
namespace {

// Each row with an example: it parses, it differs from the default, and
// ChangedSettings reports that key alone, with the row's Change.
template <typename S>
void ExamplesChangeTheirKeyAlone(absl::string_view section, const std::vector<Setting<S>>& table, S Config::*member) {
  for (const Setting<S>& row : table) {
    if (row.example.empty()) continue;  // a file: ConfigTest's cases
    SCOPED_TRACE(absl::StrCat(section, ".", row.name, " = ", row.example));
    Config before, after;
    ASSERT_EQ(row.parse(std::string(row.example), &(after.*member)), "");
    EXPECT_EQ(row.check(after.*member), "");
    EXPECT_NE(row.format(after.*member), row.format(before.*member)) << "the example is the default";
    const std::vector<SettingChange> changes = ChangedSettings(before, after);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].key, absl::StrCat(section, ".", row.name));
    EXPECT_EQ(changes[0].change, row.change);
    EXPECT_EQ(changes[0].to, row.format(after.*member));
  }
}

TEST(SettingsTest, EachExampleParsesAndChangesItsOwnKeyAlone) {
  ExamplesChangeTheirKeyAlone("site", SiteSettings(), &Config::site);
  ExamplesChangeTheirKeyAlone("balancer", BalancerSettings(), &Config::balancer);
  ExamplesChangeTheirKeyAlone("security", SecuritySettings(), &Config::security);
  ExamplesChangeTheirKeyAlone("log", LogSettings(), &Config::log);
  ExamplesChangeTheirKeyAlone("capacity", CapacitySettings(), &Config::capacity);
}

TEST(SettingsTest, KeyOfNamesAMemberByItsRow) {
  EXPECT_EQ(KeyOf(BalancerSettings(), &BalancerConfig::peer_timeout), "peer_timeout");
  EXPECT_EQ(KeyOf(SiteSettings(), &SiteConfig::web_hosts), "web_hosts");
  EXPECT_EQ(KeyOf(SecuritySettings(), &SecurityConfig::admin_token_file), "admin_token_file");
}

// Every key has one row: the table's names are the keys a config may use
// (ParseConfig refuses the others, naming the table's).
TEST(SettingsTest, AKeyOutsideTheTableIsUnknownAndTheNearestRowIsSuggested) {
  auto c = ParseConfig(R"(site: {id: a, listen: "127.0.0.1:7001"}
roster: [{id: a, label: 0, endpoint: "127.0.0.1:7001"}]
state_dir: /tmp/x
security: {insecure: true}
balancer: {heartbeat_intervall: 2s}
)",
                       "a.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(
                "a.yaml:5: balancer.heartbeat_intervall: unknown key; did you mean \"heartbeat_interval\"?"),
            std::string::npos)
      << c.status();
}

// The reference table in docs/operations.md is the one `hyperfedd
// --settings` prints (SettingsReference).
TEST(SettingsDocTest, OperationsMdHoldsTheGeneratedTable) {
  const std::string doc = testing::ReadFile((testing::SourceDir() / "docs/operations.md").string());
  const std::string begin = "<!-- settings:begin (hyperfedd --settings) -->\n", end = "<!-- settings:end -->";
  const size_t a = doc.find(begin), b = doc.find(end);
  ASSERT_NE(a, std::string::npos) << "docs/operations.md has no " << begin;
  ASSERT_NE(b, std::string::npos);
  EXPECT_EQ(doc.substr(a + begin.size(), b - a - begin.size()), SettingsReference())
      << "regenerate the table: build/hyperfedd --settings";
}

}  // namespace
}  // namespace hyperfed::config
