// Runs the hyperfedctl binary the build made, as an operator would: against
// a closed port, with bad command lines, and against a fake Admin server in
// this process (the real daemon is the lead's integration tests' business).

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hyperfed/v1/hyperfed.grpc.pb.h"
#include "tests/client/json_check.h"

namespace hyperfed::client {
namespace {

struct Result {
  int code;
  std::string out;
  std::string err;
};

// `env` is prepended to the command (like "HYPERFED_TOKEN=x").
Result Ctl(const std::string& args, const std::string& env = "") {
  const char* bin = std::getenv("HYPERFEDCTL");
  char err_template[] = "/tmp/hyperfedctl-err-XXXXXX";
  int fd = mkstemp(err_template);
  close(fd);
  // env -u keeps the caller's environment from leaking into the test.
  std::string cmd = absl::StrCat("env -u HYPERFED_ENDPOINT -u HYPERFED_TOKEN ", env, " ", bin ? bin : HYPERFEDCTL_PATH,
                                 " ", args, " 2>", err_template);
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int st = pclose(p);
  std::stringstream err;
  err << std::ifstream(err_template).rdbuf();
  std::remove(err_template);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out, err.str()};
}

int Lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// A port nothing listens on: bound, then closed.
int ClosedPort() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

TEST(CtlCliTest, ClosedPortIsExitOneWithOneLine) {
  const std::string ep = absl::StrCat("127.0.0.1:", ClosedPort());
  for (const char* tls : {"--insecure", ""}) {
    Result r = Ctl(absl::StrCat("status --timeout 5s --endpoint ", ep, " ", tls));
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.err, absl::StrCat("hyperfedctl: cannot reach ", ep, ": connection refused (is hyperfedd running?)\n"));
    EXPECT_EQ(r.out, "");
  }
  // The endpoint can come from the environment too.
  Result r = Ctl("health --insecure", "HYPERFED_ENDPOINT=" + ep);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot reach " + ep), std::string::npos) << r.err;
}

TEST(CtlCliTest, UsageErrorsAreExitTwoWithOneLineNamingTheProblem) {
  const char* cases[][2] = {
      {"", "no command"},
      {"frobnicate", "'frobnicate'"},
      {"status --frobnicate", "--frobnicate"},
      {"jobs --limit 3", "--limit"},
      {"migrations --limit x", "--limit: 'x'"},
      {"submit --count 3 --duration 30", "--duration: '30'"},
      {"submit --duration 30s", "--count"},
      {"submit --count 1 --duration 1m --time-limit soon", "--time-limit: 'soon'"},
      {"drain", "SITE"},
      {"status --timeout soon", "--timeout"},
      {"status --endpoint nowhere", "--endpoint"},
      {"status --ca /nonexistent/ca.pem", "--ca: cannot read '/nonexistent/ca.pem'"},
      {"status --token-file /nonexistent/token", "--token-file"},
      {"help nope", "'nope'"},
      {"--dot topology", "--dot goes after the command"},
      {"completion zsh", "'zsh'"},
  };
  for (auto& c : cases) {
    Result r = Ctl(c[0]);
    EXPECT_EQ(r.code, 2) << c[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c[1]), std::string::npos) << c[0] << ": " << r.err;
    EXPECT_EQ(Lines(r.err), 1) << c[0] << ": " << r.err;
    EXPECT_EQ(r.err.rfind("hyperfedctl: ", 0), 0u) << r.err;
    EXPECT_EQ(r.out, "") << c[0];
  }
}

TEST(CtlCliTest, HelpPrintsUsage) {
  Result r = Ctl("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("usage: hyperfedctl COMMAND"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("force-release MIGRATION_ID"), std::string::npos) << r.out;
  r = Ctl("help balance");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--dry-run"), std::string::npos) << r.out;
  EXPECT_EQ(Ctl("submit --help").out, Ctl("help submit").out);
  EXPECT_EQ(Ctl("-h drain").out, Ctl("help drain").out);
}

TEST(CtlCliTest, CompletionPrintsABashScript) {
  Result r = Ctl("completion bash");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("complete -F "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" hyperfedctl\n"), std::string::npos) << r.out;
}

// ------------------------------------------------------------------ fake daemon

constexpr char kToken[] = "s3cret";

