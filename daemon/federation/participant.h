#pragma once

// A site's part of rounds (docs/design.md §6): decides whether to take part
// in a round (fencing), runs its part on the executor, and delivers the
// round messages peers send it. One part at a time; a newer round from the
// coordinator replaces an older one the site is still caught in.
//
// Thread-safe.

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "daemon/common/env.h"
#include "daemon/common/executor.h"
#include "daemon/federation/live_config.h"
#include "daemon/federation/round.h"

namespace hyperfed::federation {

class Participant {
 public:
  // `snapshot` gives the load and capacity a part starts from; `done` gets
  // every part's report (the site sends it to the coordinator).
  using Snapshot = std::function<absl::StatusOr<SiteSnapshot>()>;
  using Done = std::function<void(const RoundSpec&, const RoundReport&)>;
  Participant(const LiveConfig* live, const Env* env, Executor* executor, PeerClient* peers, JobMover* mover,
              Snapshot snapshot, Done done);

  // Takes part in `spec` unless it is past its deadline, fails a field
  // check (CheckRoundStart, whatever the roster; CheckRoundRoster), is
  // planned with another roster version than this site's, runs a mode that
  // roster does not allow, or is older than a round this site has seen or
  // not newer than the one it is in (then false, and `why_not` says why;
  // nothing changes). A repeated start of the current round is true.
  bool OnStartRound(const RoundSpec& spec, std::string* why_not);
  absl::StatusOr<balance::LoadTable> OnExchange(const ExchangeMessage& m);
  // A kLookup of the exact round by prefix sums (Mailbox::Lookup).
  absl::StatusOr<LookupAnswer> OnLookup(const ExchangeMessage& m);
  // The coordinator says the sites at these labels (label -> why) have left
  // `round_id`: this part's waits for them end (Mailbox::Left). A round
  // other than the one running here is ignored.
  void OnLeftRound(const std::string& round_id, const std::map<int, std::string>& left);
  // Takes `jobs` of what round_id's plan, as this site derived it, lets
  // source_site send here (TransferAllowance::Admit, waiting up to a step).
  absl::Status AdmitTransfer(const std::string& source_site, const std::string& round_id, int64_t jobs);

  // This site's report of `round_id` for its coordinator, which no longer
  // sees it in the round: the report it made, else (it restarted since) one
  // from its journal (from_journal: the transfers it committed in the
  // round, ok false). FailedPrecondition while its part still runs here.
  absl::StatusOr<RoundReport> ReportOf(const std::string& round_id);

  std::string current_round() const;
  int64_t highest_epoch() const;
  // This site's report of the last round it finished.
  std::optional<RoundReport> last_report() const;
  int64_t jobs_moved_out() const;
  // Refuses new rounds, ends the waits of the current part and waits for it.
  void Stop();

 private:
  void RunPart(const RoundSpec& spec, std::shared_ptr<const config::Roster> roster);
  // The mailbox's place from the live roster; the step timeout.
  absl::Duration SyncMailbox();

  const LiveConfig* live_;
  const Env* env_;
  Executor* executor_;
  Mailbox mailbox_;
  TransferAllowance allowance_;
  RoundContext base_;  // what every round's context shares
  Snapshot snapshot_;
  Done done_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<RoundSpec> current_;        // guarded by mu_
  int parts_running_ = 0;                   // guarded by mu_
  int64_t highest_epoch_ = 0;               // guarded by mu_
  std::optional<RoundReport> last_report_;  // guarded by mu_
  int64_t moved_out_ = 0;                   // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
};

}  // namespace hyperfed::federation
