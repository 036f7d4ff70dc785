#include "daemon/balance/dde.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>

#include "absl/strings/str_cat.h"

namespace hyperfed::balance {

Load DdeSuffixSum(Load w_i, Load suffix_of_next) { return w_i + suffix_of_next; }

DdeAverage DdeAverageAtRoot(Load total, int k) { return {total / k, total % k}; }

Load DdeQuota(const DdeAverage& avg, int i) { return avg.w_avg + (i < avg.remainder ? 1 : 0); }

Load DdeAccumulatedQuota(const DdeAverage& avg, int k, int i) {
  return avg.w_avg * (k - i) + std::max<Load>(0, avg.remainder - i);
}

Load DdeChainFlow(Load accumulated_quota, Load suffix_sum) { return accumulated_quota - suffix_sum; }

Load DdeRingShift(absl::Span<const Load> chain_flows) {
  const int k = static_cast<int>(chain_flows.size());
  std::vector<Load> pos, neg;
  int n_z = 0;
  for (Load x : chain_flows) {
    if (x > 0)
      pos.push_back(x);
    else if (x < 0)
      neg.push_back(x);
    else
      ++n_z;
  }
  const int n_p = static_cast<int>(pos.size()), n_n = static_cast<int>(neg.size());
  const int m = (k + 1) / 2;
  if (n_n + n_z - n_p < 0) {
    // More than half the edges carry flow clockwise: the m-th largest is a
    // median, and subtracting it leaves a minimum-cost flow (Lemma 2).
    std::nth_element(pos.begin(), pos.begin() + (m - 1), pos.end(), std::greater<Load>());
    return pos[m - 1];
  }
  if (n_p + n_z - n_n < 0) {
    std::nth_element(neg.begin(), neg.begin() + (m - 1), neg.end());
    return neg[m - 1];
  }
  return 0;
}

DdeSends DdeExchangeStep(ExchangeSchedule schedule, Load load, Load from_left, Load to_right) {
  DdeSends s;
  if (schedule == ExchangeSchedule::kReceiveBeforeSend) {
    // Fig. 5: steps 1-2 wait for every incoming transfer; only then 3-4 send.
    if (from_left > 0 || to_right < 0) return s;
    if (from_left < 0) s.left = -from_left;
    if (to_right > 0) s.right = to_right;
    return s;
  }
  // Fig. 6: send left, then right, as soon as the load covers the transfer.
  // The figure prints w_i > |a_i|; its own Example 1 has node 3 (one task)
  // send its one task in the first step, so the test is w_i >= |a_i|.
  if (from_left < 0 && load >= -from_left) {
    s.left = -from_left;
    load -= s.left;
  }
  if (to_right > 0 && load >= to_right) s.right = to_right;
  return s;
}

DdeLine DdeLineFlows(absl::Span<const Load> loads, bool ring, bool augment) {
  const int k = static_cast<int>(loads.size());
  DdeLine line;
  line.suffix.assign(k, 0);
  line.quota.assign(k, 0);
  line.acc_quota.assign(k, 0);
  line.flow.assign(k, 0);
  if (k == 0) return line;
  // Step 1: scan from node k-1 to node 0.
  Load next = 0;
  for (int i = k - 1; i >= 0; --i) next = line.suffix[i] = DdeSuffixSum(loads[i], next);
  // Step 2 at node 0, broadcast.
  const DdeAverage avg = DdeAverageAtRoot(line.suffix[0], k);
  // Steps 3 and 4 at every node.
  for (int i = 0; i < k; ++i) {
    line.quota[i] = DdeQuota(avg, i);
    line.acc_quota[i] = DdeAccumulatedQuota(avg, k, i);
    if (i >= 1) line.flow[i - 1] = DdeChainFlow(line.acc_quota[i], line.suffix[i]);
  }
  if (ring && augment && k >= 3) {
    line.shift = DdeRingShift(line.flow);
    for (Load& x : line.flow) x -= line.shift;
  }
  return line;
}

std::vector<DdeLineTransfer> DdeLineExchange(absl::Span<const Load> loads, absl::Span<const Load> flow, bool ring,
                                             ExchangeSchedule schedule) {
  const int k = static_cast<int>(loads.size());
  const bool wrap = ring && k >= 3;
  std::vector<Load> w(loads.begin(), loads.end());
  // a[i] = remaining x_{i-1,i}, b[i] = remaining x_{i,i+1}.
  std::vector<Load> a(k, 0), b(k, 0);
  for (int i = 0; i < k; ++i) {
    if (i + 1 < k || wrap) b[i] = flow[i];
    if (i > 0)
      a[i] = flow[i - 1];
    else if (wrap)
      a[0] = flow[k - 1];
  }
  auto left = [&](int i) { return i == 0 ? k - 1 : i - 1; };
  auto right = [&](int i) { return i == k - 1 ? 0 : i + 1; };
  auto pending = [&] {
    for (int i = 0; i < k; ++i)
      if (a[i] != 0 || b[i] != 0) return true;
    return false;
  };
  std::vector<DdeLineTransfer> out;
  std::vector<DdeSends> sends(k);
  for (int phase = 1; pending(); ++phase) {
    bool any = false;
    for (int i = 0; i < k; ++i) {
      sends[i] = DdeExchangeStep(schedule, w[i], a[i], b[i]);
      any = any || sends[i].left > 0 || sends[i].right > 0;
    }
    if (!any || phase > 4 * k + 4) {
      // The flows of a line are acyclic, so some node can always send.
      std::cerr << "DDE exchange stalled in phase " << phase << "\n";
      std::abort();
    }
    std::vector<Load> received(k, 0);
    for (int i = 0; i < k; ++i) {
      if (sends[i].left > 0) {
        const int j = left(i);
        w[i] -= sends[i].left;
        a[i] += sends[i].left;
        b[j] += sends[i].left;
        received[j] += sends[i].left;
        out.push_back({phase, i, j, sends[i].left});
      }
      if (sends[i].right > 0) {
        const int j = right(i);
        w[i] -= sends[i].right;
        b[i] -= sends[i].right;
        a[j] -= sends[i].right;
        received[j] += sends[i].right;
        out.push_back({phase, i, j, sends[i].right});
      }
    }
    // Tasks sent in a phase arrive at its end.
    for (int i = 0; i < k; ++i) w[i] += received[i];
  }
  return out;
}

absl::StatusOr<Plan> DdePlan(const Topology& topo, absl::Span<const Load> loads, const DdeOptions& opts) {
  if (static_cast<int>(loads.size()) != topo.size())
    return absl::InvalidArgumentError(absl::StrCat("DDE: ", loads.size(), " loads for ", topo.size(), " nodes"));
  for (Load w : loads)
    if (w < 0) return absl::InvalidArgumentError("DDE: negative load");
  std::vector<int> sizes;
  bool torus = false;
  switch (topo.kind()) {
    case TopologyKind::kTorus:
      torus = true;
      sizes = topo.sizes();
      break;
    case TopologyKind::kMesh:
      sizes = topo.sizes();
      break;
    case TopologyKind::kHypercube:
      if (!topo.faults().empty())
        return absl::InvalidArgumentError("DDE needs a complete hypercube (use MCWA around faults)");
      sizes.assign(topo.dimensions(), 2);
      break;
    case TopologyKind::kGraph:
      return absl::InvalidArgumentError(
          absl::StrCat("DDE runs on chains, rings, tori, meshes and hypercubes, not ", topo.Name()));
  }

  PlanRecorder rec(std::vector<Load>(loads.begin(), loads.end()));
  int phase_offset = 0;
  int64_t stride = 1;
  const int n = static_cast<int>(sizes.size());
  for (int d = 0; d < n; ++d) {
    const int k = sizes[d];
    if (k < 2) continue;
    const bool ring = torus && k >= 3;
    const bool augment = ring && opts.ring_augmentation;
    int dim_phases = 0;
    std::vector<Load> line_loads(k);
    std::vector<NodeId> nodes(k);
    for (NodeId base = 0; base < topo.size(); ++base) {
      // A line of dimension d starts at every node whose coordinate d is 0.
      if ((base / stride) % k != 0) continue;
      for (int p = 0; p < k; ++p) {
        nodes[p] = static_cast<NodeId>(base + p * stride);
        line_loads[p] = rec.load(nodes[p]);
      }
      const DdeLine line = DdeLineFlows(line_loads, ring, augment);
      for (const DdeLineTransfer& t : DdeLineExchange(line_loads, line.flow, ring, opts.schedule)) {
        rec.Move(phase_offset + t.phase, nodes[t.from], nodes[t.to], t.count);
        dim_phases = std::max(dim_phases, t.phase);
      }
      rec.AddMessages(2 * (k - 1) * (augment ? 2 : 1));
    }
    phase_offset += dim_phases;
    rec.AddSteps(k + dim_phases);
    stride *= k;
  }
  return std::move(rec).Finish();
}

}  // namespace hyperfed::balance
