#include "daemon/server/services.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/balance/modes.h"
#include "daemon/common/log.h"
#include "daemon/server/auth.h"
#include "daemon/server/convert.h"
#include "daemon/roster/roster_doc.h"
#include "daemon/server/partition_hook.h"
#include "daemon/server/protocol.h"

namespace hyperfed::server {
namespace {

using migration::kMaxIdLength;  // ids in requests (docs/design.md §8)
constexpr int kMaxSubmit = 100000;
constexpr absl::Duration kForwardTimeout = absl::Seconds(30);
constexpr char kForwardedHeader[] = "hyperfed-forwarded";

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

void FillEvent(const federation::RoundView& r, size_t from, v1::RoundEvent* e) {
  e->set_round_id(r.id);
  std::vector<std::string> lines(r.events.begin() + std::min(from, r.events.size()), r.events.end());
  e->set_message(absl::StrJoin(lines, "\n"));
  if (!r.done) return;
  e->set_final(true);
  ToProto(r.transfers, e->mutable_transfers());
  ToProto(r.before, e->mutable_before());
  ToProto(r.after, e->mutable_after());
  e->set_max_share_error_before(r.share_error_before);
  e->set_max_share_error_after(r.share_error_after);
  e->set_moved(r.moved);
  e->set_messages(r.messages);
  e->set_steps(r.steps);
  e->set_ok(r.ok);
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
  return ToGrpc(handlers_.Heartbeat(caller, *req, reply));
}

grpc::Status PeerService::GetRoster(grpc::ServerContext* ctx, const v1::GetRosterRequest* req,
                                    v1::SignedRoster* reply) {
  std::string caller;
  if (auto st = Admit(ctx, req->site(), &caller); !st.ok()) return st;
  return ToGrpc(handlers_.GetRoster(caller, *req, reply));
}

// ------------------------------------------------------------------ Admin

grpc::Status AdminService::CheckAdmin(grpc::ServerContext* ctx) const {
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
    const std::string cn = CommonName(ctx);
    if (!cn.empty() && IsAdminCertificate(cn, PeerUris(ctx), *d_.live->roster())) return grpc::Status::OK;
    if (!cn.empty())
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          absl::StrCat("the certificate of '", cn, "' carries no admin role; admin calls need the ",
                                       "admin token or an admin certificate (a site forwarding an admin call ",
                                       "needs admin_token_file)"));
  }
  if (d_.config->security.insecure && d_.admin_token.empty()) return grpc::Status::OK;  // loopback demo
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "admin calls need a bearer token (--token) or an admin client certificate");
}

namespace {

// Forwards a unary admin call to another site with this site's credentials
// (and the admin token, when one is set).
template <typename Req, typename Reply, typename Fn>
grpc::Status Forward(GrpcPeers* peers, const std::string& site, const std::string& token, const Req& req, Reply* reply,
                     Fn call) {
  v1::Admin::Stub* stub = peers->AdminStub(site);
  if (!stub) return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("site ", site, " is not in the roster"));
  auto ctx = ContextWithDeadline(kForwardTimeout);
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  ctx->AddMetadata(kForwardedHeader, "1");
  return call(stub, ctx.get(), req, reply);
}

// A call another site forwarded here: it is not forwarded again, so that two
// sites that each take the other for the coordinator (their rosters or views
// differ for a moment) cannot pass it back and forth.
bool Forwarded(grpc::ServerContext* ctx) { return ctx->client_metadata().count(kForwardedHeader) > 0; }

grpc::Status CoordinatorMoved(const std::string& coord) {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      absl::StrCat("the coordinator is changing (this site takes ", coord, " for it): try again"));
}

}  // namespace

