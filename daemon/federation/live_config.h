#pragma once

// What may change while hyperfedd runs (docs/operations.md, "Join and
// leave" and "Reload"): the roster, replaced by the operators' signed
// versions, and the balancer settings, re-read on SIGHUP. Every reader takes
// one snapshot for what it does: a round runs with the roster and settings
// it began with, a heartbeat goes to the sites of one roster.
//
// Thread-safe.

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "config/config.h"

namespace hyperfed::federation {

class LiveConfig {
 public:
  // Starts from the YAML's roster (version 0) and settings.
  explicit LiveConfig(const config::Config& config);

  std::shared_ptr<const config::Roster> roster() const;
  config::BalancerConfig balancer() const;
  // This site's id: fixed for the daemon's life.
  const std::string& self() const { return self_; }
  // This site's entry in the current roster; nullopt while it is in none
  // (a daemon joining with seeds, or a site the roster removed).
  std::optional<config::RosterEntry> SelfEntry() const;

  // Takes `next` unless its version is lower than the current one's (the
  // caller has checked its signature and rules, and chosen between two of
  // one version); false when it is lower.
  bool SetRoster(std::shared_ptr<const config::Roster> next);
  void SetBalancer(const config::BalancerConfig& balancer);

 private:
  const std::string self_;
  mutable std::mutex mu_;
  std::shared_ptr<const config::Roster> roster_;  // guarded by mu_
  config::BalancerConfig balancer_;               // guarded by mu_
};

}  // namespace hyperfed::federation