class FakeAdmin final : public v1::Admin::Service {
 public:
  grpc::Status Status(grpc::ServerContext* ctx, const v1::StatusRequest*, v1::StatusReply* r) override {
    if (auto st = Auth(ctx); !st.ok()) return st;
    r->set_site("site-a");
    r->set_algorithm("exact");
    r->set_last_round("r-1");
    r->set_last_round_summary("round r-1: moved 0 jobs");
    const char* names[] = {"site-a", "site-b"};
    for (int i = 0; i < 2; ++i) {
      v1::SiteStatus* s = r->add_sites();
      s->set_site(names[i]);
      s->set_label(i);
      s->set_state(i == 0 ? "self" : "up");
      s->set_load(i == 0 ? 8 : 0);
      s->set_capacity(2);
      s->set_load_per_capacity(i == 0 ? 4 : 0);
      // site-b's endpoint: nothing listens there.
      s->set_endpoint(i == 0 ? self_endpoint : "127.0.0.1:1");
    }
    return grpc::Status::OK;
  }
  std::string self_endpoint;

  grpc::Status Jobs(grpc::ServerContext* ctx, const v1::JobsRequest* req, v1::JobsReply*) override {
    // Slow on purpose: the CLI's --timeout must end the call.
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    return grpc::Status::OK;
  }

  grpc::Status Balance(grpc::ServerContext* ctx, const v1::BalanceRequest* req,
                       grpc::ServerWriter<v1::RoundEvent>* w) override {
    if (auto st = Auth(ctx); !st.ok()) return st;
    v1::RoundEvent e;
    e.set_round_id("r-2");
    e.set_message("site-a: round r-2 started");
    w->Write(e);
    if (!req->wait()) return grpc::Status::OK;
    e.set_message("site-a: exchanged dimension 0\nsite-b: exchanged dimension 0");
    w->Write(e);
    e.set_message("round r-2 done");
    e.set_final(true);
    e.set_ok(!req->dry_run());  // a dry run "fails" here to test the exit status
    for (int i = 0; i < 2; ++i) {
      v1::LoadRow* b = e.add_before();
      b->set_label(i);
      b->set_load(i == 0 ? 8 : 0);
      b->set_capacity(2);
      v1::LoadRow* a = e.add_after();
      a->set_label(i);
      a->set_load(4);
      a->set_capacity(2);
    }
    v1::Transfer* t = e.add_transfers();
    t->set_step(0);
    t->set_from(0);
    t->set_to(1);
    t->set_count(4);
    e.set_moved(4);
    e.set_steps(1);
    e.set_messages(2);
    e.set_max_share_error_before(2);
    e.set_max_share_error_after(0);
    w->Write(e);
    return grpc::Status::OK;
  }

  grpc::Status Drain(grpc::ServerContext* ctx, const v1::DrainRequest* req, v1::DrainReply*) override {
    if (auto st = Auth(ctx); !st.ok()) return st;
    if (req->site() != "site-a" && req->site() != "site-b")
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "site '" + req->site() + "' is not in the roster");
    return grpc::Status::OK;
  }

  grpc::Status Submit(grpc::ServerContext* ctx, const v1::SubmitRequest* req, v1::SubmitReply* r) override {
    if (auto st = Auth(ctx); !st.ok()) return st;
    {
      std::lock_guard<std::mutex> l(mu_);
      last_submit_ = *req;
    }
    for (int i = 0; i < req->count(); ++i) {
      r->add_ids(absl::StrCat(100 + i));
      r->add_keys(absl::StrCat("site-a-k", i));
    }
    return grpc::Status::OK;
  }

  grpc::Status ForceRelease(grpc::ServerContext* ctx, const v1::ForceReleaseRequest* req,
                            v1::ForceReleaseReply* r) override {
    if (auto st = Auth(ctx); !st.ok()) return st;
    r->set_warning("these jobs may now run at both sites");
    return grpc::Status::OK;
  }

  grpc::Status Waits(grpc::ServerContext* ctx, const v1::WaitsRequest*, v1::WaitsReply* r) override {
    if (auto st = Auth(ctx); !st.ok()) return st;
    r->set_site("site-a");
    v1::WaitHour* h = r->add_hours();
    h->set_start_ms(1714564800000);
    h->set_started(4);
    h->set_p50_ms(30'000);
    h->set_p95_ms(90'000);
    r->set_started(4);
    r->set_p50_ms(30'000);
    r->set_p95_ms(90'000);
    v1::PlacedAt* a = r->mutable_placement()->add_to();
    a->set_site("site-b");
    a->set_jobs(2);
    return grpc::Status::OK;
  }

  v1::SubmitRequest last_submit() {
    std::lock_guard<std::mutex> l(mu_);
    return last_submit_;
  }

 private:
  static grpc::Status Auth(grpc::ServerContext* ctx) {
    auto it = ctx->client_metadata().find("authorization");
    if (it == ctx->client_metadata().end())
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "admin calls need a bearer token (--token)");
    if (std::string(it->second.data(), it->second.size()) != absl::StrCat("Bearer ", kToken))
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong admin token");
    return grpc::Status::OK;
  }

  std::mutex mu_;
  v1::SubmitRequest last_submit_;
};

class CtlFakeDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&admin_);
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    server_->GetHealthCheckService()->SetServingStatus("hyperfed.v1.Admin", true);
    flags_ = absl::StrCat("--insecure --endpoint 127.0.0.1:", port, " --token ", kToken, " ");
    endpoint_ = absl::StrCat("127.0.0.1:", port);
    admin_.self_endpoint = endpoint_;
  }
  void TearDown() override { server_->Shutdown(absl::ToChronoTime(absl::Now())); }

  FakeAdmin admin_;
  std::unique_ptr<grpc::Server> server_;
  std::string flags_, endpoint_;
};

