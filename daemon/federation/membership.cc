#include "daemon/federation/membership.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon/common/log.h"
#include "daemon/federation/round.h"

namespace hyperfed::federation {

std::string_view LivenessName(Liveness l) {
  switch (l) {
    case Liveness::kAlive:
      return "alive";
    case Liveness::kSuspect:
      return "suspect";
    case Liveness::kDown:
      return "down";
  }
  return "?";
}

namespace {
// The protocol version that probes along the cube (docs/operations.md,
// "Upgrade"): an older peer heartbeats every site and is up while heard.
bool ProbesAlongTheCube(const std::string& protocol) {
  return protocol.empty() || ProtocolAtLeast(protocol, 1, 8);  // not heard yet: taken as this build's
}
}  // namespace

Membership::Membership(const LiveConfig* live, const Env* env)
    : live_(live), env_(env), self_(live->self()), incarnation_(std::max<int64_t>(1, absl::ToUnixMillis(env->Now()))) {}

void PeerTable::Assign(std::map<int, PeerInfo>&& rows) {
  labels_.clear();
  rows_.clear();
  for (auto& [label, p] : rows) {
    labels_.push_back(label);
    rows_.emplace_back(label, std::move(p));
  }
}

PeerTable::iterator PeerTable::find(int label) {
  auto it = std::lower_bound(labels_.begin(), labels_.end(), label);
  if (it == labels_.end() || *it != label) return rows_.end();
  return rows_.begin() + (it - labels_.begin());
}

PeerTable::iterator PeerTable::upper_bound(int label) {
  return rows_.begin() + (std::upper_bound(labels_.begin(), labels_.end(), label) - labels_.begin());
}

PeerInfo& PeerTable::at(int label) {
  auto it = find(label);
  if (it == rows_.end()) throw std::out_of_range("PeerTable::at: no row of that label");
  return it->second;
}

void Membership::SyncLocked() const {
  std::shared_ptr<const config::Roster> roster = live_->roster();
  if (roster == synced_) return;
  std::map<std::string, PeerInfo> old;
  for (auto& [label, p] : by_label_) old.emplace(p.site, std::move(p));
  std::map<int, PeerInfo> rows;
  label_of_.clear();
  for (const config::RosterEntry& e : roster->sites) {
    PeerInfo p;  // a new site: presumed alive until a probe of it fails (§6.11)
    if (auto it = old.find(e.id); it != old.end()) p = std::move(it->second);  // what it last said
    p.site = e.id;
    p.label = e.label;
    p.endpoint = e.endpoint;
    p.self = e.id == self_;
    label_of_[e.id] = e.label;
    rows[e.label] = std::move(p);
  }
  by_label_.Assign(std::move(rows));
  dimension_ = roster->Dimension();
  digest_valid_ = false;
  synced_ = std::move(roster);
}

int Membership::dimension() const {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  return dimension_;
}

bool Membership::OldPeer(const PeerInfo& p) { return !p.self && !ProbesAlongTheCube(p.direct_protocol); }

bool Membership::UpLocked(const PeerInfo& p, absl::Time now) const {
  if (p.self) return true;
  if (OldPeer(p)) return now - p.last_seen <= live_->balancer().peer_timeout;
  return p.state != Liveness::kDown;
}

absl::Duration Membership::SuspicionTimeout(const config::BalancerConfig& b) {
  // Unconfirmed, a suspicion lasts what is left of the peer timeout after a
  // probe round (two intervals), and at least one interval: a site no
  // other site can confirm is down within the peer timeout, as before.
  return std::max(b.heartbeat_interval, b.peer_timeout - 2 * b.heartbeat_interval);
}

absl::Duration Membership::HeardWithin(const config::BalancerConfig& b) {
  return std::min(b.peer_timeout, b.heartbeat_interval * kMissAfter);
}

absl::Duration Membership::KnownEverywhereWithin(int dimension, const config::BalancerConfig& b) {
  return b.peer_timeout + dimension * b.heartbeat_interval;
}

absl::Duration Membership::RowAgeBound(int sites, int dimension, const config::BalancerConfig& b) {
  const int64_t per_hop = std::max<int64_t>(1, (std::max(sites - 2, 0) + kRelayRows - 1) / kRelayRows);
  return b.heartbeat_interval * (1 + per_hop * std::max(dimension, 1));
}

PeerInfo* Membership::FindLocked(const std::string& site, int label) const {
  auto at = by_label_.find(label);
  if (at != by_label_.end() && at->second.site == site) return &at->second;
  auto it = label_of_.find(site);
  if (it == label_of_.end()) return nullptr;
  return &by_label_.at(it->second);
}

PeerInfo* Membership::SelfLocked() const {
  auto it = label_of_.find(self_);
  return it == label_of_.end() ? nullptr : &by_label_.at(it->second);
}

void Membership::QueueLocked(const MemberNews& n) { news_[n.label] = {n, kNewsTicks}; }

void Membership::SetStateLocked(PeerInfo& p, Liveness state, int64_t incarnation, absl::Time now, int by) {
  const bool was_up = p.state != Liveness::kDown;
  digest_valid_ = false;
  p.incarnation = incarnation;
  if (state == Liveness::kSuspect) {
    if (p.state != Liveness::kSuspect) {
      suspectors_[p.label].clear();
      suspected_at_[p.label] = now;
    }
    if (by >= 0) suspectors_[p.label].insert(by);
  } else {
    suspectors_.erase(p.label);
    suspected_at_.erase(p.label);
  }
  p.state = state;
  if (state == Liveness::kDown) {
    down_.insert(p.label);
  } else {
    down_.erase(p.label);
  }
  if (was_up != (state != Liveness::kDown) && !OldPeer(p)) changes_.push_back(p.label);
  QueueLocked({p.label, incarnation, state, by});
}

void Membership::RefuteLocked(int64_t above) {
  incarnation_ = std::max({incarnation_ + 1, above + 1, absl::ToUnixMillis(env_->Now())});
  if (const PeerInfo* me = SelfLocked()) QueueLocked({me->label, incarnation_, Liveness::kAlive, me->label});
}

void Membership::TakeNewsLocked(const MemberNews& n, absl::Time now) {
  // (The handler refused a probe with news that fails the check; an
  // answer's is dropped item by item here.)
  if (!CheckNews(*synced_, n, now).ok()) return;
  auto at = by_label_.find(n.label);
  if (at == by_label_.end()) return;
  PeerInfo& p = at->second;
  if (p.self) {
    // Said suspect or down: raise the incarnation above it, and say so.
    if (n.state != Liveness::kAlive && n.incarnation >= incarnation_) RefuteLocked(n.incarnation);
    return;
  }
  if (OldPeer(p)) return;  // heard or not, by its own heartbeats
  switch (n.state) {
    case Liveness::kAlive:
      if (n.incarnation > p.incarnation) SetStateLocked(p, Liveness::kAlive, n.incarnation, now);
      return;
    case Liveness::kSuspect: {
      // A site this one heard itself within two intervals is not taken
      // down on another's word (docs/security.md, "Membership"); it is
      // told, so that it refutes and the others' views mend.
      if (now - p.last_seen <= HeardWithin(live_->balancer()) && n.incarnation <= p.incarnation) {
        if (n.incarnation == p.incarnation) tell_[p.label] = n.incarnation;
        return;
      }
      if (n.incarnation > p.incarnation || (n.incarnation == p.incarnation && p.state == Liveness::kAlive)) {
        SetStateLocked(p, Liveness::kSuspect, n.incarnation, now, n.by);
      } else if (n.incarnation == p.incarnation && p.state == Liveness::kSuspect && n.by >= 0 &&
                 suspectors_[p.label].insert(n.by).second) {
        QueueLocked({p.label, p.incarnation, Liveness::kSuspect, n.by});  // a confirmation: spread it
      }
      return;
    }
    case Liveness::kDown:
      if (now - p.last_seen <= HeardWithin(live_->balancer()) && n.incarnation <= p.incarnation) {
        if (n.incarnation == p.incarnation) tell_[p.label] = n.incarnation;
        return;
      }
      if (n.incarnation >= p.incarnation && p.state != Liveness::kDown)
        SetStateLocked(p, Liveness::kDown, n.incarnation, now, n.by);
      return;
  }
}

void Membership::TakeRowLocked(const HeartbeatInfo& hb, absl::Time said) {
  PeerInfo* p = FindLocked(hb.site, hb.label);
  if (!p || p->self || said <= p->row_at) return;
  p->row_at = said;
  p->load = hb.load;
  p->capacity = hb.capacity;
  p->drained = hb.drained;
  p->round_id = hb.round_id;
  p->last_round = hb.last_round;
  p->epoch = hb.epoch;
  p->widest = hb.widest;
  p->roster_version = hb.roster_version;
  if (!hb.protocol.empty()) p->protocol = hb.protocol;
  p->profile.widest = hb.widest;
  p->profile.free = hb.free;
  p->profile_at = said;
  p->profile_taken = said - absl::Milliseconds(std::max<int64_t>(hb.profile_age_ms, 0));
}

bool Membership::Seen(const HeartbeatInfo& hb, const Gossip& gossip, ProbeAck* reply) {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  // The row at the label it gives (each site's label is its roster one),
  // else by its id: one lookup, not a scan, for every heartbeat of a large
  // federation (docs/benchmarks.md, "Federation simulation").
  PeerInfo* p = FindLocked(hb.site, hb.label);
  if (!p || p->self) return false;
  const absl::Time now = env_->Now();
  p->last_seen = now;
  probed_by_[p->label] = now;
  TakeRowLocked(hb, now);
  p->protocol = hb.protocol;
  p->direct_protocol = hb.protocol;
  // News first: a refutation it carries (ALIVE of itself at a newer
  // incarnation) is taken as news, and so spread on, before its own
  // incarnation below is.
  for (const MemberNews& n : gossip.news) TakeNewsLocked(n, now);
  for (const MemberNews& n : gossip.state) TakeNewsLocked(n, now);
  if (OldPeer(*p)) {
    old_up_.try_emplace(p->label, false);
  } else if (hb.incarnation > p->incarnation) {
    // Alive at a newer incarnation: a restart, or a refutation. A restart
    // of a site heard before is news even where its state stays alive: a
    // round's coordinator asks it for its report by it (Coordinator::
    // SilentLocked). The first word of a site is none.
    if (p->state == Liveness::kAlive && p->incarnation == 0) {
      p->incarnation = hb.incarnation;
    } else {
      SetStateLocked(*p, Liveness::kAlive, hb.incarnation, now);
    }
  } else if (hb.incarnation == p->incarnation && p->state == Liveness::kSuspect) {
    SetStateLocked(*p, Liveness::kAlive, p->incarnation, now);  // its own probe: a suspicion ends
  }
  for (const RelayedRow& r : gossip.rows)
    if (r.info.label != p->label) TakeRowLocked(r.info, now - absl::Milliseconds(std::max<int64_t>(r.age_ms, 0)));
  if (reply) AckForLocked(p->label, gossip, reply);
  return true;
}

void Membership::AckFor(int label, const Gossip& probe, ProbeAck* reply) {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  AckForLocked(label, probe, reply);
}

MemberNews Membership::RecordLocked(const PeerInfo& p) const {
  if (p.self) return {p.label, incarnation_, Liveness::kAlive, p.label};
  return {p.label, p.incarnation, p.state, -1};
}

uint64_t Membership::DigestLocked() const {
  // Kept until a site's state or the rows change (every probe and answer
  // carries it).
  if (digest_valid_) return digest_;
  uint64_t h = 0;
  for (int label : down_) {
    auto it = by_label_.find(label);
    if (it == by_label_.end()) continue;
    // A sum of mixed (label, incarnation) pairs: the order does not matter.
    uint64_t x = (static_cast<uint64_t>(label) << 48) ^ static_cast<uint64_t>(it->second.incarnation);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    h += x | 1;
  }
  digest_ = h;
  digest_valid_ = true;
  return h;
}

void Membership::AckForLocked(int label, const Gossip& probe, ProbeAck* reply) const {
  reply->incarnation = incarnation_;
  for (const auto& [about, s] : news_) {
    if (static_cast<int>(reply->news.size()) >= kMaxNews) break;
    if (s.ticks_left > 0) reply->news.push_back(s.news);
  }
  const PeerInfo* me = SelfLocked();
  const int by = me ? me->label : -1;
  // Its own record, when suspect or down here: it refutes at once.
  if (auto at = by_label_.find(label);
      at != by_label_.end() && at->second.state != Liveness::kAlive && !news_.count(label))
    reply->news.push_back({label, at->second.incarnation, at->second.state, by});
  reply->digest = DigestLocked();
  if (probe.digest == reply->digest) return;
  // The views differ: this site's records of what it holds down, and of
  // what the prober said it holds down (alive at a newer incarnation here,
  // say), so that the prober mends its view; the prober's next probe sends
  // its own when this digest still differs from its.
  std::set<int> labels(down_.begin(), down_.end());
  for (const MemberNews& n : probe.state) labels.insert(n.label);
  for (int l : labels)
    if (auto it = by_label_.find(l); it != by_label_.end() && l != label)
      reply->state.push_back(RecordLocked(it->second));
}

void Membership::Acked(const std::string& site, const ProbeAck& ack) {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  auto it = label_of_.find(site);
  if (it == label_of_.end()) return;
  PeerInfo& p = by_label_.at(it->second);
  if (p.self) return;
  const absl::Time now = env_->Now();
  p.last_seen = now;
  if (!ack.protocol.empty()) p.direct_protocol = ack.protocol;
  for (const MemberNews& n : ack.news) TakeNewsLocked(n, now);  // first: as in Seen
  for (const MemberNews& n : ack.state) TakeNewsLocked(n, now);
  if (OldPeer(p)) {
    old_up_.try_emplace(p.label, false);
  } else if (ack.incarnation > p.incarnation || (p.state == Liveness::kSuspect && ack.incarnation == p.incarnation)) {
    // It answered: a suspicion of this very incarnation was this site's
    // own mistake (a lost probe), so it ends here without a refutation.
    if (p.state == Liveness::kAlive && p.incarnation == 0) {
      p.incarnation = ack.incarnation;  // its first word (a restart is news, as in Seen)
    } else if (p.state == Liveness::kSuspect || ack.incarnation > p.incarnation) {
      SetStateLocked(p, Liveness::kAlive, std::max(ack.incarnation, p.incarnation), now);
    }
  }
  // Still apart: the next probe to it sends this site's records.
  if (ack.digest != DigestLocked()) {
    sync_with_.insert(p.label);
  } else {
    sync_with_.erase(p.label);
  }
}

void Membership::ReachedThrough(const std::string& site) {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  auto it = label_of_.find(site);
  if (it == label_of_.end()) return;
  PeerInfo& p = by_label_.at(it->second);
  // Alive, as far as this site can tell; its own answer will say at which
  // incarnation. A suspicion of this site's ends.
  reached_[p.label] = env_->Now();
  if (p.state == Liveness::kSuspect) {
    auto& by = suspectors_[p.label];
    const PeerInfo* me = SelfLocked();
    if (me) by.erase(me->label);
    if (by.empty()) SetStateLocked(p, Liveness::kAlive, p.incarnation, env_->Now());
  }
}

std::vector<std::string> Membership::Silent(const std::vector<std::string>& sites) const {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  const absl::Time now = env_->Now();
  const absl::Duration miss = HeardWithin(live_->balancer());
  std::vector<std::string> out;
  for (const std::string& site : sites) {
    auto it = label_of_.find(site);
    if (it == label_of_.end()) continue;
    const PeerInfo& p = by_label_.at(it->second);
    if (p.self || OldPeer(p) || p.state == Liveness::kDown) continue;
    absl::Time heard = p.last_seen;
    if (auto r = reached_.find(p.label); r != reached_.end()) heard = std::max(heard, r->second);
    if (now - heard > miss) out.push_back(site);
  }
  return out;
}

bool Membership::HeardRecently(const std::string& site) const {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  auto it = label_of_.find(site);
  if (it == label_of_.end()) return false;
  return env_->Now() - by_label_.at(it->second).last_seen <= HeardWithin(live_->balancer());
}

void Membership::ProbeFailed(const std::string& site, const std::vector<std::string>& confirmed_by) {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  auto it = label_of_.find(site);
  const PeerInfo* me = SelfLocked();
  if (it == label_of_.end() || !me) return;
  PeerInfo& p = by_label_.at(it->second);
  if (p.self || OldPeer(p) || p.state == Liveness::kDown) return;
  const absl::Time now = env_->Now();
  SetStateLocked(p, Liveness::kSuspect, p.incarnation, now, me->label);
  // Each helper that could not reach it either confirms it.
  for (const std::string& h : confirmed_by)
    if (auto hl = label_of_.find(h); hl != label_of_.end()) suspectors_[p.label].insert(hl->second);
}

void Membership::Expire() {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  const absl::Time now = env_->Now();
  const absl::Duration timeout = SuspicionTimeout(live_->balancer());
  std::vector<int> down;
  for (const auto& [label, at] : suspected_at_)
    if (static_cast<int>(suspectors_[label].size()) >= kConfirmations || now - at >= timeout) down.push_back(label);
  for (int label : down) {
    auto it = by_label_.find(label);
    if (it == by_label_.end()) {
      suspected_at_.erase(label);
      continue;
    }
    const PeerInfo* me = SelfLocked();
    SetStateLocked(it->second, Liveness::kDown, it->second.incarnation, now, me ? me->label : -1);
  }
}

std::vector<std::string> Membership::ProbeTargets() {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  const PeerInfo* me = SelfLocked();
  std::vector<std::string> out;
  for (auto& [label, p] : by_label_) p.probed = false;
  if (!me) return out;
  const int s = me->label;
  const absl::Time now = env_->Now();
  auto take = [&](PeerInfo& p) {
    if (!p.probed && !p.self) {
      p.probed = true;
      out.push_back(p.site);
    }
  };
  for (int k = 0; k < dimension_; ++k) {
    auto nominal = by_label_.find(s ^ (1 << k));
    const bool nominal_down = nominal != by_label_.end() && !UpLocked(nominal->second, now);
    if (nominal != by_label_.end()) {
      take(nominal->second);
      if (!nominal_down) continue;
    }
    // Its stand-in: the nearest roster site across k (by XOR distance) not
    // down. The scan stops at the first; a cube with few empty positions
    // finds it at once.
    for (int x = (1 << k) + 1; x < (2 << k); ++x) {
      auto it = by_label_.find(s ^ x);
      if (it == by_label_.end() || !UpLocked(it->second, now)) continue;
      take(it->second);
      break;
    }
  }
  // One site held down, drawn at random (memberlist reconnects to dead
  // members so): a site back, or one whose down was a mistake (a cut, a
  // lost probe) that no neighbour of it holds, learns it from the probe
  // and refutes.
  if (!down_.empty()) {
    auto it = down_.begin();
    std::advance(it, static_cast<long>(env_->Random() % down_.size()));
    if (auto p = by_label_.find(*it); p != by_label_.end()) take(p->second);
  }
  const absl::Duration timeout = live_->balancer().peer_timeout;
  for (auto it = probed_by_.begin(); it != probed_by_.end();) {
    if (now - it->second > timeout) {
      it = probed_by_.erase(it);
      continue;
    }
    if (auto p = by_label_.find(it->first); p != by_label_.end() && UpLocked(p->second, now)) take(p->second);
    ++it;
  }
  for (const auto& [label, up] : old_up_)
    if (auto p = by_label_.find(label); p != by_label_.end() && OldPeer(p->second)) take(p->second);
  return out;
}

std::vector<std::string> Membership::Helpers(const std::string& site, int k) const {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  std::vector<std::string> out;
  auto it = label_of_.find(site);
  if (it == label_of_.end()) return out;
  const int t = it->second;
  const absl::Time now = env_->Now();
  auto usable = [&](const PeerInfo& p) {
    return !p.self && p.label != t && !OldPeer(p) && UpLocked(p, now) &&
           std::find(out.begin(), out.end(), p.site) == out.end();
  };
  for (int m = 0; m < dimension_ && static_cast<int>(out.size()) < k; ++m)
    if (auto n = by_label_.find(t ^ (1 << m)); n != by_label_.end() && usable(n->second)) out.push_back(n->second.site);
  for (const auto& [label, p] : by_label_) {
    if (static_cast<int>(out.size()) >= k) break;
    if (p.probed && usable(p)) out.push_back(p.site);
  }
  return out;
}

Gossip Membership::GossipFor(const std::string& site) {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  Gossip g;
  auto it = label_of_.find(site);
  const int to = it == label_of_.end() ? -1 : it->second;
  for (const auto& [label, s] : news_) {
    if (s.ticks_left <= 0) continue;
    if (static_cast<int>(g.news.size()) >= kMaxNews) break;
    g.news.push_back(s.news);
  }
  if (auto p = by_label_.find(to); p != by_label_.end() && p->second.state != Liveness::kAlive && !news_.count(to))
    g.news.push_back({to, p->second.incarnation, p->second.state, SelfLocked() ? SelfLocked()->label : -1});
  // Another site holds it down at the incarnation this one heard alive.
  if (auto t = tell_.find(to); t != tell_.end()) {
    g.news.push_back({to, t->second, Liveness::kSuspect, SelfLocked() ? SelfLocked()->label : -1});
    tell_.erase(t);
  }
  g.digest = DigestLocked();
  if (sync_with_.count(to))
    for (int l : down_)
      if (auto it = by_label_.find(l); it != by_label_.end() && l != to) g.state.push_back(RecordLocked(it->second));
  // Other sites' rows, in turn from where the last probe to it stopped.
  if (to < 0 || by_label_.size() <= 2) return g;
  const absl::Time now = env_->Now();
  int& cursor = relay_cursor_[to];
  auto at = by_label_.upper_bound(cursor);
  for (size_t seen = 0; seen < by_label_.size() && static_cast<int>(g.rows.size()) < kRelayRows; ++seen) {
    if (at == by_label_.end()) at = by_label_.begin();
    const PeerInfo& p = at->second;
    cursor = p.label;
    ++at;
    if (p.self || p.label == to || p.row_at == absl::InfinitePast() || !UpLocked(p, now)) continue;
    RelayedRow r;
    r.info.site = p.site;
    r.info.label = p.label;
    r.info.load = p.load;
    r.info.capacity = p.capacity;
    r.info.drained = p.drained;
    r.info.round_id = p.round_id;
    r.info.last_round = p.last_round;
    r.info.epoch = p.epoch;
    r.info.widest = p.widest;
    r.info.roster_version = p.roster_version;
    r.info.protocol = p.protocol;
    r.info.incarnation = p.incarnation;
    r.info.free = p.profile.free;
    r.info.profile_age_ms = absl::ToInt64Milliseconds(std::max(absl::ZeroDuration(), p.profile_at - p.profile_taken));
    r.age_ms = absl::ToInt64Milliseconds(std::max(absl::ZeroDuration(), now - p.row_at));
    g.rows.push_back(std::move(r));
  }
  return g;
}

void Membership::Spread() {
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = news_.begin(); it != news_.end();) {
    if (--it->second.ticks_left <= 0) {
      it = news_.erase(it);
    } else {
      ++it;
    }
  }
}

