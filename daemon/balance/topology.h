#pragma once

// Interconnection topologies the balancing algorithms run on.
//
// Nodes are numbered 0..size()-1. For a hypercube the number is the label:
// bit k of a label is dimension k. For a torus or mesh with sizes
// d0 x d1 x ..., node = c0 + d0*(c1 + d1*(c2 + ...)), dimension 0 fastest.
// A ring is a 1-D torus, a chain a 1-D mesh, a k-ary n-cube a torus with n
// equal sizes k. A hypercube may have failed or empty positions ("faults"):
// those nodes are not alive, hold no load and carry no traffic.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/balance/plan.h"

namespace hyperfed::balance {

enum class TopologyKind { kHypercube, kTorus, kMesh, kGraph };

class Topology {
 public:
  // n-dimensional hypercube, 0 <= n <= 30, with the given labels not alive.
  static absl::StatusOr<Topology> Hypercube(int n, const std::vector<NodeId>& faults = {});
  // Torus (wrap-around) or mesh with per-dimension sizes, each >= 1.
  static absl::StatusOr<Topology> Torus(const std::vector<int>& sizes);
  static absl::StatusOr<Topology> Mesh(const std::vector<int>& sizes);
  static absl::StatusOr<Topology> Ring(int k) { return Torus({k}); }
  static absl::StatusOr<Topology> Chain(int k) { return Mesh({k}); }
  // Any connected undirected graph on `nodes` nodes. Self loops are refused;
  // duplicate edges are merged.
  static absl::StatusOr<Topology> Graph(int nodes, const std::vector<std::pair<NodeId, NodeId>>& edges);

  TopologyKind kind() const { return kind_; }
  int size() const { return size_; }
  // Hypercube dimension, or the number of torus/mesh dimensions.
  int dimensions() const { return kind_ == TopologyKind::kHypercube ? cube_dim_ : static_cast<int>(sizes_.size()); }
  const std::vector<int>& sizes() const { return sizes_; }
  bool alive(NodeId u) const { return alive_.empty() || alive_[u]; }
  // Empty when every node is alive.
  const std::vector<bool>& alive_mask() const { return alive_; }
  std::vector<NodeId> faults() const;
  int alive_count() const;

  // Alive neighbours of an alive node (a hypercube computes them on the fly).
  std::vector<NodeId> Neighbors(NodeId u) const;
  // Every undirected edge between alive nodes once, as (a, b) with a < b.
  std::vector<std::pair<NodeId, NodeId>> Edges() const;
  // Maximum alive degree.
  int MaxDegree() const;

  // Torus/mesh coordinates of a node and back.
  std::vector<int> Coords(NodeId u) const;
  NodeId FromCoords(const std::vector<int>& c) const;

  // Hop distances from `src` through alive nodes (-1 where unreachable).
  std::vector<int> Distances(NodeId src) const;
  // True when every alive node reaches every other through alive nodes.
  bool Connected() const;

  // "hypercube:3", "torus:4x4", "mesh:8x8", "ring:64", "chain:8", "graph:N".
  std::string Name() const;

 private:
  TopologyKind kind_ = TopologyKind::kGraph;
  int size_ = 0;
  int cube_dim_ = 0;
  std::vector<int> sizes_;
  std::vector<bool> alive_;
  std::vector<std::vector<NodeId>> adj_;  // only for kGraph
};

}  // namespace hyperfed::balance
