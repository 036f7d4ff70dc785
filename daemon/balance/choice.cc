#include "daemon/balance/choice.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace hyperfed::balance {

int64_t StartProfile::WaitFor(int64_t cores) const {
  if (cores > widest) return kNeverStarts;
  if (waits.empty()) return 0;  // the site estimates nothing: taken as starting at once
  for (const auto& [width, wait] : waits)
    if (width >= cores) return wait;
  return kNeverStarts;
}

std::vector<int64_t> ProfileWidths(int64_t widest) {
  std::vector<int64_t> w;
  for (int64_t c = 1; c < widest && w.size() + 1 < kMaxProfileWidths; c *= 2) w.push_back(c);
  if (widest > 0) w.push_back(widest);
  return w;
}

absl::Status CheckStartProfile(const StartProfile& p, int64_t max_wait) {
  if (p.widest < 0) return absl::InvalidArgumentError(absl::StrCat("widest ", p.widest, " is negative"));
  if (p.waits.size() > kMaxProfileWidths)
    return absl::InvalidArgumentError(
        absl::StrCat(p.waits.size(), " widths in a start profile (at most ", kMaxProfileWidths, ")"));
  int64_t prev = 0;
  for (const auto& [width, wait] : p.waits) {
    if (width <= prev)
      return absl::InvalidArgumentError(absl::StrCat("start profile widths not ascending from 1 at ", width));
    if (wait < 0 || wait > max_wait)
      return absl::InvalidArgumentError(
          absl::StrCat("start profile wait ", wait, " for width ", width, " outside [0, ", max_wait, "]"));
    prev = width;
  }
  if (!p.waits.empty() && prev != p.widest)
    return absl::InvalidArgumentError(
        absl::StrCat("start profile ends at width ", prev, ", not at the widest job ", p.widest));
  return absl::OkStatus();
}

StartProfile ProfileFromForecast(const EasyForecast& f) {
  StartProfile p;
  p.widest = f.cores;
  for (int64_t w : ProfileWidths(f.cores)) p.waits.push_back({w, TailStart(f, w) - f.now});
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
                               absl::Span<const Outgoing> transfers, int64_t min_gain) {
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
  // kGain: every (job, transfer) pair that gains enough, largest gain first.
  std::vector<Chosen> pairs;
  for (size_t k = 0; k < jobs.size(); ++k) {
    if (jobs[k].recent) continue;
    for (size_t t = 0; t < transfers.size(); ++t) {
      if (left[t] == 0) continue;
      const int64_t there = transfers[t].profile.WaitFor(jobs[k].cores);
      if (there == kNeverStarts) continue;
      const int64_t gain = jobs[k].wait_here - there;
      if (gain >= min_gain) pairs.push_back({k, t, gain});
    }
  }
  std::stable_sort(pairs.begin(), pairs.end(), [](const Chosen& a, const Chosen& b) {
    if (a.gain != b.gain) return a.gain > b.gain;
    if (a.job != b.job) return a.job < b.job;
    return a.transfer < b.transfer;
  });
  for (const Chosen& c : pairs) {
    if (taken[c.job] || left[c.transfer] == 0) continue;
    taken[c.job] = true;
    --left[c.transfer];
    out.push_back(c);
  }
  return out;
}

}  // namespace hyperfed::balance