int64_t Membership::incarnation() const {
  std::lock_guard<std::mutex> l(mu_);
  return incarnation_;
}

std::vector<int> Membership::TakeChanges() {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  const absl::Time now = env_->Now();
  std::vector<int> out = std::move(changes_);
  changes_.clear();
  for (auto& [label, was] : old_up_) {
    auto p = by_label_.find(label);
    if (p == by_label_.end()) continue;
    const bool up = UpLocked(p->second, now);
    if (up != was) out.push_back(label);
    was = up;
  }
  return out;
}

void Membership::SetSelf(int64_t load, double capacity, bool drained, const std::string& last_round) {
  const int64_t version = live_->roster()->version;
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  PeerInfo* p = SelfLocked();
  if (!p) return;
  p->roster_version = version;
  p->last_seen = env_->Now();
  p->row_at = p->last_seen;
  p->load = load;
  p->capacity = capacity;
  p->drained = drained;
  p->last_round = last_round;
  p->incarnation = incarnation_;
}

std::vector<PeerInfo> Membership::View() const {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  const absl::Time now = env_->Now();
  std::vector<PeerInfo> out;
  out.reserve(by_label_.size());
  for (const auto& [label, p] : by_label_) {
    out.push_back(p);
    out.back().up = UpLocked(p, now);
  }
  return out;
}

