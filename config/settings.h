#pragma once

// The settings of a site's config, described once (issue 30): one table per
// mapping of the YAML (site, capacity, balancer, security, log, and each
// roster and seeds item), a row per key. The row drives everything about
// its key: that the key is known (and "did you mean" for a near one),
// reading its value, its own rule (range, names), what SIGHUP may change
// (Change), and its line in docs/operations.md's reference table
// (SettingsReference; a test checks the document against it).
//
// Adding a setting: a member in config.h's struct and one row here. A rule
// that spans fields stays in config.cc's CheckRules and names its keys
// with KeyOf, so no key is spelled twice.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"
#include "config/config.h"

namespace hyperfed::config {

// What a running daemon does when SIGHUP brings a new value
// (docs/operations.md, "Reload").
enum class Change {
  kLive,     // takes it at once
  kRestart,  // refuses the reload, naming the key: it needs a restart
};

template <typename S>
struct Setting {
  absl::string_view name;  // the YAML key
  absl::string_view type;  // as the reference table and errors say it ("a duration", "exact, improved-dem or mcwa")
  Change change = Change::kRestart;
  bool required = false;
  absl::string_view doc;      // one line for the reference table
  absl::string_view example;  // a valid value other than the default ("" where it names a file)
  // Reads the YAML scalar `text` into `s`: "" or why not.
  std::function<std::string(std::string_view text, S* s)> parse;
  // The value as the config spells it ("30s", "gain", "true"; "" unset).
  std::function<std::string(const S& s)> format;
  // "" or why the value breaks the key's own rule.
  std::function<std::string(const S& s)> check;
  // The member's address in `s` (KeyOf).
  std::function<const void*(const S& s)> member;
};

const std::vector<Setting<SiteConfig>>& SiteSettings();
const std::vector<Setting<CapacityConfig>>& CapacitySettings();
const std::vector<Setting<BalancerConfig>>& BalancerSettings();
const std::vector<Setting<SecurityConfig>>& SecuritySettings();
const std::vector<Setting<LogOptions>>& LogSettings();
const std::vector<Setting<RosterEntry>>& RosterEntrySettings();
const std::vector<Setting<Seed>>& SeedSettings();

// The key of member `m` of S in its table ("peer_timeout"); "" when no row
// describes it (SettingsTest checks that every member has a row).
template <typename S, typename T>
absl::string_view KeyOf(const std::vector<Setting<S>>& table, T S::*m) {
  static const S probe{};
  const void* want = &(probe.*m);
  for (const Setting<S>& s : table)
    if (s.member(probe) == want) return s.name;
  return {};
}

// The names of a table's keys, in its order.
template <typename S>
std::vector<std::string> KeyNames(const std::vector<Setting<S>>& table) {
  std::vector<std::string> out;
  for (const Setting<S>& s : table) out.emplace_back(s.name);
  return out;
}

// docs/operations.md's reference table of every setting, in Markdown.
std::string SettingsReference();

// Every key a reload would change from `before` to `after`, as
// "section.key from -> to", each with its Change.
struct SettingChange {
  std::string key;  // "balancer.interval"
  std::string from, to;
  Change change;
};
std::vector<SettingChange> ChangedSettings(const Config& before, const Config& after);

}  // namespace hyperfed::config
