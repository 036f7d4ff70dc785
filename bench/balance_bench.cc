// Benchmarks of the balance library's whole-system drivers at federation
// scale. Run: build/hyperfed_bench (figures in docs/benchmarks.md).

#include <algorithm>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "daemon/balance/dem.h"
#include "daemon/balance/exact.h"
#include "daemon/balance/mcwa.h"
#include "daemon/balance/placement.h"
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
  state.counters["ns_per_site"] = benchmark::Counter(
      static_cast<double>(1 << n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_WeightedImprovedDem)->ArgsProduct({{10, 14, 16, 18, 20}, {0, 1}})->Unit(benchmark::kMillisecond);

// Random distinct fault labels.
std::vector<NodeId> Faults(int n, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<NodeId> f;
  while (static_cast<int>(f.size()) < count) {
    NodeId x = static_cast<NodeId>(rng() % (uint64_t{1} << n));
    if (std::find(f.begin(), f.end(), x) == f.end()) f.push_back(x);
  }
  return f;
}

// MCWA over 2^n sites with `faults` failed ones: subcube selection, trees
// and the plan (with its transfer list).
void BM_Mcwa(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int faults = static_cast<int>(state.range(1));
  auto topo = Topology::Hypercube(n, Faults(n, faults, 7));
  Input in = MakeInput(1 << n, 43);
  for (NodeId f : topo->faults()) in.loads[f] = 0;
  for (auto _ : state) {
    auto plan = McwaPlan(*topo, in.loads, in.caps);
    benchmark::DoNotOptimize(plan->final_loads.data());
  }
  state.counters["sites"] = 1 << n;
}
BENCHMARK(BM_Mcwa)->Args({10, 5})->Args({16, 0})->Args({16, 16})->Unit(benchmark::kMillisecond);

// Subcube selection alone (what every node computes from the fault set).
void BM_SelectBalancingSubcube(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto topo = Topology::Hypercube(n, Faults(n, static_cast<int>(state.range(1)), 7));
  for (auto _ : state) benchmark::DoNotOptimize(SelectBalancingSubcubes(*topo)->size());
}
BENCHMARK(BM_SelectBalancingSubcube)->Args({16, 16})->Unit(benchmark::kMillisecond);

// hyperfed's default round (exact mode) over 2^n sites, with and without faults.
void BM_Exact(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto topo = Topology::Hypercube(n, Faults(n, static_cast<int>(state.range(1)), 7));
  Input in = MakeInput(1 << n, 44);
  for (NodeId f : topo->faults()) in.loads[f] = 0;
  for (auto _ : state) {
    auto plan = ExactPlan(*topo, in.loads, in.caps);
    benchmark::DoNotOptimize(plan->final_loads.data());
  }
  state.counters["sites"] = 1 << n;
}
BENCHMARK(BM_Exact)->Args({10, 0})->Args({16, 0})->Args({16, 16})->Unit(benchmark::kMillisecond);

// Placement decisions at one site of a federation of `peers` + 1 sites
// (issue 29: goal at least 10,000 a second on one core for 64 sites). Each
// peer published a full profile (32 steps) and each decision books its
// job, as the daemon's pass does; every 1,000 decisions each peer
// publishes again (the ledger empties), as heartbeats would.
void BM_PlaceJob(benchmark::State& state) {
  const int peers = static_cast<int>(state.range(0));
  std::mt19937_64 rng(7);
  std::vector<StartProfile> profiles(peers);
  for (StartProfile& p : profiles) {
    p.widest = 64;
    int64_t t = 0;
    for (size_t s = 0; s < kMaxProfileSteps; ++s) {
      p.free.push_back({t, static_cast<int64_t>(s + 1 == kMaxProfileSteps ? 64 : rng() % 65)});
      t += 1 + static_cast<int64_t>(rng() % 600'000);
    }
  }
  Placer placer(60'000);
  int64_t now = 0, placed = 0, n = 0;
  auto publish = [&] {
    for (int i = 0; i < peers; ++i) placer.Publish(i + 1, now, profiles[i]);
  };
  publish();
  for (auto _ : state) {
    const ArrivingJob job{.cores = 1 + static_cast<int64_t>(rng() % 32),
                          .limit = 60'000 + static_cast<int64_t>(rng() % 7'200'000),
                          .wait_here = static_cast<int64_t>(rng() % 36'000'000)};
    placed += placer.Place(now, job).peer >= 0;
    now += 10;
    if (++n % 1000 == 0) publish();
  }
  state.counters["placed_pct"] = 100.0 * static_cast<double>(placed) / static_cast<double>(std::max<int64_t>(n, 1));
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_PlaceJob)->Arg(7)->Arg(63);

}  // namespace
}  // namespace hyperfed::balance
