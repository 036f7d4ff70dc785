#pragma once

// Starting and ending rounds at the coordinator (docs/design.md §6): builds
// a round from this site's view (the shape, the table, the mode, an epoch
// and a deadline), starts it at every live site at once, gathers the
// reports, and ends the round when every site that took part has reported,
// when every one still missing is down, or at the deadline. A dry run plans
// the same round with the same code and starts nothing.
//
// Thread-safe.

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "daemon/common/env.h"
#include "daemon/common/executor.h"
#include "daemon/federation/membership.h"
#include "daemon/federation/participant.h"
#include "daemon/federation/round.h"
#include "daemon/federation/round_history.h"

namespace hyperfed::federation {

// Whether a round runs mode exact by prefix sums instead of the gather
// (docs/design.md §6.5): mode exact, at least kPrefixScanMinSites live
// sites (below that the table is small and the gather has fewer steps),
// every live site of protocol 1.9 or newer (a site whose protocol is not
// heard yet counts as this build's, as Membership takes it), and the live
// sites in one component of MCWA's topology (the gather balances each
// component apart; the scan would balance them together, another plan).
inline constexpr int kPrefixScanMinSites = 64;
bool UsePrefixScan(const std::string& mode, const std::vector<PeerInfo>& peers, const balance::RoundShape& shape);

// Counters for the metrics endpoint.
struct SiteCounters {
  int64_t rounds = 0;
  int64_t rounds_failed = 0;
  int64_t rounds_failed_in_a_row = 0;  // since the last round that finished
  double last_round_seconds = 0;
  double round_seconds_sum = 0;
  // The last round's max share error (ShareError) before and after it.
  double last_share_error_before = 0, last_share_error_after = 0;
  int64_t jobs_moved_out = 0;
};

// What a round did, built by the coordinator as the reports come in (the
// history only records it): the table it balanced with (each reporting
// site's row as that site really balanced), the transfers, the table after
// them and the share error before and after.
struct RoundResult {
  balance::LoadTable before, after;
  std::vector<balance::Transfer> transfers;
  int64_t moved = 0;
  std::vector<std::string> reported;  // the sites whose reports it took, in order
  int64_t messages = 0;
  int steps = 0;
  double share_error_before = 0, share_error_after = 0;

  // Takes `report`, from the site with row `label` (-1: none). A report
  // rebuilt from a journal, or from a site whose part never began, knows
  // neither the load nor the capacity it balanced with: its row stays as
  // the heartbeats gave it. `counted` false: its transfers count, but it is
  // no site that reported its part.
  void Add(const RoundReport& report, int label, bool counted);
  // The table after the transfers (rows of the round's table only: a
  // transfer naming another label changes none) and both share errors.
  void Finish();
  // Copies the result into the operator's view of the round.
  void RecordIn(RoundView* view) const;
};

class Coordinator {
 public:
  // `refresh_self` updates this site's own row in `membership` first.
  Coordinator(const LiveConfig* live, const Env* env, Executor* executor, Membership* membership,
              Participant* participant, PeerClient* peers, RoundHistory* history,
              std::function<absl::Status()> refresh_self);

  // Starts a round (or, with dry_run, plans one) in `mode` ("" = the
  // configured one); returns its id. While a round runs, a new request
  // joins it (two requests resolve to one round).
  absl::StatusOr<std::string> Begin(bool dry_run, const std::string& reason, const std::string& mode);
  // A site's report of its part (this site's own included). Taken once from
  // each site of the running round: FailedPrecondition for another round,
  // PermissionDenied from a site outside it, AlreadyExists for a second
  // report, InvalidArgument for a transfer to a site outside it
  // (docs/design.md §6.6). The last report ends the round on the calling
  // thread (history and log, under the coordinator's lock; design.md §9).
  absl::Status OnReport(const RoundReport& report);
  // The round this site coordinates now, if any.
  std::string running() const;
  SiteCounters counters() const;
  // Ends the wait of a running coordination; no round starts after.
  void Stop();

 private:
  struct Running {
    RoundSpec spec;
    std::vector<std::string> live;      // the sites it was started at
    std::vector<std::string> accepted;  // known once every StartRound answered
    // Sites whose answer to the start never came: they may have begun the
    // round and moved jobs. The round waits for them while they are up, and
    // asks them for their report (or their journal's transfers) once they
    // say they are out of it, as it asks silent sites.
    std::vector<std::string> unanswered;
    bool start_answered = false;
    std::map<std::string, RoundReport> reports;  // first report of each site
    bool any_failed = false;
    std::shared_ptr<const config::Roster> roster;  // the one it was planned with
    RoundTimeouts timeouts;
    absl::Time started;  // this site's clock
    // Sites that have left the round (did not take part, ended their part
    // with an error, or went down), with why; those told to the sites
    // still in it (TellLeftLocked), and the sites the last telling did not
    // reach.
    std::map<std::string, std::string> left;
    std::set<std::string> told;
    std::set<std::string> missed;
    // The incarnation this site knew of each live site as the start went
    // out, raised to the one it last asked about (SilentLocked).
    std::map<std::string, int64_t> incarnation;
    RoundResult result;
  };
  // A dry run's rows: each live peer's as it is now (PeerClient::CurrentLoads),
  // checked as a round checks rows; a peer that does not answer keeps its
  // heartbeat's row, and the view's events say so with the row's age.
  void AskCurrentRows(const config::Roster& roster, absl::Duration timeout, const std::vector<PeerInfo>& peers,
                      RoundView* view);
  void Coordinate(RoundSpec spec);
  // OnReport's checks and record, under mu_.
  absl::Status TakeReportLocked(const RoundReport& report);
  // Sites that took part and have not reported, though a heartbeat since
  // the round began says they are no longer in it, or news says they run
  // a newer incarnation than at the start: their report was lost, or they
  // restarted. They are asked for it (Participant::ReportOf: the
  // report made, else the transfers the journal committed).
  std::vector<std::string> SilentLocked() const;
  // The sites the round still waits for: those that took part and have not
  // reported, and those whose answer to the start never came, not reported
  // and up (they may have begun it; SilentLocked asks them once they say
  // they are out of it).
  std::vector<std::string> MissingLocked() const;
  bool CompleteLocked() const;
  void FinishLocked(const std::string& why);
  // Whether a site has left the round and the others have not been told.
  bool UntoldLocked() const;
  // Tells every site still in the round (this one directly) which sites
  // have left it since the last telling (Peer.LeftRound): their waits for
  // those sites end at once instead of at the step timeout, and they report
  // (docs/design.md §6.6). Unlocks `l` during the calls.
  void TellLeftLocked(std::unique_lock<std::mutex>& l);

  const LiveConfig* live_;
  const std::string self_;
  const Env* env_;
  Executor* executor_;
  Membership* membership_;
  Participant* participant_;
  PeerClient* peers_;
  RoundHistory* history_;
  std::function<absl::Status()> refresh_self_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Running> running_;  // guarded by mu_
  int64_t seq_ = 0;                 // guarded by mu_
  SiteCounters counters_;           // guarded by mu_
  bool stopping_ = false;           // guarded by mu_
};

// max_i |w_i - T p_i / P| over the rows (docs/design.md §3).
double ShareError(const balance::LoadTable& t);

}  // namespace hyperfed::federation
