#include "sim/stats.h"

#include <algorithm>
#include <cmath>

namespace hyperfed::sim {

double T95(int df) {
  const double z = 1.959964, d = std::max(1, df);
  return z + (z * z * z + z) / (4 * d) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * d * d);
}

MeanCi Summarise(const std::vector<double>& x) {
  MeanCi c;
  if (x.empty()) return c;
  for (double v : x) c.mean += v;
  c.mean /= static_cast<double>(x.size());
  if (x.size() < 2) return c;
  double ss = 0;
  for (double v : x) ss += (v - c.mean) * (v - c.mean);
  c.half = T95(static_cast<int>(x.size()) - 1) * std::sqrt(ss / static_cast<double>(x.size() - 1)) /
           std::sqrt(static_cast<double>(x.size()));
  return c;
}

std::vector<double> Differences(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d(std::min(a.size(), b.size()));
  for (size_t i = 0; i < d.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

}  // namespace hyperfed::sim
