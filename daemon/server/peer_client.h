#pragma once

// Calls to other sites over gRPC: the federation layer's PeerClient and the
// migration layer's PeerTransport. One channel per roster site, dialled at
// the roster's endpoint; with TLS the peer's certificate must name the site
// id the roster gives that endpoint (the channel checks it as the target
// name), and this site presents its own certificate as the client.
//
// Thread-safe.

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "config/config.h"
#include "daemon/federation/round.h"
#include "daemon/migration/transport.h"
#include "hyperfed/v1/hyperfed.grpc.pb.h"

namespace hyperfed::server {

// The largest gRPC message a site reads (docs/operations.md, "Secure"). It
// bounds what an unauthenticated caller makes the server parse, so it is
// small; it holds one job spec of the largest script CheckSpec accepts
// (scheduler::kMaxScriptBytes, 4 MiB) with room to spare, and a Transfer
// batch must fit in it whole.
inline constexpr size_t kMaxMessageBytes = size_t{8} << 20;

// Reads the PEM files a TLS config names. Error names the file.
struct TlsFiles {
  std::string ca, cert, key;
};
absl::StatusOr<TlsFiles> ReadTlsFiles(const config::SecurityConfig& sec);

class GrpcPeers : public federation::PeerClient, public migration::PeerTransport {
 public:
  // `tls` is ignored when config.security.insecure.
  GrpcPeers(const config::Config& config, TlsFiles tls);

  // federation::PeerClient
  absl::StatusOr<balance::LoadTable> Exchange(const std::string& site, const federation::ExchangeMessage& m,
                                              absl::Duration timeout) override;
  // The calls go out together on one completion queue that this thread
  // polls: no thread per call (docs/benchmarks.md, "Round latency").
  std::vector<StartAnswer> StartRound(const std::vector<std::string>& sites, const federation::RoundSpec& spec,
                                      absl::Duration timeout) override;
  absl::Status ReportRound(const std::string& site, const federation::RoundReport& report,
                           absl::Duration timeout) override;
  absl::StatusOr<std::string> RequestBalance(const std::string& site, const std::string& from,
                                             const std::string& reason, absl::Duration timeout) override;
  absl::Status Heartbeat(const std::string& site, const federation::HeartbeatInfo& info,
                         absl::Duration timeout) override;

  // migration::PeerTransport
  absl::StatusOr<migration::TransferReply> Transfer(const std::string& dest_site,
                                                    const migration::TransferRequest& req) override;
  absl::StatusOr<migration::AbortReply> Abort(const std::string& dest_site, const std::string& migration_id,
                                              const std::string& source_site) override;

  // Stubs for forwarding admin calls to another site (nullptr if unknown).
  v1::Admin::Stub* AdminStub(const std::string& site);

 private:
  struct Conn {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::Peer::Stub> peer;
    std::unique_ptr<v1::Admin::Stub> admin;
  };
  Conn* Get(const std::string& site);

  const config::Config config_;
  const TlsFiles tls_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Conn>> conns_;  // guarded by mu_
};

// A context with a deadline `timeout` from now.
std::unique_ptr<grpc::ClientContext> ContextWithDeadline(absl::Duration timeout);

}  // namespace hyperfed::server
