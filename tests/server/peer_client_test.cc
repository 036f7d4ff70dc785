// GrpcPeers over real gRPC on loopback: the heartbeats of one tick.
#include "daemon/server/peer_client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/federation/live_config.h"
#include "daemon/server/convert.h"
#include "gtest/gtest.h"
#include "hyperfed/v1/hyperfed.grpc.pb.h"

namespace hyperfed::server {
namespace {

// A peer that answers a heartbeat only once `expected` heartbeats have
// reached the peers sharing `gate` (or after 20 s): with calls sent one
// after another, the first would wait for the others until its deadline.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  int expected = 0;
};

class GatedPeer final : public v1::Peer::Service {
 public:
  explicit GatedPeer(Gate* gate) : gate_(gate) {}
  grpc::Status Heartbeat(grpc::ServerContext*, const v1::HeartbeatRequest* req, v1::HeartbeatReply*) override {
    std::unique_lock<std::mutex> l(gate_->mu);
    from = req->site();
    ++gate_->arrived;
    gate_->cv.notify_all();
    gate_->cv.wait_for(l, std::chrono::seconds(20), [&] { return gate_->arrived >= gate_->expected; });
    return grpc::Status::OK;
  }
  std::string from;  // guarded by gate_->mu

 private:
  Gate* gate_;
};

// A TCP port that accepts connections and never says a word (a peer whose
// process hangs): a gRPC call to it waits out its deadline.
class MutePort {
 public:
  MutePort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&a), n) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &n) != 0)
      return;
    port_ = ntohs(a.sin_port);
  }
  ~MutePort() {
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(GrpcPeersTest, OneTicksHeartbeatsGoToEveryPeerAtOnceAndAMutePeerHoldsUpNone) {
  constexpr int kAnswering = 3;
  Gate gate;
  gate.expected = kAnswering;
  std::vector<std::unique_ptr<GatedPeer>> peers;
  std::vector<std::unique_ptr<grpc::Server>> servers;
  config::Config c;
  c.site.id = "site-0";
  c.site.label = 0;
  c.security.insecure = true;
  c.roster.sites.push_back({"site-0", 0, "127.0.0.1:1"});
  MutePort mute;
  ASSERT_GT(mute.port(), 0);
  // The mute peer first: sent one after another, it would take the whole
  // timeout before any other heard a word.
  c.roster.sites.push_back({"site-1", 1, "127.0.0.1:" + std::to_string(mute.port())});
  for (int i = 0; i < kAnswering; ++i) {
    peers.push_back(std::make_unique<GatedPeer>(&gate));
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(peers.back().get());
    servers.push_back(b.BuildAndStart());
    ASSERT_TRUE(servers.back()) << "peer " << i;
    c.roster.sites.push_back({"site-" + std::to_string(i + 2), i + 2, "127.0.0.1:" + std::to_string(port)});
  }
  federation::LiveConfig live(c);
  GrpcPeers grpc_peers(c, &live, TlsFiles{});
  federation::HeartbeatInfo hb;
  hb.site = "site-0";
  hb.label = 0;
  const std::vector<std::string> to = {"site-1", "site-2", "site-3", "site-4"};
  const std::vector<absl::StatusOr<federation::ProbeAck>> got = grpc_peers.Heartbeats(to, hb, {}, absl::Seconds(5));
  ASSERT_EQ(got.size(), to.size());
  EXPECT_FALSE(got[0].ok()) << "the mute peer never answers";
  for (size_t i = 1; i < got.size(); ++i) EXPECT_TRUE(got[i].ok()) << to[i] << ": " << got[i].status();
  {
    std::lock_guard<std::mutex> l(gate.mu);
    EXPECT_EQ(gate.arrived, kAnswering);
    for (const auto& p : peers) EXPECT_EQ(p->from, "site-0");
  }
  for (auto& s : servers) s->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
}

// Answers LOOKUPs (and takes SCANs) as told, and keeps what it was sent.
class ScanPeer final : public v1::Peer::Service {
 public:
  grpc::Status Exchange(grpc::ServerContext*, const v1::ExchangeRequest* req, v1::ExchangeReply* reply) override {
    std::lock_guard<std::mutex> l(mu);
    got.push_back(*req);
    if (req->kind() == v1::ExchangeRequest::LOOKUP) *reply->mutable_lookup() = answer;
    return grpc::Status::OK;
  }
  std::mutex mu;
  std::vector<v1::ExchangeRequest> got;  // guarded by mu
  v1::LookupAnswer answer;               // guarded by mu
};

// Protocol 1.9 over real gRPC: a SCAN's totals (a weight past 64 bits) and a
// LOOKUP's run, unit and row reach the callee as sent; its answer comes
// back as said, and one that is not well formed is refused.
TEST(GrpcPeersTest, ScanTotalsAndLookupsCrossTheWireAsSent) {
  ScanPeer peer;
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  b.RegisterService(&peer);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  ASSERT_TRUE(server);
  config::Config c;
  c.site.id = "site-0";
  c.site.label = 0;
  c.security.insecure = true;
  c.roster.sites.push_back({"site-0", 0, "127.0.0.1:1"});
  c.roster.sites.push_back({"site-1", 1, "127.0.0.1:" + std::to_string(port)});
  federation::LiveConfig live(c);
  GrpcPeers grpc_peers(c, &live, TlsFiles{});

  federation::ExchangeMessage scan;
  scan.round_id = "r";
  scan.epoch = 5;
  scan.kind = federation::MessageKind::kScan;
  scan.dimension = 0;
  scan.totals = {.load = 7,
                 .weight = (static_cast<__int128>(3) << 64) + 9,
                 .live = 2,
                 .min_weight = 4,
                 .max_weight = int64_t{1} << 62};
  ASSERT_TRUE(grpc_peers.Exchange("site-1", scan, absl::Seconds(5)).ok());

  federation::ExchangeMessage lookup;
  lookup.round_id = "r";
  lookup.epoch = 5;
  lookup.kind = federation::MessageKind::kLookup;
  lookup.run = {.level = 3, .begin = 10, .end = 25, .sends = false};
  lookup.level = 2;
  lookup.position = 17;
  lookup.rows = {{0, 0, 0, balance::StartProfile{8, {{0, 4}, {60000, 8}}}}};
  {
    std::lock_guard<std::mutex> l(peer.mu);
    peer.answer.set_found(true);
    peer.answer.mutable_run()->set_level(3);
    peer.answer.mutable_run()->set_begin(5);
    peer.answer.mutable_run()->set_end(30);
    peer.answer.mutable_run()->set_sends(true);
    peer.answer.mutable_row()->set_label(1);
  }
  auto a = grpc_peers.Lookup("site-1", lookup, absl::Seconds(5));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->found);
  EXPECT_EQ(a->run, (balance::MatchRun{3, 5, 30, true}));
  {
    std::lock_guard<std::mutex> l(peer.mu);
    ASSERT_EQ(peer.got.size(), 2u);
    const federation::ExchangeMessage s = FromProto(peer.got[0]);
    EXPECT_EQ(s.kind, federation::MessageKind::kScan);
    EXPECT_TRUE(s.totals == scan.totals);
    const federation::ExchangeMessage m = FromProto(peer.got[1]);
    EXPECT_EQ(m.kind, federation::MessageKind::kLookup);
    EXPECT_EQ(m.run, lookup.run);
    EXPECT_EQ(m.level, 2);
    EXPECT_EQ(m.position, 17);
    ASSERT_EQ(m.rows.size(), 1u);
    EXPECT_EQ(m.rows[0].profile.free, lookup.rows[0].profile.free);
    // The next hop, then an answer that is not well formed.
    peer.answer.Clear();
    peer.answer.set_next_label(1);
    peer.answer.set_next_level(1);
    peer.answer.set_position(4);
  }
  a = grpc_peers.Lookup("site-1", lookup, absl::Seconds(5));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->found);
  EXPECT_EQ(a->next_label, 1);
  EXPECT_EQ(a->next_level, 1);
  EXPECT_EQ(a->position, 4);
  {
    std::lock_guard<std::mutex> l(peer.mu);
    peer.answer.Clear();
    peer.answer.set_found(true);  // with no run
  }
  EXPECT_EQ(grpc_peers.Lookup("site-1", lookup, absl::Seconds(5)).status().code(), absl::StatusCode::kInvalidArgument);
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
}

}  // namespace
}  // namespace hyperfed::server
