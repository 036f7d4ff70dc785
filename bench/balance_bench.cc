// Benchmarks of the balance library's whole-system drivers at federation
// scale. Run: build/hyperfed_bench (figures in docs/benchmarks.md).

#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "daemon/balance/dem.h"
#include "daemon/balance/topology.h"

namespace hyperfed::balance {
namespace {

struct Input {
  std::vector<Load> loads;
  std::vector<double> caps;
};

Input MakeInput(int nodes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Input in{std::vector<Load>(nodes), std::vector<double>(nodes)};
  for (int i = 0; i < nodes; ++i) {
    in.loads[i] = rng() % 1001;
    in.caps[i] = 1 + rng() % 16;
  }
  return in;
}

// Weighted improved DEM over 2^n sites; arg 1 says whether the plan keeps its
// transfer list (n * 2^(n-1) entries at most) or only loads and metrics.
void BM_WeightedImprovedDem(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool keep = state.range(1) != 0;
  auto topo = Topology::Hypercube(n);
  Input in = MakeInput(1 << n, 42);
  int64_t transfers = 0;
  for (auto _ : state) {
    auto plan = ImprovedDemPlan(*topo, in.loads, in.caps, keep);
    benchmark::DoNotOptimize(plan->final_loads.data());
    transfers = static_cast<int64_t>(plan->transfers.size());
  }
  state.counters["sites"] = 1 << n;
  state.counters["transfers_kept"] = static_cast<double>(transfers);
  state.counters["ns_per_site"] =
      benchmark::Counter(static_cast<double>(1 << n), benchmark::Counter::kIsIterationInvariantRate |
                                                          benchmark::Counter::kInvert);
}
BENCHMARK(BM_WeightedImprovedDem)
    ->ArgsProduct({{10, 14, 16, 18, 20}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hyperfed::balance
