#pragma once

// One site's part of a balancing round (docs/design.md §6), and the
// interfaces it needs from the layers around it. No gRPC here: the server
// layer implements PeerClient; the daemon wires a JobMover onto the migration
// layer. What a round computes is its mode's (daemon/balance/modes.h).

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "config/config.h"
#include "daemon/balance/exact.h"
#include "daemon/balance/modes.h"
#include "daemon/balance/plan.h"
#include "daemon/common/env.h"
#include "daemon/common/executor.h"
#include "daemon/federation/allowance.h"
#include "daemon/federation/membership.h"

namespace hyperfed::federation {

// What a round message carries (docs/design.md §6).
enum class MessageKind {
  kUp = 1,         // subtree rows to the tree parent
  kExchange = 2,   // rows across a dimension; the reply carries the callee's
  kDown = 3,       // the whole table to a tree child
  kBarrier = 4,    // pairwise modes: both sides' moves of a dimension are done
  kPhaseDone = 5,  // mcwa: the sender's transfer of a phase to the callee is done
};
const char* MessageKindName(MessageKind k);

struct ExchangeMessage {
  std::string round_id;
  int64_t epoch = 0;
  MessageKind kind = MessageKind::kExchange;
  int dimension = 0;  // kExchange, kBarrier
  int phase = 0;      // kPhaseDone: the plan phase (>= 1)
  int from_label = 0;
  balance::LoadTable rows;
};

// A round's id names the site that started it: "<site>-<unix ms>-<n>".
std::string MakeRoundId(const std::string& coordinator, absl::Time started, int64_t n);
// The site a round's id names; nullopt if the id is not of that form.
std::optional<std::string> RoundCoordinator(const std::string& round_id);
// Whether `round_id` is of that form and names `site`.
inline bool RoundStartedBy(const std::string& round_id, const std::string& site) {
  return RoundCoordinator(round_id) == site;
}

struct RoundSpec {
  std::string round_id;
  // Fencing: a site refuses a round older than one it has seen, and every
  // wait of a round ends by its deadline (the coordinator's clock).
  int64_t epoch = 0;
  absl::Time deadline = absl::InfinitePast();
  std::string coordinator;
  std::vector<int> faults;  // sorted labels
  int dimension = 0;
  std::string mode;  // a name in the registry of round modes
  // The version of the roster the coordinator planned with: a site on
  // another version does not take part (docs/design.md §6.9).
  int64_t roster_version = 0;
};

struct RoundReport {
  std::string round_id;
  std::string site;
  int label = 0;
  bool ok = false;
  std::string error;        // where this site's part ended, in words
  int64_t load_before = 0;  // the load and capacity the site balanced with
  double capacity = 0;
  int64_t quota = 0;
  int64_t moved_out = 0;
  int64_t shortfall = 0;
  // Jobs the plan let go that the job choice kept: they would not start
  // sooner there (choice "gain") or moved within the hysteresis time.
  int64_t kept = 0;
  std::vector<balance::Transfer> transfers;  // what this site committed
  int64_t messages = 0;
  int steps = 0;
  // Rebuilt from the journal after a restart (Participant::ReportOf): the
  // transfers are what the site committed; load and capacity are unknown.
  bool from_journal = false;
  // The part ended before it read the load and capacity (replaced or
  // stopped before it began, or the snapshot failed): load_before and
  // capacity are not what it balanced with.
  bool not_begun = false;
};

// A report's fields against `roster` (the round's): the site's label, no
// negative count, a load and capacity within bounds (CheckReportedRow;
// not for one rebuilt from a journal, which knows neither), transfers from
// the site's own label to a position of the cube, and an error of at most
// kMaxReportError characters. InvalidArgument naming the field otherwise.
// Every report a coordinator takes meets it, sent or asked for.
inline constexpr size_t kMaxReportError = 1000;
absl::Status CheckReport(const config::Roster& roster, const RoundReport& report);

// A round epoch another site sends (a start, a round message, a
// heartbeat): > 0 and at most kMaxEpochAhead ahead of this site's clock
// `now`, so that a wild epoch cannot fence a site off for good
// (docs/security.md, "Heartbeat epochs"; issue 34). The one bound of epochs.
inline constexpr absl::Duration kMaxEpochAhead = absl::Hours(24);
bool EpochInBounds(int64_t epoch, absl::Time now);

// The fields of a round's start that hold whatever roster this site has
// (docs/design.md §6.3; issue 34, finding 6): a coordinator named, a known
// round mode (balance::CheckRoundMode), an epoch in bounds, a deadline
// after 1970, a dimension of 0..31 and fault labels in its cube, each once.
// InvalidArgument naming the first bad field. Every start meets it, also
// one on another roster version (then declined as such): the RPC handler
// and the participant both call it.
absl::Status CheckRoundStart(const RoundSpec& spec, absl::Time now);
// The fields that need the round's roster (`roster`, this site's, of the
// round's version): the round's dimension is the roster's
// (InvalidArgument), and this site `self` is not in the fault set
// (FailedPrecondition: it cannot take part).
absl::Status CheckRoundRoster(const config::Roster& roster, const std::string& self, const RoundSpec& spec);

// Every timeout of a round, from the config (one rule, one place).
struct RoundTimeouts {
  absl::Duration step;    // one call to a peer, or one wait for a peer a step away
  absl::Duration round;   // start to deadline
  absl::Duration report;  // after the deadline, for the last reports
  // A wait for a message from a peer up to `behind` sequential steps behind.
  absl::Duration Wait(int behind) const { return step * (1 + behind); }
};
RoundTimeouts ComputeRoundTimeouts(const config::BalancerConfig& b, int dimension);

// Calls to other sites. Thread-safe. Implemented over gRPC by the server
// layer, in-process by tests.
class PeerClient {
 public:
  virtual ~PeerClient() = default;
  // kExchange returns the callee's rows; the other kinds return nothing.
  virtual absl::StatusOr<balance::LoadTable> Exchange(const std::string& site, const ExchangeMessage& m,
                                                      absl::Duration timeout) = 0;
  // Exchange, given up (Cancelled) once `abandon` says so: a call to a site
  // that has left the round ends when the coordinator says so, not when the
  // callee, frozen and back, gives up its own wait. This default asks
  // `abandon` only before the call.
  virtual absl::StatusOr<balance::LoadTable> ExchangeUnless(const std::string& site, const ExchangeMessage& m,
                                                            absl::Duration timeout,
                                                            const std::function<bool()>& abandon) {
    if (abandon()) return absl::CancelledError("abandoned before the call");
    return Exchange(site, m, timeout);
  }
  // Asks every site of `sites` at once to take part in `spec` and returns
  // once all have answered or timed out: one answer per site, in order.
  struct StartAnswer {
    bool accepted = false;
    std::string why_not;    // refused (the site's reason) or unreachable
    bool answered = false;  // the site replied (took part or declined); false: the answer never came
  };
  virtual std::vector<StartAnswer> StartRound(const std::vector<std::string>& sites, const RoundSpec& spec,
                                              absl::Duration timeout) = 0;
  virtual absl::Status ReportRound(const std::string& site, const RoundReport& report, absl::Duration timeout) = 0;
  // The coordinator asks `site` for its report of a round it is no longer
  // in (Participant::ReportOf).
  virtual absl::StatusOr<RoundReport> GetReport(const std::string& site, const std::string& round_id,
                                                absl::Duration timeout) {
    return absl::UnimplementedError("GetReport");
  }
  // Each site's row as it is now (Site::CurrentRow), asked of every site at
  // once: one answer per site, in order, each within `timeout`. A site of
  // protocol 1.4 or older answers UNIMPLEMENTED.
  virtual std::vector<absl::StatusOr<balance::LoadRow>> CurrentLoads(const std::vector<std::string>& sites,
                                                                     absl::Duration timeout) {
    return std::vector<absl::StatusOr<balance::LoadRow>>(sites.size(), absl::UnimplementedError("CurrentLoad"));
  }
  // The coordinator tells each of `sites` at once that the sites at the
  // labels of `left` (label -> why) have left `round_id` (Peer.LeftRound):
  // one status per site, in order, each within `timeout`. A site of
  // protocol 1.5 or older answers UNIMPLEMENTED and waits out its steps.
  virtual std::vector<absl::Status> LeftRound(const std::vector<std::string>& sites, const std::string& round_id,
                                              const std::map<int, std::string>& left, absl::Duration timeout) {
    return std::vector<absl::Status>(sites.size(), absl::UnimplementedError("LeftRound"));
  }
  // Returns the id of the round that will serve the request.
  virtual absl::StatusOr<std::string> RequestBalance(const std::string& site, const std::string& from,
                                                     const std::string& reason, absl::Duration timeout) = 0;
  // This site's heartbeat to each of `sites`, all at once: one status per
  // site, in order. Returns when every call has answered or waited
  // `timeout`: a peer that does not answer, or answers slowly, delays no
  // other (docs/design.md §9).
  virtual std::vector<absl::Status> Heartbeats(const std::vector<std::string>& sites, const HeartbeatInfo& info,
                                               absl::Duration timeout) = 0;
};

// Moves jobs to another site exactly once (the migration layer).
class JobMover {
 public:
  virtual ~JobMover() = default;
  struct Result {
    int64_t moved = 0;
    int64_t shortfall = 0;
  };
  // `count` jobs of the mover's choosing (the most recently queued).
  virtual absl::StatusOr<Result> MoveJobs(const std::string& dest_site, int64_t count, const std::string& round_id) = 0;

