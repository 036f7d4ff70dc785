#include "daemon/server/services.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/balance/modes.h"
#include "daemon/common/log.h"
#include "daemon/roster/roster_doc.h"
#include "daemon/server/auth.h"
#include "daemon/server/convert.h"
#include "daemon/server/partition_hook.h"
#include "daemon/server/protocol.h"

namespace hyperfed::server {
namespace {

using migration::kMaxIdLength;  // ids in requests (docs/design.md §8)
constexpr int kMaxSubmit = 100000;
// Admin.Submit's time limit: at most a year (beyond any partition's, and far
// from overflowing the scheduler's milliseconds).
constexpr int64_t kMaxSubmitLimitMs = int64_t{365} * 24 * 3600 * 1000;
// What a site asks another on its operator's behalf (Peer.Rounds,
// Peer.RequestBalance, Peer.ProposeRoster) waits this long for an answer.
constexpr absl::Duration kPeerAskTimeout = absl::Seconds(30);
// Admin.Balance at a site that is not the coordinator follows the round
// through Peer.Rounds this often, and gives up after this long without an
// answer.
constexpr absl::Duration kFollowEvery = absl::Milliseconds(200);
constexpr absl::Duration kFollowGiveUp = absl::Seconds(30);
// Admin.Balance with wait writes a round's progress at most this often, and
// its end at once: a round of a few milliseconds is then one write, not one
// per event, and the coordinator's threads are not woken for each report
// (docs/benchmarks.md, "Round latency").
constexpr absl::Duration kProgressEvery = absl::Milliseconds(50);

grpc::Status Invalid(const std::string& msg) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, msg); }

std::string CommonName(grpc::ServerContext* ctx) {
  auto ac = ctx->auth_context();
  if (!ac || !ac->IsPeerAuthenticated()) return "";
  auto cn = ac->FindPropertyValues("x509_common_name");
  return cn.empty() ? "" : std::string(cn.front().data(), cn.front().size());
}

// The URI subjectAltNames of a verified client certificate.
std::vector<std::string> PeerUris(grpc::ServerContext* ctx) {
  auto ac = ctx->auth_context();
  std::vector<std::string> out;
  if (!ac || !ac->IsPeerAuthenticated()) return out;
  for (const grpc::string_ref& v : ac->FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME))
    out.emplace_back(v.data(), v.size());
  return out;
}

// Another site's jobs, queue and scheduler are its own operator's: an
// operator's credential never leaves the site it was given to, so this site
// does not act there (docs/security.md, "Operators' credentials").
grpc::Status NotForAnotherSite(const std::string& what, const std::string& site, const config::Roster& roster) {
  const config::RosterEntry* e = roster.FindSite(site);
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      absl::StrCat(what, " at ", site, " is asked of ", site, " itself",
                                   e ? absl::StrCat(" (", e->endpoint, ")") : std::string(),
                                   ", with its own admin credential: a site never passes an operator's credential on ",
                                   "(hyperfedctl calls the site named by --site itself)"));
}

// Whether a new roster's ceilings are above what live sites report (a
// ceiling below would make every peer refuse that site's rows,
// docs/security.md, "Numbers"): checked where an operator's roster enters,
// against the capacities this site has heard; not a rule of the roster,
// which a peer's copy could not be checked against.
std::function<absl::Status(const config::Roster&)> CeilingsCheck(const std::vector<federation::PeerInfo>& view) {
  return [view](const config::Roster& next) -> absl::Status {
    for (const federation::PeerInfo& p : view) {
      const config::RosterEntry* e = next.FindSite(p.site);
      if (e && p.up && p.capacity > e->max_capacity)
        return absl::InvalidArgumentError(absl::StrCat("site ", p.site, " reports capacity ", p.capacity,
                                                       ", above the max_capacity ", e->max_capacity,
                                                       " the new roster gives it"));
    }
    return absl::OkStatus();
  };
}

}  // namespace

// ------------------------------------------------------------------ Peer

grpc::Status PeerService::Admit(grpc::ServerContext* ctx, const std::string& claimed, std::string* caller) const {
  if (d_.peer_calls)
    if (auto st = d_.peer_calls->Admitted(ctx); !st.ok()) return st;  // daemon/server/peer_limits.h
  if (PartitionedFrom(claimed))
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no route from " + claimed + " (partition test hook)");
  *caller = d_.config->security.insecure ? claimed : CommonName(ctx);
  return grpc::Status::OK;
}

