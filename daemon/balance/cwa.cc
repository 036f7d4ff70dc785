#include "daemon/balance/cwa.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/balance/quota.h"

namespace hyperfed::balance {

CwaNodeState CwaInit(int index, int dim, Load own_load) {
  CwaNodeState s;
  s.index = index;
  s.l.assign(dim + 1, 0);
  s.q.assign(dim + 1, 0);
  s.delta.assign(dim + 1, 0);
  s.l[0] = own_load;
  return s;
}

void CwaReceiveLoad(CwaNodeState& s, int j, Load partner_lj) { s.l[j + 1] = s.l[j] + partner_lj; }

std::vector<Load> CwaQuotaVector(int index, int dim, absl::Span<const Load> quota_prefix) {
  std::vector<Load> q(dim + 1);
  for (int j = 0; j <= dim; ++j) {
    const int lo = (index >> j) << j;
    q[j] = quota_prefix[lo + (1 << j)] - quota_prefix[lo];
  }
  return q;
}

void CwaSetQuotas(CwaNodeState& s, std::vector<Load> q) {
  s.q = std::move(q);
  for (size_t j = 0; j < s.l.size(); ++j) s.delta[j] = s.l[j] - s.q[j];
}

CwaTheta CwaComputeTheta(const CwaNodeState& s, int k) {
  CwaTheta t;
  CwaComputeTheta(s, k, &t);
  return t;
}

void CwaComputeTheta(const CwaNodeState& s, int k, CwaTheta* out) {
  CwaTheta& t = *out;
  t.theta.assign(k + 1, 0);
  t.gamma.assign(k + 1, 0);
  t.theta[k] = std::max<Load>(s.delta[k], 0);
  t.gamma[k] = s.delta[k] - t.theta[k];
  for (int j = k - 1; j >= 0; --j) {
    const Load g = t.gamma[j + 1], up = t.theta[j + 1];
    if (((s.index >> j) & 1) == 0) {
      // The bit-0 half sends what it holds beyond the excess its parent
      // subcube keeps (gamma^{j+1}), at most what the parent must send.
      t.theta[j] = s.delta[j] <= g ? 0 : std::min(s.delta[j] - g, up);
    } else {
      // The bit-1 half sends the rest: all of it when the bit-0 half cannot
      // send, otherwise its own excess.
      const Load partner_delta = s.delta[j + 1] - s.delta[j];
      t.theta[j] = partner_delta <= g ? up : std::max<Load>(s.delta[j], 0);
    }
    t.gamma[j] = s.delta[j] - t.theta[j];
  }
}

void CwaAfterSend(CwaNodeState& s, int k, absl::Span<const Load> theta) {
  for (int j = 0; j <= k; ++j) {
    s.l[j] -= theta[j];
    s.delta[j] -= theta[j];
  }
}

void CwaAfterReceive(CwaNodeState& s, int k, absl::Span<const Load> partner_theta) {
  for (int j = 0; j <= k; ++j) {
    s.l[j] += partner_theta[j];
    s.delta[j] += partner_theta[j];
  }
}

NodeId WalkedLabel(NodeId base, absl::Span<const int> dims, int c) {
  NodeId u = base;
  for (size_t j = 0; j < dims.size(); ++j)
    if ((c >> j) & 1) u |= NodeId{1} << dims[j];
  return u;
}

void CwaMigrate(PlanRecorder& rec, NodeId base, absl::Span<const int> dims, std::vector<CwaNodeState>& states,
                int first_step) {
  const int dim = static_cast<int>(dims.size());
  const int count = 1 << dim;
  std::vector<NodeId> label(count);
  for (int c = 0; c < count; ++c) label[c] = WalkedLabel(base, dims, c);
  CwaTheta t;
  for (int k = dim - 1; k >= 0; --k) {
    const int step = first_step + (dim - 1 - k);
    for (int c = 0; c < count; ++c) {
      if (!CwaIsSender(states[c], k)) continue;
      const int partner = c ^ (1 << k);
      CwaComputeTheta(states[c], k, &t);
      if (t.theta[0] > 0) {
        rec.Move(step, label[c], label[partner], t.theta[0]);
      } else {
        rec.AddMessages(1);  // the theta vector still has to reach the partner
      }
      CwaAfterSend(states[c], k, t.theta);
      CwaAfterReceive(states[partner], k, t.theta);
    }
  }
}

absl::StatusOr<std::vector<double>> CheckCubeInputs(const Topology& topo, absl::Span<const Load> loads,
                                                    absl::Span<const double> capacities) {
  if (topo.kind() != TopologyKind::kHypercube)
    return absl::InvalidArgumentError(absl::StrCat("needs a hypercube, got ", topo.Name()));
  if (static_cast<int>(loads.size()) != topo.size())
    return absl::InvalidArgumentError(absl::StrCat(loads.size(), " loads for ", topo.size(), " nodes"));
  if (!capacities.empty() && static_cast<int>(capacities.size()) != topo.size())
    return absl::InvalidArgumentError(absl::StrCat(capacities.size(), " capacities for ", topo.size(), " nodes"));
  for (int u = 0; u < topo.size(); ++u) {
    if (loads[u] < 0) return absl::InvalidArgumentError(absl::StrCat("negative load at node ", u));
    if (!capacities.empty() && topo.alive(u) && !(capacities[u] > 0))
      return absl::InvalidArgumentError(absl::StrCat("capacity of node ", u, " must be > 0"));
  }
  if (capacities.empty()) return std::vector<double>(topo.size(), 1.0);
  return std::vector<double>(capacities.begin(), capacities.end());
}

absl::StatusOr<Plan> CwaPlan(const Topology& topo, absl::Span<const Load> loads, absl::Span<const double> capacities) {
  auto caps = CheckCubeInputs(topo, loads, capacities);
  if (!caps.ok()) return caps.status();
  if (topo.alive_count() != topo.size())
    return absl::InvalidArgumentError("CWA needs a hypercube without faults (use MCWA)");
  const int n = topo.dimensions();
  const int count = 1 << n;
  std::vector<int> dims(n);
  for (int j = 0; j < n; ++j) dims[j] = j;

  PlanRecorder rec(std::vector<Load>(loads.begin(), loads.end()));
  std::vector<CwaNodeState> states(count);
  for (int c = 0; c < count; ++c) states[c] = CwaInit(c, n, loads[c]);
  for (int j = 0; j < n; ++j) {
    for (int c = 0; c < count; ++c) CwaReceiveLoad(states[c], j, states[c ^ (1 << j)].l[j]);
    rec.AddMessages(count);
  }
  // Every node holds the same total l^n and capacity list, so every node
  // computes the same apportionment; computing it once here is the same.
  const std::vector<Load> quota = Apportion(states[0].l[n], *caps);
  std::vector<Load> prefix(count + 1, 0);
  for (int c = 0; c < count; ++c) prefix[c + 1] = prefix[c] + quota[c];
  for (int c = 0; c < count; ++c) CwaSetQuotas(states[c], CwaQuotaVector(c, n, prefix));
  CwaMigrate(rec, 0, dims, states, 1);
  rec.SetSteps(3 * n);
  return std::move(rec).Finish();
}

}  // namespace hyperfed::balance
