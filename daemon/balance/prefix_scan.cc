#include "daemon/balance/prefix_scan.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/balance/quota.h"

namespace hyperfed::balance {

ScanTotals SiteTotals(Load load, double capacity) {
  const int64_t w = CapacityWeight(capacity);
  return ScanTotals{.load = load, .weight = w, .live = 1, .min_weight = w, .max_weight = w};
}

ScanTotals Combine(const ScanTotals& a, const ScanTotals& b) {
  return ScanTotals{.load = a.load + b.load,
                    .weight = a.weight + b.weight,
                    .live = a.live + b.live,
                    .min_weight = std::min(a.min_weight, b.min_weight),
                    .max_weight = std::max(a.max_weight, b.max_weight)};
}

absl::Status CheckScanTotals(const ScanTotals& t, int dimension) {
  if (t.live < 0 || t.live > (int64_t{1} << dimension))
    return absl::InvalidArgumentError(absl::StrCat("totals of a ", dimension, "-subcube name ", t.live, " sites"));
  if (t.live == 0) {
    if (!(t == ScanTotals{})) return absl::InvalidArgumentError("totals of a subcube without live sites are not empty");
    return absl::OkStatus();
  }
  const int64_t max_weight = CapacityWeight(kMaxWeightedCapacity);
  if (t.load < 0) return absl::InvalidArgumentError("totals: negative load");
  if (t.min_weight < 0 || t.min_weight > t.max_weight || t.max_weight > max_weight)
    return absl::InvalidArgumentError("totals: weights out of bounds");
  if (t.weight < static_cast<__int128>(t.min_weight) * t.live ||
      t.weight > static_cast<__int128>(t.max_weight) * t.live)
    return absl::InvalidArgumentError("totals: the weight is not between live x min and live x max");
  return absl::OkStatus();
}

ScanState StartScan(NodeId label, Load load, double capacity) {
  ScanState s;
  s.label = label;
  s.own = SiteTotals(load, capacity);
  s.block = s.own;
  return s;
}

absl::Status ScanStep(ScanState* state, const ScanTotals& theirs) {
  const int k = state->dims;
  if (auto st = CheckScanTotals(theirs, k); !st.ok())
    return absl::InvalidArgumentError(absl::StrCat("dimension ", k, ": ", st.message()));
  if ((state->label >> k) & 1) state->prefix = Combine(theirs, state->prefix);  // the partner's subcube is below
  state->block = Combine(state->block, theirs);
  state->sibling.push_back(theirs);
  ++state->dims;
  return absl::OkStatus();
}

Load BlockQuota(const ScanTotals& below, const ScanTotals& block, const ScanTotals& all) {
  if (block.live == 0) return 0;
  const Load total = all.load;
  if (all.weight == 0) return below.live == 0 ? total : 0;  // Apportion: the lowest live site takes all
  if (all.min_weight == all.max_weight) {
    // The papers' rule by rank: the lowest R = T mod m live sites get one more.
    const Load avg = total / all.live, r = total % all.live;
    return avg * block.live + std::clamp<Load>(r - below.live, 0, block.live);
  }
  return static_cast<Load>(MulDivFloor(total, below.weight + block.weight, all.weight) -
                           MulDivFloor(total, below.weight, all.weight));
}

Load ScanQuota(const ScanState& done) { return BlockQuota(done.prefix, done.own, done.block); }

namespace {

bool Bit(NodeId v, int k) { return (v >> k) & 1; }
Load Abs(Load x) { return x < 0 ? -x : x; }
bool SameSign(Load a, Load b) { return (a > 0) == (b > 0); }

}  // namespace

MatchView DeriveMatch(const ScanState& done) {
  const int n = done.dims;
  const ScanTotals& all = done.block;
  MatchView v;
  v.label = done.label;
  // block[k]: the site's k-subcube; below[k]: every live position below it.
  std::vector<ScanTotals> block(n + 1), below(n + 1);
  block[0] = done.own;
  for (int k = 0; k < n; ++k) block[k + 1] = Combine(block[k], done.sibling[k]);
  for (int k = n - 1; k >= 0; --k)
    below[k] = Bit(done.label, k) ? Combine(below[k + 1], done.sibling[k]) : below[k + 1];
  // PlanDirectTransfers moves nothing when no site has weight: residuals 0.
  const bool balance = all.weight > 0;
  auto residual = [&](const ScanTotals& b, const ScanTotals& under) {
    return balance ? b.load - BlockQuota(under, b, all) : 0;
  };
  v.quota = balance ? BlockQuota(below[0], done.own, all) : done.own.load;
  for (int k = 0; k <= n; ++k) v.residual.push_back(residual(block[k], below[k]));
  for (int k = 0; k < n; ++k) {
    const ScanTotals& under = Bit(done.label, k) ? below[k + 1] : Combine(below[k], block[k]);
    v.sibling_residual.push_back(residual(done.sibling[k], under));
  }
  // The site's units in its k-subcube's list: [start, start + left).
  Load start = 0, left = Abs(v.residual[0]);
  const bool sends = v.residual[0] > 0;
  for (int k = 0; k < n && left > 0; ++k) {
    const Load mine = v.residual[k], theirs = v.sibling_residual[k];
    if (theirs == 0 || SameSign(mine, theirs)) {
      if (Bit(done.label, k)) start += Abs(theirs);  // the lower list comes first
      continue;
    }
    // Opposite signs: units [0, m) of both lists are matched front to
    // front; the rest of the longer list is the (k+1)-subcube's list.
    const Load m = std::min(Abs(mine), Abs(theirs));
    const Load end = start + left;
    if (start < m) v.runs.push_back({k, start, std::min(end, m), sends});
    left = std::max<Load>(0, end - std::max(start, m));
    start = std::max(start, m) - m;
  }
  return v;
}

LocateStep Locate(const MatchView& at, int level, Load position) {
  for (int j = level - 1; j >= 0; --j) {
    const bool mine_lower = !Bit(at.label, j);
    const Load lo = mine_lower ? at.residual[j] : at.sibling_residual[j];
    const Load hi = mine_lower ? at.sibling_residual[j] : at.residual[j];
    bool in_lower;
    if (lo == 0 || hi == 0 || SameSign(lo, hi)) {
      in_lower = position < Abs(lo);
      if (!in_lower) position -= Abs(lo);
    } else {
      in_lower = Abs(lo) > Abs(hi);  // the longer list survives, less its first m units
      position += std::min(Abs(lo), Abs(hi));
    }
    if (in_lower != mine_lower) return LocateStep{.here = false, .next_level = j, .position = position};
  }
  return LocateStep{.here = true, .next_level = 0, .position = position};
}

std::vector<Transfer> MatchedTransfers(const MatchView& self, absl::Span<const PartnerRun> partners) {
  std::set<std::tuple<NodeId, NodeId>> seen;
  std::vector<Transfer> out;
  for (const PartnerRun& p : partners) {
    for (const MatchRun& r : self.runs) {
      if (r.level != p.run.level || r.sends == p.run.sends) continue;
      const Load count = std::min(r.end, p.run.end) - std::max(r.begin, p.run.begin);
      if (count <= 0) continue;
      const NodeId from = r.sends ? self.label : p.label, to = r.sends ? p.label : self.label;
      if (!seen.insert({from, to}).second) continue;
      out.push_back({1, from, to, count, __builtin_popcount(static_cast<unsigned>(from ^ to))});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Transfer& a, const Transfer& b) { return std::tie(a.from, a.to) < std::tie(b.from, b.to); });
  return out;
}

LivePositions::LivePositions(int dims, const std::vector<bool>& alive) : dims_(dims) {
  const size_t size = size_t{1} << dims;
  count_.assign(size + 1, 0);
  for (size_t v = 0; v < size; ++v) count_[v + 1] = count_[v] + ((alive.empty() || alive[v]) ? 1 : 0);
}

int64_t LivePositions::LiveIn(NodeId v, int k) const {
  const NodeId base = v & ~((NodeId{1} << k) - 1);
  return count_[base + (NodeId{1} << k)] - count_[base];
}

NodeId LivePositions::StandIn(NodeId v, int k) const {
  if (alive(v)) return v;
  const int64_t live = LiveIn(v, k);
  if (live == 0) return -1;
  // The dead positions of the subcube are dealt out to its live sites in
  // turn: the r-th dead position to the (r mod live)-th live site.
  const NodeId base = v & ~((NodeId{1} << k) - 1);
  const int64_t dead_rank = (v - base) - (count_[v] - count_[base]);
  const int64_t want = count_[base] + dead_rank % live + 1;
  // The first u whose count_[u + 1] reaches `want` is that live site.
  auto it = std::lower_bound(count_.begin() + base + 1, count_.begin() + base + (NodeId{1} << k) + 1, want);
  return static_cast<NodeId>(it - count_.begin()) - 1;
}

std::vector<NodeId> LivePositions::ServedBy(NodeId self, int k) const {
  std::vector<NodeId> out;
  const NodeId bit = NodeId{1} << k;
  if (alive(self ^ bit)) out.push_back(self ^ bit);
  const NodeId base = self & ~(bit - 1);
  for (NodeId v = base; v < base + bit; ++v)
    if (!alive(v) && alive(v ^ bit) && StandIn(v, k) == self) out.push_back(v ^ bit);
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<ScanPlan> PlanByPrefixScan(int dims, const std::vector<bool>& alive, absl::Span<const Load> loads,
                                          absl::Span<const double> capacities) {
  const size_t size = size_t{1} << dims;
  if (dims < 0 || dims > 24 || loads.size() != size || capacities.size() != size ||
      (!alive.empty() && alive.size() != size))
    return absl::InvalidArgumentError("one load, one capacity (and one alive flag) per position of the cube");
  LivePositions live(dims, alive);
  std::vector<NodeId> sites;
  for (NodeId v = 0; v < static_cast<NodeId>(size); ++v)
    if (live.alive(v)) sites.push_back(v);
  std::vector<int64_t> scan_sent(size, 0), lookup_sent(size, 0), forwarded(size, 0), partnered(size, 0);
  ScanPlan plan;
  plan.quotas.assign(size, 0);
  if (sites.empty()) return plan;

  // 1. The scan: in each dimension every live site takes its partner's
  // subcube totals from the partner or its stand-in (sent before the step).
  std::vector<ScanState> state(size);
  for (NodeId v : sites) state[v] = StartScan(v, loads[v], capacities[v]);
  for (int k = 0; k < dims; ++k) {
    std::vector<ScanTotals> got(size);
    for (NodeId v : sites) {
      const NodeId src = live.SourceFor(v, k);
      if (src < 0) continue;  // the partner's subcube is empty: the fault set says so
      got[v] = ScanMessage(state[src]);
      ++scan_sent[src];
    }
    for (NodeId v : sites)
      if (auto st = ScanStep(&state[v], got[v]); !st.ok()) return st;
  }
  plan.totals = state[sites.front()].block;
  for (NodeId v : sites) {
    if (!(state[v].block == plan.totals)) return absl::InternalError(absl::StrCat("site ", v, " has other totals"));
    plan.quotas[v] = ScanQuota(state[v]);
  }

  // 2. Each site alone: its residuals and matched runs.
  std::vector<MatchView> view(size);
  for (NodeId v : sites) view[v] = DeriveMatch(state[v]);

  // 3. Lookups: each run's start is looked up in the sibling subcube's list,
  // forwarded down it, and the site holding it answers with its own run.
  std::vector<std::vector<PartnerRun>> partners(size);
  for (NodeId v : sites) {
    for (const MatchRun& run : view[v].runs) {
      ++plan.cost.lookups_total;
      NodeId at = live.SourceFor(v, run.level);
      if (at < 0) return absl::InternalError("a run is matched against an empty subcube");
      ++lookup_sent[v];
      int level = run.level;
      Load position = run.begin;
      for (;;) {
        const LocateStep step = Locate(view[at], level, position);
        if (step.here) break;
        const NodeId next = live.StandIn(at ^ (NodeId{1} << step.next_level), step.next_level);
        if (next < 0) return absl::InternalError("a lookup was sent to an empty subcube");
        ++lookup_sent[at];
        ++forwarded[at];
        ++plan.cost.forwards_total;
        at = next, level = step.next_level, position = step.position;
      }
      const MatchRun* found = nullptr;
      for (const MatchRun& r : view[at].runs)
        if (r.level == run.level && r.begin <= run.begin && run.begin < r.end) found = &r;
      if (!found || found->sends == run.sends)
        return absl::InternalError(absl::StrCat("the lookup of site ", v, " found no matching run at site ", at));
      ++lookup_sent[at];  // the answer
      partners[at].push_back({v, run});
      partners[v].push_back({at, *found});
    }
  }

  // 4. Every site's transfers; a receiver must derive the same as its senders.
  std::set<std::tuple<NodeId, NodeId, Load>> outgoing, incoming;
  for (NodeId v : sites) {
    const std::vector<Transfer> mine = MatchedTransfers(view[v], partners[v]);
    partnered[v] = static_cast<int64_t>(mine.size());
    for (const Transfer& t : mine) {
      if (t.from == v) {
        plan.transfers.push_back(t);
        outgoing.insert({t.from, t.to, t.count});
      } else {
        incoming.insert({t.from, t.to, t.count});
      }
    }
  }
  if (outgoing != incoming) return absl::InternalError("senders and receivers derive different transfers");
  std::sort(plan.transfers.begin(), plan.transfers.end(),
            [](const Transfer& a, const Transfer& b) { return std::tie(a.from, a.to) < std::tie(b.from, b.to); });

  for (NodeId v : sites) {
    const int64_t messages = scan_sent[v] + lookup_sent[v];
    plan.cost.scan_messages_max = std::max(plan.cost.scan_messages_max, scan_sent[v]);
    plan.cost.lookup_messages_max = std::max(plan.cost.lookup_messages_max, lookup_sent[v]);
    plan.cost.messages_max = std::max(plan.cost.messages_max, messages);
    plan.cost.bytes_max =
        std::max(plan.cost.bytes_max, scan_sent[v] * kScanMessageBytes + lookup_sent[v] * kLookupMessageBytes);
    plan.cost.messages_total += messages;
    plan.cost.forwards_max = std::max(plan.cost.forwards_max, forwarded[v]);
    plan.cost.partners_max = std::max(plan.cost.partners_max, partnered[v]);
  }
  return plan;
}

}  // namespace hyperfed::balance
