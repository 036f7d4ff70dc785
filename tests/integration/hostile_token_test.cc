// Issue 34, finding 3: an operator's credential never leaves its site. A
// stand-in for site-2 holds site-2's valid certificate and serves the Admin
// and Peer services, recording the metadata of every call it gets. The
// operator asks real site-0, with the admin token, for everything that
// concerns site-2 (its jobs, a submit, a drain, its rounds): site-0 either
// refuses to act there or asks with its own certificate alone, and the
// token never reaches site-2. (Before the fix site-0 forwarded each of these
// Admin calls with "authorization: Bearer <token>".)

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"

namespace hyperfed::testing {
namespace {

// What the stand-in was sent: each call's method and its metadata.
struct Recorder {
  std::mutex mu;
  std::vector<std::string> calls;
  std::vector<std::string> metadata;  // "key: value"
  void Take(const std::string& method, grpc::ServerContext* ctx) {
    std::lock_guard<std::mutex> l(mu);
    calls.push_back(method);
    for (const auto& [k, v] : ctx->client_metadata())
      metadata.push_back(absl::StrCat(std::string(k.data(), k.size()), ": ", std::string(v.data(), v.size())));
  }
};

class RecordingAdmin final : public v1::Admin::Service {
 public:
  explicit RecordingAdmin(Recorder* r) : r_(r) {}
  grpc::Status Jobs(grpc::ServerContext* c, const v1::JobsRequest*, v1::JobsReply*) override { return Take("Jobs", c); }
  grpc::Status Submit(grpc::ServerContext* c, const v1::SubmitRequest*, v1::SubmitReply*) override {
    return Take("Submit", c);
  }
  grpc::Status Drain(grpc::ServerContext* c, const v1::DrainRequest*, v1::DrainReply*) override {
    return Take("Drain", c);
  }
  grpc::Status Rounds(grpc::ServerContext* c, const v1::RoundsRequest*, v1::RoundsReply*) override {
    return Take("Rounds", c);
  }

 private:
  grpc::Status Take(const std::string& m, grpc::ServerContext* c) {
    r_->Take("Admin." + m, c);
    return grpc::Status::OK;
  }
  Recorder* r_;
};

class RecordingPeer final : public v1::Peer::Service {
 public:
  explicit RecordingPeer(Recorder* r) : r_(r) {}
  grpc::Status Rounds(grpc::ServerContext* c, const v1::PeerRoundsRequest*, v1::RoundsReply* reply) override {
    r_->Take("Peer.Rounds", c);
    reply->set_site("site-2");
    if (big) reply->add_rounds()->add_events(std::string(size_t{9} << 20, 'x'));  // over 8 MiB
    return grpc::Status::OK;
  }
  std::atomic<bool> big{false};

 private:
  Recorder* r_;
};

TEST(HostileTokenTest, Finding3_NoSitePassesAnOperatorsTokenToAnother) {
  auto f = TestFederation::Start({.sites = 3});
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  fed.Stop(2);

  Recorder rec;
  RecordingAdmin admin(&rec);
  RecordingPeer peer(&rec);
  grpc::SslServerCredentialsOptions tls(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  tls.pem_root_certs = ReadFile(fed.CertDir() + "/ca.pem");
  tls.pem_key_cert_pairs.push_back(
      {ReadFile(fed.CertDir() + "/site-2-key.pem"), ReadFile(fed.CertDir() + "/site-2.pem")});
  grpc::ServerBuilder b;
  b.AddListeningPort(fed.Endpoint(2), grpc::SslServerCredentials(tls));
  b.RegisterService(&admin);
  b.RegisterService(&peer);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  ASSERT_NE(server, nullptr) << "cannot listen on " << fed.Endpoint(2);

  auto ask = [&](const char* what, auto call) {
    auto ctx = fed.Context();  // carries the admin token
    grpc::Status st = call(fed.Admin(0).get(), ctx.get());
    return absl::StrCat(what, ": ", st.error_code(), " ", st.error_message());
  };
  // site-0's channel to site-2 may still be backing off from the real
  // site-2 it saw stop (UNAVAILABLE at once): wait, bounded, until a call
  // reaches the stand-in, then count only the calls below (what the wait
  // sent stays checked for credentials).
  for (int i = 0; i < 80; ++i) {
    auto ctx = fed.Context();
    v1::RoundsRequest r;
    r.set_site("site-2");
    v1::RoundsReply o;
    if (fed.Admin(0)->Rounds(ctx.get(), r, &o).error_code() != grpc::StatusCode::UNAVAILABLE) break;
    absl::SleepFor(absl::Milliseconds(250));
  }
  {
    std::lock_guard<std::mutex> l(rec.mu);
    rec.calls.clear();
  }
  std::vector<std::string> answers;
  answers.push_back(ask("jobs", [](v1::Admin::Stub* s, grpc::ClientContext* c) {
    v1::JobsRequest r;
    r.set_site("site-2");
    v1::JobsReply o;
    return s->Jobs(c, r, &o);
  }));
  answers.push_back(ask("submit", [](v1::Admin::Stub* s, grpc::ClientContext* c) {
    v1::SubmitRequest r;
    r.set_site("site-2");
    r.set_count(1);
    v1::SubmitReply o;
    return s->Submit(c, r, &o);
  }));
  answers.push_back(ask("drain", [](v1::Admin::Stub* s, grpc::ClientContext* c) {
    v1::DrainRequest r;
    r.set_site("site-2");
    r.set_drain(true);
    v1::DrainReply o;
    return s->Drain(c, r, &o);
  }));
  answers.push_back(ask("rounds", [](v1::Admin::Stub* s, grpc::ClientContext* c) {
    v1::RoundsRequest r;
    r.set_site("site-2");
    v1::RoundsReply o;
    return s->Rounds(c, r, &o);
  }));
  // Finding 6: a peer's reply is held to the limit its requests are (8 MiB,
  // not 64): site-0 refuses it unread, whatever the asking client takes.
  peer.big = true;
  {
    auto ctx = fed.Context();
    v1::RoundsRequest r;
    r.set_site("site-2");
    v1::RoundsReply o;
    grpc::Status st = fed.Admin(0)->Rounds(ctx.get(), r, &o);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
    EXPECT_NE(st.error_message().find("8388608"), std::string::npos)
        << "refused at site-0 by its 8 MiB limit, not by the client's: " << st.error_message();
  }
  server->Shutdown();

  const std::string said = absl::StrJoin(answers, "; ");
  std::lock_guard<std::mutex> l(rec.mu);
  for (const std::string& m : rec.metadata) {
    EXPECT_EQ(m.rfind("authorization", 0), std::string::npos) << "site-2 was sent " << m << " (" << said << ")";
    EXPECT_EQ(m.find(fed.Token()), std::string::npos) << "site-2 was sent the admin token: " << m;
  }
  EXPECT_EQ(std::count(rec.calls.begin(), rec.calls.end(), "Peer.Rounds"), 2)
      << "the rounds of site-2 are asked with site-0's certificate (" << said << ")";
  for (const std::string& c : rec.calls)
    EXPECT_EQ(c.rfind("Admin.", 0), std::string::npos) << c << " reached site-2 (" << said << ")";
}

}  // namespace
}  // namespace hyperfed::testing
