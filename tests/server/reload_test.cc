// SIGHUP's rule from the settings tables (docs/operations.md, "Reload"):
// Daemon::Reload takes each key marked "at once" and refuses each key
// marked "restart", naming it, with nothing changed. Driven by the tables,
// not by a list: a new row is tested as soon as it has an example.

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "config/config.h"
#include "config/settings.h"
#include "daemon/scheduler/registry.h"
#include "daemon/scheduler/sim_adapter.h"
#include "daemon/server/daemon.h"
#include "tests/config/test_files.h"

namespace hyperfed::server {
namespace {

using config::testing::TempDir;
using config::testing::WriteFile;

// A site of one, plain text on loopback, the sim adapter; `section` and
// `extra` add "KEY: VALUE" to one mapping.
std::string SiteYaml(const std::string& state, const std::string& section = "", const std::string& extra = "") {
  auto with = [&](const std::string& name, const std::string& base) {
    std::string items = base;
    if (section == name) items = items.empty() ? extra : absl::StrCat(items, ", ", extra);
    return absl::StrCat(name, ": {", items, "}\n");
  };
  return absl::StrCat(with("site", "id: a, listen: \"127.0.0.1:0\", advertise: \"127.0.0.1:7001\""),
                      "roster: [{id: a, label: 0, endpoint: \"127.0.0.1:7001\"}]\n",
                      "scheduler: {adapter: sim, options: {cores: 4}}\n", "state_dir: ", state, "\n",
                      with("security", "insecure: true"), with("balancer", ""), with("log", ""));
}

template <typename S>
void EachRowReloadsByItsChange(Daemon* d, const std::string& path, const std::string& state, const std::string& section,
                               const std::vector<config::Setting<S>>& table, int* tried) {
  for (const config::Setting<S>& row : table) {
    if (row.example.empty()) continue;  // a file the test would have to make
    const std::string key = absl::StrCat(section, ".", row.name);
    SCOPED_TRACE(absl::StrCat(key, ": ", row.example));
    ++*tried;
    WriteFile(path, SiteYaml(state, section, absl::StrCat(row.name, ": \"", row.example, "\"")));
    auto r = d->Reload(path);
    if (row.change == config::Change::kLive) {
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_NE(r->find(key), std::string::npos) << *r;
      // Back to the base file: the reload takes the default again.
      WriteFile(path, SiteYaml(state));
      auto back = d->Reload(path);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_NE(back->find(key), std::string::npos) << *back;
    } else {
      ASSERT_FALSE(r.ok()) << "reloaded: " << *r;
      EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_NE(r.status().message().find(absl::StrCat("not reloaded, nothing changed: ", key)), std::string::npos)
          << r.status();
      // Nothing changed: the base file reloads as "nothing changed".
      WriteFile(path, SiteYaml(state));
      auto same = d->Reload(path);
      ASSERT_TRUE(same.ok()) << same.status();
      EXPECT_EQ(*same, "nothing changed");
    }
  }
}

TEST(ReloadTest, EachSettingReloadsAtOnceOrIsRefusedByItsTableRow) {
  TempDir dir;
  const std::string path = dir / "a.yaml", state = dir / "state";
  WriteFile(path, SiteYaml(state));
  scheduler::AdapterRegistry adapters;
  ASSERT_TRUE(adapters.Register(std::make_unique<scheduler::SimAdapterFactory>()).ok());
  auto c = config::LoadConfig(path, &adapters);
  ASSERT_TRUE(c.ok()) << c.status();
  auto d = Daemon::Create(*c, &adapters);
  ASSERT_TRUE(d.ok()) << d.status();
  int tried = 0;
  EachRowReloadsByItsChange(d->get(), path, state, "balancer", config::BalancerSettings(), &tried);
  EachRowReloadsByItsChange(d->get(), path, state, "log", config::LogSettings(), &tried);
  EachRowReloadsByItsChange(d->get(), path, state, "security", config::SecuritySettings(), &tried);
  // The site's keys other than those the roster pins (id, listen,
  // advertise, label must agree with the roster entry).
  std::vector<config::Setting<config::SiteConfig>> site;
  for (const auto& row : config::SiteSettings())
    if (row.name == "metrics_listen" || row.name == "web" || row.name == "web_hosts") site.push_back(row);
  EachRowReloadsByItsChange(d->get(), path, state, "site", site, &tried);
  EXPECT_GE(tried, 20);
}

}  // namespace
}  // namespace hyperfed::server
