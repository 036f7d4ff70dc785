#pragma once

// A site's federation state, in parts with one owner each (docs/design.md
// §6, §9): Membership and Heartbeater (who is up), Participant (this site's
// part of rounds), Coordinator (starting and ending rounds), RoundHistory
// (the operator's view). Site wires them together, runs the heartbeat and
// timer loops, and is what the server calls: each RPC handler decodes a
// request and calls one method here.
//
// Thread-safe: every public method may be called from any thread.

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "daemon/balance/mcwa.h"
#include "daemon/common/env.h"
#include "daemon/common/executor.h"
#include "daemon/federation/arrival.h"
#include "daemon/federation/coordinator.h"
#include "daemon/federation/live_config.h"
#include "daemon/federation/membership.h"
#include "daemon/federation/participant.h"
#include "daemon/federation/round.h"
#include "daemon/federation/round_history.h"
#include "daemon/federation/wait_log.h"
#include "daemon/scheduler/adapter.h"

namespace hyperfed::federation {

// How often a site retries the migrations its journal left unsettled (its
// recovery loop, Site::Start; a restart first recovers at once).
inline constexpr absl::Duration kRecoveryInterval = absl::Seconds(5);

// What the next round would run, for the status and topology views.
struct NextRound {
  std::vector<int> faults;
  std::string mode;                                 // in words
  std::vector<balance::BalancingSubcube> subcubes;  // with faults: one per component
};

// Jobs an operator submits at this site (test and demo load).
struct SubmitOrder {
  int count = 1;
  std::string name = "job";
  int cores = 1;
  int64_t duration_ms = 0;
  int64_t time_limit_s = 0;  // JobSpec::time_limit_s (0: none given)
};
struct SubmittedJob {
  std::string id;
  std::string key;
};
// What an order made: every job it asked for, or those made before the
// failure `status` says (each of them is in the scheduler: an order stops at
// its first failure and undoes nothing).
struct SubmitResult {
  std::vector<SubmittedJob> jobs;
  absl::Status status;
};

class Site {
 public:
  // Threads of the site's executor: a round part, a coordination and the
  // fan-outs of both (whose callers also run items themselves).
  static constexpr int kExecutorThreads = 8;

  // `live` holds the roster and balancer settings in force (the daemon
  // replaces them); `config` gives the rest.
  Site(const config::Config& config, LiveConfig* live, scheduler::SchedulerAdapter* adapter, JobMover* mover,
       PeerClient* peers, const Env* env);
  ~Site();

  // Starts the heartbeat and timer loops. Stop() ends them and every round
  // part and coordination, and joins every thread.
  void Start();
  void Stop();

  // This site's snapshot: its movable load (pending jobs, not held, not
  // pinned, that some other live site can run), capacity (0 while drained)
  // and its widest job; with_waits adds its start profile's waits (asked of
  // the scheduler, so only for rounds).
  absl::StatusOr<SiteSnapshot> Snapshot(bool with_waits = false);

