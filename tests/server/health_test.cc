#include <gtest/gtest.h>

#include "daemon/server/services.h"

namespace hyperfed::server {
namespace {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;

grpc::Status Check(HealthService& h, const std::string& service, HealthCheckResponse* out) {
  grpc::ServerContext ctx;
  HealthCheckRequest req;
  req.set_service(service);
  return h.Check(&ctx, &req, out);
}

TEST(HealthTest, ServingForTheServerAndBothServicesUntilStopping) {
  HealthService h;
  for (const std::string name : {"", "hyperfed.v1.Peer", "hyperfed.v1.Admin"}) {
    HealthCheckResponse r;
    ASSERT_TRUE(Check(h, name, &r).ok()) << name;
    EXPECT_EQ(r.status(), HealthCheckResponse::SERVING) << name;
  }
  h.SetNotServing();
  for (const std::string name : {"", "hyperfed.v1.Peer", "hyperfed.v1.Admin"}) {
    HealthCheckResponse r;
    ASSERT_TRUE(Check(h, name, &r).ok()) << name;
    EXPECT_EQ(r.status(), HealthCheckResponse::NOT_SERVING) << name;
  }
}

TEST(HealthTest, AnyOtherNameIsNotFound) {
  HealthService h;
  for (const std::string name : {"hyperfed.v1", "grpc.health.v1.Health", "hyperfed.v1.Peer "}) {
    HealthCheckResponse r;
    grpc::Status st = Check(h, name, &r);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND) << name;
    EXPECT_NE(st.error_message().find(name), std::string::npos) << st.error_message();
  }
  // A caller's name is quoted bounded and escaped, never copied whole.
  HealthCheckResponse r;
  grpc::Status st = Check(h, std::string(1 << 20, 'x') + "\n", &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_LT(st.error_message().size(), 200u);
}

}  // namespace
}  // namespace hyperfed::server