  // The job choice (docs/algorithms.md, "Jobs that gain"): which jobs go
  // for each of this site's transfers of one step of a round, at most each
  // transfer's count; `own` is this site's own start profile, `draining`
  // says it has capacity 0 (every job that fits goes). nullopt: the mover
  // does not choose (then MoveJobs picks).
  struct Order {
    std::string dest_site;
    int64_t count = 0;
    balance::StartProfile profile;  // the destination's, from its row
  };
  virtual absl::StatusOr<std::optional<std::vector<std::vector<std::string>>>> Choose(
      const std::vector<Order>& orders, const balance::StartProfile& own, bool draining, const std::string& round_id) {
    return std::nullopt;
  }
  // Moves exactly the chosen jobs (those no longer movable are shortfall).
  virtual absl::StatusOr<Result> MoveChosen(const std::string& dest_site, const std::vector<std::string>& ids,
                                            const std::string& round_id) {
    return MoveJobs(dest_site, static_cast<int64_t>(ids.size()), round_id);
  }
  // The jobs this site committed to send in `round_id`, per destination
  // site (its journal's record, which outlives a restart).
  virtual absl::StatusOr<std::map<std::string, int64_t>> CommittedOut(const std::string& round_id) {
    return std::map<std::string, int64_t>{};
  }
  // The moves of the job with this key, in words, oldest first.
  virtual absl::StatusOr<std::vector<std::string>> MovesOf(const std::string& key) {
    return std::vector<std::string>{};
  }
  // Settles the moves its journal left half done (a crash, a peer that did
  // not answer): the site's recovery loop calls it (Site, kRecoveryInterval).
  virtual absl::Status Recover() { return absl::OkStatus(); }
};

// Messages of rounds that arrive before or while the round runs. The gRPC
// handler delivers, the round runner takes. Fenced: once a round is opened,
// messages of older rounds are refused and waits of older rounds end.
// Thread-safe.
class Mailbox {
 public:
  // The mailbox of the site at `self_label` in a `dimension`-cube.
  Mailbox(const Env* env, int self_label, int dimension)
      : env_(env), self_label_(self_label), dimension_(dimension) {}
  // The site's place changed with a new roster version.
  void SetPosition(int self_label, int dimension);

