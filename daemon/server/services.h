#pragma once

// The gRPC services: Peer (site to site) and Admin (operators). Handlers
// check every field, check who is calling, and hand the request to the
// site controller or the migrator; they hold no policy of their own. The
// Peer service's checks of a request are PeerHandlers'
// (daemon/server/peer_handlers.h); PeerService adds what needs the gRPC
// call.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>

#include "config/config.h"
#include "daemon/federation/site.h"
#include "daemon/migration/migrator.h"
#include "daemon/scheduler/adapter.h"
#include "daemon/server/auth.h"
#include "daemon/server/peer_client.h"
#include "daemon/server/peer_handlers.h"
#include "daemon/server/peer_limits.h"
#include "daemon/server/roster_keeper.h"
#include "daemon/server/service_deps.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "hyperfed/v1/hyperfed.grpc.pb.h"

namespace hyperfed::server {

class PeerService final : public v1::Peer::Service {
 public:
  explicit PeerService(ServiceDeps deps) : d_(deps), handlers_(deps) {}
  grpc::Status RequestBalance(grpc::ServerContext* ctx, const v1::RequestBalanceRequest* req,
                              v1::RequestBalanceReply* reply) override;
  grpc::Status StartRound(grpc::ServerContext* ctx, const v1::StartRoundRequest* req,
                          v1::StartRoundReply* reply) override;
  grpc::Status Exchange(grpc::ServerContext* ctx, const v1::ExchangeRequest* req, v1::ExchangeReply* reply) override;
  grpc::Status ReportRound(grpc::ServerContext* ctx, const v1::RoundReport* req, v1::ReportRoundReply* reply) override;
  grpc::Status GetReport(grpc::ServerContext* ctx, const v1::GetReportRequest* req, v1::RoundReport* reply) override;
  grpc::Status CurrentLoad(grpc::ServerContext* ctx, const v1::CurrentLoadRequest* req, v1::LoadRow* reply) override;
  grpc::Status LeftRound(grpc::ServerContext* ctx, const v1::LeftRoundRequest* req, v1::LeftRoundReply* reply) override;
  grpc::Status Transfer(grpc::ServerContext* ctx, const v1::TransferRequest* req, v1::TransferReply* reply) override;
  grpc::Status Abort(grpc::ServerContext* ctx, const v1::AbortRequest* req, v1::AbortReply* reply) override;
  grpc::Status Heartbeat(grpc::ServerContext* ctx, const v1::HeartbeatRequest* req, v1::HeartbeatReply* reply) override;
  grpc::Status ProbeFor(grpc::ServerContext* ctx, const v1::ProbeForRequest* req, v1::ProbeForReply* reply) override;
  grpc::Status GetRoster(grpc::ServerContext* ctx, const v1::GetRosterRequest* req, v1::SignedRoster* reply) override;
  grpc::Status Rounds(grpc::ServerContext* ctx, const v1::PeerRoundsRequest* req, v1::RoundsReply* reply) override;
  grpc::Status ProposeRoster(grpc::ServerContext* ctx, const v1::ProposeRosterRequest* req,
                             v1::SetRosterReply* reply) override;