grpc::Status PeerService::RequestBalance(grpc::ServerContext* ctx, const v1::RequestBalanceRequest* req,
                                         v1::RequestBalanceReply* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->site(), &caller); !st.ok()) return st;
  return ToGrpc(handlers_.RequestBalance(caller, *req, reply));
}

grpc::Status PeerService::StartRound(grpc::ServerContext* ctx, const v1::StartRoundRequest* req,
                                     v1::StartRoundReply* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->coordinator(), &caller); !st.ok()) return st;
  return ToGrpc(handlers_.StartRound(caller, *req, reply));
}

grpc::Status PeerService::Exchange(grpc::ServerContext* ctx, const v1::ExchangeRequest* req, v1::ExchangeReply* reply) {
  // The sender is named by its roster label; a label no site has, the
  // handler refuses.
  const std::shared_ptr<const config::Roster> roster = d_.live->roster();
  const config::RosterEntry* from = roster->FindLabel(req->from_label());
  std::string caller;
  if (auto st = Admit(ctx, from ? from->id : "", &caller); !st.ok()) return st;
  return ToGrpc(handlers_.Exchange(caller, *req, reply));
}

grpc::Status PeerService::ReportRound(grpc::ServerContext* ctx, const v1::RoundReport* req,
                                      v1::ReportRoundReply* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->site(), &caller); !st.ok()) return st;
  return ToGrpc(handlers_.ReportRound(caller, *req, reply));
}

grpc::Status PeerService::GetReport(grpc::ServerContext* ctx, const v1::GetReportRequest* req, v1::RoundReport* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->site(), &caller); !st.ok()) return st;
  return ToGrpc(handlers_.GetReport(caller, *req, reply));
}

grpc::Status PeerService::LeftRound(grpc::ServerContext* ctx, const v1::LeftRoundRequest* req,
                                    v1::LeftRoundReply* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->site(), &caller); !st.ok()) return st;
  return ToGrpc(handlers_.LeftRound(caller, *req, reply));
}

grpc::Status PeerService::CurrentLoad(grpc::ServerContext* ctx, const v1::CurrentLoadRequest* req, v1::LoadRow* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->site(), &caller); !st.ok()) return st;
  return ToGrpc(handlers_.CurrentLoad(caller, *req, reply));
}

grpc::Status PeerService::Transfer(grpc::ServerContext* ctx, const v1::TransferRequest* req, v1::TransferReply* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->source_site(), &caller); !st.ok()) return st;
  return ToGrpc(handlers_.Transfer(caller, *req, reply));
}

grpc::Status PeerService::Abort(grpc::ServerContext* ctx, const v1::AbortRequest* req, v1::AbortReply* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->source_site(), &caller); !st.ok()) return st;
  return ToGrpc(handlers_.Abort(caller, *req, reply));
}

grpc::Status PeerService::Heartbeat(grpc::ServerContext* ctx, const v1::HeartbeatRequest* req,
                                    v1::HeartbeatReply* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->site(), &caller); !st.ok()) return st;
  grpc::Status st = ToGrpc(handlers_.Heartbeat(caller, *req, reply));
  // Its probe came: this site's own channel to it connects again at once,
  // not after a backoff left from before it listened (a restart).
  if (st.ok() && d_.peers) d_.peers->HeardFrom(req->site());
  return st;
}

grpc::Status PeerService::ProbeFor(grpc::ServerContext* ctx, const v1::ProbeForRequest* req, v1::ProbeForReply* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->site(), &caller); !st.ok()) return st;
  return ToGrpc(handlers_.ProbeFor(caller, *req, reply));
}

grpc::Status PeerService::GetRoster(grpc::ServerContext* ctx, const v1::GetRosterRequest* req,
                                    v1::SignedRoster* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->site(), &caller); !st.ok()) return st;
  return ToGrpc(handlers_.GetRoster(caller, *req, reply));
}

grpc::Status PeerService::Rounds(grpc::ServerContext* ctx, const v1::PeerRoundsRequest* req, v1::RoundsReply* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->site(), &caller); !st.ok()) return st;
  return ToGrpc(handlers_.Rounds(caller, *req, reply));
}

grpc::Status PeerService::ProposeRoster(grpc::ServerContext* ctx, const v1::ProposeRosterRequest* req,
                                        v1::SetRosterReply* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->site(), &caller); !st.ok()) return st;
  return ToGrpc(handlers_.ProposeRoster(caller, *req, reply, CeilingsCheck(d_.site->View())));
}

