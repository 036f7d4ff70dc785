#include "daemon/federation/live_config.h"

namespace hyperfed::federation {

LiveConfig::LiveConfig(const config::Config& config)
    : self_(config.site.id),
      roster_(std::make_shared<const config::Roster>(config.roster)),
      balancer_(config.balancer) {}

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
