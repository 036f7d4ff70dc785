// hyperfedctl against a running federation, as an operator runs it; --json
// output is parsed by python3's json module.

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

// True when python3 parses `text` as JSON (each line, for JSON Lines) and
// the expression `check` (on `d`, the last object) holds.
bool JsonHolds(const std::string& text, const std::string& check, bool lines = false) {
  char path[] = "/tmp/hyperfed-json-XXXXXX";
  int fd = mkstemp(path);
  FILE* f = fdopen(fd, "w");
  fwrite(text.data(), 1, text.size(), f);
  fclose(f);
  const std::string load =
      lines ? "[json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]" : "json.load(open(sys.argv[1]))";
  const std::string cmd =
      absl::StrCat("python3 -c 'import json,sys; d=", load, "; sys.exit(0 if (", check, ") else 1)' ", path);
  int rc = std::system(cmd.c_str());
  unlink(path);
  return rc == 0;
}

class CtlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto f = TestFederation::Start({.sites = 4, .slots = {1, 2, 3, 4}});
    ASSERT_TRUE(f.ok()) << f.status();
    fed_ = f->release();
  }
  static void TearDownTestSuite() {
    delete fed_;
    fed_ = nullptr;
  }
  static std::string Ctl(int site, const std::string& args) {
    return absl::StrCat(HyperfedctlPath(), " --endpoint ", fed_->Endpoint(site), " --server-name ", fed_->SiteId(site),
                        " --ca ", fed_->CertDir(), "/ca.pem --token-file ", fed_->CertDir(), "/admin-token ", args);
  }
  static TestFederation* fed_;
};
TestFederation* CtlTest::fed_ = nullptr;

TEST_F(CtlTest, StatusJsonListsEverySite) {
  Out o = Shell(Ctl(0, "status --json"));
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_TRUE(JsonHolds(o.text, "len(d[\"sites\"]) == 4 and d[\"sites\"][0][\"state\"] == \"self\"")) << o.text;
  Out t = Shell(Ctl(1, "status"));
  ASSERT_EQ(t.code, 0) << t.text;
  EXPECT_NE(t.text.find("site-3"), std::string::npos) << t.text;
}

TEST_F(CtlTest, SubmitBalanceAndJobsAtAnotherSite) {
  Out s = Shell(Ctl(2, "submit --count 60 --duration 1h --site site-0 --json"));
  ASSERT_EQ(s.code, 0) << s.text;
  EXPECT_TRUE(JsonHolds(s.text, "len(d[\"ids\"]) == 60")) << s.text;
  Out b = Shell(Ctl(3, "balance --wait --json"));  // forwarded to the coordinator, site-0
  ASSERT_EQ(b.code, 0) << b.text;
  EXPECT_TRUE(JsonHolds(b.text, "d[\"final\"] and d[\"ok\"] and d[\"moved\"] > 0", /*lines=*/true)) << b.text;
  Out j = Shell(Ctl(1, "jobs --site site-3 --json"));
  ASSERT_EQ(j.code, 0) << j.text;
  EXPECT_TRUE(JsonHolds(j.text, "len(d[\"jobs\"]) > 0 and all(x[\"site\"] == \"site-3\" for x in d[\"jobs\"])"))
      << j.text;
  Out m = Shell(Ctl(0, "migrations --json"));
  ASSERT_EQ(m.code, 0) << m.text;
  EXPECT_TRUE(JsonHolds(m.text, "any(x[\"direction\"] == \"out\" for x in d[\"migrations\"])")) << m.text;
}

