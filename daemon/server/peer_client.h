#pragma once

// Calls to other sites over gRPC: the federation layer's PeerClient and the
// migration layer's PeerTransport. One channel per roster site, dialled at
// the live roster's endpoint (again when a new roster moves it); with TLS
// the peer's certificate must name the site id the roster gives that
// endpoint (the channel checks it as the target name), and this site
// presents its own certificate as the client. A site the roster removed is
// still dialled at the endpoint the roster keeps for it (`departed`), so
// that migrations in flight with it settle, also after a restart.
//
// Heartbeats carry the roster (docs/operations.md, "Join and leave"): each
// says this site's roster version and, to a peer that said an older one,
// the signed roster itself; a reply may carry the peer's newer one. Both go
// to the RosterKeeper, which verifies them.
//
// Thread-safe.

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "config/config.h"
#include "daemon/federation/live_config.h"
#include "daemon/federation/round.h"
#include "daemon/migration/transport.h"
#include "daemon/server/roster_keeper.h"
#include "hyperfed/v1/hyperfed.grpc.pb.h"

namespace hyperfed::server {

// The largest gRPC message a site reads (docs/operations.md, "Secure"). It
// bounds what an unauthenticated caller makes the server parse, so it is
// small; it holds one job spec of the largest script CheckSpec accepts
// (scheduler::kMaxScriptBytes, 4 MiB) with room to spare, and a Transfer
// batch must fit in it whole.
inline constexpr size_t kMaxMessageBytes = size_t{8} << 20;
// How long a Transfer or Abort call may take.
inline constexpr absl::Duration kTransferTimeout = absl::Seconds(60);
// How long a round or migration call waits for a failing channel to a
// site to connect again before it is made (GrpcPeers::Reconnect); at most
// half the call's own timeout.
inline constexpr absl::Duration kReconnectWait = absl::Seconds(1);
// Keepalive on the connections to peers: a PING every kPeerKeepaliveMs,
// and a connection whose PING goes unanswered for kPeerKeepaliveTimeoutMs
// (or whose data goes unacknowledged as long: gRPC sets TCP_USER_TIMEOUT
// to it where keepalive is on, gRFC A18) is closed and dialled again. Without it, a peer cut off without
// a FIN or RST (a network that went away) kept its old connection, whose
// calls waited out TCP's retransmission backoff after the network was
// back: in the compose federation a site cut off for 83 s was heard by
// three peers 29 to 31 s after its return (docs/operations.md, "When a
// site fails, is cut off, or returns"). Servers accept PINGs at twice
// this rate (Daemon::Start).
inline constexpr int kPeerKeepaliveMs = 1000;
inline constexpr int kPeerKeepaliveTimeoutMs = 2000;
// An Exchange call's deadline for a round step of `step`: the callee may
// wait up to its own step timeout for its part to get there.
inline absl::Duration ExchangeCallTimeout(absl::Duration step) { return step * 2; }
// A Transfer as sent: refused as final (INVALID_ARGUMENT: the migration
// aborts and its jobs are released, docs/design.md §7) when it would be over
// kMaxMessageBytes, which every site refuses unread and the migrator would
// otherwise retry for ever with the jobs held.
absl::StatusOr<v1::TransferRequest> EncodeTransfer(const migration::TransferRequest& req);

// A whole file; FailedPrecondition "cannot read <what> <path>" when it
// cannot be read. The server layer's one file reader (TLS files, the admin
// token, the roster key and the stored roster).
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, const char* what);

// Reads the PEM files a TLS config names. Error names the file.
struct TlsFiles {
  std::string ca, cert, key;
};
absl::StatusOr<TlsFiles> ReadTlsFiles(const config::SecurityConfig& sec);

class GrpcPeers : public federation::PeerClient, public migration::PeerTransport {
 public:
  // `tls` is ignored when config.security.insecure.
  GrpcPeers(const config::Config& config, const federation::LiveConfig* live, TlsFiles tls);
  // Where rosters from peers go (none: they are ignored). Set before the
  // first heartbeat.
  void SetRosterKeeper(RosterKeeper* keeper) { keeper_ = keeper; }

  // Asks `seed` for its signed roster and offers it to the keeper (a joining
  // site, or one the roster removed): true when a newer roster was taken.
  absl::StatusOr<bool> FetchRoster(const config::Seed& seed);

