#pragma once

// Parsing of hyperfed-sim's topology, load, capacity and fault specs.
// Every error names the value it could not use.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/balance/topology.h"

namespace hyperfed::sim {

using balance::Load;
using balance::NodeId;
using balance::Topology;

// hypercube:N, torus:AxB[xC...], mesh:AxB[...], ring:K, chain:K, graph:FILE.
// A graph file lists one edge "a b" per line (labels from 0; '#' starts a
// comment); the node count is the largest label + 1.
absl::StatusOr<Topology> ParseTopology(const std::string& spec);

struct LoadSpec {
  enum Kind { kUniform, kList } kind = kUniform;
  int64_t lo = 0, hi = 1000;
  std::vector<int64_t> list;
};
// uniform:LO:HI or list:a,b,...
absl::StatusOr<LoadSpec> ParseLoads(const std::string& spec);

struct CapacitySpec {
  enum Kind { kEqual, kUniform, kList } kind = kEqual;
  int64_t lo = 1, hi = 1;
  std::vector<double> list;
};
// equal, uniform:LO:HI (integers >= 1) or list:a,b,... (each > 0)
absl::StatusOr<CapacitySpec> ParseCapacities(const std::string& spec);

struct FaultSpec {
  enum Kind { kNone, kList, kRandom } kind = kNone;
  std::vector<NodeId> list;
  int count = 0;
};
// list:5,6,8,10 or random:K
absl::StatusOr<FaultSpec> ParseFaults(const std::string& spec);

// Uniform integer in [lo, hi] from the generator (portable across
// standard libraries, so that a seed gives the same run everywhere).
int64_t UniformInt(std::mt19937_64& rng, int64_t lo, int64_t hi);

// Draws the values a spec describes for `n` nodes. A list must have exactly
// n entries.
absl::StatusOr<std::vector<Load>> DrawLoads(const LoadSpec& spec, int n, std::mt19937_64& rng);
absl::StatusOr<std::vector<double>> DrawCapacities(const CapacitySpec& spec, int n, std::mt19937_64& rng);
// K distinct random labels of a cube with `size` positions (K < size).
absl::StatusOr<std::vector<NodeId>> DrawFaults(const FaultSpec& spec, int size, std::mt19937_64& rng);

}  // namespace hyperfed::sim
