#include "sim/spec.h"

#include <algorithm>
#include <fstream>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hyperfed::sim {
namespace {

absl::Status Bad(const std::string& what, const std::string& spec, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("bad ", what, " '", spec, "': ", why));
}

bool ParseIntList(absl::string_view s, std::vector<int64_t>* out) {
  for (absl::string_view part : absl::StrSplit(s, ',')) {
    int64_t v;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &v)) return false;
    out->push_back(v);
  }
  return !out->empty();
}

absl::StatusOr<std::vector<int>> ParseSizes(const std::string& spec, absl::string_view body, char sep) {
  std::vector<int> sizes;
  for (absl::string_view part : absl::StrSplit(body, sep)) {
    int v;
    if (!absl::SimpleAtoi(part, &v) || v < 1) return Bad("topology", spec, "sizes must be positive integers");
    sizes.push_back(v);
  }
  return sizes;
}

}  // namespace

int64_t UniformInt(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  const uint64_t range = static_cast<uint64_t>(hi - lo) + 1;
  if (range == 0) return lo + static_cast<int64_t>(rng());
  // Rejection sampling keeps the draw unbiased.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t x;
  do x = rng();
  while (x >= limit);
  return lo + static_cast<int64_t>(x % range);
}

absl::StatusOr<Topology> ParseTopology(const std::string& spec) {
  std::pair<std::string, std::string> kv = absl::StrSplit(spec, absl::MaxSplits(':', 1));
  const std::string& kind = kv.first;
  const std::string& body = kv.second;
  if (body.empty()) return Bad("topology", spec, "expected KIND:SIZE, e.g. hypercube:8");
  absl::StatusOr<Topology> t = absl::InvalidArgumentError("");
  if (kind == "hypercube") {
    int n;
    if (!absl::SimpleAtoi(body, &n) || n < 0 || n > 24) return Bad("topology", spec, "dimension must be 0..24");
    t = Topology::Hypercube(n);
  } else if (kind == "torus" || kind == "mesh" || kind == "kary") {
    auto sizes = ParseSizes(spec, body, 'x');
    if (!sizes.ok()) return sizes.status();
    t = kind == "mesh" ? Topology::Mesh(*sizes) : Topology::Torus(*sizes);
  } else if (kind == "ring" || kind == "chain") {
    int k;
    if (!absl::SimpleAtoi(body, &k) || k < 1) return Bad("topology", spec, "size must be a positive integer");
    t = kind == "ring" ? Topology::Ring(k) : Topology::Chain(k);
  } else if (kind == "graph") {
    std::ifstream in(body);
    if (!in) return Bad("topology", spec, "cannot open the graph file");
    std::vector<std::pair<NodeId, NodeId>> edges;
    std::string line;
    int lineno = 0, nodes = 0;
    while (std::getline(in, line)) {
      ++lineno;
      absl::string_view l = line;
      if (auto pos = l.find('#'); pos != l.npos) l = l.substr(0, pos);
      l = absl::StripAsciiWhitespace(l);
      if (l.empty()) continue;
      std::vector<absl::string_view> f = absl::StrSplit(l, absl::ByAnyChar(" \t,"), absl::SkipEmpty());
      int a, b;
      if (f.size() != 2 || !absl::SimpleAtoi(f[0], &a) || !absl::SimpleAtoi(f[1], &b) || a < 0 || b < 0)
        return absl::InvalidArgumentError(
            absl::StrCat(body, ":", lineno, ": expected an edge 'a b' of two labels >= 0"));
      edges.emplace_back(a, b);
      nodes = std::max({nodes, a + 1, b + 1});
    }
    if (edges.empty()) return Bad("topology", spec, "the graph file lists no edge");
    t = Topology::Graph(nodes, edges);
  } else {
    return Bad("topology", spec, "kind must be hypercube, torus, mesh, ring, chain or graph");
  }
  if (!t.ok()) return Bad("topology", spec, std::string(t.status().message()));
  return t;
}

absl::StatusOr<LoadSpec> ParseLoads(const std::string& spec) {
  LoadSpec s;
  if (absl::StartsWith(spec, "uniform:")) {
    std::vector<absl::string_view> p = absl::StrSplit(spec.substr(8), ':');
    if (p.size() != 2 || !absl::SimpleAtoi(p[0], &s.lo) || !absl::SimpleAtoi(p[1], &s.hi) || s.lo < 0 || s.hi < s.lo)
      return Bad("loads", spec, "expected uniform:LO:HI with 0 <= LO <= HI");
    return s;
  }
  if (absl::StartsWith(spec, "list:")) {
    s.kind = LoadSpec::kList;
    if (!ParseIntList(spec.substr(5), &s.list)) return Bad("loads", spec, "expected list:a,b,... of integers");
    for (int64_t v : s.list)
      if (v < 0) return Bad("loads", spec, "loads must be non-negative");
    return s;
  }
  return Bad("loads", spec, "expected uniform:LO:HI or list:a,b,...");
}

