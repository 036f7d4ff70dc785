#pragma once

// Who is up (docs/design.md §6): heartbeats with timeouts give every site a
// view of its peers. Membership is the view, fed by the heartbeat handler and
// read by rounds and the admin status; Heartbeater sends this site's
// heartbeats and logs peers going up and down.
//
// Thread-safe.

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "config/config.h"
#include "daemon/balance/choice.h"
#include "daemon/common/env.h"
#include "daemon/federation/live_config.h"

namespace hyperfed::federation {

class PeerClient;

// A row a peer reports of a site (a heartbeat, a round message, a report):
// the label is a roster site's, the load in 0..config::kMaxReportedLoad and
// the capacity finite, >= 0 and at most the roster's max_capacity for that
// site (docs/security.md, "Numbers"). The one check of such numbers.
// The same for a start profile (docs/algorithms.md, "Jobs that gain"): the
// widest job at most that max_capacity, the profile well formed
// (balance::CheckStartProfile) with waits up to config::kMaxReportedWaitMs.
absl::Status CheckReportedRow(const config::Roster& roster, int label, int64_t load, double capacity,
                              const balance::StartProfile& profile = {});

// What a site says of itself in a heartbeat.
struct HeartbeatInfo {
  std::string site;
  int label = 0;
  int64_t load = 0;
  double capacity = 0;
  bool drained = false;
  std::string round_id;  // the round it is in, if any
  std::string last_round;
  int64_t epoch = 0;  // the highest round epoch it has seen
  int64_t widest = 0;  // the most cores one job can have there (0: not said)
  int64_t roster_version = 0;
  std::string protocol;  // "MAJOR.MINOR"
  // Its start profile's free cores (with `widest`), from the heartbeat's
  // sending; empty: not said (docs/design.md, "Placement at arrival").
  std::vector<std::pair<int64_t, int64_t>> free;
  // How long before sending that profile was taken (since protocol 1.6).
  int64_t profile_age_ms = 0;
};

// What the last heartbeat from a site said.
struct PeerInfo {
  std::string site;
  int label = 0;
  std::string endpoint;
  bool self = false;
  bool up = false;  // heard from within the peer timeout
  absl::Time last_seen = absl::InfinitePast();
  int64_t load = 0;
  double capacity = 0;
  bool drained = false;
  std::string round_id;  // the round it said it is in ("" if none)
  std::string last_round;
  int64_t epoch = 0;
  int64_t widest = 0;
  int64_t roster_version = 0;  // the roster version it said it has
  std::string protocol;
  balance::StartProfile profile;                // its last heartbeat's (widest and free cores)
  absl::Time profile_at = absl::InfinitePast();     // when that heartbeat came
  absl::Time profile_taken = absl::InfinitePast();  // profile_at less the age it said
};

class Membership {
 public:
  // The sites are the live roster's: a new roster version adds and removes
  // rows (keeping what the sites that stay last said) and sets the dimension.
  Membership(const LiveConfig* live, const Env* env);

  // Records a heartbeat (from a roster site other than this one; false if not).
  bool Seen(const HeartbeatInfo& hb);
  // The widest job any live site other than this one runs (from their
  // heartbeats); 0 when none has said.
  int64_t WidestElsewhere() const;
  // Updates this site's own row.
  void SetSelf(int64_t load, double capacity, bool drained, const std::string& last_round);

  // Every roster site, by label, with `up` evaluated now.
  std::vector<PeerInfo> View() const;
  std::optional<PeerInfo> Find(const std::string& site) const;

  // Labels in [0, 2^dimension) that hold no live site: empty positions and
  // sites not heard from within the timeout.
  std::vector<int> FaultLabels() const;
  // The same, from a view already taken (so a caller's fault set and live
  // rows come from one reading).
  static std::vector<int> FaultLabelsOf(const std::vector<PeerInfo>& view, int dimension);
  // The coordinator in this site's view: the lowest live label.
  std::string Coordinator() const;
  // Whether this site takes `site` as a round's coordinator: a roster site
  // with no live site below its label in this site's view (its own call is
  // the sign it is up). A peer naming itself coordinator is refused
  // otherwise (docs/design.md §6.3).
  bool MayCoordinate(const std::string& site) const;
  // The highest round epoch any live peer has reported.
  int64_t HighestEpoch() const;
  // The dimension of the roster the rows are from.
  int dimension() const;
  const std::string& self() const { return self_; }

 private:
  bool UpLocked(const PeerInfo& p, absl::Time now, absl::Duration timeout) const;
  // Rebuilds the rows when the live roster has changed.
  void SyncLocked() const;

  const LiveConfig* live_;
  const Env* env_;
  const std::string self_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const config::Roster> synced_;  // guarded by mu_; the rows' roster
  mutable int dimension_ = 0;                 // guarded by mu_
  mutable std::map<int, PeerInfo> by_label_;  // guarded by mu_
};

// Sends this site's heartbeat to every other roster site at once (one
// Tick, PeerClient::Heartbeats), and logs each peer's change between up and
// down.
class Heartbeater {
 public:
  Heartbeater(const LiveConfig* live, Membership* membership, PeerClient* peers);
  // One heartbeat to every peer; returns when every call has answered or
  // timed out, within kCallShare of a heartbeat interval: the next tick,
  // an interval after this one began, reaches every peer again, so a peer
  // that lost one heartbeat has the next on time.
  void Tick(const HeartbeatInfo& self);
  static constexpr double kCallShare = 0.75;

  // Told of each peer state a tick logs: a peer going up or down, or, at
  // the first tick that looks at it (`first`), the state it starts in.
  // Called on Tick's thread; set before the heartbeat loop starts. hyperfedd
  // sets none; the federation simulation measures failure detection with it
  // (docs/design.md §10).
  using Observer = std::function<void(const PeerInfo& peer, bool first)>;
  void SetObserver(Observer observer) { observer_ = std::move(observer); }

 private:
  const LiveConfig* live_;
  Membership* membership_;
  PeerClient* peers_;
  std::map<std::string, bool> was_up_;  // used by Tick's caller thread only
  Observer observer_;
};

}  // namespace hyperfed::federation
