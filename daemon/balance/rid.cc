#include "daemon/balance/rid.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace hyperfed::balance {

std::vector<Load> RidRequests(Load own, absl::Span<const Load> neighbor_loads, double own_capacity,
                              absl::Span<const double> neighbor_capacities) {
  std::vector<Load> req(neighbor_loads.size(), 0);
  const Load d = static_cast<Load>(neighbor_loads.size());
  Load sum = 0;
  for (Load l : neighbor_loads) sum += l;
  if (sum <= 0) return req;
  if (neighbor_capacities.empty()) {
    // Exact integers: want = (own + sum)/(d+1) - own = (sum - d*own)/(d+1).
    const __int128 num = static_cast<__int128>(sum) - static_cast<__int128>(d) * own;
    if (num <= 0) return req;
    for (size_t k = 0; k < req.size(); ++k)
      req[k] = static_cast<Load>(num * neighbor_loads[k] / (static_cast<__int128>(d + 1) * sum));
    return req;
  }
  long double cap = own_capacity;
  for (double p : neighbor_capacities) cap += p;
  const long double want = static_cast<long double>(own + sum) * own_capacity / cap - static_cast<long double>(own);
  if (want <= 0) return req;
  for (size_t k = 0; k < req.size(); ++k)
    req[k] = std::min<Load>(neighbor_loads[k], static_cast<Load>(std::floor(want * neighbor_loads[k] / sum)));
  return req;
}

std::vector<Load> RidGrant(Load own, absl::Span<const Load> requests) {
  std::vector<Load> g(requests.size(), 0);
  Load left = own;
  for (size_t j = 0; j < requests.size(); ++j) {
    g[j] = std::min(left, std::max<Load>(requests[j], 0));
    left -= g[j];
  }
  return g;
}

absl::StatusOr<Plan> RidPlan(const Topology& topo, absl::Span<const Load> loads, absl::Span<const double> capacities,
                             const RidOptions& options) {
  const int size = topo.size();
  if (static_cast<int>(loads.size()) != size)
    return absl::InvalidArgumentError(absl::StrCat(loads.size(), " loads for ", size, " nodes"));
  if (!capacities.empty() && static_cast<int>(capacities.size()) != size)
    return absl::InvalidArgumentError(absl::StrCat(capacities.size(), " capacities for ", size, " nodes"));
  if (options.max_rounds < 0) return absl::InvalidArgumentError("max_rounds must be >= 0");
  for (int u = 0; u < size; ++u) {
    if (loads[u] < 0) return absl::InvalidArgumentError(absl::StrCat("negative load at node ", u));
    if (!capacities.empty() && topo.alive(u) && !(capacities[u] > 0))
      return absl::InvalidArgumentError(absl::StrCat("capacity of node ", u, " must be > 0"));
  }
  std::vector<std::vector<NodeId>> nbrs(size);
  for (int u = 0; u < size; ++u)
    if (topo.alive(u)) nbrs[u] = topo.Neighbors(u);

  PlanRecorder rec(std::vector<Load>(loads.begin(), loads.end()));
  int rounds = 0;
  // Requests received by each donor in a round: (requester, amount), in
  // ascending requester order because requesters are visited in that order.
  std::vector<std::vector<std::pair<NodeId, Load>>> asked(size);
  std::vector<Load> nl, req, got;
  std::vector<double> nc;
  for (int round = 1; round <= options.max_rounds; ++round) {
    const std::vector<Load> snap = rec.loads();
    bool any = false;
    for (int i = 0; i < size; ++i) {
      if (!topo.alive(i) || snap[i] >= options.threshold || nbrs[i].empty()) continue;
      any = true;
      nl.clear();
      nc.clear();
      for (NodeId k : nbrs[i]) {
        nl.push_back(snap[k]);
        if (!capacities.empty()) nc.push_back(capacities[k]);
      }
      req = RidRequests(snap[i], nl, capacities.empty() ? 1.0 : capacities[i], nc);
      rec.AddMessages(2 * static_cast<int64_t>(nbrs[i].size()));
      for (size_t j = 0; j < req.size(); ++j)
        if (req[j] > 0) asked[nbrs[i][j]].push_back({i, req[j]});
    }
    if (!any) break;
    ++rounds;
    Load moved = 0;
    for (int k = 0; k < size; ++k) {
      if (asked[k].empty()) continue;
      req.clear();
      for (auto [i, r] : asked[k]) req.push_back(r);
      got = RidGrant(snap[k], req);
      for (size_t j = 0; j < got.size(); ++j) {
        rec.Move(round, k, asked[k][j].first, got[j]);
        moved += got[j];
      }
      asked[k].clear();
    }
    if (moved == 0) break;
  }
  rec.SetSteps(3 * static_cast<int64_t>(rounds));
  return std::move(rec).Finish();
}

}  // namespace hyperfed::balance
