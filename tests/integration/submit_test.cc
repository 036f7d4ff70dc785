// Admin.Submit's time limit (issue 29, item 5): a job submitted with one
// carries it in its spec, the sim scheduler plans with it, and a limit
// that is negative or below the duration is refused with nothing submitted.

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

class SubmitTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto f = TestFederation::Start({.sites = 2, .slots = {2, 2}});
    ASSERT_TRUE(f.ok()) << f.status();
    fed_ = f->release();
  }
  static void TearDownTestSuite() {
    delete fed_;
    fed_ = nullptr;
  }

  static grpc::Status Submit(int site, const std::string& name, int cores, int64_t duration_ms, int64_t time_limit_ms) {
    v1::SubmitRequest req;
    req.set_count(1);
    req.set_name(name);
    req.set_cores(cores);
    req.set_duration_ms(duration_ms);
    req.set_time_limit_ms(time_limit_ms);
    v1::SubmitReply reply;
    auto ctx = fed_->Context();
    return fed_->Admin(site)->Submit(ctx.get(), req, &reply);
  }
  // The job named `name` at `site` (a default Job when there is none).
  static v1::Job Named(int site, const std::string& name) {
    for (const v1::Job& j : ListJobs(*fed_, site))
      if (j.spec().name() == name) return j;
    ADD_FAILURE() << "no job " << name << " at site " << site;
    return v1::Job();
  }

  static TestFederation* fed_;
};
TestFederation* SubmitTest::fed_ = nullptr;

constexpr int64_t kMinute = 60'000;

// Site 1, 2 cores. A (1 core, 1 h) runs; B (2 cores) waits for A and holds
// the reservation at A's end. C and D (1 core each) both run 10 min, which
// would end before A does; D has no limit (its run time is its limit) and
// backfills; C's limit of 2 h ends after the reservation, so EASY keeps it
// waiting (daemon/scheduler/sim_adapter.h).
TEST_F(SubmitTest, TheSimSchedulerPlansWithTheTimeLimit) {
  ASSERT_TRUE(Submit(1, "plan-a", 1, 60 * kMinute, 0).ok());
  ASSERT_TRUE(Submit(1, "plan-b", 2, 60 * kMinute, 0).ok());
  grpc::Status st = Submit(1, "plan-c", 1, 10 * kMinute, 120 * kMinute);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_TRUE(Submit(1, "plan-d", 1, 10 * kMinute, 0).ok());

  const v1::Job c = Named(1, "plan-c"), d = Named(1, "plan-d");
  EXPECT_EQ(c.spec().time_limit_s(), 7200);
  EXPECT_EQ(d.spec().time_limit_s(), 0);
  EXPECT_EQ(c.state(), "pending");
  EXPECT_EQ(d.state(), "running");
  EXPECT_EQ(Named(1, "plan-a").state(), "running");
  EXPECT_EQ(Named(1, "plan-b").state(), "pending");
}

TEST_F(SubmitTest, HyperfedctlSubmitsWithTheTimeLimitRoundedUpToSeconds) {
  Out o = Shell(absl::StrCat(HyperfedctlPath(), " --endpoint ", fed_->Endpoint(0), " --server-name ", fed_->SiteId(0),
                             " --ca ", fed_->CertDir(), "/ca.pem --token-file ", fed_->CertDir(),
                             "/admin-token submit --count 1 --duration 1m --time-limit 90500ms --name ctl-limit"));
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_EQ(Named(0, "ctl-limit").spec().time_limit_s(), 91);
  EXPECT_EQ(Named(0, "ctl-limit").spec().duration_ms(), kMinute);
}

TEST_F(SubmitTest, ANegativeOrTooShortLimitIsRefusedAndSubmitsNothing) {
  const size_t before = ListJobs(*fed_, 0).size();
  grpc::Status st = Submit(0, "bad", 1, kMinute, -1000);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  st = Submit(0, "bad", 1, kMinute, kMinute - 1);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_NE(st.error_message().find("59999"), std::string::npos) << st.error_message();
  EXPECT_NE(st.error_message().find("60000"), std::string::npos) << st.error_message();
  st = Submit(0, "bad", 1, kMinute, int64_t{400} * 24 * 60 * kMinute);  // over a year
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_EQ(ListJobs(*fed_, 0).size(), before);
  // The limit may equal the duration.
  st = Submit(0, "equal", 1, kMinute, kMinute);
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(Named(0, "equal").spec().time_limit_s(), 60);
}

}  // namespace
}  // namespace hyperfed::testing