  // ---- Peer RPCs
  // A peer's probe (Membership::Seen); `ack` gets the answer's news.
  bool OnHeartbeat(const HeartbeatInfo& hb, const Gossip& gossip = {}, ProbeAck* ack = nullptr);
  // A peer asks this site to probe `site` for it (Heartbeater::ProbeFor),
  // with this site's last heartbeat (UNAVAILABLE before its first one):
  // whether it answered.
  absl::StatusOr<bool> OnProbeFor(const std::string& site, absl::Duration timeout);
  // Takes part in `spec` when its coordinator is the one this site
  // recognises (Membership::MayCoordinate), its fault set names no site
  // this site hears from (issue 34, finding 7) and the participant takes it
  // (Participant::OnStartRound); else false, `why_not` says why, and
  // nothing changes.
  bool OnStartRound(const RoundSpec& spec, std::string* why_not);
  absl::StatusOr<balance::LoadTable> OnExchange(const ExchangeMessage& m);
  // A kLookup of the exact round by prefix sums (Mailbox::Lookup).
  absl::StatusOr<LookupAnswer> OnLookup(const ExchangeMessage& m);
  absl::Status OnReport(const RoundReport& report);
  // The coordinator `from` asks for this site's report of a round
  // (Participant::ReportOf); PermissionDenied unless the round is one `from`
  // started (its id names it: RoundStartedBy).
  absl::StatusOr<RoundReport> OnGetReport(const std::string& from, const std::string& round_id);
  // The coordinator `from` says the sites at these labels (label -> why)
  // have left `round_id` (Participant::OnLeftRound); PermissionDenied
  // unless the round is one `from` started.
  absl::Status OnLeftRound(const std::string& from, const std::string& round_id,
                           const std::map<int, std::string>& left);
  // This site's row as it is now, its scheduler asked now as at the start of
  // a round (Peer.CurrentLoad): what a coordinator's dry run plans on.
  // FailedPrecondition while the roster does not list this site.
  absl::StatusOr<balance::LoadRow> CurrentRow();
  // A Transfer from source_site in round_id: admitted only within what this
  // site's own plan of the round lets that source send (docs/design.md §6.8).
  // A placement's Transfer (IsPlacementId) is admitted by
  // ArrivalPlacement::Admit: placement on and this site not drained.
  absl::Status AdmitTransfer(const std::string& source_site, const std::string& round_id,
                             const std::vector<std::string>& keys);
  // At the coordinator: starts a round for the request, or joins the one
  // running. Elsewhere: FailedPrecondition naming the coordinator.
  absl::StatusOr<std::string> OnRequestBalance(const std::string& from, const std::string& reason,
                                               const std::string& mode = "");

  // ---- Admin
  // Starts a round (asking the coordinator when this site is not it) or
  // plans one (dry run, anywhere), in `mode` ("" = the configured one).
  absl::StatusOr<std::string> Balance(bool dry_run, const std::string& reason, const std::string& mode = "");
  // Waits until the round has more than `seen` events or is done.
  std::optional<RoundView> WaitRound(const std::string& round_id, size_t seen, absl::Duration timeout);
  // Waits until the round is done (RoundHistory::WaitDone).
  std::optional<RoundView> WaitRoundDone(const std::string& round_id, absl::Duration timeout) {
    return history_.WaitDone(round_id, env_->Now() + timeout);
  }
  std::optional<RoundView> LastRound() const;
  // A round this site coordinated (RoundHistory::Find).
  std::optional<RoundView> FindRound(const std::string& round_id) const { return history_.Find(round_id); }
  // The round whose part runs here now ("" if none).
  std::string CurrentRound() const { return participant_.current_round(); }
  // The highest round epoch this site took part in (its fence, §6.3).
  int64_t HighestEpoch() const { return participant_.highest_epoch(); }
  // The rounds this site coordinated, newest first (RoundHistory::Recent).
  std::vector<RoundView> RecentRounds(size_t limit, bool dry_runs) const { return history_.Recent(limit, dry_runs); }
  void SetDrained(bool drained);
  // Drained by an operator here, or by the roster (`hyperfedctl roster
  // remove` drains a site before it removes it).
  bool drained() const;
  // Every roster site with this site's own row fresh.
  std::vector<PeerInfo> View();
  NextRound Next() const;
  // Submits the jobs, then wakes the placement pass (they are placed at
  // once, not a heartbeat later).
  SubmitResult Submit(const SubmitOrder& order);
  PlacementCounters placement_counters() const { return arrival_.counters(); }
  // How long this site's jobs waited before they started, in the last hours
  // (WaitLog, fed every heartbeat).
  WaitSummary waits() const { return waits_.Summary(env_->Now()); }
  // Where a job is and why it moved or stays, in lines.
  absl::StatusOr<std::vector<std::string>> ExplainJob(const std::string& job);

