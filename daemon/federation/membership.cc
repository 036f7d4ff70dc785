#include "daemon/federation/membership.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "daemon/common/log.h"
#include "daemon/federation/round.h"

namespace hyperfed::federation {

Membership::Membership(const LiveConfig* live, const Env* env) : live_(live), env_(env), self_(live->self()) {}

void Membership::SyncLocked() const {
  std::shared_ptr<const config::Roster> roster = live_->roster();
  if (roster == synced_) return;
  std::map<std::string, PeerInfo> old;
  for (auto& [label, p] : by_label_) old.emplace(p.site, std::move(p));
  by_label_.clear();
  for (const config::RosterEntry& e : roster->sites) {
    PeerInfo p;
    if (auto it = old.find(e.id); it != old.end()) p = std::move(it->second);  // what it last said
    p.site = e.id;
    p.label = e.label;
    p.endpoint = e.endpoint;
    p.self = e.id == self_;
    by_label_[e.label] = std::move(p);
  }
  dimension_ = roster->Dimension();
  synced_ = std::move(roster);
}

int Membership::dimension() const {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  return dimension_;
}

bool Membership::UpLocked(const PeerInfo& p, absl::Time now, absl::Duration timeout) const {
  return p.self || now - p.last_seen <= timeout;
}

bool Membership::Seen(const HeartbeatInfo& hb) {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  // The row at the label it gives (each site's label is its roster one),
  // else by its id: one lookup, not a scan, for every heartbeat of a large
  // federation (docs/benchmarks.md, "Federation simulation").
  auto at = by_label_.find(hb.label);
  if (at == by_label_.end() || at->second.site != hb.site)
    at = std::find_if(by_label_.begin(), by_label_.end(), [&](const auto& e) { return e.second.site == hb.site; });
  if (at != by_label_.end()) {
    PeerInfo& p = at->second;
    if (p.self) return false;
    p.last_seen = env_->Now();
    p.load = hb.load;
    p.capacity = hb.capacity;
    p.drained = hb.drained;
    p.round_id = hb.round_id;
    p.last_round = hb.last_round;
    p.epoch = hb.epoch;
    p.widest = hb.widest;
    p.roster_version = hb.roster_version;
    p.protocol = hb.protocol;
    p.profile.widest = hb.widest;
    p.profile.free = hb.free;
    p.profile_at = p.last_seen;
    p.profile_taken = p.last_seen - absl::Milliseconds(std::max<int64_t>(hb.profile_age_ms, 0));
    return true;
  }
  return false;
}

void Membership::SetSelf(int64_t load, double capacity, bool drained, const std::string& last_round) {
  const int64_t version = live_->roster()->version;
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  for (auto& [label, p] : by_label_) {
    if (!p.self) continue;
    p.roster_version = version;
    p.last_seen = env_->Now();
    p.load = load;
    p.capacity = capacity;
    p.drained = drained;
    p.last_round = last_round;
  }
}

std::vector<PeerInfo> Membership::View() const {
  const absl::Duration timeout = live_->balancer().peer_timeout;
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  const absl::Time now = env_->Now();
  std::vector<PeerInfo> out;
  for (const auto& [label, p] : by_label_) {
    PeerInfo q = p;
    q.up = UpLocked(p, now, timeout);
    out.push_back(q);
  }
  return out;
}

int64_t Membership::WidestElsewhere() const {
  int64_t widest = 0;
  for (const PeerInfo& p : View())
    if (!p.self && p.up && !p.drained) widest = std::max(widest, p.widest);
  return widest;
}

std::optional<PeerInfo> Membership::Find(const std::string& site) const {
  for (const PeerInfo& p : View())
    if (p.site == site) return p;
  return std::nullopt;
}

std::vector<int> Membership::FaultLabels() const {
  std::vector<PeerInfo> view = View();
  return FaultLabelsOf(view, dimension());  // a roster change in between: checked below
}

std::vector<int> Membership::FaultLabelsOf(const std::vector<PeerInfo>& view, int dimension) {
  std::vector<bool> live(size_t{1} << dimension, false);
  for (const PeerInfo& p : view)
    if (p.up && p.label < static_cast<int>(live.size())) live[p.label] = true;
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

bool Membership::MayCoordinate(const std::string& site) const {
  const std::vector<PeerInfo> view = View();  // ordered by label
  for (const PeerInfo& p : view) {
    if (p.site == site) return true;
    if (p.up) return false;  // a live site below it
  }
  return false;  // not in the roster
}

int64_t Membership::HighestEpoch() const {
  int64_t e = 0;
  for (const PeerInfo& p : View())
    if (p.up) e = std::max(e, p.epoch);
  return e;
}

absl::Status CheckReportedRow(const config::Roster& roster, int label, int64_t load, double capacity,
                              const balance::StartProfile& profile) {
  const config::RosterEntry* e = roster.FindLabel(label);
  if (!e) return absl::InvalidArgumentError(absl::StrCat("label ", label, " is no roster site's"));
  if (load < 0 || load > config::kMaxReportedLoad)
    return absl::InvalidArgumentError(
        absl::StrCat("load ", load, " for ", e->id, " outside 0..", config::kMaxReportedLoad));
  if (!std::isfinite(capacity) || capacity < 0 || capacity > e->max_capacity)
    return absl::InvalidArgumentError(absl::StrCat("capacity ", capacity, " for ", e->id,
                                                   " not finite and within 0..", e->max_capacity,
                                                   " (its roster max_capacity)"));
  if (profile.widest > e->max_capacity)
    return absl::InvalidArgumentError(absl::StrCat("widest job ", profile.widest, " for ", e->id, " above ",
                                                   e->max_capacity, " (its roster max_capacity)"));
  if (auto st = balance::CheckStartProfile(profile, config::kMaxReportedWaitMs); !st.ok())
    return absl::InvalidArgumentError(absl::StrCat(e->id, ": ", st.message()));
  return absl::OkStatus();
}

// ------------------------------------------------------------------ Heartbeater

Heartbeater::Heartbeater(const LiveConfig* live, Membership* membership, PeerClient* peers)
    : live_(live), membership_(membership), peers_(peers) {}

void Heartbeater::Tick(const HeartbeatInfo& self) {
  std::vector<std::string> others;
  for (const config::RosterEntry& e : live_->roster()->sites)
    if (e.id != live_->self()) others.push_back(e.id);
  // A peer that does not answer is simply not heard from: its own
  // heartbeats, not ours, decide whether it is up here.
  (void)peers_->Heartbeats(others, self, live_->balancer().heartbeat_interval * kCallShare);
  for (const PeerInfo& p : membership_->View()) {
    if (p.self) continue;
    auto it = was_up_.find(p.site);
    const bool first = it == was_up_.end();
    if (first || it->second != p.up) {
      (p.up || first ? LogInfo : LogWarning)(  // a warning when an up peer goes down
          absl::StrCat("peer ", p.site, " (label ", p.label, ") is ", p.up ? "up" : "down"));
      if (observer_) observer_(p, first);
    }
    was_up_[p.site] = p.up;
  }
}

}  // namespace hyperfed::federation
