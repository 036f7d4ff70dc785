#include "daemon/federation/wait_log.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace hyperfed::federation {
namespace {

// The nearest-rank q-quantile of waits each weighing what its weight says:
// the least wait whose cumulative weight reaches q of the total.
int64_t Quantile(std::vector<std::pair<int64_t, double>> weighed, double q) {
  if (weighed.empty()) return 0;
  std::sort(weighed.begin(), weighed.end());
  double total = 0;
  for (const auto& [w, weight] : weighed) total += weight;
  const double want = q * total;
  double sum = 0;
  for (const auto& [w, weight] : weighed) {
    sum += weight;
    if (sum >= want - 1e-9 * total) return w;
  }
  return weighed.back().first;
}

}  // namespace

int64_t WaitLog::HourOf(absl::Time t) {
  return static_cast<int64_t>(std::floor(absl::ToDoubleSeconds(t - absl::UnixEpoch()) / 3600.0));
}

void WaitLog::Observe(const std::vector<scheduler::Job>& jobs, absl::Time now) {
  std::vector<absl::Duration> starts;
  {
    std::lock_guard<std::mutex> l(mu_);
    std::set<std::string> next;
    for (const scheduler::Job& j : jobs) {
      const bool runs = j.state == scheduler::JobState::kRunning;
      if (!runs && !started_.count(j.id)) continue;
      next.insert(j.id);
      // Started since the last look; before the first, it ran already.
      if (runs && looked_ && !started_.count(j.id) && j.queued_at_ms > 0)
        starts.push_back(std::max(absl::ZeroDuration(), now - absl::FromUnixMillis(j.queued_at_ms)));
    }
    started_ = std::move(next);
    looked_ = true;
  }
  for (absl::Duration w : starts) AddStart(w, now);
}

void WaitLog::AddStart(absl::Duration wait, absl::Time now) {
  const int64_t hour = HourOf(now);
  const int64_t ms = absl::ToInt64Milliseconds(std::max(wait, absl::ZeroDuration()));
  std::lock_guard<std::mutex> l(mu_);
  Bucket& b = buckets_[static_cast<size_t>(((hour % kHours) + kHours) % kHours)];
  if (b.hour != hour) b = Bucket{hour, 0, {}};
  ++b.started;
  if (b.waits_ms.size() < kSamplePerHour) {
    b.waits_ms.push_back(ms);
    return;
  }
  // Reservoir sampling: the n-th start replaces a kept one with
  // probability kSamplePerHour / n.
  std::uniform_int_distribution<int64_t> pick(0, b.started - 1);
  if (const int64_t i = pick(rng_); i < static_cast<int64_t>(kSamplePerHour)) b.waits_ms[static_cast<size_t>(i)] = ms;
}

WaitSummary WaitLog::Summary(absl::Time now) const {
  const int64_t last = HourOf(now);
  WaitSummary s;
  std::vector<std::pair<int64_t, double>> all;
  std::lock_guard<std::mutex> l(mu_);
  for (int64_t hour = last - kHours + 1; hour <= last; ++hour) {
    WaitHour h;
    h.start = absl::UnixEpoch() + absl::Hours(hour);
    const Bucket& b = buckets_[static_cast<size_t>(((hour % kHours) + kHours) % kHours)];
    if (b.hour == hour && b.started > 0) {
      std::vector<std::pair<int64_t, double>> mine;
      const double weight = static_cast<double>(b.started) / static_cast<double>(b.waits_ms.size());
      for (int64_t w : b.waits_ms) mine.emplace_back(w, 1.0);
      h.started = b.started;
      h.p50_ms = Quantile(mine, 0.5);
      h.p95_ms = Quantile(mine, 0.95);
      for (int64_t w : b.waits_ms) all.emplace_back(w, weight);
      s.started += b.started;
    }
    s.hours.push_back(h);
  }
  s.p50_ms = Quantile(all, 0.5);
  s.p95_ms = Quantile(std::move(all), 0.95);
  return s;
}

size_t WaitLog::SamplesHeld() const {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = 0;
  for (const Bucket& b : buckets_) n += b.waits_ms.size();
  return n;
}

}  // namespace hyperfed::federation
