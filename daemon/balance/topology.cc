#include "daemon/balance/topology.h"

#include <algorithm>
#include <deque>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hyperfed::balance {

absl::StatusOr<Topology> Topology::Hypercube(int n, const std::vector<NodeId>& faults) {
  if (n < 0 || n > 30) return absl::InvalidArgumentError(absl::StrCat("hypercube dimension ", n, " outside 0..30"));
  Topology t;
  t.kind_ = TopologyKind::kHypercube;
  t.cube_dim_ = n;
  t.size_ = 1 << n;
  if (!faults.empty()) {
    t.alive_.assign(t.size_, true);
    for (NodeId f : faults) {
      if (f < 0 || f >= t.size_)
        return absl::InvalidArgumentError(absl::StrCat("fault label ", f, " outside the ", n, "-cube"));
      t.alive_[f] = false;
    }
    if (t.alive_count() == 0) return absl::InvalidArgumentError("every node of the hypercube is faulty");
  }
  return t;
}

absl::StatusOr<Topology> Topology::Torus(const std::vector<int>& sizes) {
  Topology t;
  t.kind_ = TopologyKind::kTorus;
  t.sizes_ = sizes;
  int64_t n = 1;
  for (int s : sizes) {
    if (s < 1) return absl::InvalidArgumentError(absl::StrCat("dimension size ", s, " must be at least 1"));
    n *= s;
    if (n > (int64_t{1} << 30)) return absl::InvalidArgumentError("topology too large");
  }
  if (sizes.empty()) return absl::InvalidArgumentError("a torus needs at least one dimension");
  t.size_ = static_cast<int>(n);
  return t;
}

absl::StatusOr<Topology> Topology::Mesh(const std::vector<int>& sizes) {
  auto t = Torus(sizes);
  if (!t.ok()) return t.status();
  t->kind_ = TopologyKind::kMesh;
  return t;
}

absl::StatusOr<Topology> Topology::Graph(int nodes, const std::vector<std::pair<NodeId, NodeId>>& edges) {
  if (nodes < 1) return absl::InvalidArgumentError("a graph needs at least one node");
  Topology t;
  t.kind_ = TopologyKind::kGraph;
  t.size_ = nodes;
  std::vector<std::set<NodeId>> adj(nodes);
  for (auto [a, b] : edges) {
    if (a < 0 || b < 0 || a >= nodes || b >= nodes)
      return absl::InvalidArgumentError(absl::StrCat("edge ", a, "-", b, " names a node outside 0..", nodes - 1));
    if (a == b) return absl::InvalidArgumentError(absl::StrCat("self loop at node ", a));
    adj[a].insert(b);
    adj[b].insert(a);
  }
  t.adj_.resize(nodes);
  for (int i = 0; i < nodes; ++i) t.adj_[i].assign(adj[i].begin(), adj[i].end());
  if (!t.Connected()) return absl::InvalidArgumentError("the graph is not connected");
  return t;
}

std::vector<NodeId> Topology::faults() const {
  std::vector<NodeId> f;
  for (int i = 0; i < size_; ++i)
    if (!alive(i)) f.push_back(i);
  return f;
}

int Topology::alive_count() const {
  if (alive_.empty()) return size_;
  return static_cast<int>(std::count(alive_.begin(), alive_.end(), true));
}

std::vector<int> Topology::Coords(NodeId u) const {
  std::vector<int> c(sizes_.size());
  for (size_t d = 0; d < sizes_.size(); ++d) {
    c[d] = u % sizes_[d];
    u /= sizes_[d];
  }
  return c;
}

NodeId Topology::FromCoords(const std::vector<int>& c) const {
  NodeId u = 0;
  for (size_t d = sizes_.size(); d-- > 0;) u = u * sizes_[d] + c[d];
  return u;
}

std::vector<NodeId> Topology::Neighbors(NodeId u) const {
  std::vector<NodeId> out;
  switch (kind_) {
    case TopologyKind::kHypercube:
      for (int k = 0; k < cube_dim_; ++k) {
        NodeId v = u ^ (1 << k);
        if (alive(v)) out.push_back(v);
      }
      break;
    case TopologyKind::kTorus:
    case TopologyKind::kMesh: {
      std::vector<int> c = Coords(u);
      for (size_t d = 0; d < sizes_.size(); ++d) {
        int k = sizes_[d];
        if (k == 1) continue;
        for (int delta : {-1, 1}) {
          int x = c[d] + delta;
          if (kind_ == TopologyKind::kMesh && (x < 0 || x >= k)) continue;
          x = (x + k) % k;
          std::vector<int> e = c;
          e[d] = x;
          NodeId v = FromCoords(e);
          if (v != u && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
        }
      }
      break;
    }
    case TopologyKind::kGraph:
      out = adj_[u];
      break;
  }
  return out;
}

std::vector<std::pair<NodeId, NodeId>> Topology::Edges() const {
  std::vector<std::pair<NodeId, NodeId>> e;
  for (NodeId u = 0; u < size_; ++u) {
    if (!alive(u)) continue;
    for (NodeId v : Neighbors(u))
      if (u < v) e.emplace_back(u, v);
  }
  return e;
}

int Topology::MaxDegree() const {
  int d = 0;
  for (NodeId u = 0; u < size_; ++u)
    if (alive(u)) d = std::max<int>(d, static_cast<int>(Neighbors(u).size()));
  return d;
}

std::vector<int> Topology::Distances(NodeId src) const {
  std::vector<int> dist(size_, -1);
  if (!alive(src)) return dist;
  std::deque<NodeId> q{src};
  dist[src] = 0;
  while (!q.empty()) {
    NodeId u = q.front();
    q.pop_front();
    for (NodeId v : Neighbors(u)) {
      if (dist[v] < 0) {
        dist[v] = dist[u] + 1;
        q.push_back(v);
      }
    }
  }
  return dist;
}

bool Topology::Connected() const {
  NodeId first = -1;
  for (NodeId u = 0; u < size_ && first < 0; ++u)
    if (alive(u)) first = u;
  if (first < 0) return true;
  std::vector<int> d = Distances(first);
  for (NodeId u = 0; u < size_; ++u)
    if (alive(u) && d[u] < 0) return false;
  return true;
}

std::string Topology::Name() const {
  switch (kind_) {
    case TopologyKind::kHypercube:
      return absl::StrCat("hypercube:", cube_dim_);
    case TopologyKind::kTorus:
      return sizes_.size() == 1 ? absl::StrCat("ring:", sizes_[0]) : absl::StrCat("torus:", absl::StrJoin(sizes_, "x"));
    case TopologyKind::kMesh:
      return sizes_.size() == 1 ? absl::StrCat("chain:", sizes_[0]) : absl::StrCat("mesh:", absl::StrJoin(sizes_, "x"));
    case TopologyKind::kGraph:
      return absl::StrCat("graph:", size_);
  }
  return "";
}

}  // namespace hyperfed::balance
