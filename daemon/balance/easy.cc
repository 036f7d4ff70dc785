#include "daemon/balance/easy.h"

#include <algorithm>
#include <map>

namespace hyperfed::balance {

std::vector<size_t> EasyStartNow(int64_t cores, int64_t now, absl::Span<const RunningJob> running,
                                 absl::Span<const QueuedJob> queue) {
  std::vector<size_t> started;
  int64_t free = cores;
  // Running jobs (those still running at now, and those started here), by end.
  std::vector<RunningJob> live;
  live.reserve(running.size() + 8);
  for (const RunningJob& r : running) {
    if (r.end > now) {
      free -= r.cores;
      live.push_back(r);
    }
  }
  size_t i = 0;
  // 1. Start in order while the head fits.
  for (; i < queue.size(); ++i) {
    const QueuedJob& q = queue[i];
    if (q.cores > cores) continue;  // never fits: skipped, reserves nothing
    if (q.cores > free) break;
    started.push_back(i);
    free -= q.cores;
    live.push_back({q.cores, now + std::max<int64_t>(q.limit, 1)});
  }
  if (i >= queue.size()) return started;
  // 2. The head's reservation: the shadow time and the extra cores.
  const int64_t head = queue[i].cores;
  std::sort(live.begin(), live.end(), [](const RunningJob& a, const RunningJob& b) { return a.end < b.end; });
  int64_t avail = free;
  int64_t shadow = now;
  for (const RunningJob& r : live) {
    if (avail >= head) break;
    avail += r.cores;
    shadow = r.end;
  }
  int64_t extra = avail - head;
  // 3. Backfill: a later job that fits now and either ends by the shadow
  // time or uses only extra cores.
  for (size_t j = i + 1; j < queue.size() && free > 0; ++j) {
    const QueuedJob& q = queue[j];
    if (q.cores > cores || q.cores > free) continue;
    const int64_t end = now + std::max<int64_t>(q.limit, 1);
    if (end <= shadow) {
      started.push_back(j);
      free -= q.cores;
    } else if (q.cores <= extra) {
      started.push_back(j);
      free -= q.cores;
      extra -= q.cores;
    }
  }
  std::sort(started.begin(), started.end());
  return started;
}

EasyForecast EasyForecastStarts(int64_t cores, int64_t now, absl::Span<const RunningJob> running,
                                absl::Span<const QueuedJob> queue) {
  EasyForecast f;
  f.now = now;
  f.cores = cores;
  f.last_start = now;
  f.starts.assign(queue.size(), kNeverStarts);
  // Every job's (start, end, cores) from now on, for the free-core profile.
  std::map<int64_t, int64_t> delta;  // time -> change in used cores
  std::vector<RunningJob> live;
  for (const RunningJob& r : running) {
    if (r.end <= now) continue;
    live.push_back(r);
    delta[now] += r.cores;
    delta[r.end] -= r.cores;
  }
  // The jobs still waiting are waiting[first..] (indices into queue) and
  // rest[first..] (the jobs themselves). Jobs that start only from the head
  // (no backfill, the usual case of a long queue) just move `first`, so an
  // event costs what it starts, not the queue's length.
  std::vector<size_t> waiting;
  std::vector<QueuedJob> rest;
  for (size_t i = 0; i < queue.size(); ++i) {
    if (queue[i].cores > cores) continue;  // never starts
    waiting.push_back(i);
    rest.push_back(queue[i]);
  }
  size_t first = 0;
  int64_t t = now;
  while (first < waiting.size()) {
    const std::vector<size_t> go =
        EasyStartNow(cores, t, live, absl::MakeConstSpan(rest).subspan(first));  // sorted, relative to first
    for (size_t k : go) {
      const size_t qi = waiting[first + k];
      const int64_t end = t + std::max<int64_t>(queue[qi].limit, 1);
      f.starts[qi] = t;
      f.last_start = std::max(f.last_start, t);
      live.push_back({queue[qi].cores, end});
      delta[t] += queue[qi].cores;
      delta[end] -= queue[qi].cores;
    }
    if (!go.empty() && go.back() + 1 == go.size()) {
      first += go.size();  // a prefix started
    } else if (!go.empty()) {
      size_t out = first, k = 0;
      for (size_t j = first; j < waiting.size(); ++j) {
        if (k < go.size() && go[k] == j - first) {
          ++k;
          continue;
        }
        waiting[out] = waiting[j];
        rest[out] = rest[j];
        ++out;
      }
      waiting.resize(out);
      rest.resize(out);
    }
    if (first >= waiting.size()) break;
    // The next event: the earliest end after t.
    int64_t next = kNeverStarts;
    for (const RunningJob& r : live)
      if (r.end > t) next = std::min(next, r.end);
    if (next == kNeverStarts) break;  // cannot happen: a waiting job fits an empty cluster
    t = next;
    live.erase(std::remove_if(live.begin(), live.end(), [t](const RunningJob& r) { return r.end <= t; }),
               live.end());
  }
  int64_t used = 0;
  f.free_cores.push_back({now, cores});
  for (const auto& [time, d] : delta) {
    used += d;
    if (time == now) {
      f.free_cores.back().second = cores - used;
    } else if (d != 0) {
      f.free_cores.push_back({time, cores - used});
    }
  }
  return f;
}

int64_t TailStart(const EasyForecast& forecast, int64_t width) {
  if (width > forecast.cores) return kNeverStarts;
  // The end of the last stretch with fewer than `width` cores free.
  int64_t from = forecast.now;
  for (size_t i = 0; i < forecast.free_cores.size(); ++i) {
    if (forecast.free_cores[i].second < width) {
      from = i + 1 < forecast.free_cores.size() ? forecast.free_cores[i + 1].first : kNeverStarts;
    }
  }
  return std::max(from, forecast.last_start);
}

}  // namespace hyperfed::balance