  // Rounds not yet started here whose messages are kept from one sender (a
  // peer may start before this site hears of the round); a message of one
  // more from that sender is refused.
  static constexpr int kMaxEarlyRounds = 2;

  // The site starts `round_id` at `epoch`: drops every message of an older
  // round and ends the waits of the round it replaces.
  void Open(const std::string& round_id, int64_t epoch);
  // The round ended at this site: drops its messages, and refuses later
  // ones (FailedPrecondition), also those a caller waits on now.
  void Close(const std::string& round_id);
  // The site at `label` has left `round_id` (the coordinator says so,
  // Peer.LeftRound): a wait for its message ends at once, Unavailable with
  // `why`. Ignored unless `round_id` is the open round.
  void Left(const std::string& round_id, int label, const std::string& why);
  // Why the site at `label` has left `round_id`, if it has (Left).
  std::optional<std::string> WhyLeft(const std::string& round_id, int label);

  // Handler side. kExchange waits until this site has published its own
  // rows for that dimension (it has reached the step), stores the caller's
  // and returns this site's rows; DeadlineExceeded when it does not get
  // there in `timeout`. Other kinds store the rows and return nothing.
  // FailedPrecondition for a round older than the open one. Only what the
  // round can expect is taken (docs/design.md §6.4): exchanges and barriers
  // from the partner across their dimension, UP and DOWN from a cube
  // neighbour, at most 2^dimension rows (one, the sender's, for
  // PHASE_DONE), each message once (AlreadyExists for a second), and
  // messages of at most kMaxEarlyRounds rounds not yet open here from each
  // sender (ResourceExhausted beyond).
  absl::StatusOr<balance::LoadTable> Deliver(const ExchangeMessage& m, absl::Duration timeout);

