#include "daemon/balance/choice.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace hyperfed::balance {

int64_t StartProfile::WaitFor(int64_t cores, int64_t limit) const {
  if (cores > widest) return kNeverStarts;
  if (free.empty()) return 0;  // the site estimates nothing: taken as starting at once
  for (size_t i = 0; i < free.size(); ++i) {
    const int64_t start = free[i].first;
    bool fits = true;
    for (size_t j = i; j < free.size(); ++j) {
      if (limit > 0 && j > i && free[j].first >= start + limit) break;
      if (free[j].second < cores) {
        fits = false;
        break;
      }
    }
    if (fits) return start;
  }
  return kNeverStarts;
}

std::vector<int64_t> ProfileWidths(int64_t widest) {
  std::vector<int64_t> w;
  for (int64_t c = 1; c < widest && w.size() + 1 < kMaxProfileSteps; c *= 2) w.push_back(c);
  if (widest > 0) w.push_back(widest);
  return w;
}

absl::Status CheckStartProfile(const StartProfile& p, int64_t max_wait) {
  if (p.widest < 0) return absl::InvalidArgumentError(absl::StrCat("widest ", p.widest, " is negative"));
  if (p.free.size() > kMaxProfileSteps)
    return absl::InvalidArgumentError(
        absl::StrCat(p.free.size(), " steps in a start profile (at most ", kMaxProfileSteps, ")"));
  for (size_t i = 0; i < p.free.size(); ++i) {
    const auto& [offset, cores] = p.free[i];
    if (i == 0 ? offset != 0 : offset <= p.free[i - 1].first)
      return absl::InvalidArgumentError(absl::StrCat("start profile offsets not ascending from 0 at ", offset));
    if (offset > max_wait)
      return absl::InvalidArgumentError(absl::StrCat("start profile offset ", offset, " above ", max_wait));
    if (cores < 0 || cores > p.widest)
      return absl::InvalidArgumentError(
          absl::StrCat("start profile free cores ", cores, " outside [0, ", p.widest, "]"));
  }
  return absl::OkStatus();
}

namespace {
// Merges adjacent steps (never the last) until at most kMaxProfileSteps
// remain; a merged step keeps the fewer free cores.
void Compress(std::vector<std::pair<int64_t, int64_t>>* steps) {
  while (steps->size() > kMaxProfileSteps) {
    // The pair (i, i+1), i+1 not the last, spanning the least time.
    size_t best = 0;
    int64_t best_span = kNeverStarts;
    for (size_t i = 0; i + 2 < steps->size(); ++i) {
      const int64_t span = (*steps)[i + 2].first - (*steps)[i].first;
      if (span < best_span) {
        best_span = span;
        best = i;
      }
    }
    (*steps)[best].second = std::min((*steps)[best].second, (*steps)[best + 1].second);
    steps->erase(steps->begin() + best + 1);
  }
}
}  // namespace

StartProfile ProfileFromForecast(const EasyForecast& f) {
  StartProfile p;
  p.widest = f.cores;
  for (const auto& [t, cores] : f.free_cores) {
    const int64_t offset = t - f.now;
    if (!p.free.empty() && p.free.back().second == cores) continue;
    p.free.push_back({offset, cores});
  }
  Compress(&p.free);
  return p;
}

StartProfile ProfileFromWaits(int64_t widest, const std::vector<int64_t>& widths, const std::vector<int64_t>& waits) {
  StartProfile p;
  p.widest = widest;
  std::vector<std::pair<int64_t, int64_t>> at;  // (wait, width)
  for (size_t i = 0; i < widths.size() && i < waits.size(); ++i) at.push_back({std::max<int64_t>(waits[i], 0), widths[i]});
  std::sort(at.begin(), at.end());
  int64_t cores = 0;
  p.free.push_back({0, 0});
  for (const auto& [wait, width] : at) {
    if (width <= cores) continue;
    cores = std::min(width, widest);
    if (p.free.back().first == wait) {
      p.free.back().second = cores;
    } else {
      p.free.push_back({wait, cores});
    }
  }
  Compress(&p.free);
  return p;
}

Load MovableLoad(absl::Span<const int64_t> pending_cores, int64_t widest_elsewhere) {
  Load n = 0;
  for (int64_t c : pending_cores) n += c <= widest_elsewhere ? 1 : 0;
  return n;
}

absl::StatusOr<JobChoice> ParseJobChoice(std::string_view name) {
  if (name == "newest") return JobChoice::kNewest;
  if (name == "gain") return JobChoice::kGain;
  return absl::InvalidArgumentError(absl::StrCat("unknown job choice \"", std::string(name), "\" (known: gain, newest)"));
}

std::string_view JobChoiceName(JobChoice c) { return c == JobChoice::kGain ? "gain" : "newest"; }