TEST_F(CtlTest, DryRunTopologyHealthDrainExplain) {
  Out d = Shell(Ctl(0, "balance --dry-run"));
  EXPECT_EQ(d.code, 0) << d.text;
  Out t = Shell(Ctl(0, "topology --dot"));
  ASSERT_EQ(t.code, 0) << t.text;
  EXPECT_NE(t.text.find("graph"), std::string::npos) << t.text;
  Out h = Shell(Ctl(1, "health"));
  EXPECT_EQ(h.code, 0) << h.text;
  ASSERT_EQ(Shell(Ctl(0, "drain site-2")).code, 0);
  Out st = Shell(Ctl(2, "status --json"));
  EXPECT_TRUE(
      JsonHolds(st.text, "[x for x in d[\"sites\"] if x[\"site\"] == \"site-2\"][0][\"state\"] == \"self,drained\""))
      << st.text;
  ASSERT_EQ(Shell(Ctl(0, "undrain site-2")).code, 0);
  Out jobs = Shell(Ctl(0, "jobs --json"));
  ASSERT_EQ(jobs.code, 0);
  Out e = Shell(Ctl(0, "explain no-such-job"));
  EXPECT_EQ(e.code, 0) << e.text;
  EXPECT_NE(e.text.find("unknown here"), std::string::npos) << e.text;
}

// The health service answers on the server's handler threads: no callback
// polling threads ("nexting_thread", what gRPC's built-in health service
// brings) hand calls over (docs/benchmarks.md, "Round latency").
TEST_F(CtlTest, HealthIsAnsweredOnHandlerThreadsAndWatchIsNotOffered) {
  auto health = grpc::health::v1::Health::NewStub(fed_->Channel(3));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service("hyperfed.v1.Peer");
  grpc::health::v1::HealthCheckResponse r;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(health->Check(&ctx, req, &r).ok());
  EXPECT_EQ(r.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  grpc::ClientContext watch_ctx;
  watch_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto watch = health->Watch(&watch_ctx, req);
  grpc::health::v1::HealthCheckResponse w;
  EXPECT_FALSE(watch->Read(&w));
  EXPECT_EQ(watch->Finish().error_code(), grpc::StatusCode::UNIMPLEMENTED);
  std::string threads;
  for (const auto& t : std::filesystem::directory_iterator(absl::StrCat("/proc/", fed_->Pid(3), "/task")))
    threads += ReadFile(t.path().string() + "/comm");
  EXPECT_EQ(threads.find("nexting"), std::string::npos) << threads;
}

TEST_F(CtlTest, UnreachableDaemonIsOneLineAndExitOne) {
  Out o = Shell(absl::StrCat(HyperfedctlPath(), " --endpoint 127.0.0.1:1 --insecure --timeout 2s status"));
  EXPECT_EQ(o.code, 1) << o.text;
  EXPECT_NE(o.text.find("cannot reach"), std::string::npos) << o.text;
  Out bad = Shell(Ctl(0, "frobnicate"));
  EXPECT_EQ(bad.code, 2) << bad.text;
  Out noauth = Shell(absl::StrCat(HyperfedctlPath(), " --endpoint ", fed_->Endpoint(0), " --server-name site-0 --ca ",
                                  fed_->CertDir(), "/ca.pem status"));
  EXPECT_EQ(noauth.code, 1) << noauth.text;
}

}  // namespace
}  // namespace hyperfed::testing

namespace hyperfed::testing {
namespace {

TEST_F(CtlTest, PrometheusEndpointServesCounters) {
  const std::string url = fed_->MetricsUrl(1);
  // The endpoint serves values rendered every 2 s (daemon/server/metrics_http.h):
  // scrape until the peers the federation saw at its start show.
  Out o;
  for (int i = 0; i < 20; ++i) {
    o = Fetch(url);
    if (o.code != 0 || o.text.find("hyperfed_peers_up 3") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ASSERT_EQ(o.code, 0) << o.text;
  for (const char* name :
       {"hyperfed_rounds_total", "hyperfed_round_duration_seconds_sum", "hyperfed_jobs_moved_out_total",
        "hyperfed_load", "hyperfed_capacity", "hyperfed_peers_up 3"})
    EXPECT_NE(o.text.find(name), std::string::npos) << name << "\n" << o.text;
}

}  // namespace
}  // namespace hyperfed::testing
