// The protocol version between sites (daemon/server/protocol.h).

#include "daemon/server/protocol.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace hyperfed::server {
namespace {

TEST(ProtocolTest, AMinorVersionApartTakesPartAMajorOneIsRefusedByName) {
  ASSERT_EQ(ProtocolVersion(), kProtocolVersion) << "HYPERFED_TEST_PROTOCOL is set in this test's environment";
  EXPECT_TRUE(CheckProtocol("1.0").ok());
  EXPECT_TRUE(CheckProtocol("").ok()) << "a build from before versions were sent is 1.0";
  EXPECT_TRUE(CheckProtocol("1.37").ok());
  absl::Status major = CheckProtocol("2.0");
  EXPECT_EQ(major.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(major.message().find(absl::StrCat("protocol 2.0 at the caller, ", kProtocolVersion, " here")),
            std::string::npos)
      << major;
  for (const char* bad : {"1", "x.y", "1.-1", "-1.0", "1.2.3", "99999999999999999999.0"})
    EXPECT_EQ(CheckProtocol(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
}

}  // namespace
}  // namespace hyperfed::server
