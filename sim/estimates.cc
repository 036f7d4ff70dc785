#include "sim/estimates.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sim/replay.h"

namespace hyperfed::sim {

absl::StatusOr<EstimateSpec> ParseEstimates(std::string_view s_in) {
  const absl::string_view s(s_in.data(), s_in.size());
  EstimateSpec e;
  if (s == "trace") return e;
  if (s == "exact") {
    e.kind = EstimateSpec::kExact;
    return e;
  }
  if (s == "model") {
    e.kind = EstimateSpec::kModel;
    return e;
  }
  if (absl::StartsWith(s, "factor:")) {
    double f;
    if (!absl::SimpleAtod(s.substr(7), &f) || !std::isfinite(f) || f < 1 || f > 1000)
      return absl::InvalidArgumentError(
          absl::StrCat("bad --estimates '", s, "': F in factor:F is a number from 1 to 1000"));
    e.kind = EstimateSpec::kFactor;
    e.factor = f;
    return e;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("bad --estimates '", s, "': expected trace, exact, factor:F or model"));
}

std::string EstimatesName(const EstimateSpec& e) {
  switch (e.kind) {
    case EstimateSpec::kTrace:
      return "trace";
    case EstimateSpec::kExact:
      return "exact";
    case EstimateSpec::kFactor:
      return absl::StrCat("factor:", e.factor);
    case EstimateSpec::kModel:
      return "model";
  }
  return "";
}

namespace {

constexpr int64_t kMin = 60, kHour = 3600;
// How many popular values make the head, and the share of jobs they take.
constexpr size_t kHeadValues = 20;
constexpr double kHeadShare = 0.9;
// The longest value's share (it is the most popular); the other head values
// share the rest of the head by rank x = 2..20 as exp(-kRankDecay * x).
constexpr double kLongestShare = 0.15;
constexpr double kRankDecay = 0.2;

}  // namespace

std::vector<int64_t> ModelHeadValues(int64_t longest_run) {
  const int64_t longest = std::max<int64_t>(kHour, (std::max<int64_t>(longest_run, 1) + kHour - 1) / kHour * kHour);
  // The values users pick in every trace the model was fitted to.
  static constexpr int64_t kJoint[] = {5 * kMin,  15 * kMin, 10 * kMin,  20 * kMin,  30 * kMin,
                                       1 * kHour, 2 * kHour, 3 * kHour,  4 * kHour,  5 * kHour,
                                       6 * kHour, 8 * kHour, 10 * kHour, 12 * kHour, 18 * kHour};
  // Round multiples below the longest complete the head.
  static constexpr int64_t kRound[] = {200 * kHour, 100 * kHour, 50 * kHour, 10 * kHour, 5 * kHour,
                                       2 * kHour,   1 * kHour,   20 * kMin,  10 * kMin,  5 * kMin};
  std::vector<int64_t> v = {longest};
  auto have = [&](int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  for (int64_t x : kJoint)
    if (x < longest && !have(x)) v.push_back(x);
  for (int64_t mul : kRound) {
    for (int64_t x = longest / mul * mul; x > 0 && v.size() < kHeadValues; x -= mul)
      if (!have(x)) v.push_back(x);
    if (v.size() >= kHeadValues) break;
  }
  std::sort(v.begin(), v.end());
  return v;
}

void ApplyEstimates(const EstimateSpec& spec, uint64_t seed, std::vector<SwfJob>* jobs) {
  if (spec.kind == EstimateSpec::kTrace) return;  // ParseSwf set them from the trace
  if (spec.kind != EstimateSpec::kModel) {
    for (SwfJob& j : *jobs) {
      const double f = spec.kind == EstimateSpec::kFactor ? spec.factor : 1.0;
      j.limit = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(static_cast<double>(j.run) * f)));
    }
    return;
  }
  const size_t n = jobs->size();
  if (n == 0) return;
  std::mt19937_64 rng(seed ^ 0x5eed'e571'3a7e'5ULL);
  int64_t longest = 1;
  for (const SwfJob& j : *jobs) longest = std::max(longest, j.run);
  const std::vector<int64_t> head = ModelHeadValues(longest);
  const int64_t top = head.back();

  // 1. The multiset of n estimates: the longest value first in popularity,
  // the other head values by a seeded random popularity rank, the rest of
  // the jobs minute values spread evenly up to the longest.
  std::vector<int64_t> others(head.begin(), head.end() - 1);
  for (size_t i = others.size(); i > 1; --i) std::swap(others[i - 1], others[rng() % i]);
  std::vector<double> share(others.size());
  double sum = 0;
  for (size_t r = 0; r < others.size(); ++r) sum += share[r] = std::exp(-kRankDecay * static_cast<double>(r + 2));
  std::vector<int64_t> ests;
  ests.reserve(n);
  auto add = [&](int64_t value, double fraction) {
    const int64_t count = std::llround(fraction * static_cast<double>(n));
    for (int64_t c = 0; c < count && ests.size() < n; ++c) ests.push_back(value);
  };
  add(top, kLongestShare);
  for (size_t r = 0; r < others.size(); ++r) add(others[r], (kHeadShare - kLongestShare) * share[r] / sum);
  while (ests.size() < n) {
    const int64_t minutes = 1 + static_cast<int64_t>(Unit(rng) * static_cast<double>(top / kMin));
    ests.push_back(std::min(top, minutes * kMin));
  }

  // 2. Matched to jobs as the model does: jobs by run time and estimates
  // both longest first; each job takes an estimate drawn at random among
  // those left that are at least its run time. Where too few estimates are
  // long enough, one is raised to the least head value that covers the job.
  std::sort(ests.begin(), ests.end(), std::greater<>());
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return (*jobs)[a].run > (*jobs)[b].run; });
  for (size_t k = 0; k < n; ++k) {
    const int64_t run = (*jobs)[order[k]].run;
    if (ests[k] < run) ests[k] = *std::lower_bound(head.begin(), head.end(), run);
  }
  for (size_t k = 0, hi = 0; k < n; ++k) {
    const int64_t run = (*jobs)[order[k]].run;
    hi = std::max(hi, k);
    while (hi + 1 < n && ests[hi + 1] >= run) ++hi;
    const size_t pick = k + static_cast<size_t>(rng() % (hi - k + 1));
    std::swap(ests[k], ests[pick]);
    (*jobs)[order[k]].limit = std::max<int64_t>({ests[k], run, 1});
  }
}

}  // namespace hyperfed::sim