#define EXPECT_JSON(text, asserts)                                                       \
  do {                                                                                   \
    auto check_ = testing::CheckJsonLines(text, asserts);                                \
    if (!check_) GTEST_SKIP() << "python3 not found: cannot parse the JSON to check it"; \
    EXPECT_EQ(*check_, "") << "JSON: " << (text);                                        \
  } while (0)

TEST_F(CtlFakeDaemonTest, StatusTableAndJson) {
  Result r = Ctl(flags_ + "status");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("site-a  0 (0)  self      8         2     4.000  -"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("algorithm: exact"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("round r-1: moved 0 jobs"), std::string::npos) << r.out;
  r = Ctl(flags_ + "status --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Lines(r.out), 1);
  EXPECT_JSON(r.out, "assert [s['site'] for s in docs[0]['sites']] == ['site-a', 'site-b']");
}

TEST_F(CtlFakeDaemonTest, TokenComesFromFlagFileOrEnvironmentAndAWrongOneIsRefused) {
  Result r = Ctl(absl::StrCat("status --insecure --endpoint ", endpoint_), absl::StrCat("HYPERFED_TOKEN=", kToken));
  EXPECT_EQ(r.code, 0) << r.err;
  char t[] = "/tmp/hyperfedctl-token-XXXXXX";
  int fd = mkstemp(t);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "s3cret\n", 7), 7);
  close(fd);
  r = Ctl(absl::StrCat("status --insecure --endpoint ", endpoint_, " --token-file ", t));
  std::remove(t);
  EXPECT_EQ(r.code, 0) << r.err;

  r = Ctl(absl::StrCat("status --insecure --endpoint ", endpoint_, " --token wrong"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "hyperfedctl: wrong admin token\n");
  r = Ctl(absl::StrCat("status --insecure --endpoint ", endpoint_));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "hyperfedctl: admin calls need a bearer token (--token)\n");
}

TEST_F(CtlFakeDaemonTest, BalanceWaitPrintsEventsThenTheTable) {
  Result r = Ctl(flags_ + "balance --wait");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "round r-2\n"
            "site-a: round r-2 started\n"
            "site-a: exchanged dimension 0\n"
            "site-b: exchanged dimension 0\n"
            "round r-2 done\n"
            "\nround r-2 finished\n"
            "SITE    LABEL  CAPACITY  LOAD BEFORE  LOAD AFTER\n"
            "site-a      0         2            8           4\n"
            "site-b      1         2            0           4\n"
            "\nmoved 4 jobs in 1 step, 2 messages\n"
            "max share error: 2 -> 0\n"
            "transfers:\n"
            "  step 0: 0 -> 1: 4 jobs\n");
}

TEST_F(CtlFakeDaemonTest, BalanceWaitJsonIsOneObjectPerEvent) {
  Result r = Ctl(flags_ + "balance --wait --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Lines(r.out), 3) << r.out;
  EXPECT_JSON(r.out,
              "assert [d['final'] for d in docs] == [False, False, True]\n"
              "f = docs[2]\n"
              "assert f['moved'] == 4 and [row['site'] for row in f['table']] == ['site-a', 'site-b']\n"
              "assert [row['load_after'] for row in f['table']] == [4, 4]\n");
}

TEST_F(CtlFakeDaemonTest, BalanceWithoutWaitPrintsTheRoundAndFirstEvent) {
  Result r = Ctl(flags_ + "balance");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "round r-2\nsite-a: round r-2 started\n");
}

TEST_F(CtlFakeDaemonTest, ARoundThatEndsEarlyIsExitOne) {
  Result r = Ctl(flags_ + "balance --wait --dry-run");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("round r-2 ended early"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "hyperfedctl: round r-2 ended early (see its events)\n");
}