// ------------------------------------------------------------------ Admin

grpc::Status AdminService::CheckAdmin(grpc::ServerContext* ctx) const {
  const std::string cn = d_.config->security.insecure ? std::string() : CommonName(ctx);
  // Failed calls are limited by the caller's address, so that no one (the
  // TLS handshake lets a client without a certificate in) guesses tokens at
  // line rate. The web view calls in-process for its browsers: their
  // address is the one it passes on.
  std::string address = PeerAddress(ctx->peer());
  if (absl::StartsWith(ctx->peer(), "inproc")) {
    const auto& md = ctx->client_metadata();
    auto it = md.find(kWebClientHeader);
    address = it == md.end() ? "web" : absl::StrCat("web ", std::string(it->second.data(), it->second.size()));
  }
  // An admin certificate is checked by TLS itself: nothing to guess there.
  const bool admin_certificate = !cn.empty() && IsAdminCertificate(cn, PeerUris(ctx), *d_.live->roster());
  const absl::Time now = absl::Now();
  if (!admin_certificate && !auth_failures_.Allowed(address, now))
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("too many failed admin calls from ", address, ": wait a minute"));
  grpc::Status st = Authenticate(ctx, cn, admin_certificate);
  if (!st.ok() && !admin_certificate) auth_failures_.Failed(address, now);
  return st;
}

grpc::Status AdminService::Authenticate(grpc::ServerContext* ctx, const std::string& cn, bool admin_certificate) const {
  if (!d_.admin_token.empty()) {
    const auto& md = ctx->client_metadata();
    auto it = md.find("authorization");
    if (it != md.end()) {
      if (BearerTokenMatches(std::string_view(it->second.data(), it->second.size()), d_.admin_token))
        return grpc::Status::OK;
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong admin token");
    }
  }
  if (!d_.config->security.insecure) {
    if (admin_certificate) return grpc::Status::OK;
    if (!cn.empty())
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          absl::StrCat("the certificate of '", cn, "' carries no admin role; admin calls need this ",
                                       "site's admin token or an admin certificate"));
  }
  if (d_.config->security.insecure && d_.admin_token.empty()) return grpc::Status::OK;  // loopback demo
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "admin calls need a bearer token (--token) or an admin client certificate");
}

grpc::Status AdminService::Status(grpc::ServerContext* ctx, const v1::StatusRequest* req, v1::StatusReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  const std::vector<federation::PeerInfo> view = d_.site->View();
  auto last = d_.site->LastRound();
  reply->set_site(d_.config->site.id);
  reply->set_algorithm(std::string(d_.live->balancer().algorithm->name()));
  reply->set_insecure(d_.config->security.insecure);
  if (last) {
    reply->set_last_round(last->id);
    reply->set_last_round_summary(last->events.empty() ? "" : last->events.back());
    reply->set_last_round_mode(last->mode);
  }
  const absl::Time now = absl::Now();
  for (const federation::PeerInfo& p : view)
    ToStatusProto(p, now, last ? last->id : "", ProtocolVersion(), reply->add_sites());
  return grpc::Status::OK;
}

grpc::Status AdminService::Topology(grpc::ServerContext* ctx, const v1::TopologyRequest* req,
                                    v1::TopologyReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  reply->set_dimension(d_.site->membership().dimension());
  for (const federation::PeerInfo& p : d_.site->membership().View()) {
    ToProto(p, reply->add_sites());
  }
  const federation::NextRound next = d_.site->Next();
  for (int f : next.faults) reply->add_fault_labels(f);
  reply->set_mode(next.mode);
  for (const balance::BalancingSubcube& bs : next.subcubes) ToProto(bs, reply->add_subcubes());
  return grpc::Status::OK;
}

grpc::Status AdminService::Jobs(grpc::ServerContext* ctx, const v1::JobsRequest* req, v1::JobsReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (IsOther(req->site())) return NotForAnotherSite("listing jobs", req->site(), *d_.live->roster());
  auto jobs = d_.adapter->ListJobs();
  if (!jobs.ok()) return ToGrpc(jobs.status());
  for (const scheduler::Job& j : *jobs) ToProto(j, d_.config->site.id, reply->add_jobs());
  return grpc::Status::OK;
}

