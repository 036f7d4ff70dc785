#pragma once

// What a site's round needs from the layers around it: calls to other
// sites (PeerClient, implemented over gRPC by the server layer) and the
// moves of jobs (JobMover, wired onto the migration layer by the daemon).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "config/config.h"
#include "daemon/balance/easy.h"
#include "daemon/balance/exact.h"
#include "daemon/federation/membership.h"
#include "daemon/federation/messages.h"

namespace hyperfed::federation {

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
  // A kLookup of the exact round by prefix sums: the callee's answer
  // (Mailbox::Lookup). A site of protocol 1.8 or older does not know it.
  virtual absl::StatusOr<LookupAnswer> Lookup(const std::string& site, const ExchangeMessage& m,
                                              absl::Duration timeout) {
    return absl::UnimplementedError("Lookup");
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
  // This site's heartbeat (its probe, docs/design.md §6.11) to each of
  // `sites`, all at once, each with its own gossip (`gossip[i]` for
  // `sites[i]`; empty: none): one answer per site, in order. Returns when
  // every call has answered or waited `timeout`: a peer that does not
  // answer, or answers slowly, delays no other (docs/design.md §9).
  virtual std::vector<absl::StatusOr<ProbeAck>> Heartbeats(const std::vector<std::string>& sites,
                                                           const HeartbeatInfo& info, const std::vector<Gossip>& gossip,
                                                           absl::Duration timeout) = 0;
  // Asks each helper to probe a site for this one (Peer.ProbeFor), all at
  // once: per (helper, site), whether the site answered the helper; an
  // error when the helper itself did not answer. A site of protocol 1.7 or
  // older answers UNIMPLEMENTED.
  virtual std::vector<absl::StatusOr<bool>> ProbeFor(const std::vector<std::pair<std::string, std::string>>& asks,
                                                     absl::Duration timeout) {
    return std::vector<absl::StatusOr<bool>>(asks.size(), absl::UnimplementedError("ProbeFor"));
  }
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
  virtual absl::StatusOr<std::optional<std::vector<std::vector<std::string>>>> Choose(const std::vector<Order>& orders,
                                                                                      const balance::StartProfile& own,
                                                                                      bool draining,
                                                                                      const std::string& round_id) {
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

}  // namespace hyperfed::federation
