#include "daemon/federation/membership.h"

namespace hyperfed::federation {

Membership::Membership(const config::Config& config, const Clock* clock)
    : clock_(clock),
      timeout_(config.balancer.peer_timeout),
      dimension_(config.Dimension()),
      self_(config.site.id) {
  for (const config::RosterEntry& e : config.roster) {
    PeerInfo p;
    p.site = e.id;
    p.label = e.label;
    p.endpoint = e.endpoint;
    p.self = e.id == config.site.id;
    by_label_[e.label] = p;
  }
}

bool Membership::UpLocked(const PeerInfo& p, absl::Time now) const {
  return p.self || now - p.last_seen <= timeout_;
}

namespace {

void Record(PeerInfo& p, absl::Time now, int64_t load, double capacity, bool drained, const std::string& round_id,
            const std::string& last_round) {
  p.last_seen = now;
  p.load = load;
  p.capacity = capacity;
  p.drained = drained;
  p.round_id = round_id;
  p.last_round = last_round;
}

}  // namespace

bool Membership::Seen(const std::string& site, int64_t load, double capacity, bool drained,
                      const std::string& round_id, const std::string& last_round) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [label, p] : by_label_) {
    if (p.site != site || p.self) continue;
    Record(p, clock_->Now(), load, capacity, drained, round_id, last_round);
    return true;
  }
  return false;
}

void Membership::SetSelf(int64_t load, double capacity, bool drained, const std::string& round_id,
                         const std::string& last_round) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [label, p] : by_label_)
    if (p.self) Record(p, clock_->Now(), load, capacity, drained, round_id, last_round);
}

std::vector<PeerInfo> Membership::View() const {
  std::lock_guard<std::mutex> l(mu_);
  const absl::Time now = clock_->Now();
  std::vector<PeerInfo> out;
  for (const auto& [label, p] : by_label_) {
    PeerInfo q = p;
    q.up = UpLocked(p, now);
    out.push_back(q);
  }
  return out;
}

std::optional<PeerInfo> Membership::Find(const std::string& site) const {
  for (const PeerInfo& p : View())
    if (p.site == site) return p;
  return std::nullopt;
}

std::optional<PeerInfo> Membership::FindLabel(int label) const {
  for (const PeerInfo& p : View())
    if (p.label == label) return p;
  return std::nullopt;
}

std::vector<int> Membership::FaultLabels() const {
  std::vector<bool> live(size_t{1} << dimension_, false);
  for (const PeerInfo& p : View())
    if (p.up) live[p.label] = true;
  std::vector<int> faults;
  for (size_t i = 0; i < live.size(); ++i)
    if (!live[i]) faults.push_back(static_cast<int>(i));
  return faults;
}

std::string Membership::Coordinator() const {
  for (const PeerInfo& p : View())  // ordered by label
    if (p.up) return p.site;
  return self_;
}

}  // namespace hyperfed::federation