grpc::Status AdminService::Migrations(grpc::ServerContext* ctx, const v1::MigrationsRequest* req,
                                      v1::MigrationsReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (req->limit() < 0 || req->limit() > 100000) return Invalid("limit must be 0..100000");
  auto list = d_.migrator->List(req->limit() == 0 ? 50 : req->limit());
  if (!list.ok()) return ToGrpc(list.status());
  for (const migration::MigrationRecord& r : *list) ToProto(r, reply->add_migrations());
  return grpc::Status::OK;
}

grpc::Status AdminService::Balance(grpc::ServerContext* ctx, const v1::BalanceRequest* req,
                                   grpc::ServerWriter<v1::RoundEvent>* writer) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (!req->mode().empty())
    if (auto st = balance::CheckRoundMode(req->mode()); !st.ok()) return ToGrpc(st);
  if (!req->dry_run() && !d_.site->IsCoordinator()) return FollowRemoteRound(ctx, *req, writer);
  auto id = d_.site->Balance(req->dry_run(), "operator", req->mode());
  if (!id.ok()) return ToGrpc(id.status());
  int seen = 0;
  // Without wait the first event goes at once; with it, the round's end.
  absl::Time quiet_until = req->wait() ? absl::Now() + kProgressEvery : absl::InfinitePast();
  while (!ctx->IsCancelled()) {
    const absl::Duration quiet = quiet_until - absl::Now();
    auto r = quiet > absl::ZeroDuration() ? d_.site->WaitRoundDone(*id, std::min(quiet, absl::Seconds(1)))
                                          : d_.site->WaitRound(*id, seen, absl::Seconds(1));
    if (!r) return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("round ", *id, " is gone"));
    if (!r->done && (static_cast<int>(r->events.size()) <= seen || absl::Now() < quiet_until)) continue;
    v1::Round round;
    ToProto(*r, &round);
    v1::RoundEvent e;
    ToRoundEvent(round, seen, &e);
    seen = round.events_size();
    writer->Write(e);
    if (r->done || !req->wait()) break;
    quiet_until = absl::Now() + kProgressEvery;
  }
  return grpc::Status::OK;
}

// Rounds are coordinated by the lowest live label: this site asks it for a
// round with its own certificate (Peer.RequestBalance) and follows the round
// through Peer.Rounds; the operator's credential stays here.
grpc::Status AdminService::FollowRemoteRound(grpc::ServerContext* ctx, const v1::BalanceRequest& req,
                                             grpc::ServerWriter<v1::RoundEvent>* writer) {
  const std::string coord = d_.site->Coordinator();
  if (coord.empty()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no coordinator");
  auto id = d_.peers->RequestOperatorRound(coord, req.mode(), kPeerAskTimeout);
  if (!id.ok()) return ToGrpc(id.status());
  v1::PeerRoundsRequest ask;
  ask.set_limit(1);
  ask.set_round_id(*id);
  int seen = 0;
  absl::Time last_answer = absl::Now();
  const absl::Time give_up = absl::Now() + absl::Minutes(30);
  while (!ctx->IsCancelled() && absl::Now() < give_up) {
    auto got = d_.peers->Rounds(coord, ask, kPeerAskTimeout);
    if (got.ok() && got->rounds_size() == 0)
      return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("round ", *id, " is gone at ", coord));
    if (!got.ok()) {
      if (absl::Now() - last_answer > kFollowGiveUp)
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            absl::StrCat("no word of round ", *id, " from ", coord, ": ", got.status().message()));
    } else {
      last_answer = absl::Now();
      const v1::Round& r = got->rounds(0);
      if (r.events_size() > seen || r.done()) {
        v1::RoundEvent e;
        ToRoundEvent(r, seen, &e);
        seen = r.events_size();
        writer->Write(e);
        if (r.done() || !req.wait()) return grpc::Status::OK;
      }
    }
    absl::SleepFor(kFollowEvery);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::Drain(grpc::ServerContext* ctx, const v1::DrainRequest* req, v1::DrainReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (req->site().empty()) return Invalid("drain needs a site");
  if (!d_.live->roster()->FindSite(req->site()))
    return Invalid(absl::StrCat("site '", req->site(), "' is not in the roster"));
  if (IsOther(req->site())) return NotForAnotherSite("draining", req->site(), *d_.live->roster());
  if (!req->drain())
    if (auto self = d_.live->SelfEntry(); self && self->drained)
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          absl::StrCat(d_.config->site.id, " is drained by roster version ", d_.live->roster()->version,
                                       " (the first step of `hyperfedctl roster remove`); a roster without the drain "
                                       "undoes it"));
  d_.site->SetDrained(req->drain());
  return grpc::Status::OK;
}

