#pragma once

// The time limits a replay's jobs carry (`hyperfed-sim replay --estimates`,
// docs/algorithms.md, "Time limits in the replay"). A job runs its run time;
// EASY and every forecast plan with its limit, as schedulers plan with the
// limit a user gave. The traces the project ships give no requested times.
//
//  trace     the trace's requested time (field 9) where it gives one, else
//            the run time (the default; the run time for our traces);
//  exact     the run time: perfect estimates;
//  factor:F  the run time times F (F >= 1), rounded up to the second;
//  model     limits as users give them, after Tsafrir, Etsion and Feitelson,
//            "Modeling User Runtime Estimates" (JSSPP 2005): a few popular
//            round values, most of them far above the run time.
//
// Every limit is at least the run time and at least 1 s.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace hyperfed::sim {

struct SwfJob;

struct EstimateSpec {
  enum Kind { kTrace, kExact, kFactor, kModel } kind = kTrace;
  double factor = 1;
};
// InvalidArgument naming what is wrong.
absl::StatusOr<EstimateSpec> ParseEstimates(std::string_view s);
std::string EstimatesName(const EstimateSpec& e);

// Sets every job's limit by `spec` (deterministic for a seed).
void ApplyEstimates(const EstimateSpec& spec, uint64_t seed, std::vector<SwfJob>* jobs);

// The model's popular values for a longest run time (seconds, ascending):
// the largest is the longest run time rounded up to the hour (at least one
// hour), the others the round values users pick below it.
std::vector<int64_t> ModelHeadValues(int64_t longest_run);

}  // namespace hyperfed::sim
