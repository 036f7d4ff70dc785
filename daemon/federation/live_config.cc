#include "daemon/federation/live_config.h"

namespace hyperfed::federation {

namespace {
// The YAML's roster is of the site's own federation (docs/design.md §6.9).
std::shared_ptr<const config::Roster> YamlRoster(const config::Config& config) {
  auto r = std::make_shared<config::Roster>(config.roster);
  r->federation = config.federation;
  return r;
}
}  // namespace

LiveConfig::LiveConfig(const config::Config& config)
    : self_(config.site.id), roster_(YamlRoster(config)), balancer_(config.balancer) {}

std::shared_ptr<const config::Roster> LiveConfig::roster() const {
  std::lock_guard<std::mutex> l(mu_);
  return roster_;
}

config::BalancerConfig LiveConfig::balancer() const {
  std::lock_guard<std::mutex> l(mu_);
  return balancer_;
}

std::optional<config::RosterEntry> LiveConfig::SelfEntry() const {
  const std::shared_ptr<const config::Roster> r = roster();
  const config::RosterEntry* e = r->FindSite(self_);
  if (!e) return std::nullopt;
  return *e;
}

bool LiveConfig::SetRoster(std::shared_ptr<const config::Roster> next) {
  std::lock_guard<std::mutex> l(mu_);
  if (next->version < roster_->version) return false;
  roster_ = std::move(next);
  return true;
}

void LiveConfig::SetBalancer(const config::BalancerConfig& balancer) {
  std::lock_guard<std::mutex> l(mu_);
  balancer_ = balancer;
}

}  // namespace hyperfed::federation
