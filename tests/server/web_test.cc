// The web view's gate and error mapping, on a real HTTP server: who may
// connect (site.web), and what a failed Admin call becomes.

#include "daemon/server/web.h"

#include <httplib.h>

#include <thread>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace hyperfed::server {
namespace {

TEST(WebTest, LoopbackClientsAreThisMachinesOnly) {
  EXPECT_TRUE(IsLoopbackClient("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackClient("127.3.2.1"));
  EXPECT_TRUE(IsLoopbackClient("::1"));
  EXPECT_TRUE(IsLoopbackClient("::ffff:127.0.0.1"));
  EXPECT_FALSE(IsLoopbackClient("10.0.0.7"));
  EXPECT_FALSE(IsLoopbackClient("::ffff:10.0.0.7"));
  EXPECT_FALSE(IsLoopbackClient("fe80::1"));
  EXPECT_FALSE(IsLoopbackClient("128.0.0.1"));
  EXPECT_FALSE(IsLoopbackClient(""));
}

// DNS rebinding: a page whose name an attacker points at this address asks
// with its own name in Host.
TEST(WebTest, OnlyItsAddressLocalhostAndListedNamesAreAnswered) {
  const std::vector<std::string> listed = {"hyperfed.example.org"};
  for (const char* h : {"127.0.0.1:8300", "127.0.0.1", "[::1]:8300", "[::1]", "localhost:8300", "LOCALHOST",
                        "192.0.2.7:8300", "hyperfed.example.org", "HyperFed.Example.org:443"})
    EXPECT_TRUE(WebHostAllowed(h, listed)) << h;
  for (const char* h : {"", "evil.example:8300", "evil.example", "localhost.evil.example", "127.0.0.1.evil.example",
                        "[::1", "[::1]x", "127.0.0.1:x", "hyperfed.example.org.evil"})
    EXPECT_FALSE(WebHostAllowed(h, listed)) << h;
}

// Serves a WebView whose Admin channel leads nowhere.
class Served {
 public:
  explicit Served(WebAccess access) {
    WebView(grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()), access).Register(&http_);
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    while (!http_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Served() {
    http_.stop();
    thread_.join();
  }
  httplib::Result Get(const std::string& path, const httplib::Headers& headers = {}) {
    httplib::Client c("127.0.0.1", port_);
    return c.Get(path, headers);
  }

 private:
  httplib::Server http_;
  int port_ = 0;
  std::thread thread_;
};

TEST(WebTest, OffServesNothing) {
  Served s(WebAccess::kOff);
  auto r = s.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  r = s.Get("/api/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

TEST(WebTest, PageAndAssetsAreServedWithTheirTypes) {
  Served s(WebAccess::kLoopback);
  auto r = s.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(r->get_header_value("X-Frame-Options"), "DENY");
  r = s.Get("/style.css");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/css; charset=utf-8");
}

TEST(WebTest, ARequestForAnotherHostGetsNothing) {
  Served s(WebAccess::kOn);
  for (const std::string path : {"/", "/app.js", "/api/v1/status"}) {
    auto r = s.Get(path, {{"Host", "evil.example:8300"}});
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 403) << path;
    EXPECT_EQ(r->body.find("<html"), std::string::npos) << path;
  }
  auto r = s.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << "httplib names 127.0.0.1:port";
}

TEST(WebTest, AFailedAdminCallIsAnHttpErrorWithItsCodeAndMessage) {
  Served s(WebAccess::kOn);
  auto r = s.Get("/api/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  auto body = nlohmann::json::parse(r->body, nullptr, false);
  ASSERT_FALSE(body.is_discarded()) << r->body;
  EXPECT_EQ(body["code"], "UNAVAILABLE");
  EXPECT_FALSE(body["error"].get<std::string>().empty());
  // Checked before any call is made.
  r = s.Get("/api/v1/migrations?limit=ten");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(nlohmann::json::parse(r->body)["code"], "INVALID_ARGUMENT");
}

}  // namespace
}  // namespace hyperfed::server
