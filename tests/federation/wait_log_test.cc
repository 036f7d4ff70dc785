#include "daemon/federation/wait_log.h"

#include "gtest/gtest.h"

namespace hyperfed::federation {
namespace {

// 10:00:00 UTC on some day: hours start on the hour.
const absl::Time kTen = absl::FromUnixSeconds(1'700'000'000 / 3600 * 3600 + 10 * 3600);

scheduler::Job JobAt(const std::string& id, scheduler::JobState state, absl::Time queued) {
  scheduler::Job j;
  j.id = id;
  j.state = state;
  j.queued_at_ms = absl::ToUnixMillis(queued);
  return j;
}

TEST(WaitLogTest, HourlyMedianAndP95AreTheNearestRanks) {
  WaitLog log;
  // 100 starts in the hour from 10:00, waiting 1..100 s, given out of order.
  for (int i = 100; i >= 1; --i) log.AddStart(absl::Seconds(i), kTen + absl::Seconds(i));
  const WaitSummary s = log.Summary(kTen + absl::Minutes(30));
  ASSERT_EQ(s.hours.size(), static_cast<size_t>(WaitLog::kHours));
  const WaitHour& now = s.hours.back();
  EXPECT_EQ(now.start, kTen);
  EXPECT_EQ(now.started, 100);
  EXPECT_EQ(now.p50_ms, 50'000);
  EXPECT_EQ(now.p95_ms, 95'000);
  EXPECT_EQ(s.started, 100);
  EXPECT_EQ(s.p50_ms, 50'000);
  EXPECT_EQ(s.p95_ms, 95'000);
  for (size_t i = 0; i + 1 < s.hours.size(); ++i) {
    EXPECT_EQ(s.hours[i].started, 0);
    EXPECT_EQ(s.hours[i].start, kTen - absl::Hours(static_cast<int64_t>(s.hours.size() - 1 - i)));
  }
}

TEST(WaitLogTest, KeepsTheLastSixHoursOnly) {
  WaitLog log;
  log.AddStart(absl::Minutes(70), kTen - absl::Hours(6) + absl::Minutes(59));  // 04:59: out of the window at 10:30
  log.AddStart(absl::Minutes(5), kTen - absl::Hours(5));                       // 05:00: in it
  log.AddStart(absl::Minutes(1), kTen + absl::Minutes(1));
  WaitSummary s = log.Summary(kTen + absl::Minutes(30));
  EXPECT_EQ(s.started, 2);
  EXPECT_EQ(s.hours.front().start, kTen - absl::Hours(5));
  EXPECT_EQ(s.hours.front().started, 1);
  EXPECT_EQ(s.hours.front().p50_ms, 300'000);
  EXPECT_EQ(s.p95_ms, 300'000);
  EXPECT_EQ(s.p50_ms, 60'000);
  // An hour later the 05:00 hour has left too; its bucket is reused by
  // 11:00's starts, not added to them.
  log.AddStart(absl::Seconds(7), kTen + absl::Hours(1) + absl::Minutes(1));
  s = log.Summary(kTen + absl::Hours(1) + absl::Minutes(30));
  EXPECT_EQ(s.started, 2);
  EXPECT_EQ(s.hours.back().started, 1);
  EXPECT_EQ(s.hours.back().p95_ms, 7'000);
  // Seven hours on, nothing is left.
  s = log.Summary(kTen + absl::Hours(8));
  EXPECT_EQ(s.started, 0);
  EXPECT_EQ(s.p50_ms, 0);
}

TEST(WaitLogTest, MemoryIsBoundedAndBusyHoursAreSampledUniformly) {
  WaitLog log;
  // 20 hours of 5,000 starts each, waits 0..9.999 s evenly.
  for (int h = 0; h < 20; ++h)
    for (int i = 0; i < 5000; ++i)
      log.AddStart(absl::Milliseconds((i * 7919) % 10000), kTen + absl::Hours(h) + absl::Milliseconds(i));
  EXPECT_LE(log.SamplesHeld(), WaitLog::kHours * WaitLog::kSamplePerHour);
  const WaitSummary s = log.Summary(kTen + absl::Hours(19));
  EXPECT_EQ(s.started, WaitLog::kHours * 5000) << "starts are counted exactly";
  for (const WaitHour& h : s.hours) {
    EXPECT_EQ(h.started, 5000);
    EXPECT_NEAR(h.p50_ms, 5000, 500);
    EXPECT_NEAR(h.p95_ms, 9500, 300);
  }
}

TEST(WaitLogTest, OverTheWindowEachHourWeighsItsStarts) {
  WaitLog log;
  // 09:00: 3,000 starts of 10 s (a sample of 1,000 kept); 10:00: 100 of
  // 1 h: 3% of the starts (9% of the waits kept).
  for (int i = 0; i < 3000; ++i) log.AddStart(absl::Seconds(10), kTen - absl::Hours(1));
  for (int i = 0; i < 100; ++i) log.AddStart(absl::Hours(1), kTen);
  const WaitSummary s = log.Summary(kTen);
  EXPECT_EQ(s.started, 3100);
  EXPECT_EQ(s.p50_ms, 10'000);
  EXPECT_EQ(s.p95_ms, 10'000) << "100 of 3,100 starts are under 5%";
  EXPECT_EQ(s.hours.back().p50_ms, 3'600'000);
}

TEST(WaitLogTest, AJobStartsWhenFirstListedRunningAndWaitedSinceItQueuedHere) {
  WaitLog log;
  using scheduler::JobState;
  const absl::Time t0 = kTen + absl::Minutes(1);
  // The first look: what runs already started before the daemon: no start.
  log.Observe({JobAt("old", JobState::kRunning, t0 - absl::Hours(2)), JobAt("a", JobState::kPending, t0),
               JobAt("b", JobState::kHeld, t0)},
              t0);
  EXPECT_EQ(log.Summary(t0).started, 0);
  // A minute on: a started after a minute; c queued and started between the
  // looks (20 s ago); b waits on; old runs on (not a start).
  const absl::Time t1 = t0 + absl::Minutes(1);
  log.Observe({JobAt("old", JobState::kRunning, t0 - absl::Hours(2)), JobAt("a", JobState::kRunning, t0),
               JobAt("b", JobState::kHeld, t0), JobAt("c", JobState::kRunning, t1 - absl::Seconds(20))},
              t1);
  WaitSummary s = log.Summary(t1);
  EXPECT_EQ(s.started, 2);
  EXPECT_EQ(s.p50_ms, 20'000);
  EXPECT_EQ(s.p95_ms, 60'000);
  // a is requeued (pending again, still listed) and runs again: one start.
  // b starts after three minutes; old and c are done (gone from the list).
  const absl::Time t2 = t1 + absl::Minutes(1);
  log.Observe({JobAt("a", JobState::kPending, t0), JobAt("b", JobState::kHeld, t0)}, t2);
  const absl::Time t3 = t2 + absl::Minutes(1);
  log.Observe({JobAt("a", JobState::kRunning, t0), JobAt("b", JobState::kRunning, t0)}, t3);
  s = log.Summary(t3);
  EXPECT_EQ(s.started, 3);
  EXPECT_EQ(s.p95_ms, 180'000);
  // A job that left and came back under the same id (a move out and back)
  // starts anew.
  const absl::Time t4 = t3 + absl::Minutes(1);
  log.Observe({}, t4);
  log.Observe({JobAt("a", JobState::kRunning, t4)}, t4 + absl::Seconds(5));
  EXPECT_EQ(log.Summary(t4).started, 4);
}

}  // namespace
}  // namespace hyperfed::federation