std::vector<Chosen> ChooseJobs(JobChoice choice, absl::Span<const Candidate> jobs,
                               absl::Span<const Outgoing> transfers, int64_t min_gain,
                               int64_t recent_min_gain) {
  std::vector<Chosen> out;
  std::vector<Load> left(transfers.size());
  for (size_t t = 0; t < transfers.size(); ++t) left[t] = std::max<Load>(transfers[t].count, 0);
  std::vector<bool> taken(jobs.size(), false);
  if (choice == JobChoice::kNewest) {
    // Transfers in order; each takes the newest jobs that fit and are left.
    for (size_t t = 0; t < transfers.size(); ++t) {
      for (size_t k = jobs.size(); k-- > 0 && left[t] > 0;) {
        if (taken[k] || jobs[k].recent || jobs[k].cores > transfers[t].profile.widest) continue;
        taken[k] = true;
        --left[t];
        out.push_back({k, t, 0});
      }
    }
    return out;
  }
  // kGain: the (job, transfer) pair of largest gain first. A chosen job is
  // booked into its destination's profile (its cores from its start there
  // for its limit), so the next job sent there sees what the earlier ones
  // took. Booking only lengthens waits, so a pair's gain only falls: pairs
  // wait in a heap and a pair whose destination was booked since its gain
  // was computed is recomputed when it comes up (lazy greedy: the same
  // choice as recomputing every pair after every pick).
  std::vector<StartProfile> profile;
  for (const Outgoing& o : transfers) profile.push_back(o.profile);
  std::vector<int64_t> version(transfers.size(), 0);
  struct Pair {
    Chosen c;
    int64_t version;
  };
  auto worse = [](const Pair& a, const Pair& b) {  // heap order: best on top
    if (a.c.gain != b.c.gain) return a.c.gain < b.c.gain;
    if (a.c.job != b.c.job) return a.c.job > b.c.job;
    return a.c.transfer > b.c.transfer;
  };
  std::vector<Pair> heap;
  auto gain_of = [&](size_t k, size_t t, int64_t* there) {
    *there = profile[t].WaitFor(jobs[k].cores, jobs[k].limit);
    return *there == kNeverStarts ? kNeverStarts : jobs[k].wait_here - *there;
  };
  // The least gain that moves job k.
  auto needs = [&](size_t k) { return jobs[k].recent ? std::max(min_gain, recent_min_gain) : min_gain; };
  for (size_t k = 0; k < jobs.size(); ++k) {
    if (jobs[k].recent && recent_min_gain == kNeverStarts) continue;
    for (size_t t = 0; t < transfers.size(); ++t) {
      if (left[t] == 0) continue;
      int64_t there = 0;
      const int64_t gain = gain_of(k, t, &there);
      if (there != kNeverStarts && gain >= needs(k)) heap.push_back({{k, t, gain}, 0});
    }
  }
  std::make_heap(heap.begin(), heap.end(), worse);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), worse);
    Pair p = heap.back();
    heap.pop_back();
    const size_t k = p.c.job, t = p.c.transfer;
    if (taken[k] || left[t] == 0) continue;
    int64_t there = 0;
    if (p.version != version[t]) {  // the destination was booked since: recompute
      const int64_t gain = gain_of(k, t, &there);
      if (there == kNeverStarts || gain < needs(k)) continue;
      heap.push_back({{k, t, gain}, version[t]});
      std::push_heap(heap.begin(), heap.end(), worse);
      continue;
    }
    there = jobs[k].wait_here - p.c.gain;
    taken[k] = true;
    --left[t];
    out.push_back(p.c);
    if (jobs[k].limit > 0 && !profile[t].free.empty()) {
      Book(&profile[t], there, jobs[k].cores, jobs[k].limit);
      ++version[t];
    }
  }
  return out;
}

void Book(StartProfile* p, int64_t start, int64_t cores, int64_t limit) {
  if (p->free.empty() || limit <= 0) return;
  auto& f = p->free;
  // Free cores at `at`: the step at or before it.
  auto split = [&](int64_t at) {
    auto it = std::upper_bound(f.begin(), f.end(), at,
                               [](int64_t x, const std::pair<int64_t, int64_t>& s) { return x < s.first; });
    if (it != f.begin() && std::prev(it)->first == at) return;
    const int64_t value = it == f.begin() ? 0 : std::prev(it)->second;
    f.insert(it, {at, value});
  };
  const int64_t end = start > kNeverStarts - limit ? kNeverStarts : start + limit;
  split(start);
  if (end != kNeverStarts) split(end);
  for (auto& [at, c] : f)
    if (at >= start && at < end) c = std::max<int64_t>(0, c - cores);
}

}  // namespace hyperfed::balance
