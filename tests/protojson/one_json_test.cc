// hyperfedctl --json and the web view's API give the same JSON for the same
// reply: a fake Admin service answers both, the web API over HTTP (the real
// WebView and its in-process gRPC call) and hyperfedctl's renderings of the
// very reply (client/output.h, what `hyperfedctl X --json` prints).

#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/output.h"
#include "daemon/protojson/proto_json.h"
#include "daemon/server/web.h"
#include "gtest/gtest.h"
#include "hyperfed/v1/hyperfed.grpc.pb.h"

namespace hyperfed {
namespace {

// Past 2^31: protobuf's own JSON mapping would make these strings.
constexpr int64_t kBig = 3'000'000'000;
constexpr int64_t kMillis = 1714564800000;

class FakeAdmin final : public v1::Admin::Service {
 public:
  FakeAdmin() {
    status.set_site("site-a");
    status.set_algorithm("exact");
    for (int i = 0; i < 2; ++i) {
      v1::SiteStatus* s = status.add_sites();
      s->set_site(i == 0 ? "site-a" : "site-\xc3\xa9\x1b[2J");  // UTF-8 and a control sequence
      s->set_label(i);
      s->set_state(i == 0 ? "self" : "up");
      s->set_load(i == 0 ? kBig : 0);
      s->set_capacity(i == 0 ? 2.5 : 1);
      s->set_load_per_capacity(i == 0 ? kBig / 2.5 : 0);
      s->set_age_ms(kMillis);
    }
    *topology.mutable_sites() = status.sites();
    topology.set_dimension(1);
    topology.set_mode("exact");
    topology.add_subcubes()->add_edges()->set_child(1);
    rounds.set_site("site-a");
    v1::Round* r = rounds.add_rounds();
    r->set_round_id("r-7");
    r->set_done(true);
    r->set_ok(true);
    r->set_started_ms(kMillis);
    r->set_moved(kBig);
    r->set_max_share_error_before(6);
    r->set_max_share_error_after(0.5);
    v1::Transfer* t = r->add_transfers();
    t->set_from(1);
    t->set_count(kBig);
    r->add_events("round r-7 finished");
    v1::LoadRow* row = r->add_before();
    row->set_label(1);
    row->set_load(kBig);
    row->add_free()->set_cores(4);
    v1::Migration* m = migrations.add_migrations();
    m->set_id("m-1");
    m->set_jobs(kBig);
    m->set_updated_ms(kMillis);
    m->add_job_keys("k1");
    v1::Job* j = jobs.add_jobs();
    j->set_id("17");
    j->set_site("site-a");
    j->set_queued_at_ms(kMillis);
    j->mutable_spec()->set_key("site-a-00ff");
    j->mutable_spec()->set_memory_mb(kBig);
    (*j->mutable_spec()->mutable_env())["HOME"] = "/home/alice";
    jobs.add_jobs()->set_id("18");  // no spec set
    explain.set_explanation("job 17: pending at site-a\nsecond line");
    waits.set_site("site-a");
    waits.set_started(kBig);
    waits.add_hours()->set_start_ms(kMillis);
    waits.mutable_placement()->add_to()->set_jobs(kBig);
  }

  grpc::Status Status(grpc::ServerContext*, const v1::StatusRequest*, v1::StatusReply* r) override {
    *r = status;
    return grpc::Status::OK;
  }
  grpc::Status Topology(grpc::ServerContext*, const v1::TopologyRequest*, v1::TopologyReply* r) override {
    *r = topology;
    return grpc::Status::OK;
  }
  grpc::Status Rounds(grpc::ServerContext*, const v1::RoundsRequest*, v1::RoundsReply* r) override {
    *r = rounds;
    return grpc::Status::OK;
  }
  grpc::Status Migrations(grpc::ServerContext*, const v1::MigrationsRequest*, v1::MigrationsReply* r) override {
    *r = migrations;
    return grpc::Status::OK;
  }
  grpc::Status Jobs(grpc::ServerContext*, const v1::JobsRequest*, v1::JobsReply* r) override {
    *r = jobs;
    return grpc::Status::OK;
  }
  grpc::Status ExplainJob(grpc::ServerContext*, const v1::ExplainJobRequest*, v1::ExplainJobReply* r) override {
    *r = explain;
    return grpc::Status::OK;
  }
  grpc::Status Waits(grpc::ServerContext*, const v1::WaitsRequest*, v1::WaitsReply* r) override {
    *r = waits;
    return grpc::Status::OK;
  }

