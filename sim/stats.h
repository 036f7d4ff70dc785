#pragma once

// Small statistics helpers for the paper reproductions.

#include <vector>

namespace hyperfed::sim {

// Two-sided 95% Student t quantile for `df` degrees of freedom
// (Cornish-Fisher expansion around 1.96; within 0.5% for df >= 3).
double T95(int df);

// Sample mean and the half-width of its 95% confidence interval (Student t).
struct MeanCi {
  double mean = 0, half = 0;
  bool Excludes(double v) const { return v < mean - half || v > mean + half; }
};
MeanCi Summarise(const std::vector<double>& x);

// Element-wise a[i] - b[i] (paired differences); the sizes must match.
std::vector<double> Differences(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace hyperfed::sim
