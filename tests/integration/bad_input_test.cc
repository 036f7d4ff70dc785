// Bad requests are refused with the right gRPC code and change nothing;
// a bad config stops the daemon naming the file and line.

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return c;
}

class BadInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto f = TestFederation::Start({.sites = 4, .max_batch = 10});
    ASSERT_TRUE(f.ok()) << f.status();
    fed_ = f->release();
  }
  static void TearDownTestSuite() {
    delete fed_;
    fed_ = nullptr;
  }
  static TestFederation* fed_;
};
TestFederation* BadInputTest::fed_ = nullptr;

TEST_F(BadInputTest, PeerCertificateNamingAnotherSiteIsDenied) {
  v1::HeartbeatRequest req;
  req.set_site("site-2");  // claims site-2 ...
  req.set_label(2);
  req.set_load(999);
  v1::HeartbeatReply reply;
  auto ctx = Ctx();
  grpc::Status st = PeerAs(*fed_, 0, "site-1")->Heartbeat(ctx.get(), req, &reply);  // ... with site-1's certificate
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  EXPECT_NE(st.error_message().find("site-1"), std::string::npos);
  // Nothing changed: site-0 still sees site-2's real load, not 999.
  v1::StatusReply s;
  auto c2 = fed_->Context();
  ASSERT_TRUE(fed_->Admin(0)->Status(c2.get(), v1::StatusRequest(), &s).ok());
  for (const auto& row : s.sites())
    if (row.site() == "site-2") {
      EXPECT_NE(row.load(), 999);
    }
}

TEST_F(BadInputTest, AdminCertificateIsNoPeer) {
  v1::HeartbeatRequest req;
  req.set_site("hyperfed-admin");
  v1::HeartbeatReply reply;
  auto ctx = Ctx();
  grpc::Status st = PeerAs(*fed_, 0, "admin")->Heartbeat(ctx.get(), req, &reply);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
}

TEST_F(BadInputTest, NegativeLoadIsInvalid) {
  v1::HeartbeatRequest req;
  req.set_site("site-1");
  req.set_label(1);
  req.set_load(-5);
  v1::HeartbeatReply reply;
  auto ctx = Ctx();
  grpc::Status st = PeerAs(*fed_, 0, "site-1")->Heartbeat(ctx.get(), req, &reply);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  v1::StatusReply s;
  auto c2 = fed_->Context();
  ASSERT_TRUE(fed_->Admin(0)->Status(c2.get(), v1::StatusRequest(), &s).ok());
  for (const auto& row : s.sites()) EXPECT_GE(row.load(), 0);
}