grpc::Status AdminService::Submit(grpc::ServerContext* ctx, const v1::SubmitRequest* req, v1::SubmitReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (req->count() < 1 || req->count() > kMaxSubmit) return Invalid(absl::StrCat("count must be 1..", kMaxSubmit));
  if (req->duration_ms() < 0) return Invalid("duration must be >= 0");
  // A time limit below the duration would be a job its scheduler kills (Slurm)
  // or runs past its limit (the sim kills nothing): neither is what was
  // asked, so it is refused (docs/hyperfedctl.md, "Commands").
  if (req->time_limit_ms() < 0 || req->time_limit_ms() > kMaxSubmitLimitMs)
    return Invalid(absl::StrCat("time limit ", req->time_limit_ms(), " ms must be 0 (none) up to a year"));
  if (req->time_limit_ms() > 0 && req->time_limit_ms() < req->duration_ms())
    return Invalid(absl::StrCat("time limit ", req->time_limit_ms(), " ms is below the duration ", req->duration_ms(),
                                " ms: the job would outlive its limit"));
  if (req->cores() < 0) return Invalid("cores must be >= 0");
  if (req->name().size() > 200) return Invalid("name over 200 characters");
  if (!req->site().empty() && !d_.live->roster()->FindSite(req->site()))
    return Invalid(absl::StrCat("site '", req->site(), "' is not in the roster"));
  if (IsOther(req->site())) return NotForAnotherSite("submitting", req->site(), *d_.live->roster());
  federation::SubmitOrder order;
  order.count = req->count();
  if (!req->name().empty()) order.name = req->name();
  if (req->cores() > 0) order.cores = req->cores();
  order.duration_ms = req->duration_ms();
  order.time_limit_s = req->time_limit_ms() / 1000 + (req->time_limit_ms() % 1000 != 0);  // rounded up
  const federation::SubmitResult made = d_.site->Submit(order);
  for (const federation::SubmittedJob& j : made.jobs) {
    reply->add_ids(j.id);
    reply->add_keys(j.key);
  }
  if (made.status.ok()) return grpc::Status::OK;
  if (made.jobs.empty()) return ToGrpc(made.status);
  // Part of the order was taken: the jobs made stay, and the failure says
  // how many in words and, in its details, which (a SubmitReply; clients
  // that do not read details still see the words).
  v1::SubmitReply taken;
  taken.Swap(reply);
  const grpc::Status st = ToGrpc(made.status);
  return grpc::Status(st.error_code(),
                      absl::StrCat(st.error_message(), ": took ", made.jobs.size(), " of ", order.count, " jobs"),
                      taken.SerializeAsString());
}

grpc::Status AdminService::ExplainJob(grpc::ServerContext* ctx, const v1::ExplainJobRequest* req,
                                      v1::ExplainJobReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (req->job().empty() || req->job().size() > kMaxIdLength) return Invalid("job: a key or an id, 1..200 characters");
  auto out = d_.site->ExplainJob(req->job());
  if (!out.ok()) return ToGrpc(out.status());
  reply->set_explanation(absl::StrJoin(*out, "\n"));
  return grpc::Status::OK;
}

grpc::Status AdminService::ForceRelease(grpc::ServerContext* ctx, const v1::ForceReleaseRequest* req,
                                        v1::ForceReleaseReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (req->migration_id().empty() || req->migration_id().size() > kMaxIdLength)
    return Invalid("migration_id: 1..200 characters");
  if (auto st = d_.migrator->ForceRelease(req->migration_id()); !st.ok()) return ToGrpc(st);
  reply->set_warning(
      "released without an answer from the destination: if it had already submitted these jobs, they may now run "
      "at both sites; check the destination's jobs for the keys listed by 'hyperfedctl migrations'");
  LogWarning(absl::StrCat("operator forced the release of migration ", req->migration_id()));
  return grpc::Status::OK;
}