  // Runner side: this site's rows for a kExchange or kBarrier step, for the
  // partner.
  void Publish(const std::string& round_id, MessageKind kind, int dimension, const balance::LoadTable& rows);
  // Runner side: the rows `from_label` sent as (kind, dimension, phase).
  // DeadlineExceeded at `deadline`; Aborted once a newer round is opened;
  // Unavailable once `from_label` has left the round (Left) and its
  // message has not come.
  absl::StatusOr<balance::LoadTable> Await(const std::string& round_id, MessageKind kind, int dimension, int phase,
                                           int from_label, absl::Time deadline);

 private:
  using Key = std::tuple<std::string, int, int, int, int>;  // round, kind, dimension, phase, from
  struct Entry {
    balance::LoadTable rows;
    absl::Time at;
  };
  bool StaleLocked(const std::string& round_id, int64_t epoch) const;
  void ExpireLocked();
  absl::Status ExpectedLocked(const ExchangeMessage& m) const;

  const Env* env_;
  std::mutex mu_;
  int self_label_;  // guarded by mu_
  int dimension_;   // guarded by mu_
  std::condition_variable cv_;
  // The last round opened here: older rounds are fenced off.
  std::string fence_round_;                                       // guarded by mu_
  int64_t fence_epoch_ = 0;                                       // guarded by mu_
  std::map<std::string, int64_t> epoch_of_;                       // guarded by mu_; rounds with messages here
  std::map<Key, Entry> inbox_;                                    // guarded by mu_
  std::set<Key> taken_;                                           // guarded by mu_; every message stored
  std::map<std::tuple<std::string, int, int>, Entry> published_;  // guarded by mu_; round, kind, dimension
  std::map<int, std::string> left_;                               // guarded by mu_; of fence_round_: label -> why
  std::string closed_round_;                                      // guarded by mu_; the part that ended here
};

struct RoundContext {
  std::string self_site;
  int self_label = 0;
  // Site id at a label ("" when the position is empty).
  std::function<std::string(int label)> site_of_label;
  PeerClient* peers = nullptr;
  Mailbox* mailbox = nullptr;
  JobMover* mover = nullptr;
  const Env* env = nullptr;
  Executor* executor = nullptr;  // parallel moves; null: one after another
  // Where the runner records what the plan lets each source send here
  // (docs/design.md §6.8); null: nothing is recorded.
  TransferAllowance* allowance = nullptr;
  RoundTimeouts timeouts;
  // Plain-words progress for logs and the operator ("exchanged dimension 2").
  std::function<void(const std::string&)> event;
};

// What a site balances with: its movable load (pending jobs some other site
// can run), its capacity (0 when drained) and its start profile.
struct SiteSnapshot {
  int64_t load = 0;
  double capacity = 0;
  balance::StartProfile profile;
};

// Runs this site's part of a round from its snapshot. Never throws; the
// report says how far it got. Every wait ends by spec.deadline.
RoundReport RunRound(const RoundContext& ctx, const RoundSpec& spec, const SiteSnapshot& self);
inline RoundReport RunRound(const RoundContext& ctx, const RoundSpec& spec, int64_t load, double capacity) {
  return RunRound(ctx, spec, SiteSnapshot{load, capacity, {}});
}

}  // namespace hyperfed::federation
