#pragma once

// Who is up: heartbeats with timeouts give every site a view of its peers.
//
// Thread-safe. Fed by the heartbeat handler (Seen) and read by rounds and the
// admin status.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "config/config.h"
#include "daemon/common/clock.h"

namespace hyperfed::federation {

// What the last heartbeat from a site said.
struct PeerInfo {
  std::string site;
  int label = 0;
  std::string endpoint;
  bool self = false;
  bool up = false;             // heard from within the peer timeout
  absl::Time last_seen = absl::InfinitePast();
  int64_t load = 0;
  double capacity = 0;
  bool drained = false;
  std::string round_id;        // the round it reported being in
  std::string last_round;
};

class Membership {
 public:
  Membership(const config::Config& config, const Clock* clock);

  // Records a heartbeat from `site` (must be in the roster; false if not).
  bool Seen(const std::string& site, int64_t load, double capacity, bool drained, const std::string& round_id,
            const std::string& last_round);
  // Updates this site's own row.
  void SetSelf(int64_t load, double capacity, bool drained, const std::string& round_id,
               const std::string& last_round);

  // Every roster site, by label, with `up` evaluated now.
  std::vector<PeerInfo> View() const;
  std::optional<PeerInfo> Find(const std::string& site) const;
  std::optional<PeerInfo> FindLabel(int label) const;

  // Labels in [0, 2^dimension) that hold no live site: empty positions and
  // sites not heard from within the timeout (DESIGN section 6).
  std::vector<int> FaultLabels() const;
  // The coordinator in this site's view: the lowest live label.
  std::string Coordinator() const;
  int dimension() const { return dimension_; }
  const std::string& self() const { return self_; }

 private:
  bool UpLocked(const PeerInfo& p, absl::Time now) const;

  const Clock* clock_;
  const absl::Duration timeout_;
  const int dimension_;
  const std::string self_;
  mutable std::mutex mu_;
  std::map<int, PeerInfo> by_label_;  // guarded by mu_
};

}  // namespace hyperfed::federation