absl::StatusOr<CapacitySpec> ParseCapacities(const std::string& spec) {
  CapacitySpec s;
  if (spec == "equal") return s;
  if (absl::StartsWith(spec, "uniform:")) {
    s.kind = CapacitySpec::kUniform;
    std::vector<absl::string_view> p = absl::StrSplit(spec.substr(8), ':');
    if (p.size() != 2 || !absl::SimpleAtoi(p[0], &s.lo) || !absl::SimpleAtoi(p[1], &s.hi) || s.lo < 1 || s.hi < s.lo)
      return Bad("capacities", spec, "expected uniform:LO:HI with 1 <= LO <= HI");
    return s;
  }
  if (absl::StartsWith(spec, "list:")) {
    s.kind = CapacitySpec::kList;
    for (absl::string_view part : absl::StrSplit(spec.substr(5), ',')) {
      double v;
      if (!absl::SimpleAtod(absl::StripAsciiWhitespace(part), &v) || !(v > 0))
        return Bad("capacities", spec, "each capacity must be a number > 0");
      s.list.push_back(v);
    }
    return s;
  }
  return Bad("capacities", spec, "expected equal, uniform:LO:HI or list:a,b,...");
}

absl::StatusOr<FaultSpec> ParseFaults(const std::string& spec) {
  FaultSpec s;
  if (spec.empty() || spec == "none") return s;
  if (absl::StartsWith(spec, "list:")) {
    s.kind = FaultSpec::kList;
    std::vector<int64_t> v;
    if (!ParseIntList(spec.substr(5), &v)) return Bad("faults", spec, "expected list:a,b,... of labels");
    std::set<int64_t> seen;
    for (int64_t x : v) {
      if (x < 0 || x > (1 << 24)) return Bad("faults", spec, "labels must be non-negative");
      if (!seen.insert(x).second) return Bad("faults", spec, absl::StrCat("label ", x, " is listed twice"));
      s.list.push_back(static_cast<NodeId>(x));
    }
    return s;
  }
  if (absl::StartsWith(spec, "random:")) {
    s.kind = FaultSpec::kRandom;
    if (!absl::SimpleAtoi(spec.substr(7), &s.count) || s.count < 0)
      return Bad("faults", spec, "expected random:K with K >= 0");
    return s;
  }
  return Bad("faults", spec, "expected list:a,b,... or random:K");
}

absl::StatusOr<std::vector<Load>> DrawLoads(const LoadSpec& spec, int n, std::mt19937_64& rng) {
  if (spec.kind == LoadSpec::kList) {
    if (static_cast<int>(spec.list.size()) != n)
      return absl::InvalidArgumentError(
          absl::StrCat("bad loads: the list has ", spec.list.size(), " values for ", n, " nodes"));
    return spec.list;
  }
  std::vector<Load> w(n);
  for (auto& x : w) x = UniformInt(rng, spec.lo, spec.hi);
  return w;
}

absl::StatusOr<std::vector<double>> DrawCapacities(const CapacitySpec& spec, int n, std::mt19937_64& rng) {
  switch (spec.kind) {
    case CapacitySpec::kEqual:
      return std::vector<double>(n, 1.0);
    case CapacitySpec::kUniform: {
      std::vector<double> p(n);
      for (auto& x : p) x = static_cast<double>(UniformInt(rng, spec.lo, spec.hi));
      return p;
    }
    case CapacitySpec::kList:
      if (static_cast<int>(spec.list.size()) != n)
        return absl::InvalidArgumentError(
            absl::StrCat("bad capacities: the list has ", spec.list.size(), " values for ", n, " nodes"));
      return spec.list;
  }
  return absl::InternalError("unknown capacity spec");
}

absl::StatusOr<std::vector<NodeId>> DrawFaults(const FaultSpec& spec, int size, std::mt19937_64& rng) {
  switch (spec.kind) {
    case FaultSpec::kNone:
      return std::vector<NodeId>{};
    case FaultSpec::kList:
      for (NodeId f : spec.list)
        if (f >= size)
          return absl::InvalidArgumentError(
              absl::StrCat("bad faults: label ", f, " is outside the cube of ", size, " nodes"));
      if (static_cast<int>(spec.list.size()) >= size)
        return absl::InvalidArgumentError("bad faults: every node would be faulty");
      return spec.list;
    case FaultSpec::kRandom: {
      if (spec.count >= size)
        return absl::InvalidArgumentError(
            absl::StrCat("bad faults: random:", spec.count, " needs fewer faults than the ", size, " nodes"));
      // Partial Fisher-Yates over the labels.
      std::vector<NodeId> labels(size);
      for (int i = 0; i < size; ++i) labels[i] = i;
      for (int i = 0; i < spec.count; ++i) std::swap(labels[i], labels[UniformInt(rng, i, size - 1)]);
      std::vector<NodeId> f(labels.begin(), labels.begin() + spec.count);
      std::sort(f.begin(), f.end());
      return f;
    }
  }
  return absl::InternalError("unknown fault spec");
}

}  // namespace hyperfed::sim
