#include "sim/speedup.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <queue>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/balance/dem.h"
#include "daemon/balance/mcwa.h"
#include "daemon/balance/rid.h"
#include "daemon/balance/topology.h"

namespace hyperfed::sim {

using balance::Load;
using balance::NodeId;

const char* SpeedupAlgorithmName(SpeedupAlgorithm a) {
  switch (a) {
    case SpeedupAlgorithm::kMcwa:
      return "MCWA";
    case SpeedupAlgorithm::kDem:
      return "DEM";
    case SpeedupAlgorithm::kRid:
      return "RID";
  }
  return "?";
}

const char* MigrationChargeName(MigrationCharge c) {
  switch (c) {
    case MigrationCharge::kBothEnds:
      return "both ends pay 0.1";
    case MigrationCharge::kHalfEachEnd:
      return "each end pays 0.05";
    case MigrationCharge::kSenderOnly:
      return "sender pays 0.1";
    case MigrationCharge::kNetFlow:
      return "net flow, relays free";
  }
  return "?";
}

namespace {

// Event-driven run of one algorithm on one instance.
class Machine {
 public:
  Machine(const balance::Topology& topo, const std::vector<std::deque<double>>& tasks, const SpeedupConfig& cfg,
          SpeedupAlgorithm algo, const std::vector<balance::BalancingSubcube>& subcubes)
      : topo_(topo),
        cfg_(cfg),
        algo_(algo),
        subcubes_(subcubes),
        queue_(tasks),
        busy_until_(tasks.size(), 0),
        busy_(tasks.size(), false),
        armed_(tasks.size(), true),
        version_(tasks.size(), 0) {
    healthy_ = topo.alive_count();
    switch (cfg.charge) {
      case MigrationCharge::kBothEnds:
        send_factor_ = recv_factor_ = 1.0;
        break;
      case MigrationCharge::kHalfEachEnd:
        send_factor_ = recv_factor_ = 0.5;
        break;
      case MigrationCharge::kSenderOnly:
        send_factor_ = 1.0, recv_factor_ = 0.0;
        break;
      case MigrationCharge::kNetFlow:
        send_factor_ = 1.0, recv_factor_ = -1.0;
        break;  // |sent - received|
    }
  }