  const config::Config& config() const { return config_; }
  LiveConfig* live() { return live_; }
  std::string Coordinator() const { return membership_.Coordinator(); }
  bool IsCoordinator() const { return Coordinator() == config_.site.id; }
  // The site that decides an operator's roster edit: the coordinator, which
  // compares versions for the whole federation, so that two operators'
  // edits through two sites cannot both be taken; "" when that is this
  // site (or none is known). An edit made here is handed to it (with this
  // site's certificate: the operators' signature, not the caller, is the
  // authority), and a roster read here first takes its signed roster when
  // newer.
  std::string RosterDecider() const {
    const std::string c = Coordinator();
    return c == config_.site.id ? "" : c;
  }
  // Whether this site takes part in or coordinates a round now.
  bool InRound() const { return !participant_.current_round().empty() || !coordinator_.running().empty(); }
  SiteCounters counters() const { return coordinator_.counters(); }
  Membership& membership() { return membership_; }
  // Its observer may be set before Start (Heartbeater::SetObserver).
  Heartbeater& heartbeater() { return heartbeater_; }
  // The site's executor, for the fan-outs of the layers below (the batches
  // of a migration).
  Executor* executor() { return &executor_; }

  // One pass of each loop (the loops call them; tests may too).
  void HeartbeatOnce();
  void TimerOnce();
  PlacementPass PlaceOnce();

 private:
  absl::Status RefreshSelf();
  // This site's start profile now (the scheduler's FreeCores, else its
  // ArrivalStarts, else the widest job alone).
  balance::StartProfile StartProfileNow(int64_t widest);
  // This site's profile for heartbeats and placement: StartProfileNow,
  // asked of the scheduler at most every heartbeat interval and never for
  // more than a tenth of the time (a slow scheduler's profile is reused).
  // (While jobs wait in their placement window, the one taken before them.)
  // Offsets are from now; `age`, when given, is how long ago it was taken.
  balance::StartProfile OwnProfile(absl::Duration* age = nullptr);
  // Whether a pending job was in its scheduler's placement window at the
  // last snapshot (each heartbeat's: Snapshot reads the pending jobs anyway).
  bool JobsInWindow();
  // Whether a pending job is in its placement window now (asks the
  // scheduler; false when it cannot say). Updates JobsInWindow.
  bool WindowOpenNow();
  // The oldest own profile reused while jobs are in their window: windows
  // are seconds long and a pass ends them within a heartbeat; this bounds
  // the age when new jobs never stop coming.
  static constexpr absl::Duration kWindowedProfileAge = absl::Minutes(1);
  // Runs PlaceOnce every heartbeat interval, or at once when woken.
  void PlacementLoop();
  void WakePlacement();
  void PartDone(const RoundSpec& spec, const RoundReport& report);
  // Runs `once` every heartbeat interval (as set when it returns), counted
  // from the start of each pass.
  void Loop(void (Site::*once)());
  // Every kRecoveryInterval: mover_->Recover() (JobMover).
  void RecoveryLoop();

  const config::Config config_;
  LiveConfig* live_;
  scheduler::SchedulerAdapter* adapter_;
  JobMover* mover_;
  PeerClient* peers_;
  const Env* env_;
  std::atomic<bool> drained_{false};
  std::atomic<bool> capacity_capped_{false};  // logged once
  std::atomic<int64_t> widest_{0};            // the last snapshot's, for heartbeats
  std::atomic<bool> jobs_in_window_{false};   // the last snapshot's (JobsInWindow)

  Executor executor_;
  Membership membership_;
  Heartbeater heartbeater_;
  RoundHistory history_;
  Participant participant_;
  federation::Coordinator coordinator_;
  ArrivalPlacement arrival_;
  WaitLog waits_;

  std::mutex profile_mu_;  // guards the three below
  balance::StartProfile own_profile_;
  absl::Time own_profile_at_ = absl::InfinitePast();
  absl::Duration own_profile_cost_;

  // Timer-loop state (that thread only): the timer counts balancer.interval
  // from here, so that a reloaded interval takes effect at once.
  absl::Time timer_from_;
  bool said_not_in_roster_ = false;  // heartbeat thread only
  bool scheduler_answers_ = true;    // heartbeat thread only: the last snapshot's outcome
  absl::Time last_underload_request_ = absl::InfinitePast();

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;    // guarded by mu_
  bool place_now_ = false;   // guarded by mu_
  std::optional<HeartbeatInfo> last_heartbeat_;  // guarded by mu_: what the last tick sent
  std::unique_ptr<EnvThread> heartbeat_thread_, timer_thread_, placement_thread_, recovery_thread_;
};

}  // namespace hyperfed::federation