grpc::Status AdminService::Status(grpc::ServerContext* ctx, const v1::StatusRequest* req, v1::StatusReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  const std::vector<federation::PeerInfo> view = d_.site->View();
  auto last = d_.site->LastRound();
  reply->set_site(d_.config->site.id);
  reply->set_algorithm(d_.live->balancer().algorithm);
  reply->set_insecure(d_.config->security.insecure);
  if (last) {
    reply->set_last_round(last->id);
    reply->set_last_round_summary(last->events.empty() ? "" : last->events.back());
    reply->set_last_round_mode(last->mode);
  }
  const absl::Time now = absl::Now();
  for (const federation::PeerInfo& p : view) {
    v1::SiteStatus* s = reply->add_sites();
    s->set_site(p.site);
    s->set_label(p.label);
    s->set_endpoint(p.endpoint);
    s->set_state(p.self ? (p.drained ? "self,drained" : "self") : !p.up ? "down" : p.drained ? "drained" : "up");
    s->set_load(p.load);
    s->set_capacity(p.capacity);
    s->set_load_per_capacity(p.capacity > 0 ? static_cast<double>(p.load) / p.capacity : 0);
    s->set_last_round(p.self && last ? last->id : p.last_round);
    s->set_age_ms(p.last_seen == absl::InfinitePast() ? -1 : absl::ToInt64Milliseconds(now - p.last_seen));
    s->set_roster_version(p.roster_version);
    s->set_protocol(p.self ? ProtocolVersion() : p.protocol);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::Topology(grpc::ServerContext* ctx, const v1::TopologyRequest* req,
                                    v1::TopologyReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  reply->set_dimension(d_.site->membership().dimension());
  for (const federation::PeerInfo& p : d_.site->membership().View()) {
    v1::SiteStatus* s = reply->add_sites();
    s->set_site(p.site);
    s->set_label(p.label);
    s->set_endpoint(p.endpoint);
    s->set_state(p.self ? "self" : p.up ? (p.drained ? "drained" : "up") : "down");
    s->set_load(p.load);
    s->set_capacity(p.capacity);
  }
  const federation::NextRound next = d_.site->Next();
  for (int f : next.faults) reply->add_fault_labels(f);
  reply->set_mode(next.mode);
  for (const balance::BalancingSubcube& bs : next.subcubes) {
    v1::BalancingSubcube* b = reply->add_subcubes();
    b->set_dim(bs.dim);
    b->set_base(bs.base);
    b->set_mask(bs.mask);
    b->set_tree_depth(bs.tree_depth);
    for (size_t u = 0; u < bs.parent.size(); ++u) {
      if (bs.parent[u] < 0) continue;
      v1::TreeEdge* e = b->add_edges();
      e->set_child(static_cast<int>(u));
      e->set_parent(bs.parent[u]);
    }
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::Jobs(grpc::ServerContext* ctx, const v1::JobsRequest* req, v1::JobsReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (IsOther(req->site())) {
    v1::JobsRequest fwd;
    fwd.set_site(req->site());
    return Forward(d_.peers, req->site(), d_.admin_token, fwd, reply,
                   [](v1::Admin::Stub* s, grpc::ClientContext* c, const v1::JobsRequest& r, v1::JobsReply* o) {
                     return s->Jobs(c, r, o);
                   });
  }
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
  for (const migration::MigrationRecord& r : *list) {
    v1::Migration* m = reply->add_migrations();
    m->set_id(r.id);
    m->set_direction(migration::DirectionName(r.direction));
    m->set_peer(r.peer);
    m->set_state(migration::MigrationStateName(r.state));
    m->set_jobs(static_cast<int64_t>(r.jobs.size()));
    m->set_round_id(r.round_id);
    m->set_updated_ms(absl::ToUnixMillis(r.updated));
    for (const auto& j : r.jobs) m->add_job_keys(j.key);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::Balance(grpc::ServerContext* ctx, const v1::BalanceRequest* req,
                                   grpc::ServerWriter<v1::RoundEvent>* writer) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (!req->mode().empty())
    if (auto st = balance::CheckRoundMode(req->mode()); !st.ok()) return ToGrpc(st);
  if (!req->dry_run() && !d_.site->IsCoordinator()) {
    // Rounds are coordinated by the lowest live label: relay its stream.
    const std::string coord = d_.site->Coordinator();
    v1::Admin::Stub* stub = d_.peers->AdminStub(coord);
    if (!stub) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no coordinator");
    grpc::ClientContext fwd;
    fwd.set_deadline(absl::ToChronoTime(absl::Now() + absl::Minutes(30)));
    if (!d_.admin_token.empty()) fwd.AddMetadata("authorization", "Bearer " + d_.admin_token);
    auto reader = stub->Balance(&fwd, *req);
    v1::RoundEvent e;
    while (reader->Read(&e)) {
      if (ctx->IsCancelled()) {
        fwd.TryCancel();
        break;
      }
      writer->Write(e);
    }
    return reader->Finish();
  }
  if (!req->mode().empty())
    if (auto st = balance::CheckRoundMode(req->mode()); !st.ok()) return ToGrpc(st);
  auto id = d_.site->Balance(req->dry_run(), "operator", req->mode());
  if (!id.ok()) return ToGrpc(id.status());
  size_t seen = 0;
  while (!ctx->IsCancelled()) {
    auto r = d_.site->WaitRound(*id, seen, absl::Seconds(1));
    if (!r) return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("round ", *id, " is gone"));
    if (r->events.size() > seen || r->done) {
      v1::RoundEvent e;
      FillEvent(*r, seen, &e);
      seen = r->events.size();
      writer->Write(e);
      if (r->done || !req->wait()) break;
    }
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::Drain(grpc::ServerContext* ctx, const v1::DrainRequest* req, v1::DrainReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (req->site().empty()) return Invalid("drain needs a site");
  if (!d_.live->roster()->FindSite(req->site()))
    return Invalid(absl::StrCat("site '", req->site(), "' is not in the roster"));
  if (IsOther(req->site()))
    return Forward(d_.peers, req->site(), d_.admin_token, *req, reply,
                   [](v1::Admin::Stub* s, grpc::ClientContext* c, const v1::DrainRequest& r, v1::DrainReply* o) {
                     return s->Drain(c, r, o);
                   });
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
  if (req->cores() < 0) return Invalid("cores must be >= 0");
  if (req->name().size() > 200) return Invalid("name over 200 characters");
  if (!req->site().empty() && !d_.live->roster()->FindSite(req->site()))
    return Invalid(absl::StrCat("site '", req->site(), "' is not in the roster"));
  if (IsOther(req->site()))
    return Forward(d_.peers, req->site(), d_.admin_token, *req, reply,
                   [](v1::Admin::Stub* s, grpc::ClientContext* c, const v1::SubmitRequest& r, v1::SubmitReply* o) {
                     return s->Submit(c, r, o);
                   });
  federation::SubmitOrder order;
  order.count = req->count();
  if (!req->name().empty()) order.name = req->name();
  if (req->cores() > 0) order.cores = req->cores();
  order.duration_ms = req->duration_ms();
  auto jobs = d_.site->Submit(order);
  if (!jobs.ok()) return ToGrpc(jobs.status());
  for (const federation::SubmittedJob& j : *jobs) {
    reply->add_ids(j.id);
    reply->add_keys(j.key);
  }
  return grpc::Status::OK;
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
  const std::string site = req->site().empty() ? d_.site->Coordinator() : req->site();
  if (IsOther(site)) {
    v1::RoundsRequest fwd = *req;
    fwd.set_site(site);
    return Forward(d_.peers, site, d_.admin_token, fwd, reply,
                   [](v1::Admin::Stub* s, grpc::ClientContext* c, const v1::RoundsRequest& r, v1::RoundsReply* o) {
                     return s->Rounds(c, r, o);
                   });
  }
  reply->set_site(d_.config->site.id);
  for (const federation::RoundView& r : d_.site->RecentRounds(req->limit(), req->dry_runs())) {
    v1::Round* o = reply->add_rounds();
    o->set_round_id(r.id);
    o->set_mode(r.mode);
    o->set_mode_name(r.spec.mode);
    o->set_dry_run(r.dry_run);
    o->set_done(r.done);
    o->set_ok(r.ok);
    o->set_started_ms(absl::ToUnixMillis(r.started));
    o->set_finished_ms(r.done ? absl::ToUnixMillis(r.finished) : 0);
    o->set_steps(r.steps);
    o->set_moved(r.moved);
    o->set_messages(r.messages);
    o->set_max_share_error_before(r.share_error_before);
    o->set_max_share_error_after(r.share_error_after);
    ToProto(r.transfers, o->mutable_transfers());
    for (const std::string& e : r.events) o->add_events(e);
    ToProto(r.before, o->mutable_before());
    ToProto(r.after, o->mutable_after());
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::GetRoster(grpc::ServerContext* ctx, const v1::AdminGetRosterRequest* req,
                                     v1::AdminGetRosterReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (const std::string coord = d_.site->Coordinator(); IsOther(coord)) {
    if (Forwarded(ctx)) return CoordinatorMoved(coord);
    return Forward(d_.peers, coord, d_.admin_token, *req, reply,
                   [](v1::Admin::Stub* s, grpc::ClientContext* c, const v1::AdminGetRosterRequest& r,
                      v1::AdminGetRosterReply* o) { return s->GetRoster(c, r, o); });
  }
  reply->set_site(d_.config->site.id);
  roster::ToProto(*d_.live->roster(), reply->mutable_roster());
  reply->set_is_signed(d_.roster && d_.roster->Current().has_value());
  return grpc::Status::OK;
}

grpc::Status AdminService::SetRoster(grpc::ServerContext* ctx, const v1::SetRosterRequest* req,
                                     v1::SetRosterReply* reply) {
  if (auto st = CheckAdmin(ctx); !st.ok()) return st;
  if (!d_.roster) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "this site takes no signed roster");
  // The coordinator compares versions for the whole federation, so that two
  // operators' changes through two sites cannot both be taken.
  if (const std::string coord = d_.site->Coordinator(); IsOther(coord)) {
    if (Forwarded(ctx)) return CoordinatorMoved(coord);
    return Forward(d_.peers, coord, d_.admin_token, *req, reply,
                   [](v1::Admin::Stub* s, grpc::ClientContext* c, const v1::SetRosterRequest& r,
                      v1::SetRosterReply* o) { return s->SetRoster(c, r, o); });
  }
  // A ceiling below what a live site reports would make every peer refuse
  // that site's rows (docs/security.md, "Numbers"): refused here, where the
  // operator's change enters (a guard against a slip, from the capacities
  // this site has heard; not a rule of the roster, which a peer's copy
  // could not be checked against).
  const std::vector<federation::PeerInfo> view = d_.site->View();
  auto ceilings = [&](const config::Roster& next) -> absl::Status {
    for (const federation::PeerInfo& p : view) {
      const config::RosterEntry* e = next.FindSite(p.site);
      if (e && p.up && p.capacity > e->max_capacity)
        return absl::InvalidArgumentError(absl::StrCat("site ", p.site, " reports capacity ", p.capacity,
                                                       ", above the max_capacity ", e->max_capacity,
                                                       " the new roster gives it"));
    }
    return absl::OkStatus();
  };
  auto version = d_.roster->Replace(req->roster(), req->expected_version(), ceilings);
  if (!version.ok()) return ToGrpc(version.status());
  reply->set_version(*version);
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