  absl::Status Run() {
    const int size = topo_.size();
    for (int u = 0; u < size; ++u)
      if (topo_.alive(u)) StartNext(u, 0);
    while (!events_.empty()) {
      auto [neg_t, u, ver] = events_.top();
      events_.pop();
      if (ver != version_[u]) continue;
      const double t = -neg_t;
      end_ = std::max(end_, t);
      busy_[u] = false;
      StartNext(u, t);
      // One trigger rule for all three algorithms (see speedup.h).
      if (armed_[u] && static_cast<Load>(queue_[u].size()) < cfg_.threshold) {
        if (auto s = Balance(u, t); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  double end() const { return end_; }
  Load hops() const { return hops_; }
  int64_t rounds() const { return rounds_; }
  int64_t skipped() const { return skipped_; }
  int healthy() const { return healthy_; }

 private:
  void Push(NodeId u) {
    ++version_[u];
    events_.push({-busy_until_[u], u, version_[u]});
  }
  void StartNext(NodeId u, double t) {
    if (queue_[u].empty()) return;
    busy_until_[u] = t + queue_[u].front();
    queue_[u].pop_front();
    busy_[u] = true;
    Push(u);
  }
  // The node stops for `d` from time t (its running task resumes after).
  void Pause(NodeId u, double t, double d) {
    if (busy_[u]) {
      busy_until_[u] += d;
      Push(u);
    } else {
      StartNext(u, t + d);
    }
  }
  void MoveTasks(NodeId from, NodeId to, Load count) {
    for (Load i = 0; i < count; ++i) {
      queue_[to].push_back(queue_[from].back());
      queue_[from].pop_back();
    }
  }
  std::vector<Load> Loads() const {
    std::vector<Load> l(queue_.size(), 0);
    for (size_t u = 0; u < queue_.size(); ++u) l[u] = static_cast<Load>(queue_[u].size());
    return l;
  }

  // After a balancing action every participant below the threshold is
  // disarmed (its need has just been answered) and every one at or above it
  // is armed, unless a synchronous round found the federation settled.
  void Rearm(NodeId v) { armed_[v] = !settled_ && static_cast<Load>(queue_[v].size()) >= cfg_.threshold; }

  // A synchronous round (DEM, MCWA): every healthy node stops for the
  // information part, (request broadcast + the plan's information steps) x
  // info_cost, and then for its own migrations: the tasks it sends plus
  // receives, times their hops, x migration_cost (§3.3: the migration
  // cost is proportional to the tasks moved and the distance they go).
  // The round tells every node the global load (CWA sends the average down
  // with the quotas; after DEM every node's load is about the average); when
  // fewer than `threshold` waiting tasks per healthy node remain, no node
  // asks again: another round could not give any node a task on average.
  absl::Status Balance(NodeId u, double t) {
    if (algo_ == SpeedupAlgorithm::kRid) {
      ++rounds_;
      return RidRequest(u, t);
    }
    const std::vector<Load> loads = Loads();
    if (cfg_.round_min_average > 0) {
      // Request broadcast and a sum over the cube: n + n information steps.
      Load waiting = 0;
      for (Load l : loads) waiting += l;
      if (static_cast<double>(waiting) < cfg_.round_min_average * healthy_) {
        ++skipped_;
        settled_ = true;
        for (int v = 0; v < topo_.size(); ++v) {
          if (!topo_.alive(v)) continue;
          Pause(v, t, 2.0 * topo_.dimensions() * cfg_.info_cost);
          Rearm(v);
        }
        return absl::OkStatus();
      }
    }
    ++rounds_;
    absl::StatusOr<balance::Plan> plan;
    int phases = 0;
    if (algo_ == SpeedupAlgorithm::kDem) {
      plan = balance::DemPlan(topo_, loads);
      phases = topo_.dimensions();
    } else {
      plan = balance::McwaPlanOn(topo_, loads, {}, subcubes_);
      for (const auto& bs : subcubes_) phases = std::max(phases, 2 * bs.tree_depth + bs.dim);
    }
    if (!plan.ok()) return plan.status();
    const int info_steps = topo_.dimensions() + plan->metrics.steps - phases;
    const double info = static_cast<double>(info_steps) * cfg_.info_cost;
    std::vector<double> handled(topo_.size(), 0);  // per node: task-hops sent and received, weighted
    for (const auto& tr : plan->transfers) {
      MoveTasks(tr.from, tr.to, tr.count);
      handled[tr.from] += send_factor_ * static_cast<double>(tr.count * tr.hops);
      handled[tr.to] += recv_factor_ * static_cast<double>(tr.count * tr.hops);
      hops_ += tr.count * tr.hops;
    }
    if (cfg_.charge == MigrationCharge::kNetFlow)
      for (double& h : handled) h = std::abs(h);
    Load waiting = 0;
    for (const auto& q : queue_) waiting += static_cast<Load>(q.size());
    if (waiting < static_cast<Load>(healthy_) * cfg_.threshold) settled_ = true;
    for (int v = 0; v < topo_.size(); ++v) {
      if (!topo_.alive(v)) continue;
      Pause(v, t, info + handled[v] * cfg_.migration_cost);
      Rearm(v);
    }
    return absl::OkStatus();
  }

  // RID (asynchronous): only the requester and its healthy neighbours stop.
  // Request and load reply are 2 information steps for all of them; then the
  // neighbours send, each busy for what it sends, and the requester receives
  // one task after another.
  absl::Status RidRequest(NodeId u, double t) {
    const std::vector<NodeId> nbrs = topo_.Neighbors(u);
    if (nbrs.empty()) {
      Rearm(u);
      return absl::OkStatus();
    }
    std::vector<Load> nl;
    for (NodeId k : nbrs) nl.push_back(static_cast<Load>(queue_[k].size()));
    const std::vector<Load> req = balance::RidRequests(static_cast<Load>(queue_[u].size()), nl);
    Load got = 0;
    for (size_t j = 0; j < nbrs.size(); ++j) {
      const Load g = balance::RidGrant(nl[j], {req[j]})[0];
      MoveTasks(nbrs[j], u, g);
      got += g;
      Pause(nbrs[j], t, 2 * cfg_.info_cost + std::abs(send_factor_) * static_cast<double>(g) * cfg_.migration_cost);
    }
    hops_ += got;
    Pause(u, t, 2 * cfg_.info_cost + std::abs(recv_factor_) * static_cast<double>(got) * cfg_.migration_cost);
    Rearm(u);
    return absl::OkStatus();
  }

  const balance::Topology& topo_;
  const SpeedupConfig& cfg_;
  SpeedupAlgorithm algo_;
  const std::vector<balance::BalancingSubcube>& subcubes_;
  std::vector<std::deque<double>> queue_;
  std::vector<double> busy_until_;
  std::vector<bool> busy_, armed_;
  std::vector<uint64_t> version_;
  std::priority_queue<std::tuple<double, NodeId, uint64_t>> events_;
  double end_ = 0;
  Load hops_ = 0;
  int64_t rounds_ = 0, skipped_ = 0;
  int healthy_ = 0;
  double send_factor_ = 1.0, recv_factor_ = 1.0;  // share of migration_cost per task-hop
  bool settled_ = false;                          // a synchronous round found < threshold waiting per node
};

}  // namespace

absl::StatusOr<SpeedupRun> RunSpeedup(const SpeedupConfig& cfg) {
  if (cfg.n < 1 || cfg.n > 16) return absl::InvalidArgumentError("speedup: n must be in 1..16");
  const int size = 1 << cfg.n;
  if (cfg.faults < 0 || cfg.faults >= size) return absl::InvalidArgumentError("speedup: bad fault count");
  std::mt19937_64 rng(cfg.seed);
  std::vector<NodeId> labels(size);
  for (int u = 0; u < size; ++u) labels[u] = u;
  std::shuffle(labels.begin(), labels.end(), rng);
  std::vector<NodeId> faults(labels.begin(), labels.begin() + cfg.faults);
  auto topo = balance::Topology::Hypercube(cfg.n, faults);
  if (!topo.ok()) return topo.status();

  // Task times (E[tau] = 1), then the faulty nodes' tasks dealt round robin
  // over the healthy nodes in random order.
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::deque<double>> tasks(size);
  for (int u = 0; u < size; ++u) {
    const double mean = 2.0 * unit(rng);
    for (int j = 0; j < cfg.tasks_per_node; ++j) tasks[u].push_back(2.0 * mean * unit(rng));
  }
  std::vector<NodeId> healthy;
  for (NodeId u : labels)
    if (topo->alive(u)) healthy.push_back(u);
  size_t next = 0;
  for (NodeId f : faults) {
    for (double tau : tasks[f]) tasks[healthy[next++ % healthy.size()]].push_back(tau);
    tasks[f].clear();
  }

  SpeedupRun run;
  for (int u = 0; u < size; ++u) {
    double s = 0;
    for (double tau : tasks[u]) s += tau;
    run.time_without = std::max(run.time_without, s);
  }
  auto subcubes = balance::SelectBalancingSubcubes(*topo);
  if (!subcubes.ok()) return subcubes.status();
  size_t largest = 0;
  for (size_t i = 0; i < subcubes->size(); ++i)
    if ((*subcubes)[i].order.size() > (*subcubes)[largest].order.size()) largest = i;
  run.mcwa_dim = (*subcubes)[largest].dim;
  run.mcwa_tree_depth = (*subcubes)[largest].tree_depth;
  for (int a = 0; a < kSpeedupAlgorithms; ++a) {
    Machine m(*topo, tasks, cfg, static_cast<SpeedupAlgorithm>(a), *subcubes);
    if (auto s = m.Run(); !s.ok()) return s;
    run.time_with[a] = m.end();
    run.speedup[a] = m.end() > 0 ? run.time_without / m.end() : 1.0;
    run.migrations_per_node[a] = static_cast<double>(m.hops()) / m.healthy();
    run.rounds[a] = m.rounds();
    run.skipped[a] = m.skipped();
  }
  return run;
}

}  // namespace hyperfed::sim
