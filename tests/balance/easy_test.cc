#include "daemon/balance/easy.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

using Starts = std::vector<size_t>;

// 10 cores, 6 busy until 100. The head (8 cores) cannot start: its
// reservation is at 100, with 10 - 8 = 2 cores extra.
TEST(EasyTest, BackfillsAJobThatEndsByTheReservation) {
  const std::vector<RunningJob> running{{6, 100}};
  // B (4 cores) ends at 100, the shadow time: it backfills; then no core is free.
  const std::vector<QueuedJob> q{{8, 50}, {4, 100}, {2, 200}};
  EXPECT_EQ(EasyStartNow(10, 0, running, q), (Starts{1}));
}

TEST(EasyTest, BackfillsALongJobOnlyOnTheExtraCores) {
  const std::vector<RunningJob> running{{6, 100}};
  // B would end at 101, past the reservation, and needs 4 > 2 extra cores:
  // it waits. C (2 cores, long) fits the extra cores: it starts and uses
  // them up, so D (2 cores, long) may not, though 2 cores are free now.
  const std::vector<QueuedJob> q{{8, 50}, {4, 101}, {2, 500}, {2, 500}, {1, 100}};
  // E (1 core) ends by the reservation: it starts.
  EXPECT_EQ(EasyStartNow(10, 0, running, q), (Starts{2, 4}));
}

TEST(EasyTest, StartsInOrderWhileTheHeadFits) {
  const std::vector<QueuedJob> q{{4, 10}, {4, 10}, {4, 10}, {1, 10}};
  // 4 + 4 fill 8 of 10; the third (4) does not fit; the fourth backfills
  // (it ends at 10, the shadow).
  EXPECT_EQ(EasyStartNow(10, 0, {}, q), (Starts{0, 1, 3}));
}

TEST(EasyTest, AJobWiderThanTheClusterBlocksNothing) {
  const std::vector<QueuedJob> q{{11, 10}, {10, 10}};
  EXPECT_EQ(EasyStartNow(10, 0, {}, q), (Starts{1}));
  const EasyForecast f = EasyForecastStarts(10, 0, {}, q);
  EXPECT_EQ(f.starts[0], kNeverStarts);
  EXPECT_EQ(f.starts[1], 0);
}

TEST(EasyTest, EndedJobsFreeTheirCores) {
  const std::vector<RunningJob> running{{10, 5}};
  EXPECT_EQ(EasyStartNow(10, 5, running, std::vector<QueuedJob>{{10, 1}}), (Starts{0}));
  EXPECT_EQ(EasyStartNow(10, 4, running, std::vector<QueuedJob>{{10, 1}}), (Starts{}));
}

// The hand-worked forecast: 10 cores, 6 busy until 100; A (8, 50), B (4,
// 100), C (2, 200). B backfills at 0 (ends at 100). At 100 A starts (until
// 150) and C beside it (until 300).
TEST(EasyTest, ForecastOfAHandWorkedQueue) {
  const std::vector<QueuedJob> q{{8, 50}, {4, 100}, {2, 200}};
  const EasyForecast f = EasyForecastStarts(10, 0, std::vector<RunningJob>{{6, 100}}, q);
  EXPECT_EQ(f.starts, (std::vector<int64_t>{100, 0, 100}));
  EXPECT_EQ(f.last_start, 100);
  EXPECT_EQ(f.free_cores, (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {150, 8}, {300, 10}}));
  // A new job behind the queue: never before the last start (100), and from
  // when it keeps its cores.
  EXPECT_EQ(TailStart(f, 1), 150);
  EXPECT_EQ(TailStart(f, 8), 150);
  EXPECT_EQ(TailStart(f, 9), 300);
  EXPECT_EQ(TailStart(f, 11), kNeverStarts);
}

TEST(EasyTest, AnIdleClusterStartsANewJobNow) {
  const EasyForecast f = EasyForecastStarts(8, 42, {}, {});
  EXPECT_EQ(TailStart(f, 8), 42);
  EXPECT_EQ(f.free_cores, (std::vector<std::pair<int64_t, int64_t>>{{42, 8}}));
}

// On random queues: no instant has more cores in use than the cluster, and
// the reservation is never broken: the first job that cannot start now
// starts exactly at the shadow time computed from the running jobs alone
// (backfilled jobs never delay it).
TEST(EasyTest, RandomQueuesNeverOverfillAndKeepTheReservation) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    const int64_t cores = 1 + rng() % 64;
    std::vector<RunningJob> running;
    int64_t used = 0;
    while (rng() % 3 != 0) {
      const int64_t c = 1 + rng() % cores;
      if (used + c > cores) break;
      used += c;
      running.push_back({c, 1 + static_cast<int64_t>(rng() % 1000)});
    }
    std::vector<QueuedJob> q(rng() % 30);
    for (auto& j : q) j = {1 + static_cast<int64_t>(rng() % cores), 1 + static_cast<int64_t>(rng() % 1000)};
    const EasyForecast f = EasyForecastStarts(cores, 0, running, q);
    for (const auto& [t, free] : f.free_cores) {
      ASSERT_GE(free, 0) << "trial " << trial << " at " << t;
      ASSERT_LE(free, cores);
    }
    ASSERT_EQ(f.free_cores.back().second, cores);
    // Every job started, at or after now.
    for (int64_t s : f.starts) ASSERT_NE(s, kNeverStarts);
    // The head: the first job not started at 0.
    const Starts now = EasyStartNow(cores, 0, running, q);
    size_t head = 0;
    while (head < q.size() && std::find(now.begin(), now.end(), head) != now.end()) ++head;
    if (head == q.size()) continue;
    // Its shadow from the running jobs and the in-order starts before it.
    std::vector<RunningJob> ends = running;
    int64_t free = cores - used;
    for (size_t i = 0; i < head; ++i) {
      ends.push_back({q[i].cores, q[i].limit});
      free -= q[i].cores;
    }
    std::sort(ends.begin(), ends.end(), [](auto& a, auto& b) { return a.end < b.end; });
    int64_t shadow = 0;
    for (const auto& r : ends) {
      if (free >= q[head].cores) break;
      free += r.cores;
      shadow = r.end;
    }
    ASSERT_EQ(f.starts[head], shadow) << "trial " << trial << ": the head's reservation was broken";
  }
}

}  // namespace
}  // namespace hyperfed::balance