 private:
  // The transport's part of checking a Peer call, made before the handler's:
  // the per-peer call limit, then the partition test hook for `claimed`
  // (the site the request names). On OK, *caller is the site the call
  // comes from: its certificate's common name ("" without a certificate),
  // or with `insecure: true` the claimed site itself.
  grpc::Status Admit(grpc::ServerContext* ctx, const std::string& claimed, std::string* caller) const;
  ServiceDeps d_;
  PeerHandlers handlers_;
};

class AdminService final : public v1::Admin::Service {
 public:
  explicit AdminService(ServiceDeps deps) : d_(deps) {}
  grpc::Status Status(grpc::ServerContext* ctx, const v1::StatusRequest* req, v1::StatusReply* reply) override;
  grpc::Status Topology(grpc::ServerContext* ctx, const v1::TopologyRequest* req, v1::TopologyReply* reply) override;
  grpc::Status Jobs(grpc::ServerContext* ctx, const v1::JobsRequest* req, v1::JobsReply* reply) override;
  grpc::Status Migrations(grpc::ServerContext* ctx, const v1::MigrationsRequest* req,
                          v1::MigrationsReply* reply) override;
  grpc::Status Balance(grpc::ServerContext* ctx, const v1::BalanceRequest* req,
                       grpc::ServerWriter<v1::RoundEvent>* writer) override;
  grpc::Status Drain(grpc::ServerContext* ctx, const v1::DrainRequest* req, v1::DrainReply* reply) override;
  grpc::Status Submit(grpc::ServerContext* ctx, const v1::SubmitRequest* req, v1::SubmitReply* reply) override;
  grpc::Status ExplainJob(grpc::ServerContext* ctx, const v1::ExplainJobRequest* req,
                          v1::ExplainJobReply* reply) override;
  grpc::Status ForceRelease(grpc::ServerContext* ctx, const v1::ForceReleaseRequest* req,
                            v1::ForceReleaseReply* reply) override;
  grpc::Status Rounds(grpc::ServerContext* ctx, const v1::RoundsRequest* req, v1::RoundsReply* reply) override;
  grpc::Status GetRoster(grpc::ServerContext* ctx, const v1::AdminGetRosterRequest* req,
                         v1::AdminGetRosterReply* reply) override;
  grpc::Status SetRoster(grpc::ServerContext* ctx, const v1::SetRosterRequest* req, v1::SetRosterReply* reply) override;
  grpc::Status Waits(grpc::ServerContext* ctx, const v1::WaitsRequest* req, v1::WaitsReply* reply) override;

 private:
  // The admin bearer token ("authorization: Bearer T"), or a client
  // certificate with the admin role (daemon/server/auth.h). A site's own
  // certificate gets PERMISSION_DENIED. An address whose calls failed too
  // often is refused (RESOURCE_EXHAUSTED) for a while (AuthFailureLimiter).
  grpc::Status CheckAdmin(grpc::ServerContext* ctx) const;
  // CheckAdmin's check of the credential; `cn` is the verified client
  // certificate's common name ("" without one or with insecure: true), and
  // `admin_certificate` whether that certificate is an operator's
  // (IsAdminCertificate, decided once by CheckAdmin).
  grpc::Status Authenticate(grpc::ServerContext* ctx, const std::string& cn, bool admin_certificate) const;
  // Balance at a site that is not the coordinator.
  grpc::Status FollowRemoteRound(grpc::ServerContext* ctx, const v1::BalanceRequest& req,
                                 grpc::ServerWriter<v1::RoundEvent>* writer);
  // The request names another site. No Admin call is forwarded: what another
  // site does with its jobs is asked of it by the operator's client, and
  // what this site needs of another (rounds, a roster for the coordinator)
  // it asks with its own certificate through narrow Peer calls
  // (docs/security.md, "Operators' credentials").
  bool IsOther(const std::string& site) const { return !site.empty() && site != d_.config->site.id; }
  ServiceDeps d_;
  mutable AuthFailureLimiter auth_failures_;
};

// The standard health service (grpc.health.v1), answered on the handler
// threads like every other call. gRPC's built-in one
// (EnableDefaultHealthCheckService) is written with the callback API, which
// adds two polling threads that take the server's reads and hand each call
// to a handler thread: twice the thread switches per call
// (docs/benchmarks.md, "Round latency"). Check says SERVING for "" and the
// two hyperfed services until SetNotServing, NOT_FOUND for any other name;
// Watch is UNIMPLEMENTED (a watcher would hold a bounded handler thread).
class HealthService final : public ::grpc::health::v1::Health::Service {
 public:
  grpc::Status Check(grpc::ServerContext* ctx, const ::grpc::health::v1::HealthCheckRequest* req,
                     ::grpc::health::v1::HealthCheckResponse* reply) override;
  void SetNotServing() { serving_ = false; }

 private:
  std::atomic<bool> serving_{true};
};

}  // namespace hyperfed::server
