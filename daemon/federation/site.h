#pragma once

// The site controller: the one owner of a site's federation state. RPC
// handlers decode a request and call one method here; background threads
// (heartbeats, the balancing timer, round runners) live here too.
//
// Thread-safety: every public method may be called from any thread.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "daemon/balance/exact.h"
#include "daemon/common/clock.h"
#include "daemon/federation/membership.h"
#include "daemon/federation/round.h"
#include "daemon/scheduler/adapter.h"

namespace hyperfed::federation {

// What an operator sees of a round: its events in order, then the result.
struct RoundView {
  std::string id;
  RoundSpec spec;
  std::string mode;                      // what it ran and why, in words
  std::vector<std::string> events;
  bool done = false;
  bool ok = false;
  bool dry_run = false;
  balance::LoadTable before;             // loads and capacities at the start
  balance::LoadTable after;              // planned (dry run) or reported
  std::vector<balance::Transfer> transfers;
  int64_t moved = 0;
  int64_t messages = 0;
  int steps = 0;
  double share_error_before = 0, share_error_after = 0;
  absl::Time started, finished;
  // Coordination state: the sites that accepted (known once every StartRound
  // has answered), those that reported, and whether any part failed.
  bool start_answered = false;
  std::vector<std::string> accepted;
  std::vector<std::string> reported;
  bool any_failed = false;
};

// Counters for the metrics endpoint.
struct SiteCounters {
  int64_t rounds = 0;
  int64_t rounds_failed = 0;
  double last_round_seconds = 0;
  double round_seconds_sum = 0;
  int64_t jobs_moved_out = 0;
};

class Site {
 public:
  Site(const config::Config& config, scheduler::SchedulerAdapter* adapter, JobMover* mover, PeerClient* peers,
       const Clock* clock);
  ~Site();

  // Starts the heartbeat and timer threads. Stop() joins them.
  void Start();
  void Stop();

  // This site's load snapshot: migratable pending jobs (pending, not held,
  // not pinned) and capacity (0 while drained).
  absl::StatusOr<std::pair<int64_t, double>> Snapshot();

  // ---- Peer RPCs
  bool OnHeartbeat(const HeartbeatInfo& hb);
  // Accepts when not in another round (then runs its part in the background).
  bool OnStartRound(const RoundSpec& spec, std::string* busy_with);
  absl::StatusOr<balance::LoadTable> OnExchange(const ExchangeMessage& m);
  void OnReport(const RoundReport& report);
  // At the coordinator: starts a round for the request, or joins the one
  // running. Elsewhere: FailedPrecondition naming the coordinator.
  absl::StatusOr<std::string> OnRequestBalance(const std::string& from, const std::string& reason);

  // ---- Admin
  // Starts a round (at the coordinator) or plans one (dry run, anywhere).
  absl::StatusOr<std::string> Balance(bool dry_run, const std::string& reason);
  // Waits until the round has more than `seen` events or is done.
  std::optional<RoundView> WaitRound(const std::string& round_id, size_t seen, absl::Duration timeout);
  std::optional<RoundView> LastRound() const;
  void SetDrained(bool drained);
  bool drained() const { return drained_.load(); }
  Membership& membership() { return membership_; }
  const config::Config& config() const { return config_; }
  std::string Coordinator() const { return membership_.Coordinator(); }
  bool IsCoordinator() const { return Coordinator() == config_.site.id; }
  SiteCounters counters() const;
  // The fault set and what the next round would run, in words.
  std::pair<std::vector<int>, std::string> NextMode() const;
  // This site's share in the last round it took part in (for ExplainJob).
  std::optional<RoundReport> LastReport() const;

 private:
  std::string SiteOfLabel(int label) const;
  void HeartbeatLoop();
  void TimerLoop();
  void RunPart(RoundSpec spec);
  void Coordinate(std::string round_id);
  void AddEvent(const std::string& round_id, const std::string& event);
  void FinishRoundLocked(RoundView& r);
  RoundView* FindLocked(const std::string& id);

  const config::Config config_;
  scheduler::SchedulerAdapter* adapter_;
  JobMover* mover_;
  PeerClient* peers_;
  const Clock* clock_;
  Membership membership_;
  Mailbox mailbox_;
  RoundContext ctx_;
  std::atomic<bool> drained_{false};
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string current_round_;                       // the round this site takes part in
  std::deque<RoundView> rounds_;                    // recent rounds this site coordinated or planned
  std::optional<RoundReport> last_report_;
  SiteCounters counters_;
  int64_t round_seq_ = 0;
  std::vector<std::thread> workers_;                // round parts and coordinations
  std::thread heartbeat_thread_, timer_thread_;
};

}  // namespace hyperfed::federation