int64_t Membership::WidestElsewhere() const {
  // (At every heartbeat: read in place, no copy of the view.)
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  const absl::Time now = env_->Now();
  int64_t widest = 0;
  for (const auto& [label, p] : by_label_)
    if (!p.self && !p.drained && UpLocked(p, now)) widest = std::max(widest, p.widest);
  return widest;
}

std::vector<PeerInfo> Membership::ViewOf(const std::vector<int>& labels) const {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  const absl::Time now = env_->Now();
  std::vector<PeerInfo> out;
  for (int label : labels) {
    auto it = by_label_.find(label);
    if (it == by_label_.end()) continue;
    out.push_back(it->second);
    out.back().up = UpLocked(it->second, now);
  }
  return out;
}

std::optional<PeerInfo> Membership::Find(const std::string& site) const {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  auto it = label_of_.find(site);
  if (it == label_of_.end()) return std::nullopt;
  PeerInfo p = by_label_.at(it->second);
  p.up = UpLocked(p, env_->Now());
  return p;
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
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  const absl::Time now = env_->Now();
  for (const auto& [label, p] : by_label_)  // ordered by label
    if (UpLocked(p, now)) return p.site;
  return self_;
}

bool Membership::MayCoordinate(const std::string& site) const {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  const absl::Time now = env_->Now();
  for (const auto& [label, p] : by_label_) {  // ordered by label
    if (p.site == site) return true;
    if (UpLocked(p, now)) return false;  // a live site below it
  }
  return false;  // not in the roster
}