  v1::StatusReply status;
  v1::TopologyReply topology;
  v1::RoundsReply rounds;
  v1::MigrationsReply migrations;
  v1::JobsReply jobs;
  v1::ExplainJobReply explain;
  v1::WaitsReply waits;
};

class OneJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&admin_);
    grpc_ = b.BuildAndStart();
    ASSERT_TRUE(grpc_ && port > 0);
    server::WebView(grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()),
                    server::WebAccess::kLoopback)
        .Register(&http_);
    http_port_ = http_.bind_to_any_port("127.0.0.1");
    http_thread_ = std::thread([this] { http_.listen_after_bind(); });
    while (!http_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void TearDown() override {
    http_.stop();
    if (http_thread_.joinable()) http_thread_.join();
    if (grpc_) grpc_->Shutdown();
  }

  // The web API's answer to GET /api/v1/<call>.
  std::string Api(const std::string& call) {
    httplib::Client c("127.0.0.1", http_port_);
    auto r = c.Get("/api/v1/" + call);
    if (!r) return "(no answer)";
    EXPECT_EQ(r->status, 200) << call << ": " << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json") << call;
    return r->body;
  }

  FakeAdmin admin_;
  std::unique_ptr<grpc::Server> grpc_;
  httplib::Server http_;
  int http_port_ = 0;
  std::thread http_thread_;
};

TEST_F(OneJsonTest, HyperfedctlAndTheWebApiGiveTheSameJsonForTheSameReply) {
  const struct {
    std::string call;
    std::string ctl;  // what hyperfedctl --json prints for the same reply
    const google::protobuf::Message* reply;
  } cases[] = {
      {"status", client::StatusJson(admin_.status), &admin_.status},
      {"topology", client::TopologyJson(admin_.topology), &admin_.topology},
      {"rounds", client::RoundsJson(admin_.rounds), &admin_.rounds},
      {"migrations", client::MigrationsJson(admin_.migrations), &admin_.migrations},
      {"jobs", client::JobsJson(admin_.jobs), &admin_.jobs},
      {"explain?job=17", client::ExplainJson(admin_.explain), &admin_.explain},
      {"waits", client::WaitsJson(admin_.waits), &admin_.waits},
  };
  for (const auto& c : cases) {
    // Byte for byte: the same keys, order, numbers and escapes, and the one
    // encoder's.
    EXPECT_EQ(Api(c.call), c.ctl) << c.call;
    EXPECT_EQ(c.ctl, protojson::Encode(*c.reply)) << c.call;
  }
}

TEST_F(OneJsonTest, AnInt64AboveTwoToThe31IsAJsonNumberThroughBoth) {
  for (const std::string& text : {Api("rounds"), client::RoundsJson(admin_.rounds)}) {
    const protojson::Json j = protojson::Json::parse(text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << text;
    const protojson::Json& round = j["rounds"][0];
    EXPECT_TRUE(round["moved"].is_number_integer()) << text;
    EXPECT_EQ(round["moved"].get<int64_t>(), kBig) << text;
    EXPECT_EQ(round["transfers"][0]["count"].get<int64_t>(), kBig) << text;
    EXPECT_EQ(round["before"][0]["load"].get<int64_t>(), kBig) << text;
    EXPECT_EQ(round["started_ms"].get<int64_t>(), kMillis) << text;
    EXPECT_NE(text.find("\"moved\":3000000000,"), std::string::npos) << text;
  }
  for (const std::string& text : {Api("status"), client::StatusJson(admin_.status)}) {
    const protojson::Json j = protojson::Json::parse(text);
    EXPECT_TRUE(j["sites"][0]["load"].is_number_integer()) << text;
    EXPECT_EQ(j["sites"][0]["load"].get<int64_t>(), kBig) << text;
    EXPECT_EQ(j["sites"][1]["site"], "site-\xc3\xa9\x1b[2J") << text;
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << "escaped as \\u001b: " << text;
  }
  const protojson::Json w = protojson::Json::parse(Api("waits"));
  EXPECT_EQ(w["started"].get<int64_t>(), kBig);
  EXPECT_EQ(w["placement"]["to"][0]["jobs"].get<int64_t>(), kBig);
}

}  // namespace
}  // namespace hyperfed
