#include "sim/federation/peers.h"

#include "daemon/server/convert.h"
#include "daemon/server/peer_client.h"
#include "daemon/server/protocol.h"

namespace hyperfed::fedsim {

using server::PeerHandlers;

absl::StatusOr<balance::LoadTable> SimPeers::Exchange(const std::string& site, const federation::ExchangeMessage& m,
                                                      absl::Duration timeout) {
  v1::ExchangeRequest req;
  server::ToProto(m, &req);
  auto reply = net_->Call(self_, site, env_, req, server::ExchangeCallTimeout(timeout), false, &PeerHandlers::Exchange);
  if (!reply.ok()) return reply.status();
  return server::FromProto(reply->rows());
}

absl::StatusOr<federation::LookupAnswer> SimPeers::Lookup(const std::string& site, const federation::ExchangeMessage& m,
                                                          absl::Duration timeout) {
  v1::ExchangeRequest req;
  server::ToProto(m, &req);
  auto reply = net_->Call(self_, site, env_, req, server::ExchangeCallTimeout(timeout), false, &PeerHandlers::Exchange);
  if (!reply.ok()) return reply.status();
  return server::LookupAnswerFromReply(*reply);
}

std::vector<federation::PeerClient::StartAnswer> SimPeers::StartRound(const std::vector<std::string>& sites,
                                                                      const federation::RoundSpec& spec,
                                                                      absl::Duration timeout) {
  // At every site at once, as GrpcPeers does: one task per call.
  v1::StartRoundRequest req;
  server::ToProto(spec, &req);
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    size_t left = 0;
    std::vector<StartAnswer> out;
  };
  auto shared = std::make_shared<Shared>();
  shared->left = sites.size();
  shared->out.resize(sites.size());
  World* world = net_->world();
  for (size_t i = 0; i < sites.size(); ++i) {
    world->Spawn(world->current_node(), "StartRound call", [this, shared, i, site = sites[i], req, timeout] {
      auto reply = net_->Call(self_, site, env_, req, timeout, false, &PeerHandlers::StartRound);
      std::lock_guard<std::mutex> l(shared->mu);
      StartAnswer& a = shared->out[i];
      if (!reply.ok()) {
        a.why_not = std::string(reply.status().message());
      } else {
        a.answered = true;
        a.accepted = reply->accepted();
        a.why_not = reply->why_not();
      }
      --shared->left;
      shared->cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> l(shared->mu);
  env_->WaitUntil(l, shared->cv, absl::InfiniteFuture(), [&] { return shared->left == 0; });
  return shared->out;
}

absl::Status SimPeers::ReportRound(const std::string& site, const federation::RoundReport& report,
                                   absl::Duration timeout) {
  v1::RoundReport req;
  server::ToProto(report, &req);
  return net_->Call(self_, site, env_, req, timeout, false, &PeerHandlers::ReportRound).status();
}

absl::StatusOr<federation::RoundReport> SimPeers::GetReport(const std::string& site, const std::string& round_id,
                                                            absl::Duration timeout) {
  v1::GetReportRequest req;
  req.set_site(self_);
  req.set_round_id(round_id);
  auto reply = net_->Call(self_, site, env_, req, timeout, false, &PeerHandlers::GetReport);
  if (!reply.ok()) return reply.status();
  return server::FromProto(*reply);
}

std::vector<absl::Status> SimPeers::LeftRound(const std::vector<std::string>& sites, const std::string& round_id,
                                              const std::map<int, std::string>& left, absl::Duration timeout) {
  const v1::LeftRoundRequest req = server::ToLeftRoundRequest(self_, round_id, left);
  std::vector<absl::Status> out;
  out.reserve(sites.size());
  for (const std::string& site : sites)
    out.push_back(net_->Call(self_, site, env_, req, timeout, false, &PeerHandlers::LeftRound).status());
  return out;
}

std::vector<absl::StatusOr<balance::LoadRow>> SimPeers::CurrentLoads(const std::vector<std::string>& sites,
                                                                     absl::Duration timeout) {
  v1::CurrentLoadRequest req;
  req.set_site(self_);
  std::vector<absl::StatusOr<balance::LoadRow>> out;
  out.reserve(sites.size());
  for (const std::string& site : sites) {
    auto reply = net_->Call(self_, site, env_, req, timeout, false, &PeerHandlers::CurrentLoad);
    if (reply.ok()) {
      out.push_back(server::FromProto(*reply));
    } else {
      out.push_back(reply.status());
    }
  }
  return out;
}

absl::StatusOr<std::string> SimPeers::RequestBalance(const std::string& site, const std::string& from,
                                                     const std::string& reason, absl::Duration timeout) {
  v1::RequestBalanceRequest req;
  req.set_site(from);
  req.set_reason(reason);
  auto reply = net_->Call(self_, site, env_, req, timeout, false, &PeerHandlers::RequestBalance);
  if (!reply.ok()) return reply.status();
  return reply->round_id();
}

std::vector<absl::StatusOr<federation::ProbeAck>> SimPeers::Heartbeats(const std::vector<std::string>& sites,
                                                                       const federation::HeartbeatInfo& info,
                                                                       const std::vector<federation::Gossip>& gossip,
                                                                       absl::Duration timeout) {
  // At every site at once, as GrpcPeers does, from this task; each with
  // its own gossip.
  v1::HeartbeatRequest common;
  server::ToProto(info, &common);
  common.set_protocol(server::ProtocolVersion());
  std::vector<v1::HeartbeatRequest> reqs(sites.size(), common);
  for (size_t i = 0; i < sites.size() && i < gossip.size(); ++i) server::ToProto(gossip[i], &reqs[i]);
  std::vector<absl::StatusOr<federation::ProbeAck>> out;
  out.reserve(sites.size());
  for (auto& reply : net_->CallEachOwn(self_, sites, env_, reqs, timeout, true, &PeerHandlers::Heartbeat)) {
    if (reply.ok()) {
      federation::ProbeAck ack = server::ProbeAckFromProto(*reply);
      ack.protocol = server::ProtocolVersion();
      out.push_back(std::move(ack));
    } else {
      out.push_back(reply.status());
    }
  }
  return out;
}

std::vector<absl::StatusOr<bool>> SimPeers::ProbeFor(const std::vector<std::pair<std::string, std::string>>& asks,
                                                     absl::Duration timeout) {
  std::vector<std::string> helpers;
  std::vector<v1::ProbeForRequest> reqs;
  for (const auto& [helper, target] : asks) {
    helpers.push_back(helper);
    v1::ProbeForRequest req;
    req.set_site(self_);
    req.set_target(target);
    req.set_timeout_ms(std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout * 0.8)));
    reqs.push_back(std::move(req));
  }
  // The helper's handler waits for its own probe: a task, not inline. Its
  // bytes count as membership's (`heartbeat`) all the same.
  std::vector<absl::StatusOr<bool>> out;
  for (auto& reply : net_->CallEachOwn(self_, helpers, env_, reqs, timeout, true, &PeerHandlers::ProbeFor,
                                       /*inline_handler=*/false)) {
    if (reply.ok()) {
      out.push_back(reply->answered());
    } else {
      out.push_back(reply.status());
    }
  }
  return out;
}

absl::StatusOr<migration::TransferReply> SimPeers::Transfer(const std::string& dest_site,
                                                            const migration::TransferRequest& req) {
  auto p = server::EncodeTransfer(req);
  if (!p.ok()) return p.status();
  auto reply = net_->Call(self_, dest_site, env_, *p, server::kTransferTimeout, false, &PeerHandlers::Transfer);
  if (!reply.ok()) return reply.status();
  return server::FromProto(*reply);
}

absl::StatusOr<migration::AbortReply> SimPeers::Abort(const std::string& dest_site, const std::string& migration_id,
                                                      const std::string& source_site) {
  v1::AbortRequest p;
  p.set_migration_id(migration_id);
  p.set_source_site(source_site);
  auto reply = net_->Call(self_, dest_site, env_, p, server::kTransferTimeout, false, &PeerHandlers::Abort);
  if (!reply.ok()) return reply.status();
  return server::FromProto(*reply);
}

}  // namespace hyperfed::fedsim
