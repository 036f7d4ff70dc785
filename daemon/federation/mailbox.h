#pragma once

// The round messages a site holds until its part of the round takes them
// (docs/design.md §6.4).

#include <condition_variable>
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
#include "daemon/balance/exact.h"
#include "daemon/balance/prefix_scan.h"
#include "daemon/common/env.h"
#include "daemon/federation/messages.h"

namespace hyperfed::federation {

// Messages of rounds that arrive before or while the round runs. The gRPC
// handler delivers, the round runner takes. Fenced: once a round is opened,
// messages of older rounds are refused and waits of older rounds end.
// Thread-safe.
class Mailbox {
 public:
  // The mailbox of the site at `self_label` in a `dimension`-cube.
  Mailbox(const Env* env, int self_label, int dimension) : env_(env), self_label_(self_label), dimension_(dimension) {}
  // The site's place changed with a new roster version.
  void SetPosition(int self_label, int dimension);

  // Rounds not yet started here whose messages are kept from one sender (a
  // peer may start before this site hears of the round); a message of one
  // more from that sender is refused.
  static constexpr int kMaxEarlyRounds = 2;

  // The site starts `round_id` at `epoch`: drops every message of an older
  // round and ends the waits of the round it replaces. `depth` is the
  // round's balance::RoundDepth (0: the dimension): its PHASE_DONE notices
  // are of phases 1 .. 3 x depth + 1; those of a round not yet opened here,
  // 1 .. 3n + 1 (a sender's phases follow the gather, which this site
  // takes part in, so a deeper round is open here by then).
  void Open(const std::string& round_id, int64_t epoch, int depth = 0);
  // The round ended at this site: drops its messages, and refuses later
  // ones (FailedPrecondition), also those a caller waits on now.
  void Close(const std::string& round_id);
  // The site at `label` has left `round_id` (the coordinator says so,
  // Peer.LeftRound): a wait for its message ends at once, Unavailable with
  // `why`. Ignored unless `round_id` is the open round.
  void Left(const std::string& round_id, int label, const std::string& why);
  // A site that has left `round_id` and why, if any has: the lowest label.
  std::optional<std::pair<int, std::string>> AnyLeft(const std::string& round_id);
  // Unavailable, saying who and why, once the site at `label` (or, with
  // `any_left`, any site) has left `round_id`: what a wait or a call for
  // its message ends with (Await, AwaitTotals, the runner's calls).
  std::optional<absl::Status> Gone(const std::string& round_id, int label, bool any_left);

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
  // Runner side, the exact round by prefix sums: the totals `from_label`
  // sent in dimension `dimension` (a kScan), as Await, but Unavailable once
  // any site has left the round and the totals have not come: every
  // site's totals need every live site's load, so a site gone mid-scan
  // ends every part still scanning (docs/algorithms.md, "`exact` by prefix
  // sums"), not each after its own wait.
  absl::StatusOr<balance::ScanTotals> AwaitTotals(const std::string& round_id, int dimension, int from_label,
                                                  absl::Time deadline);

  // What this site answers lookups with once its scan is done: its
  // residuals and runs, the round's live positions (for the next hop) and
  // its start profile. Kept until another round is opened, also after the
  // part ends here: a site done with its own transfers still answers the
  // lookups others route through it.
  struct ScanView {
    balance::MatchView view;
    balance::LivePositions live{0, {}};
    balance::StartProfile profile;
  };
  void PublishScan(const std::string& round_id, ScanView view);
  // A partner that found one of this site's runs (it looked it up here).
  struct Partner {
    balance::PartnerRun run;
    balance::StartProfile profile;  // when it receives
  };
  // Handler side: answers a kLookup (balance::Locate): found here (the
  // requester's run is recorded as a partner's), or where to ask next.
  // Waits up to `timeout` for this site's scan to be done. InvalidArgument,
  // recording nothing, for a lookup this site cannot be asked: a
  // requester outside the sibling of its run's subcube, a position beyond
  // this site's list, a run that matches none of this site's or overlaps
  // another partner's; AlreadyExists for a second lookup of one run;
  // FailedPrecondition for an older round.
  absl::StatusOr<LookupAnswer> Lookup(const ExchangeMessage& m, absl::Duration timeout);
  // Runner side: the partners recorded so far, once `done` says they are
  // enough, or at `deadline`; Aborted once a newer round is opened.
  absl::StatusOr<std::vector<Partner>> AwaitPartners(const std::string& round_id,
                                                     const std::function<bool(const std::vector<Partner>&)>& done,
                                                     absl::Time deadline);

 private:
  using Key = std::tuple<std::string, int, int, int, int>;  // round, kind, dimension, phase, from
  struct Entry {
    balance::LoadTable rows;
    absl::Time at;
    balance::ScanTotals totals;  // kScan
  };
  // Waits for `key`'s message: ends when its sender (or, `any_left`, any site)
  // has left the round.
  absl::StatusOr<Entry> AwaitEntry(const Key& key, absl::Time deadline, bool any_left = false);
  std::optional<absl::Status> GoneLocked(int label, bool any_left) const;
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
  int fence_depth_ = 0;                                           // guarded by mu_; of fence_round_
  std::map<std::string, int64_t> epoch_of_;                       // guarded by mu_; rounds with messages here
  std::map<Key, Entry> inbox_;                                    // guarded by mu_
  std::set<Key> taken_;                                           // guarded by mu_; every message stored
  std::map<std::tuple<std::string, int, int>, Entry> published_;  // guarded by mu_; round, kind, dimension
  std::map<int, std::string> left_;                               // guarded by mu_; of fence_round_: label -> why
  std::string closed_round_;                                      // guarded by mu_; the part that ended here
  std::string scan_round_;                                        // guarded by mu_; the round of scan_
  std::optional<ScanView> scan_;                                  // guarded by mu_
  std::vector<Partner> partners_;                                 // guarded by mu_; of scan_round_
};

}  // namespace hyperfed::federation
