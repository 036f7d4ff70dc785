#pragma once

// What a balancing round says between sites (docs/design.md §6): the
// exchange messages, the round's spec and report and their checks, round
// ids and the round's timeouts. Plain structs: the server layer converts
// them from and to protobuf (daemon/server/convert.h).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "config/config.h"
#include "daemon/balance/exact.h"
#include "daemon/balance/modes.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/prefix_scan.h"

namespace hyperfed::federation {

// What a round message carries (docs/design.md §6).
enum class MessageKind {
  kUp = 1,         // subtree rows to the tree parent
  kExchange = 2,   // rows across a dimension; the reply carries the callee's
  kDown = 3,       // the whole table to a tree child
  kBarrier = 4,    // pairwise modes: both sides' moves of a dimension are done
  kPhaseDone = 5,  // mcwa: the sender's transfer of a phase to the callee is done
  // The exact round by prefix sums (protocol 1.9; docs/design.md §6.5):
  kScan = 6,    // the sender's subcube totals in one dimension of the scan
  kLookup = 7,  // who holds a position of the callee's subcube list; the reply says (LookupAnswer)
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
  int64_t moved = 0;  // kPhaseDone: the jobs the sender's transfer of that phase moved
  balance::ScanTotals totals;  // kScan: the sender's (or the subcube it stands in for) dimension-subcube totals
  // kLookup: the requester's run, and the position asked for: unit
  // `position` of the residual list of the callee's `level`-subcube
  // (balance::Locate). `rows` holds the requester's row when it receives
  // (its start profile, for the gain choice), else nothing.
  balance::MatchRun run;
  int level = 0;
  int64_t position = 0;
};

// The callee's answer to a kLookup: it holds the position (found: its run,
// and its start profile when it receives), or the requester asks
// `next_label` for unit `position` of that site's `next_level`-subcube list.
struct LookupAnswer {
  bool found = false;
  balance::MatchRun run;
  balance::StartProfile profile;
  int next_label = -1;
  int next_level = 0;
  int64_t position = 0;
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
  // mode exact only: run by prefix sums (RunScanned, protocol 1.9) instead
  // of gathering the table. The coordinator chooses (UsePrefixScan).
  bool prefix_scan = false;

  balance::RoundShape shape() const { return {dimension, {faults.begin(), faults.end()}}; }
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
RoundTimeouts ComputeRoundTimeouts(const config::BalancerConfig& b, const balance::RoundShape& shape);

}  // namespace hyperfed::federation
