#pragma once

// The Peer service's handlers apart from gRPC: each takes a decoded request
// and the site the transport authenticated, checks who is calling and every
// field (docs/design.md §8), and hands the request to one Site, Migrator or
// RosterKeeper method; they hold no policy of their own. PeerService
// (daemon/server/services.h) calls them after the checks that need the gRPC
// call itself (the per-peer call limit, the partition test hook, reading the
// client certificate); a simulator calls them directly with the site it
// delivers for, so that a peer's input meets the same checks there.
//
// `caller` is the site the transport authenticated: over gRPC the client
// certificate's common name ("" when the call carried none), or the claimed
// site itself with `insecure: true`. The checks run in this order, and the
// first that fails is the answer:
//   - the claimed site: an id of 1..200 characters (INVALID_ARGUMENT) and
//     a site of the roster in force (PERMISSION_DENIED); Transfer and Abort
//     take a site the roster no longer lists (its migrations still settle;
//     a new one needs a round's plan), GetRoster any site (one joining, or
//     one a newer roster removed);
//   - the caller: "" is UNAUTHENTICATED, another site than the claimed one
//     PERMISSION_DENIED;
//   - the request's fields: INVALID_ARGUMENT (or FAILED_PRECONDITION where
//     this site cannot take part).
// A refused request changes nothing, but for a Heartbeat's signed roster:
// that is checked on its own and taken before the heartbeat's row is
// checked against it. Exchange claims its sender by label: a label no
// roster site has is INVALID_ARGUMENT before anything else.
//
// deps.config, deps.live and deps.site must be set; deps.migrator for
// Transfer and Abort. deps.roster may be nullptr (a simulator's sites): then
// Heartbeat neither takes nor sends signed rosters and GetRoster answers
// UNAVAILABLE. Round epochs are checked against deps.env's clock (nullptr:
// RealEnv::Get()). deps.peers, deps.peer_calls and deps.admin_token are not
// used here.
//
// Thread-safe: any number of calls may run at once.

#include <functional>
#include <mutex>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "daemon/common/env.h"
#include "daemon/server/service_deps.h"
#include "hyperfed/v1/hyperfed.pb.h"

namespace hyperfed::server {

class PeerHandlers {
 public:
  explicit PeerHandlers(ServiceDeps deps);

  absl::Status RequestBalance(const std::string& caller, const v1::RequestBalanceRequest& req,
                              v1::RequestBalanceReply* reply);
  absl::Status StartRound(const std::string& caller, const v1::StartRoundRequest& req, v1::StartRoundReply* reply);
  absl::Status Exchange(const std::string& caller, const v1::ExchangeRequest& req, v1::ExchangeReply* reply);
  absl::Status ReportRound(const std::string& caller, const v1::RoundReport& req, v1::ReportRoundReply* reply);
  absl::Status GetReport(const std::string& caller, const v1::GetReportRequest& req, v1::RoundReport* reply);
  absl::Status CurrentLoad(const std::string& caller, const v1::CurrentLoadRequest& req, v1::LoadRow* reply);
  absl::Status LeftRound(const std::string& caller, const v1::LeftRoundRequest& req, v1::LeftRoundReply* reply);
  absl::Status Transfer(const std::string& caller, const v1::TransferRequest& req, v1::TransferReply* reply);
  absl::Status Abort(const std::string& caller, const v1::AbortRequest& req, v1::AbortReply* reply);
  absl::Status Heartbeat(const std::string& caller, const v1::HeartbeatRequest& req, v1::HeartbeatReply* reply);
  // Probes `target` for the caller (Site::OnProbeFor): a roster site other
  // than both, within at most a heartbeat interval.
  absl::Status ProbeFor(const std::string& caller, const v1::ProbeForRequest& req, v1::ProbeForReply* reply);
  absl::Status GetRoster(const std::string& caller, const v1::GetRosterRequest& req, v1::SignedRoster* reply);
  // The rounds this site coordinated, for a roster site whose operator asks
  // (no job, no credential: what the round's sites saw anyway).
  absl::Status Rounds(const std::string& caller, const v1::PeerRoundsRequest& req, v1::RoundsReply* reply);
  // A signed roster another site's operator set, taken as Admin.SetRoster
  // takes it here: by its signature and `expected_version`. `ceilings`
  // checks it against what this site hears (AdminService::SetRoster's).
  absl::Status ProposeRoster(const std::string& caller, const v1::ProposeRosterRequest& req, v1::SetRosterReply* reply,
                             const std::function<absl::Status(const config::Roster&)>& ceilings);

 private:
  // The first two checks above: the claimed site, then the caller.
  absl::Status CheckCaller(const std::string& caller, const std::string& claimed, bool in_roster = true) const;
  // A round epoch is a coordinator's clock in Unix ms (or one more than the
  // highest seen): one more than a day ahead of this site's clock is
  // refused, so that a wild epoch cannot fence this site off for good.
  bool EpochOk(int64_t epoch) const;
  // A heartbeat's row values, its own or relayed: ids' lengths, load,
  // capacity and profile (CheckReportedRow), epoch, incarnation, ages.
  absl::Status CheckRowValues(const config::Roster& roster, const v1::HeartbeatRequest& row) const;
  // A heartbeat's news and relayed rows (docs/design.md §6.11).
  absl::Status CheckGossip(const config::Roster& roster, const v1::HeartbeatRequest& req) const;
  // A warning about a peer's call, logged the first time only.
  void LogOnce(const std::string& line);

  const ServiceDeps d_;
  const Env* const env_;
  std::mutex refused_mu_;
  std::set<std::string> refused_;  // guarded by refused_mu_; what was refused, logged once each
};

}  // namespace hyperfed::server
