// The job choice on real daemons (docs/algorithms.md, "Jobs that gain"):
// the daemon's default `gain` sends the jobs that start sooner elsewhere,
// never a job no other site can run (nor counts it as load), and keeps a job
// that would start later there.

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

constexpr int64_t kHour = 3'600'000;

// Waits until site 0's status shows `site`'s load as `load`.
bool WaitLoad(TestFederation& f, int site, int64_t load, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    v1::StatusReply st;
    auto ctx = f.Context();
    if (f.Admin(site)->Status(ctx.get(), v1::StatusRequest{}, &st).ok()) {
      for (const v1::SiteStatus& s : st.sites())
        if (s.label() == site && s.load() == load) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Site 0 (8 cores, busy for an hour) holds three 8-core jobs no other site
// (2 cores each) can run and twelve 1-core jobs. Its load is the twelve;
// the round's quotas (6, 2, 2, 2 by capacity 8:2:2:2, prefix floors:
// docs/algorithms.md, "Capacity weights and quotas") send six, which start
// at once at the idle sites, and the wide jobs stay.
TEST(JobChoiceTest, GainSendsJobsThatStartSoonerAndWideJobsStayUncounted) {
  const std::vector<int> slots{8, 2, 2, 2};
  auto f = TestFederation::Start({.sites = 4, .slots = slots, .job_choice = "gain"});
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  ASSERT_TRUE(Submit(fed, 0, 8, kHour).ok());
  ASSERT_TRUE(WaitRunning(fed, 0, 8, absl::Seconds(10)));
  ASSERT_TRUE(Submit(fed, 0, 3, kHour, /*cores=*/8).ok());
  ASSERT_TRUE(Submit(fed, 0, 12, kHour).ok());
  ASSERT_TRUE(WaitLoad(fed, 0, 12, absl::Seconds(10))) << "the load counts only the jobs another site can run";
  const auto before = AllKeys(fed);

  auto r = RunRound(fed, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok()) << r->message();
  EXPECT_EQ(r->moved(), 6) << r->message();
  int64_t wide_home = 0;
  for (const v1::Job& j : ListJobs(fed, 0)) wide_home += j.spec().cores() == 8 && j.state() == "pending";
  EXPECT_EQ(wide_home, 3) << "no site but site 0 can run them";
  for (int i = 1; i < 4; ++i)
    for (const v1::Job& j : ListJobs(fed, i)) EXPECT_EQ(j.spec().cores(), 1) << j.DebugString();
  EXPECT_EQ(AllKeys(fed), before) << "every job exactly once";
}

// Site 1's cores are busy for two hours, site 0's for one: each of site 0's
// pending jobs would start later at site 1. The plan (by count) sends four;
// gain keeps all of them home.
TEST(JobChoiceTest, AJobThatWouldStartLaterThereStays) {
  const std::vector<int> slots{4, 4};
  auto f = TestFederation::Start({.sites = 2, .slots = slots, .job_choice = "gain"});
  ASSERT_TRUE(f.ok()) << f.status();
  TestFederation& fed = **f;
  ASSERT_TRUE(Submit(fed, 0, 4, kHour).ok());
  ASSERT_TRUE(Submit(fed, 1, 4, 2 * kHour).ok());
  ASSERT_TRUE(WaitRunning(fed, 0, 4, absl::Seconds(10)));
  ASSERT_TRUE(WaitRunning(fed, 1, 4, absl::Seconds(10)));
  ASSERT_TRUE(Submit(fed, 0, 8, 600'000).ok());
  ASSERT_TRUE(WaitLoad(fed, 0, 8, absl::Seconds(10)));

  auto r = RunRound(fed, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok()) << r->message();
  EXPECT_EQ(r->moved(), 0) << r->message();
  EXPECT_NE(r->message().find("4 kept"), std::string::npos) << r->message();
  EXPECT_EQ(CountState(ListJobs(fed, 0), "pending"), 8);
}

}  // namespace
}  // namespace hyperfed::testing
