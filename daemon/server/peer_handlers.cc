#include "daemon/server/peer_handlers.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "daemon/common/log.h"
#include "daemon/federation/membership.h"
#include "daemon/server/convert.h"
#include "daemon/server/protocol.h"

namespace hyperfed::server {
namespace {

using migration::kMaxIdLength;  // ids in requests (docs/design.md §8)
// Refusals logged once each; beyond this many kept, the memory starts over.
constexpr size_t kMaxRefusedRemembered = 1024;
// Peer.Rounds answers at most this many rounds a call.
constexpr int kMaxPeerRounds = 50;

absl::Status Invalid(const std::string& msg) { return absl::InvalidArgumentError(msg); }

// Rows of a round message: at most one per position of the cube, each a
// roster site's with bounded numbers (docs/security.md, "Numbers").
absl::Status CheckRows(const config::Roster& roster, const google::protobuf::RepeatedPtrField<v1::LoadRow>& rows) {
  const int n = roster.Dimension();
  if (rows.size() > (1 << n)) return Invalid(absl::StrCat(rows.size(), " rows for a ", n, "-cube"));
  for (const v1::LoadRow& r : rows) {
    if (r.label() < 0 || r.label() >= (1 << n))
      return Invalid(absl::StrCat("row label ", r.label(), " outside the ", n, "-cube"));
    if (auto st = federation::CheckReportedRow(roster, r.label(), r.load(), r.capacity(), ProfileFromProto(r));
        !st.ok())
      return Invalid(absl::StrCat("row: ", st.message()));
  }
  return absl::OkStatus();
}

}  // namespace

PeerHandlers::PeerHandlers(ServiceDeps deps) : d_(std::move(deps)), env_(d_.env ? d_.env : RealEnv::Get()) {}

absl::Status PeerHandlers::CheckCaller(const std::string& caller, const std::string& claimed, bool in_roster) const {
  if (claimed.empty() || claimed.size() > kMaxIdLength) return Invalid("the calling site's id: 1..200 characters");
  if (in_roster && !d_.live->roster()->FindSite(claimed))
    return absl::PermissionDeniedError(absl::StrCat("site '", claimed, "' is not in the roster"));
  if (caller.empty()) return absl::UnauthenticatedError("peer calls need a client certificate");
  if (caller != claimed)
    return absl::PermissionDeniedError(
        absl::StrCat("certificate names '", caller, "' but the request claims '", claimed, "'"));
  return absl::OkStatus();
}

bool PeerHandlers::EpochOk(int64_t e) const { return federation::EpochInBounds(e, env_->Now()); }

void PeerHandlers::LogOnce(const std::string& line) {
  std::lock_guard<std::mutex> l(refused_mu_);
  if (refused_.size() > kMaxRefusedRemembered) refused_.clear();  // a peer varying its words
  if (refused_.insert(line).second) LogWarning(line);
}

absl::Status PeerHandlers::RequestBalance(const std::string& caller, const v1::RequestBalanceRequest& req,
                                          v1::RequestBalanceReply* reply) {
  if (auto st = CheckCaller(caller, req.site()); !st.ok()) return st;
  if (req.reason().size() > 200) return Invalid("reason over 200 characters");
  if (!req.mode().empty())
    if (auto st = balance::CheckRoundMode(req.mode()); !st.ok()) return st;
  auto id = d_.site->OnRequestBalance(req.site(), req.reason(), req.mode());
  if (!id.ok()) return id.status();
  reply->set_round_id(*id);
  return absl::OkStatus();
}

absl::Status PeerHandlers::StartRound(const std::string& caller, const v1::StartRoundRequest& req,
                                      v1::StartRoundReply* reply) {
  if (auto st = CheckCaller(caller, req.coordinator()); !st.ok()) return st;
  if (req.round_id().empty() || req.round_id().size() > kMaxIdLength) return Invalid("round_id: 1..200 characters");
  if (req.deadline_unix_ms() <= 0) return Invalid("deadline_unix_ms must be > 0");
  const federation::RoundSpec spec = FromProto(req);
  // The same field checks whatever the roster (issue 34, finding 6): they
  // used to wait for the roster versions to agree, so a start on a roster
  // that arrived meanwhile carried an unchecked epoch into the participant.
  if (auto st = federation::CheckRoundStart(spec, env_->Now()); !st.ok()) return st;
  const std::shared_ptr<const config::Roster> roster = d_.live->roster();
  if (spec.roster_version == roster->version) {
    if (!roster->FindSite(d_.config->site.id)) return absl::FailedPreconditionError("this site is not in the roster");
    if (auto st = federation::CheckRoundRoster(*roster, d_.config->site.id, spec); !st.ok()) return st;
  }
  // On another version the roster has just changed at one of the two: not a
  // bad request, and the participant declines it (checking against the
  // roster it decides with, whichever that is by then).
  std::string why_not;
  reply->set_accepted(d_.site->OnStartRound(spec, &why_not));
  reply->set_why_not(why_not);
  return absl::OkStatus();
}

absl::Status PeerHandlers::Exchange(const std::string& caller, const v1::ExchangeRequest& req,
                                    v1::ExchangeReply* reply) {
  const std::shared_ptr<const config::Roster> roster = d_.live->roster();
  const config::RosterEntry* from = roster->FindLabel(req.from_label());
  if (!from) return Invalid(absl::StrCat("from_label ", req.from_label(), " is no roster site"));
  if (auto st = CheckCaller(caller, from->id); !st.ok()) return st;
  if (req.round_id().empty() || req.round_id().size() > kMaxIdLength) return Invalid("round_id: 1..200 characters");
  const int n = roster->Dimension();
  if (!EpochOk(req.epoch())) return Invalid("epoch must be > 0 and at most a day ahead of this site's clock");
  if (req.kind() != v1::ExchangeRequest::PHASE_DONE && req.moved() != 0)
    return Invalid("only PHASE_DONE carries moved");
  if (req.kind() != v1::ExchangeRequest::SCAN && req.has_totals()) return Invalid("only SCAN carries totals");
  if (req.kind() != v1::ExchangeRequest::LOOKUP && (req.has_run() || req.level() != 0 || req.position() != 0))
    return Invalid("only LOOKUP carries a run, a level and a position");
  // Units of a residual list: at most the federation's load.
  const int64_t max_units = config::kMaxReportedLoad << std::min(n, 30);
  switch (req.kind()) {
    case v1::ExchangeRequest::UP:
    case v1::ExchangeRequest::DOWN:
      if (req.dimension() != 0 || req.phase() != 0) return Invalid("UP and DOWN carry no dimension or phase");
      break;
    case v1::ExchangeRequest::EXCHANGE:
    case v1::ExchangeRequest::BARRIER:
      if (req.dimension() < 0 || req.dimension() >= n)
        return Invalid(absl::StrCat("dimension ", req.dimension(), " outside the ", n, "-cube"));
      if (req.phase() != 0) return Invalid("EXCHANGE and BARRIER carry no phase");
      break;
    case v1::ExchangeRequest::PHASE_DONE:
      // mcwa's plan has 2T + k phases (McwaPlanOn: T the tree depth, k the
      // subcube's dimension; docs/design.md §6.5). A tree that detours
      // around faults can be deeper than n (balance::RoundDepth), at most
      // one level per position: 3 x 2^n + 1 bounds every plan. (The mailbox
      // bounds what any one round may hold.)
      if (req.phase() < 1 || req.phase() > 3 * (int64_t{1} << n) + 1)
        return Invalid(absl::StrCat("phase ", req.phase(), " out of range"));
      if (req.dimension() != 0) return Invalid("PHASE_DONE carries no dimension");
      if (req.moved() < 0) return Invalid("moved must be >= 0");
      break;
    case v1::ExchangeRequest::SCAN: {
      if (req.dimension() < 0 || req.dimension() >= n)
        return Invalid(absl::StrCat("dimension ", req.dimension(), " outside the ", n, "-cube"));
      if (req.phase() != 0 || !req.rows().empty()) return Invalid("SCAN carries no phase and no rows");
      if (!req.has_totals()) return Invalid("SCAN carries totals");
      // Totals no subcube of that dimension can have (docs/security.md, "Numbers").
      const balance::ScanTotals totals = FromProto(req.totals());
      if (auto st = balance::CheckScanTotals(totals, req.dimension()); !st.ok())
        return Invalid(absl::StrCat("totals: ", st.message()));
      if (totals.load > static_cast<__int128>(config::kMaxReportedLoad) * totals.live)
        return Invalid("totals: a load above what its sites may hold");
      break;
    }
    case v1::ExchangeRequest::LOOKUP: {
      if (req.dimension() != 0 || req.phase() != 0) return Invalid("LOOKUP carries no dimension or phase");
      const v1::MatchRun& run = req.run();
      if (!req.has_run() || run.level() < 0 || run.level() >= n)
        return Invalid(absl::StrCat("LOOKUP: run level ", run.level(), " outside the ", n, "-cube"));
      if (run.begin() < 0 || run.begin() >= run.end() || run.end() > max_units)
        return Invalid("LOOKUP: a run is [begin, end), 0 <= begin < end <= the federation's load");
      if (req.level() < 0 || req.level() > run.level())
        return Invalid(absl::StrCat("LOOKUP: level ", req.level(), " outside 0..", run.level()));
      if (req.position() < 0 || req.position() >= max_units) return Invalid("LOOKUP: position out of range");
      if (req.rows().size() > 1 || (req.rows().size() == 1 && req.rows(0).label() != req.from_label()))
        return Invalid("LOOKUP carries at most one row, the requester's");
      break;
    }
    default:
      return Invalid("kind must be UP, EXCHANGE, DOWN, BARRIER, PHASE_DONE, SCAN or LOOKUP");
  }
  if (auto st = CheckRows(*roster, req.rows()); !st.ok()) return st;
  if (req.kind() == v1::ExchangeRequest::LOOKUP) {
    const config::RosterEntry* self = roster->FindSite(d_.live->self());
    if (!self) return absl::FailedPreconditionError("this site is not in the roster");
    auto answer = d_.site->OnLookup(FromProto(req));
    if (!answer.ok()) return answer.status();
    ToProto(*answer, self->label, reply->mutable_lookup());
    return absl::OkStatus();
  }
  auto rows = d_.site->OnExchange(FromProto(req));
  if (!rows.ok()) return rows.status();
  ToProto(*rows, reply->mutable_rows());
  return absl::OkStatus();
}

absl::Status PeerHandlers::ReportRound(const std::string& caller, const v1::RoundReport& req,
                                       v1::ReportRoundReply* reply) {
  if (auto st = CheckCaller(caller, req.site()); !st.ok()) return st;
  if (req.round_id().empty() || req.round_id().size() > kMaxIdLength) return Invalid("round_id: 1..200 characters");
  const federation::RoundReport report = FromProto(req);
  if (auto st = federation::CheckReport(*d_.live->roster(), report); !st.ok()) return st;
  return d_.site->OnReport(report);
}

absl::Status PeerHandlers::Transfer(const std::string& caller, const v1::TransferRequest& req,
                                    v1::TransferReply* reply) {
  if (auto st = CheckCaller(caller, req.source_site(), /*in_roster=*/false); !st.ok()) return st;
  if (req.migration_id().empty() || req.migration_id().size() > kMaxIdLength)
    return Invalid("migration_id: 1..200 characters");
  auto r = d_.migrator->HandleTransfer(FromProto(req));
  if (!r.ok()) return r.status();
  ToProto(*r, reply);
  return absl::OkStatus();
}

absl::Status PeerHandlers::Abort(const std::string& caller, const v1::AbortRequest& req, v1::AbortReply* reply) {
  if (auto st = CheckCaller(caller, req.source_site(), /*in_roster=*/false); !st.ok()) return st;
  if (req.migration_id().empty() || req.migration_id().size() > kMaxIdLength)
    return Invalid("migration_id: 1..200 characters");
  auto r = d_.migrator->HandleAbort(req.migration_id(), req.source_site());
  if (!r.ok()) return r.status();
  ToProto(*r, reply);
  return absl::OkStatus();
}

absl::Status PeerHandlers::GetReport(const std::string& caller, const v1::GetReportRequest& req,
                                     v1::RoundReport* reply) {
  if (auto st = CheckCaller(caller, req.site()); !st.ok()) return st;
  if (req.round_id().empty() || req.round_id().size() > kMaxIdLength) return Invalid("round_id: 1..200 characters");
  if (!federation::RoundCoordinator(req.round_id()))
    return Invalid(absl::StrCat("round_id '", req.round_id(), "' is not of the form <site>-<unix ms>-<n>"));
  auto report = d_.site->OnGetReport(req.site(), req.round_id());
  if (!report.ok()) return report.status();
  ToProto(*report, reply);
  return absl::OkStatus();
}

absl::Status PeerHandlers::LeftRound(const std::string& caller, const v1::LeftRoundRequest& req, v1::LeftRoundReply*) {
  if (auto st = CheckCaller(caller, req.site()); !st.ok()) return st;
  if (req.round_id().empty() || req.round_id().size() > kMaxIdLength) return Invalid("round_id: 1..200 characters");
  if (!federation::RoundCoordinator(req.round_id()))
    return Invalid(absl::StrCat("round_id '", req.round_id(), "' is not of the form <site>-<unix ms>-<n>"));
  const int positions = 1 << d_.live->roster()->Dimension();
  if (req.left_size() > positions) return Invalid(absl::StrCat("left: more than the cube's ", positions, " positions"));
  std::map<int, std::string> left;
  for (const v1::LeftRoundRequest::Left& l : req.left()) {
    if (l.label() < 0 || l.label() >= positions)
      return Invalid(absl::StrCat("left: label ", l.label(), " outside the ", positions, "-position cube"));
    if (l.why().size() > kMaxLeftWhyLength)
      return Invalid(absl::StrCat("left: why over ", kMaxLeftWhyLength, " characters"));
    if (!left.emplace(l.label(), l.why()).second) return Invalid(absl::StrCat("left: label ", l.label(), " twice"));
  }
  return d_.site->OnLeftRound(req.site(), req.round_id(), left);
}

absl::Status PeerHandlers::CurrentLoad(const std::string& caller, const v1::CurrentLoadRequest& req,
                                       v1::LoadRow* reply) {
  if (auto st = CheckCaller(caller, req.site()); !st.ok()) return st;
  auto row = d_.site->CurrentRow();
  if (!row.ok()) return row.status();
  ToProto(*row, reply);
  return absl::OkStatus();
}

absl::Status PeerHandlers::Heartbeat(const std::string& caller, const v1::HeartbeatRequest& req,
                                     v1::HeartbeatReply* reply) {
  if (auto st = CheckCaller(caller, req.site()); !st.ok()) return st;
  if (req.roster_digest().size() > 64) return Invalid("roster_digest over 64 bytes");
  if (auto st = CheckProtocol(req.protocol()); !st.ok()) {
    LogOnce(absl::StrCat("heartbeats of ", req.site(), " refused: ", st.message()));
    return st;
  }
  // A newer roster first: the row below is checked against it. One this
  // site cannot take (not the operators', or no roster_key here) is said
  // once in the log; the heartbeat itself still counts.
  if (req.has_roster() && d_.roster)
    if (auto took = d_.roster->Offer(req.roster(), req.site()); !took.ok())
      LogOnce(absl::StrCat("roster from ", req.site(), " not taken: ", took.status().message()));
  // The roster in force may have expired meanwhile: said, at most hourly.
  if (d_.roster) d_.roster->WarnIfExpired();
  const std::shared_ptr<const config::Roster> roster = d_.live->roster();
  reply->set_site(d_.config->site.id);
  reply->set_roster_version(roster->version);
  reply->set_protocol(ProtocolVersion());
  if (d_.roster) {
    reply->set_roster_digest(d_.roster->Digest());
    if (d_.roster->PeerLacks(req.roster_version(), req.roster_digest()))
      if (auto mine = d_.roster->Current()) *reply->mutable_roster() = *std::move(mine);
  }
  const config::RosterEntry* e = roster->FindSite(req.site());
  if (!e) return absl::PermissionDeniedError(absl::StrCat("site '", req.site(), "' is not in the roster"));
  if (e->label != req.label()) {
    // Its roster and this one differ; the newer one travels with the
    // heartbeats, so the two agree within one more.
    if (req.roster_version() != roster->version) return absl::OkStatus();
    return Invalid(absl::StrCat("site ", req.site(), " has label ", e->label, " in the roster, not ", req.label()));
  }
  if (auto st = CheckRowValues(*roster, req); !st.ok()) return st;
  if (auto st = CheckGossip(*roster, req); !st.ok()) return st;
  federation::ProbeAck ack;
  d_.site->OnHeartbeat(FromProto(req), GossipFromProto(req), &ack);
  ToProto(ack, reply);
  return absl::OkStatus();
}

absl::Status PeerHandlers::CheckRowValues(const config::Roster& roster, const v1::HeartbeatRequest& row) const {
  if (row.round_id().size() > kMaxIdLength || row.last_round().size() > kMaxIdLength)
    return Invalid("round_id and last_round: at most 200 characters");
  balance::StartProfile profile{.widest = row.widest()};
  for (const v1::FreeAt& f : row.free()) profile.free.push_back({f.offset_ms(), f.cores()});
  if (auto st = federation::CheckReportedRow(roster, row.label(), row.load(), row.capacity(), profile); !st.ok())
    return Invalid(std::string(st.message()));
  if (row.epoch() != 0 && !EpochOk(row.epoch())) return Invalid("epoch must be >= 0 and at most a day ahead");
  if (row.profile_age_ms() < 0 || row.profile_age_ms() > absl::ToInt64Milliseconds(absl::Hours(24)))
    return Invalid("profile_age_ms must be between 0 and a day");
  if (row.incarnation() != 0 && !EpochOk(row.incarnation()))
    return Invalid("incarnation must be >= 0 and at most a day ahead");
  return absl::OkStatus();
}

absl::Status PeerHandlers::CheckGossip(const config::Roster& roster, const v1::HeartbeatRequest& req) const {
  // News: at most one item per roster site and the cap of one message;
  // rows: at most 64, each checked as the site's own heartbeat is.
  const int most_news = std::max<int>(federation::Membership::kMaxNews, roster.sites.size()) + 1;
  if (req.news_size() > most_news) return Invalid(absl::StrCat("news: at most ", most_news, " items"));
  if (req.state_size() > static_cast<int>(roster.sites.size()))
    return Invalid(absl::StrCat("state: at most one record per roster site (", roster.sites.size(), ")"));
  const federation::Gossip gossip = GossipFromProto(req);
  for (const auto* items : {&gossip.news, &gossip.state})
    for (const federation::MemberNews& n : *items)
      if (auto st = federation::CheckNews(roster, n, env_->Now()); !st.ok()) return Invalid(std::string(st.message()));
  if (req.rows_size() > 64) return Invalid("rows: at most 64");
  for (const v1::RelayedRow& relayed : req.rows()) {
    const v1::HeartbeatRequest& r = relayed.row();
    const config::RosterEntry* e = roster.FindSite(r.site());
    if (!e || e->label != r.label())
      return Invalid(absl::StrCat("relayed row of '", r.site().substr(0, kMaxIdLength), "' at label ", r.label(),
                                  ": no such roster site"));
    // Its row only: what it passed on itself is not passed on again.
    if (r.news_size() > 0 || r.rows_size() > 0 || r.state_size() > 0 || r.digest() != 0 || r.has_roster() ||
        !r.roster_digest().empty())
      return Invalid("relayed row: a row only (no news, rows, digest, state or roster)");
    if (r.protocol().size() > 16) return Invalid("relayed row: protocol at most 16 characters");
    if (auto st = CheckRowValues(roster, r); !st.ok()) return Invalid(absl::StrCat("relayed row: ", st.message()));
    if (relayed.age_ms() < 0 || relayed.age_ms() > absl::ToInt64Milliseconds(absl::Hours(24)))
      return Invalid("relayed row: age_ms must be between 0 and a day");
  }
  return absl::OkStatus();
}

absl::Status PeerHandlers::ProbeFor(const std::string& caller, const v1::ProbeForRequest& req,
                                    v1::ProbeForReply* reply) {
  if (auto st = CheckCaller(caller, req.site()); !st.ok()) return st;
  const std::shared_ptr<const config::Roster> roster = d_.live->roster();
  const config::RosterEntry* t = roster->FindSite(req.target());
  if (!t) return Invalid(absl::StrCat("target '", req.target().substr(0, kMaxIdLength), "' is not in the roster"));
  if (req.target() == req.site() || req.target() == d_.config->site.id)
    return Invalid("target must be neither the caller nor this site");
  const absl::Duration most = d_.live->balancer().heartbeat_interval;
  if (req.timeout_ms() <= 0 || absl::Milliseconds(req.timeout_ms()) > most)
    return Invalid(absl::StrCat("timeout_ms must be above 0 and at most the heartbeat interval (",
                                absl::FormatDuration(most), ")"));
  absl::StatusOr<bool> answered = d_.site->OnProbeFor(req.target(), absl::Milliseconds(req.timeout_ms()));
  if (!answered.ok()) return answered.status();
  reply->set_answered(*answered);
  return absl::OkStatus();
}

absl::Status PeerHandlers::GetRoster(const std::string& caller, const v1::GetRosterRequest& req,
                                     v1::SignedRoster* reply) {
  // Any site the CA certified: one joining, or one a newer roster removed.
  if (auto st = CheckCaller(caller, req.site(), /*in_roster=*/false); !st.ok()) return st;
  if (!d_.roster) return absl::UnavailableError("no roster keeper");
  auto doc = d_.roster->Current();
  if (!doc)
    return absl::NotFoundError(
        "this site has no signed roster yet (only its YAML's, version 0): an operator adds the site with "
        "`hyperfedctl roster add` first");
  *reply = *std::move(doc);
  return absl::OkStatus();
}

absl::Status PeerHandlers::Rounds(const std::string& caller, const v1::PeerRoundsRequest& req, v1::RoundsReply* reply) {
  if (auto st = CheckCaller(caller, req.site()); !st.ok()) return st;
  if (req.limit() < 1 || req.limit() > kMaxPeerRounds)
    return Invalid(absl::StrCat("limit must be 1..", kMaxPeerRounds));
  if (req.round_id().size() > kMaxIdLength) return Invalid("round_id over 200 characters");
  reply->set_site(d_.config->site.id);
  if (!req.round_id().empty()) {
    if (auto r = d_.site->FindRound(req.round_id())) ToProto(*r, reply->add_rounds());
    return absl::OkStatus();
  }
  for (const federation::RoundView& r : d_.site->RecentRounds(req.limit(), req.dry_runs()))
    ToProto(r, reply->add_rounds());
  return absl::OkStatus();
}

absl::Status PeerHandlers::ProposeRoster(const std::string& caller, const v1::ProposeRosterRequest& req,
                                         v1::SetRosterReply* reply,
                                         const std::function<absl::Status(const config::Roster&)>& ceilings) {
  if (auto st = CheckCaller(caller, req.site()); !st.ok()) return st;
  if (!d_.roster) return absl::FailedPreconditionError("this site takes no signed roster");
  if (!d_.site->IsCoordinator())
    return absl::UnavailableError(
        absl::StrCat("the coordinator is changing (this site takes ", d_.site->Coordinator(), " for it): try again"));
  auto version = d_.roster->Replace(req.roster(), req.expected_version(), ceilings);
  if (!version.ok()) return version.status();
  LogInfo(absl::StrCat("roster version ", *version, " set through ", req.site()));
  reply->set_version(*version);
  return absl::OkStatus();
}

}  // namespace hyperfed::server