  // federation::PeerClient
  absl::StatusOr<balance::LoadTable> Exchange(const std::string& site, const federation::ExchangeMessage& m,
                                              absl::Duration timeout) override;
  // The call waits on its own completion queue, asking `abandon` every
  // kAbandonPoll; once it says so, the call is cancelled.
  absl::StatusOr<balance::LoadTable> ExchangeUnless(const std::string& site, const federation::ExchangeMessage& m,
                                                    absl::Duration timeout,
                                                    const std::function<bool()>& abandon) override;
  static constexpr absl::Duration kAbandonPoll = absl::Milliseconds(100);
  absl::StatusOr<federation::LookupAnswer> Lookup(const std::string& site, const federation::ExchangeMessage& m,
                                                  absl::Duration timeout) override;
  // The calls go out together on one completion queue that this thread
  // polls: no thread per call (docs/benchmarks.md, "Round latency").
  std::vector<StartAnswer> StartRound(const std::vector<std::string>& sites, const federation::RoundSpec& spec,
                                      absl::Duration timeout) override;
  std::vector<absl::StatusOr<balance::LoadRow>> CurrentLoads(const std::vector<std::string>& sites,
                                                             absl::Duration timeout) override;
  absl::StatusOr<federation::RoundReport> GetReport(const std::string& site, const std::string& round_id,
                                                    absl::Duration timeout) override;
  std::vector<absl::Status> LeftRound(const std::vector<std::string>& sites, const std::string& round_id,
                                      const std::map<int, std::string>& left, absl::Duration timeout) override;
  absl::Status ReportRound(const std::string& site, const federation::RoundReport& report,
                           absl::Duration timeout) override;
  absl::StatusOr<std::string> RequestBalance(const std::string& site, const std::string& from,
                                             const std::string& reason, absl::Duration timeout) override;
  // On one completion queue, as StartRound.
  std::vector<absl::StatusOr<federation::ProbeAck>> Heartbeats(const std::vector<std::string>& sites,
                                                               const federation::HeartbeatInfo& info,
                                                               const std::vector<federation::Gossip>& gossip,
                                                               absl::Duration timeout) override;
  // `site` was heard from (its probe came): a channel to it waiting out a
  // connect backoff tries again now.
  void HeardFrom(const std::string& site);
  // On one completion queue, as StartRound.
  std::vector<absl::StatusOr<bool>> ProbeFor(const std::vector<std::pair<std::string, std::string>>& asks,
                                             absl::Duration timeout) override;

  // migration::PeerTransport
  absl::StatusOr<migration::TransferReply> Transfer(const std::string& dest_site,
                                                    const migration::TransferRequest& req) override;
  absl::StatusOr<migration::AbortReply> Abort(const std::string& dest_site, const std::string& migration_id,
                                              const std::string& source_site) override;

  // What a site asks on its operator's behalf, with its own certificate: no
  // Admin call and no operator credential ever goes to another site
  // (docs/security.md, "Operators' credentials").
  // A round at the coordinator `site` ("operator" reason, `mode` or "").
  absl::StatusOr<std::string> RequestOperatorRound(const std::string& site, const std::string& mode,
                                                   absl::Duration timeout);
  // The rounds `site` coordinated.
  absl::StatusOr<v1::RoundsReply> Rounds(const std::string& site, const v1::PeerRoundsRequest& req,
                                         absl::Duration timeout);
  // An operator's signed roster, handed to the coordinator `site`.
  absl::StatusOr<int64_t> ProposeRoster(const std::string& site, const v1::SignedRoster& roster,
                                        int64_t expected_version, absl::Duration timeout);

 private:
  struct Conn {
    std::string endpoint;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::Peer::Stub> peer;
  };
  Conn* Get(const std::string& site);
  // Round and migration calls go to sites a round counts live, which this
  // site may not have called since they came back: only cube neighbours
  // probe each other (docs/design.md §6.11). A channel still failing from
  // before (gRPC fails a call on it at once, with the old error) is dialled
  // again at once and given until `until` to connect. Probes do not wait:
  // a down neighbour's channel always fails.
  static void Reconnect(const std::vector<Conn*>& conns, absl::Time until);
  static absl::Time ReconnectUntil(absl::Duration timeout);
  // One unary call to each of `sites` at once, each with a deadline
  // `timeout` from now; returns when every call has ended. `start(i, stub,
  // ctx, cq)` begins the call to site i and returns its reader; `done(i, status,
  // reply)` takes site i's answer, or the error of a site that is unknown
  // or cut off (then with a default reply). With `reconnect`, failing
  // channels are dialled first (Reconnect). Defined in peer_client.cc.
  template <typename Reply, typename Start, typename Done>
  void CallEach(const std::vector<std::string>& sites, absl::Duration timeout, bool reconnect, Start start, Done done);
  // A channel to `site` at `endpoint` (kept for the daemon's life: stubs
  // handed out stay valid).
  Conn* DialLocked(const std::string& site, const std::string& endpoint);

  const config::Config config_;
  const federation::LiveConfig* live_;
  const TlsFiles tls_;
  RosterKeeper* keeper_ = nullptr;
  std::mutex mu_;
  std::map<std::string, Conn*> conns_;          // guarded by mu_; by site, the newest
  std::vector<std::unique_ptr<Conn>> dialled_;  // guarded by mu_
  struct PeerRoster {
    int64_t version = 0;
    std::string digest;
  };
  std::map<std::string, PeerRoster> peer_roster_;               // guarded by mu_; what each peer said last
  std::map<std::pair<std::string, std::string>, Conn*> seeds_;  // guarded by mu_; by (id, endpoint)
};

// A context with a deadline `timeout` from now.
std::unique_ptr<grpc::ClientContext> ContextWithDeadline(absl::Duration timeout);

// A LOOKUP's reply (protocol 1.9) as a round takes it: well formed (a
// found run non-empty, the start profile as CheckReportedRow wants it, a
// next hop of non-negative numbers) or InvalidArgument; the round checks
// that it answers what it asked (Runner::RunScanned). GrpcPeers and the
// simulator's peers both use it.
absl::StatusOr<federation::LookupAnswer> LookupAnswerFromReply(const v1::ExchangeReply& reply);

}  // namespace hyperfed::server
