// The replay trusts EasyForecastStarts as the start a job will get when
// nothing else arrives (perfect estimates): check it against EasyStartNow
// driven event by event, on random clusters.

#include <algorithm>
#include <random>
#include <vector>

#include "daemon/balance/easy.h"
#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

TEST(EasyForecastReplayTest, ForecastIsWhatEasyDoesWhenNothingArrives) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t cores = 1 + static_cast<int64_t>(rng() % 32);
    std::vector<RunningJob> running;
    int64_t used = 0;
    while (true) {
      const int64_t c = 1 + static_cast<int64_t>(rng() % cores);
      if (used + c > cores || rng() % 4 == 0) break;
      used += c;
      running.push_back({c, 1 + static_cast<int64_t>(rng() % 100)});
    }
    std::vector<QueuedJob> queue(rng() % 12);
    for (QueuedJob& q : queue) q = {1 + static_cast<int64_t>(rng() % cores), 1 + static_cast<int64_t>(rng() % 100)};
    const EasyForecast f = EasyForecastStarts(cores, 0, running, queue);
    // Drive EasyStartNow at every end.
    std::vector<int64_t> start(queue.size(), kNeverStarts);
    std::vector<size_t> waiting(queue.size());
    for (size_t i = 0; i < queue.size(); ++i) waiting[i] = i;
    std::vector<RunningJob> live = running;
    int64_t t = 0;
    while (!waiting.empty()) {
      std::vector<QueuedJob> rest;
      for (size_t i : waiting) rest.push_back(queue[i]);
      std::vector<size_t> left;
      const std::vector<size_t> go = EasyStartNow(cores, t, live, rest);
      for (size_t k = 0, g = 0; k < waiting.size(); ++k) {
        if (g < go.size() && go[g] == k) {
          ++g;
          start[waiting[k]] = t;
          live.push_back({queue[waiting[k]].cores, t + std::max<int64_t>(queue[waiting[k]].limit, 1)});
        } else {
          left.push_back(waiting[k]);
        }
      }
      waiting.swap(left);
      int64_t next = kNeverStarts;
      for (const RunningJob& r : live)
        if (r.end > t) next = std::min(next, r.end);
      if (next == kNeverStarts) break;
      t = next;
    }
    ASSERT_EQ(f.starts, start) << "trial " << trial;
    // The tail start of a job no wider than the cluster is never before the
    // last forecast start.
    for (int64_t w = 1; w <= cores; ++w) EXPECT_GE(TailStart(f, w), f.last_start);
  }
}

}  // namespace
}  // namespace hyperfed::balance