int64_t Membership::HighestEpoch() const {
  std::lock_guard<std::mutex> l(mu_);
  SyncLocked();
  const absl::Time now = env_->Now();
  int64_t e = 0;
  for (const auto& [label, p] : by_label_)
    if (UpLocked(p, now)) e = std::max(e, p.epoch);
  return e;
}

bool ProtocolAtLeast(const std::string& protocol, int major, int minor) {
  const size_t dot = protocol.find('.');
  int ma = 0, mi = 0;
  if (dot == std::string::npos || !absl::SimpleAtoi(protocol.substr(0, dot), &ma) ||
      !absl::SimpleAtoi(protocol.substr(dot + 1), &mi))
    return false;
  return ma > major || (ma == major && mi >= minor);
}

absl::Status CheckNews(const config::Roster& roster, const MemberNews& n, absl::Time now) {
  if (!roster.FindLabel(n.label))
    return absl::InvalidArgumentError(absl::StrCat("news of label ", n.label, ": no roster site's"));
  if (n.state != Liveness::kAlive && n.state != Liveness::kSuspect && n.state != Liveness::kDown)
    return absl::InvalidArgumentError(
        absl::StrCat("news of label ", n.label, ": state must be ALIVE, SUSPECT or DOWN"));
  if (n.incarnation != 0 && !EpochInBounds(n.incarnation, now))
    return absl::InvalidArgumentError(
        absl::StrCat("news of label ", n.label, ": incarnation must be >= 0 and at most a day ahead"));
  if (n.by != -1 && !roster.FindLabel(n.by))
    return absl::InvalidArgumentError(absl::StrCat("news of label ", n.label, ": by ", n.by, " is no roster site's"));
  return absl::OkStatus();
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

bool Heartbeater::ProbeFor(const std::string& site, const HeartbeatInfo& self, absl::Duration timeout) {
  std::vector<Gossip> gossip{membership_->GossipFor(site)};
  auto acks = peers_->Heartbeats({site}, self, gossip, timeout);
  if (acks.empty() || !acks[0].ok()) return false;
  membership_->Acked(site, *acks[0]);
  return true;
}

void Heartbeater::Tick(const HeartbeatInfo& self) {
  const absl::Duration share = live_->balancer().heartbeat_interval * kCallShare;
  const int64_t tick = ticks_++;
  std::vector<std::string> targets;
  std::vector<Gossip> gossip;
  if (self.label < 0) {
    // Not in the roster (joining, or removed): a heartbeat to every roster
    // site, for the roster; no part in the membership.
    for (const config::RosterEntry& e : live_->roster()->sites)
      if (e.id != live_->self()) targets.push_back(e.id);
    (void)peers_->Heartbeats(targets, self, {}, share);
    return;
  }
  targets = membership_->ProbeTargets();
  gossip.reserve(targets.size());
  for (const std::string& t : targets) gossip.push_back(membership_->GossipFor(t));
  std::vector<absl::StatusOr<ProbeAck>> acks = peers_->Heartbeats(targets, self, gossip, share * kDirectShare);
  membership_->Spread();
  for (size_t i = 0; i < targets.size() && i < acks.size(); ++i) {
    if (acks[i].ok()) {
      membership_->Acked(targets[i], *acks[i]);
    } else if (absl::IsPermissionDenied(acks[i].status()) || absl::IsInvalidArgument(acks[i].status())) {
      membership_->Acked(targets[i], ProbeAck{});  // a refusal is an answer: it is up
    }
  }
  // Those not heard lately are asked of helpers.
  const std::vector<std::string> silent = membership_->Silent(targets);
  if (!silent.empty()) {
    std::vector<std::pair<std::string, std::string>> asks;  // helper, target
    for (const std::string& t : silent)
      for (const std::string& h : membership_->Helpers(t, kIndirectProbes)) asks.push_back({h, t});
    std::vector<absl::StatusOr<bool>> got = peers_->ProbeFor(asks, share * (1 - kDirectShare));
    for (const std::string& t : silent) {
      bool reached = false;
      std::vector<std::string> confirmed_by;
      for (size_t i = 0; i < asks.size() && i < got.size(); ++i) {
        if (asks[i].second != t || !got[i].ok()) continue;
        if (*got[i]) {
          reached = true;
        } else {
          confirmed_by.push_back(asks[i].first);
        }
      }
      if (reached) {
        membership_->ReachedThrough(t);
      } else {
        membership_->ProbeFailed(t, confirmed_by);
      }
    }
  }
  membership_->Expire();
  auto tell = [&](const PeerInfo& p, bool first) {
    if (p.self) return;
    auto it = was_up_.find(p.site);
    if (!first && it != was_up_.end() && it->second == p.up) return;
    (p.up || first ? LogInfo : LogWarning)(  // a warning when an up peer goes down
        absl::StrCat("peer ", p.site, " (label ", p.label, ") is ", p.up ? "up" : "down"));
    if (observer_) observer_(p, first);
    was_up_[p.site] = p.up;
  };
  if (tick == 0) {
    (void)membership_->TakeChanges();
    for (const PeerInfo& p : membership_->View()) tell(p, true);
    return;
  }
  const std::vector<int> changes = membership_->TakeChanges();
  if (changes.empty()) return;
  const std::set<int> changed(changes.begin(), changes.end());
  for (const PeerInfo& p : membership_->ViewOf({changed.begin(), changed.end()})) tell(p, !was_up_.count(p.site));
}

}  // namespace hyperfed::federation