grpc::Status AdminService::Rounds(grpc::ServerContext* ctx, const v1::RoundsRequest* req, v1::RoundsReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (req->limit() < 0 || req->limit() > 1000) return Invalid("limit must be 0..1000");
  if (!req->site().empty() && !d_.live->roster()->FindSite(req->site()))
    return Invalid(absl::StrCat("site '", req->site(), "' is not in the roster"));
  // Rounds are recorded where they are coordinated: "" asks the coordinator.
  // Another site's are asked of it with this site's certificate (Peer.Rounds).
  const std::string site = req->site().empty() ? d_.site->Coordinator() : req->site();
  if (IsOther(site)) {
    v1::PeerRoundsRequest ask;
    ask.set_limit(req->limit() == 0 || req->limit() > 50 ? 50 : req->limit());
    ask.set_dry_runs(req->dry_runs());
    auto got = d_.peers->Rounds(site, ask, kPeerAskTimeout);
    if (!got.ok()) return ToGrpc(got.status());
    *reply = *std::move(got);
    return grpc::Status::OK;
  }
  reply->set_site(d_.config->site.id);
  for (const federation::RoundView& r : d_.site->RecentRounds(req->limit(), req->dry_runs()))
    ToProto(r, reply->add_rounds());
  return grpc::Status::OK;
}

grpc::Status AdminService::GetRoster(grpc::ServerContext* ctx, const v1::AdminGetRosterRequest* req,
                                     v1::AdminGetRosterReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  // The roster an operator edits is the decider's (Site::RosterDecider):
  // this site first takes its signed roster if it is newer (Peer.GetRoster;
  // the operators' signature is checked as for any roster a peer sends),
  // then answers its own.
  if (const std::string coord = d_.site->RosterDecider(); !coord.empty() && d_.roster)
    if (const config::RosterEntry* e = d_.live->roster()->FindSite(coord))
      if (auto took = d_.peers->FetchRoster({coord, e->endpoint}); !took.ok())
        LogWarning(absl::StrCat("roster from the coordinator ", coord, " not read: ", took.status().message()));
  reply->set_site(d_.config->site.id);
  roster::ToProto(*d_.live->roster(), reply->mutable_roster());
  reply->set_is_signed(d_.roster && d_.roster->Current().has_value());
  return grpc::Status::OK;
}

grpc::Status AdminService::SetRoster(grpc::ServerContext* ctx, const v1::SetRosterRequest* req,
                                     v1::SetRosterReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (!d_.roster) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "this site takes no signed roster");
  // Decided where Site::RosterDecider says (Peer.ProposeRoster there).
  if (const std::string coord = d_.site->RosterDecider(); !coord.empty()) {
    auto version = d_.peers->ProposeRoster(coord, req->roster(), req->expected_version(), kPeerAskTimeout);
    if (!version.ok()) return ToGrpc(version.status());
    reply->set_version(*version);
    return grpc::Status::OK;
  }
  auto version = d_.roster->Replace(req->roster(), req->expected_version(), CeilingsCheck(d_.site->View()));
  if (!version.ok()) return ToGrpc(version.status());
  reply->set_version(*version);
  return grpc::Status::OK;
}

grpc::Status AdminService::Waits(grpc::ServerContext* ctx, const v1::WaitsRequest* req, v1::WaitsReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  reply->set_site(d_.config->site.id);
  const federation::WaitSummary w = d_.site->waits();
  for (const federation::WaitHour& h : w.hours) {
    v1::WaitHour* o = reply->add_hours();
    o->set_start_ms(absl::ToUnixMillis(h.start));
    o->set_started(h.started);
    o->set_p50_ms(h.p50_ms);
    o->set_p95_ms(h.p95_ms);
  }
  reply->set_started(w.started);
  reply->set_p50_ms(w.p50_ms);
  reply->set_p95_ms(w.p95_ms);
  const federation::PlacementCounters c = d_.site->placement_counters();
  v1::PlacementRecord* p = reply->mutable_placement();
  p->set_enabled(d_.live->balancer().placement);
  p->set_passes(c.passes);
  p->set_placed(c.placed);
  p->set_kept(c.kept);
  p->set_failed(c.failed);
  for (const auto& [site, jobs] : c.to) {
    v1::PlacedAt* a = p->add_to();
    a->set_site(site);
    a->set_jobs(jobs);
  }
  return grpc::Status::OK;
}

// ------------------------------------------------------------------ Health

grpc::Status HealthService::Check(grpc::ServerContext*, const ::grpc::health::v1::HealthCheckRequest* req,
                                  ::grpc::health::v1::HealthCheckResponse* reply) {
  const std::string& name = req->service();
  if (!name.empty() && name != v1::Peer::service_full_name() && name != v1::Admin::service_full_name())
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("no service named '", absl::CEscape(name.substr(0, 100)), "' here"));
  reply->set_status(serving_ ? ::grpc::health::v1::HealthCheckResponse::SERVING
                             : ::grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  return grpc::Status::OK;
}

}  // namespace hyperfed::server