TEST_F(CtlFakeDaemonTest, SubmitSendsWhatTheOperatorAsked) {
  Result r = Ctl(flags_ + "submit --count 3 --duration 1m30s --name batch --cores 2 --site site-a");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("submitted 3 jobs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("102  site-a-k2"), std::string::npos) << r.out;
  v1::SubmitRequest s = admin_.last_submit();
  EXPECT_EQ(s.count(), 3);
  EXPECT_EQ(s.duration_ms(), 90000);
  EXPECT_EQ(s.name(), "batch");
  EXPECT_EQ(s.cores(), 2);
  EXPECT_EQ(s.site(), "site-a");
  EXPECT_EQ(s.time_limit_ms(), 0);  // none given
}

TEST_F(CtlFakeDaemonTest, SubmitSendsTheTimeLimit) {
  Result r = Ctl(flags_ + "submit --count 1 --duration 90s --time-limit 2h");
  ASSERT_EQ(r.code, 0) << r.err;
  v1::SubmitRequest s = admin_.last_submit();
  EXPECT_EQ(s.duration_ms(), 90000);
  EXPECT_EQ(s.time_limit_ms(), 7'200'000);
  r = Ctl(flags_ + "submit --count 1 --duration 1s --time-limit 1500us");  // rounded up, never below
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(admin_.last_submit().time_limit_ms(), 2);
}

TEST_F(CtlFakeDaemonTest, DaemonRefusalsPrintTheirMessage) {
  Result r = Ctl(flags_ + "drain site-z");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "hyperfedctl: site 'site-z' is not in the roster\n");
  r = Ctl(flags_ + "drain site-a");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("site-a drained"), std::string::npos);
  // Another site's drain goes to that site itself (no daemon passes the
  // operator's token on), at the endpoint the site asked knows for it.
  r = Ctl(flags_ + "drain site-b");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot reach 127.0.0.1:1"), std::string::npos) << r.err;
  r = Ctl(flags_ + "explain k1");  // the fake does not implement it
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("does not serve this call"), std::string::npos) << r.err;
}

TEST_F(CtlFakeDaemonTest, WaitsPrintsTheHoursAndWhereJobsWerePlaced) {
  Result r = Ctl(flags_ + "waits");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("jobs started at site-a in the last 1 hours: 4, waited p50 30s, p95 1m30s"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("2024-05-01 12:00:00Z        4  30s  1m30s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("site-b        2"), std::string::npos) << r.out;
  r = Ctl(flags_ + "waits --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_JSON(r.out, "assert docs[0]['placement']['to'][0]['jobs'] == 2 and docs[0]['hours'][0]['p50_ms'] == 30000");
  r = Ctl(absl::StrCat("waits --insecure --endpoint ", endpoint_, " --token wrong"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "hyperfedctl: wrong admin token\n");
}

TEST_F(CtlFakeDaemonTest, ForceReleasePrintsTheWarning) {
  Result r = Ctl(flags_ + "force-release m-1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "released migration m-1\nwarning: these jobs may now run at both sites\n");
}

TEST_F(CtlFakeDaemonTest, TimeoutEndsASlowCall) {
  Result r = Ctl(flags_ + "jobs --timeout 200ms");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, absl::StrCat("hyperfedctl: no answer from ", endpoint_,
                                " within 200ms (is hyperfedd running? --timeout gives it longer)\n"));
}

TEST_F(CtlFakeDaemonTest, TlsAgainstAPlainTextDaemonIsOneLine) {
  Result r = Ctl(absl::StrCat("status --timeout 5s --endpoint ", endpoint_, " --token ", kToken));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("hyperfedctl: cannot reach " + endpoint_ + ": ", 0), 0u) << r.err;
}

TEST_F(CtlFakeDaemonTest, HealthChecksTheServerAndBothServices) {
  Result r = Ctl(flags_ + "health");
  EXPECT_EQ(r.code, 1) << "Peer is not registered in the fake";
  EXPECT_NE(r.out.find("hyperfed.v1.Admin  SERVING"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hyperfed.v1.Peer   SERVICE_UNKNOWN"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "hyperfedctl: not serving: hyperfed.v1.Peer\n");
  server_->GetHealthCheckService()->SetServingStatus("hyperfed.v1.Peer", true);
  r = Ctl(flags_ + "health --json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_JSON(r.out, "assert docs[0]['serving'] is True and len(docs[0]['services']) == 3");
}

}  // namespace
}  // namespace hyperfed::client