TEST_F(BadInputTest, LabelOutsideTheCubeIsInvalid) {
  v1::ExchangeRequest req;
  req.set_round_id("r1");
  req.set_epoch(1);
  req.set_kind(v1::ExchangeRequest::UP);
  req.set_from_label(1);
  v1::LoadRow* row = req.add_rows();
  row->set_label(9);  // a 2-cube has labels 0..3
  row->set_load(1);
  row->set_capacity(1);
  v1::ExchangeReply reply;
  auto ctx = Ctx();
  grpc::Status st = PeerAs(*fed_, 0, "site-1")->Exchange(ctx.get(), req, &reply);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();

  // Dimensions outside the cube, phases outside a plan, and an unknown kind
  // are refused too.
  // A job count only on PHASE_DONE, and never below 0.
  struct Bad {
    v1::ExchangeRequest::Kind kind;
    int dimension, phase;
    int64_t moved = 0;
  };
  for (Bad b : {Bad{v1::ExchangeRequest::EXCHANGE, 2, 0}, Bad{v1::ExchangeRequest::BARRIER, -1, 0},
                Bad{v1::ExchangeRequest::UP, 1, 0}, Bad{v1::ExchangeRequest::EXCHANGE, 0, 3},
                Bad{v1::ExchangeRequest::PHASE_DONE, 0, 0}, Bad{v1::ExchangeRequest::PHASE_DONE, 0, 500},
                Bad{v1::ExchangeRequest::PHASE_DONE, 0, 1, -1}, Bad{v1::ExchangeRequest::EXCHANGE, 0, 0, 3},
                Bad{v1::ExchangeRequest::KIND_UNSPECIFIED, 0, 0}}) {
    v1::ExchangeRequest bad;
    bad.set_round_id("r1");
    bad.set_epoch(1);
    bad.set_kind(b.kind);
    bad.set_dimension(b.dimension);
    bad.set_phase(b.phase);
    bad.set_moved(b.moved);
    bad.set_from_label(1);
    v1::ExchangeReply br;
    auto c = Ctx();
    grpc::Status s2 = PeerAs(*fed_, 0, "site-1")->Exchange(c.get(), bad, &br);
    EXPECT_EQ(s2.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << "kind " << b.kind << " dimension " << b.dimension << " phase " << b.phase << " moved " << b.moved << ": "
        << s2.error_message();
  }

  v1::StartRoundRequest start;
  start.set_round_id("r2");
  start.set_coordinator("site-1");
  start.set_dimension(2);
  start.set_mode("exact");
  start.set_epoch(1);
  start.set_deadline_unix_ms(absl::ToUnixMillis(absl::Now() + absl::Minutes(1)));
  start.add_fault_labels(7);
  v1::StartRoundReply sr;
  auto c2 = Ctx();
  st = PeerAs(*fed_, 0, "site-1")->StartRound(c2.get(), start, &sr);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
}

TEST_F(BadInputTest, BatchOverTheLimitIsRefusedAndSubmitsNothing) {
  const size_t before = ListJobs(*fed_, 0).size();
  v1::TransferRequest req;
  req.set_migration_id("site-1:bad-1");
  req.set_source_site("site-1");
  for (int i = 0; i < 11; ++i) {  // max_batch is 10
    v1::JobSpec* s = req.add_jobs();
    s->set_key(absl::StrCat("bad-", i));
    s->set_cores(1);
  }
  v1::TransferReply reply;
  auto ctx = Ctx();
  grpc::Status st = PeerAs(*fed_, 0, "site-1")->Transfer(ctx.get(), req, &reply);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_EQ(ListJobs(*fed_, 0).size(), before);

  // A spec without a key is refused too.
  v1::TransferRequest nokey;
  nokey.set_migration_id("site-1:bad-2");
  nokey.set_source_site("site-1");
  nokey.add_jobs()->set_cores(1);
  auto c2 = Ctx();
  st = PeerAs(*fed_, 0, "site-1")->Transfer(c2.get(), nokey, &reply);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_EQ(ListJobs(*fed_, 0).size(), before);
}

TEST_F(BadInputTest, AdminWithoutTokenOrCertificateIsUnauthenticated) {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = ReadFile(fed_->CertDir() + "/ca.pem");  // server-auth TLS only, no client certificate
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("site-0");
  auto stub = v1::Admin::NewStub(grpc::CreateCustomChannel(fed_->Endpoint(0), grpc::SslCredentials(o), args));
  v1::SubmitRequest req;
  req.set_count(5);
  v1::SubmitReply reply;
  const size_t before = ListJobs(*fed_, 0).size();
  auto ctx = Ctx();
  grpc::Status st = stub->Submit(ctx.get(), req, &reply);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << st.error_message();
  auto c2 = Ctx();
  c2->AddMetadata("authorization", "Bearer wrong-token");
  st = stub->Submit(c2.get(), req, &reply);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << st.error_message();
  EXPECT_EQ(ListJobs(*fed_, 0).size(), before);
  // With the token, the same channel works.
  auto c3 = Ctx();
  c3->AddMetadata("authorization", "Bearer " + fed_->Token());
  EXPECT_TRUE(stub->Submit(c3.get(), req, &reply).ok());
}

TEST_F(BadInputTest, BadAdminArgumentsAreInvalid) {
  v1::SubmitRequest req;
  req.set_count(0);
  v1::SubmitReply reply;
  auto ctx = fed_->Context();
  EXPECT_EQ(fed_->Admin(0)->Submit(ctx.get(), req, &reply).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::DrainRequest d;
  d.set_site("no-such-site");
  d.set_drain(true);
  v1::DrainReply dr;
  auto c2 = fed_->Context();
  EXPECT_EQ(fed_->Admin(0)->Drain(c2.get(), d, &dr).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(BadConfigTest, DaemonRefusesToStartNamingFileLineAndKey) {
  char dir[] = "/tmp/hyperfed-badcfg-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/site.yaml";
  std::ofstream(path) << "site: {id: site-a, label: 0, listen: \"127.0.0.1:7001\"}\n"
                      << "roster:\n"
                      << "  - {id: site-a, label: 0, endpoint: \"127.0.0.1:7001\"}\n"
                      << "  - {id: site-b, label: 1, endpoint: \"localhost\"}\n"
                      << "scheduler: {adapter: sim}\n"
                      << "state_dir: state\n"
                      << "security: {insecure: true}\n";
  const std::string cmd = HyperfeddPath() + " --config " + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[1024];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int st = pclose(p);
  EXPECT_NE(WEXITSTATUS(st), 0);
  EXPECT_NE(out.find(path + ":4:"), std::string::npos) << out;
  EXPECT_NE(out.find("roster[1].endpoint"), std::string::npos) << out;
  std::string rm = std::string("rm -rf ") + dir;
  EXPECT_EQ(std::system(rm.c_str()), 0);
}

}  // namespace
}  // namespace hyperfed::testing
