#include "daemon/federation/round.h"

#include <algorithm>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/balance/dem.h"
#include "daemon/balance/mcwa.h"
#include "daemon/balance/topology.h"
#include "daemon/migration/crash_point.h"

namespace hyperfed::federation {

// ------------------------------------------------------------------ Mailbox

void Mailbox::ExpireLocked() {
  const absl::Time cutoff = clock_->Now() - absl::Minutes(10);
  for (auto it = inbox_.begin(); it != inbox_.end();) it = it->second.at < cutoff ? inbox_.erase(it) : std::next(it);
  for (auto it = published_.begin(); it != published_.end();)
    it = it->second.at < cutoff ? published_.erase(it) : std::next(it);
}

absl::StatusOr<balance::LoadTable> Mailbox::Deliver(const ExchangeMessage& m, absl::Duration timeout) {
  std::unique_lock<std::mutex> l(mu_);
  ExpireLocked();
  const Key key{m.round_id, static_cast<int>(m.kind), m.step, m.from_label};
  if (m.kind != ExchangeKind::kExchange) {
    inbox_[key] = Entry{m.rows, clock_->Now()};
    cv_.notify_all();
    return balance::LoadTable{};
  }
  const auto mine = std::make_pair(m.round_id, m.step);
  const bool reached = cv_.wait_for(l, absl::ToChronoNanoseconds(timeout),
                                    [&] { return published_.count(mine) > 0; });
  if (!reached)
    return absl::DeadlineExceededError(
        absl::StrCat("round ", m.round_id, ": this site did not reach step ", m.step, " in time"));
  inbox_[key] = Entry{m.rows, clock_->Now()};
  cv_.notify_all();
  return published_[mine].rows;
}

void Mailbox::Publish(const std::string& round_id, int step, const balance::LoadTable& rows) {
  std::lock_guard<std::mutex> l(mu_);
  published_[{round_id, step}] = Entry{rows, clock_->Now()};
  cv_.notify_all();
}

absl::StatusOr<balance::LoadTable> Mailbox::Await(const std::string& round_id, ExchangeKind kind, int step,
                                                  int from_label, absl::Duration timeout) {
  std::unique_lock<std::mutex> l(mu_);
  const Key key{round_id, static_cast<int>(kind), step, from_label};
  if (!cv_.wait_for(l, absl::ToChronoNanoseconds(timeout), [&] { return inbox_.count(key) > 0; }))
    return absl::DeadlineExceededError("no message in time");
  balance::LoadTable rows = std::move(inbox_[key].rows);
  inbox_.erase(key);
  return rows;
}

void Mailbox::Forget(const std::string& round_id) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = inbox_.begin(); it != inbox_.end();)
    it = std::get<0>(it->first) == round_id ? inbox_.erase(it) : std::next(it);
  for (auto it = published_.begin(); it != published_.end();)
    it = it->first.first == round_id ? published_.erase(it) : std::next(it);
  ExpireLocked();
}

// ------------------------------------------------------------------ rounds

namespace {

constexpr int kBarrierStep = 1000;
// Capacity standing in for a drained site's 0 in the MCWA plan (the library
// needs > 0): its share stays far below one job.
constexpr double kDrainedCapacity = 1e-9;

// Rows from a peer must name live positions of this round's cube.
absl::Status CheckRows(const balance::LoadTable& rows, const RoundSpec& spec) {
  for (const balance::LoadRow& r : rows) {
    if (r.label < 0 || r.label >= (1 << spec.dimension))
      return absl::InvalidArgumentError(absl::StrCat("row for label ", r.label, " outside the cube"));
    if (std::binary_search(spec.faults.begin(), spec.faults.end(), r.label))
      return absl::InvalidArgumentError(absl::StrCat("row for label ", r.label, ", which is in the fault set"));
  }
  return absl::OkStatus();
}

// This site's place in the round's logical topology.
struct Place {
  std::vector<int> dims;       // dimensions it exchanges along
  int parent = -1;             // tree parent (-1: in the balancing subcube)
  std::vector<int> children;   // tree children
  int tree_depth = 0;
  int subcube_dim = 0;         // the balancing subcube's dimension
  int members = 0;             // sites in this site's component
};

absl::StatusOr<Place> PlaceOf(const RoundSpec& spec, int self_label) {
  std::vector<balance::NodeId> faults(spec.faults.begin(), spec.faults.end());
  auto topo = balance::Topology::Hypercube(spec.dimension, faults);
  if (!topo.ok()) return topo.status();
  if (!topo->alive(self_label)) return absl::FailedPreconditionError("this site is in the round's fault set");
  Place p;
  if (faults.empty()) {
    for (int k = 0; k < spec.dimension; ++k) p.dims.push_back(k);
    p.subcube_dim = spec.dimension;
    p.members = topo->size();
    return p;
  }
  auto subcubes = balance::SelectBalancingSubcubes(*topo);
  if (!subcubes.ok()) return subcubes.status();
  for (const balance::BalancingSubcube& bs : *subcubes) {
    if (!bs.Member(self_label)) continue;
    p.parent = bs.parent[self_label];
    for (balance::NodeId c : bs.Children(self_label)) p.children.push_back(c);
    if (bs.InSubcube(self_label)) p.dims = bs.Dims();
    p.tree_depth = bs.tree_depth;
    p.subcube_dim = bs.dim;
    p.members = static_cast<int>(bs.order.size());
    return p;
  }
  return absl::InternalError("this site is in no component");
}

class Runner {
 public:
  Runner(const RoundContext& ctx, const RoundSpec& spec) : ctx_(ctx), spec_(spec) {
    report_.round_id = spec.round_id;
    report_.site = ctx.self_site;
    report_.label = ctx.self_label;
  }

  RoundReport Run(int64_t load, double capacity) {
    report_.load_before = load;
    report_.quota = load;
    absl::Status st = spec_.algorithm == "improved-dem" ? RunImprovedDem(load, capacity)
                      : spec_.algorithm == "mcwa"       ? RunMcwa(load, capacity)
                                                        : RunExact(load, capacity);
    report_.ok = st.ok();
    if (!st.ok()) report_.error = std::string(st.message());
    ctx_.mailbox->Forget(spec_.round_id);
    return std::move(report_);
  }

 private:
  void Event(const std::string& what) {
    if (ctx_.event) ctx_.event(absl::StrCat(ctx_.self_site, ": ", what));
  }

  std::string SiteOf(int label) const { return ctx_.site_of_label(label); }

  // One message of a step. kExchange from the lower label calls the partner
  // and gets its rows; the higher label waits for the call.
  absl::StatusOr<balance::LoadTable> ExchangeWith(int partner, int step, const balance::LoadTable& mine) {
    ctx_.mailbox->Publish(spec_.round_id, step, mine);
    balance::LoadTable theirs;
    if (!((ctx_.self_label >> (step % kBarrierStep)) & 1)) {
      ExchangeMessage m{spec_.round_id, ExchangeKind::kExchange, step, ctx_.self_label, mine};
      auto r = ctx_.peers->Exchange(SiteOf(partner), m, ctx_.step_timeout);
      if (!r.ok())
        return absl::UnavailableError(
            absl::StrCat("peer ", SiteOf(partner), " (label ", partner, ") failed at step ", step, ": ",
                         r.status().message()));
      report_.messages += 2;
      theirs = *std::move(r);
    } else {
      auto r = ctx_.mailbox->Await(spec_.round_id, ExchangeKind::kExchange, step, partner, ctx_.step_timeout);
      if (!r.ok())
        return absl::UnavailableError(absl::StrCat("peer ", SiteOf(partner), " (label ", partner,
                                                   ") did not exchange at step ", step));
      theirs = *std::move(r);
    }
    if (auto st = CheckRows(theirs, spec_); !st.ok()) return st;
    return theirs;
  }

  // Every live site's (label, load, capacity) row of this site's component,
  // gathered up the trees, across the balancing subcube (the full cube when
  // there are no faults) and back down the trees. Sets messages and steps.
  absl::Status Gather(int64_t load, double capacity, Place* place_out, balance::LoadTable* table_out) {
    // Fault injection for the mid-round failure tests (HYPERFED_CRASH_AT):
    // round_started, round_after_exchange[:N], round_before_moves, and in
    // mcwa mode round_mcwa_phase[:N] at the start of this site's N-th
    // transfer phase (after every earlier phase's jobs have arrived).
    migration::CrashPoint("round_started");
    auto place = PlaceOf(spec_, ctx_.self_label);
    if (!place.ok()) return place.status();
    balance::LoadTable table{{ctx_.self_label, load, capacity}};
    auto merge = [&](const balance::LoadTable& rows) -> absl::Status {
      auto m = balance::MergeLoadTables(table, rows);
      if (!m.ok()) return m.status();
      table = *std::move(m);
      return absl::OkStatus();
    };
    // Rows up the trees.
    for (int c : place->children) {
      auto rows = ctx_.mailbox->Await(spec_.round_id, ExchangeKind::kUp, 0, c, ctx_.step_timeout * (1 + place->tree_depth));
      if (!rows.ok()) return absl::UnavailableError(absl::StrCat("child ", SiteOf(c), " sent no loads"));
      if (auto st = CheckRows(*rows, spec_); !st.ok()) return st;
      if (auto st = merge(*rows); !st.ok()) return st;
    }
    if (place->parent >= 0) {
      ExchangeMessage m{spec_.round_id, ExchangeKind::kUp, 0, ctx_.self_label, table};
      if (auto r = ctx_.peers->Exchange(SiteOf(place->parent), m, ctx_.step_timeout); !r.ok())
        return absl::UnavailableError(absl::StrCat("parent ", SiteOf(place->parent), " failed: ", r.status().message()));
      ++report_.messages;
      // The full table comes back down.
      auto rows = ctx_.mailbox->Await(spec_.round_id, ExchangeKind::kDown, 0, place->parent,
                                      ctx_.step_timeout * (2 + 2 * place->tree_depth + spec_.dimension));
      if (!rows.ok()) return absl::UnavailableError(absl::StrCat("parent ", SiteOf(place->parent), " sent no table"));
      if (auto st = CheckRows(*rows, spec_); !st.ok()) return st;
      table = *std::move(rows);
    } else {
      for (int d : place->dims) {
        auto rows = ExchangeWith(ctx_.self_label ^ (1 << d), d, table);
        if (!rows.ok()) return rows.status();
        if (auto st = merge(*rows); !st.ok()) return st;
        Event(absl::StrCat("exchanged dimension ", d, ", knows ", table.size(), " sites"));
        migration::CrashPoint("round_after_exchange");
      }
    }
    for (int c : place->children) {
      ExchangeMessage m{spec_.round_id, ExchangeKind::kDown, 0, ctx_.self_label, table};
      if (auto r = ctx_.peers->Exchange(SiteOf(c), m, ctx_.step_timeout); !r.ok())
        Event(absl::StrCat("child ", SiteOf(c), " did not take the table: ", r.status().message()));
      else
        ++report_.messages;
    }
    if (static_cast<int>(table.size()) != place->members)
      return absl::InternalError(absl::StrCat("gathered ", table.size(), " sites of ", place->members));
    report_.table = table;
    // T up + k exchanges + T down + 1 migration (n + 1 on a full cube).
    report_.steps = 2 * place->tree_depth + place->subcube_dim + 1;
    *place_out = *std::move(place);
    *table_out = std::move(table);
    return absl::OkStatus();
  }

  absl::Status RunExact(int64_t load, double capacity) {
    Place place;
    balance::LoadTable table;
    if (auto st = Gather(load, capacity, &place, &table); !st.ok()) return st;

    balance::DirectPlan plan = balance::PlanDirectTransfers(table);
    for (size_t i = 0; i < table.size(); ++i)
      if (table[i].label == ctx_.self_label) report_.quota = plan.quotas[i];
    std::vector<balance::Transfer> mine = balance::OutgoingTransfers(plan, ctx_.self_label);
    if (mine.empty()) {
      Event("nothing to send");
      return absl::OkStatus();
    }
    migration::CrashPoint("round_before_moves");
    // Every destination at once: one migration per destination.
    std::vector<std::future<absl::StatusOr<JobMover::Result>>> futures;
    for (const balance::Transfer& t : mine)
      futures.push_back(std::async(std::launch::async, [this, t] {
        return ctx_.mover->MoveJobs(SiteOf(t.to), t.count, spec_.round_id);
      }));
    absl::Status first_error;
    for (size_t i = 0; i < futures.size(); ++i) {
      auto r = futures[i].get();
      if (!r.ok()) {
        if (first_error.ok())
          first_error = absl::UnavailableError(
              absl::StrCat("moving ", mine[i].count, " jobs to ", SiteOf(mine[i].to), ": ", r.status().message()));
        report_.shortfall += mine[i].count;
        continue;
      }
      report_.moved_out += r->moved;
      report_.shortfall += r->shortfall;
      if (r->moved > 0) {  // the report lists what really moved
        balance::Transfer done = mine[i];
        done.count = r->moved;
        report_.transfers.push_back(done);
      }
      Event(absl::StrCat("moved ", r->moved, " jobs to ", SiteOf(mine[i].to),
                         r->shortfall ? absl::StrCat(" (", r->shortfall, " short)") : ""));
    }
    return first_error;
  }

  // Seed 004 Algorithm 3 (MCWA), with the gather of RunExact standing in for
  // its load phases: every site computes the same whole-system plan from the
  // same table with the balance library, then carries out its own edge
  // transfers phase by phase (tree levels up, the subcube walk, tree levels
  // down). Jobs relayed through a site move on in a later phase, as in the
  // paper; a relay that got fewer than planned sends what it has.
  absl::Status RunMcwa(int64_t load, double capacity) {
    Place place;
    balance::LoadTable table;
    if (auto st = Gather(load, capacity, &place, &table); !st.ok()) return st;
    const int n = spec_.dimension;
    const size_t size = size_t{1} << n;
    std::vector<balance::Load> w(size, 0);
    // Positions outside this component keep capacity 1 and load 0: they form
    // their own components, which the plan balances apart from this one.
    std::vector<double> p(size, 1.0);
    bool any_capacity = false;
    for (const balance::LoadRow& r : table) {
      w[r.label] = r.load;
      // The library wants capacities > 0; a drained site (0) gets a share
      // far below one job, so its quota is 0.
      p[r.label] = r.capacity > 0 ? r.capacity : kDrainedCapacity;
      any_capacity = any_capacity || r.capacity > 0;
    }
    if (!any_capacity) {
      Event("every site of the component is drained: nothing to balance");
      return absl::OkStatus();
    }
    std::vector<balance::NodeId> faults(spec_.faults.begin(), spec_.faults.end());
    auto topo = balance::Topology::Hypercube(n, faults);
    if (!topo.ok()) return topo.status();
    auto plan = balance::McwaPlan(*topo, w, p);
    if (!plan.ok()) return plan.status();
    report_.quota = plan->final_loads[ctx_.self_label];
    report_.steps = static_cast<int>(plan->metrics.steps);  // 3k + 4T

    std::map<int, std::vector<balance::Transfer>> sends;  // phase -> this site's transfers
    std::map<int, std::vector<int>> senders;              // phase -> labels sending to this site
    for (const balance::Transfer& t : plan->transfers) {
      if (t.from == ctx_.self_label) sends[t.step].push_back(t);
      if (t.to == ctx_.self_label) senders[t.step].push_back(t.from);
    }
    std::set<int> phases;
    for (const auto& [s, v] : sends) phases.insert(s);
    for (const auto& [s, v] : senders) phases.insert(s);
    if (phases.empty()) {
      Event("nothing to send or receive");
      return absl::OkStatus();
    }
    migration::CrashPoint("round_before_moves");
    // A sender may still be in earlier phases of its own; it is at most a
    // tree's depth of phases behind this site.
    const absl::Duration wait = ctx_.step_timeout * (2 + place.tree_depth);
    absl::Status first_error;
    for (int s : phases) {
      migration::CrashPoint("round_mcwa_phase");
      const std::vector<balance::Transfer>& out = sends[s];
      std::vector<std::future<absl::StatusOr<JobMover::Result>>> futures;
      for (const balance::Transfer& t : out)
        futures.push_back(std::async(std::launch::async, [this, t] {
          return ctx_.mover->MoveJobs(SiteOf(t.to), t.count, spec_.round_id);
        }));
      for (size_t i = 0; i < futures.size(); ++i) {
        const balance::Transfer& t = out[i];
        auto r = futures[i].get();
        int64_t moved = 0;
        if (!r.ok()) {
          if (first_error.ok())
            first_error = absl::UnavailableError(absl::StrCat("phase ", s, ": moving ", t.count, " jobs to ",
                                                              SiteOf(t.to), ": ", r.status().message()));
          report_.shortfall += t.count;
        } else {
          moved = r->moved;
          report_.moved_out += r->moved;
          report_.shortfall += r->shortfall;
          if (r->moved > 0) {
            balance::Transfer done = t;
            done.count = r->moved;
            report_.transfers.push_back(done);
          }
          Event(absl::StrCat("phase ", s, ": moved ", r->moved, " jobs to ", SiteOf(t.to),
                             r->shortfall ? absl::StrCat(" (", r->shortfall, " short)") : ""));
        }
        // The receiver goes on with what it got, even after a failed move.
        ExchangeMessage m{spec_.round_id, ExchangeKind::kDown, kMcwaPhaseStep + s, ctx_.self_label,
                          {{ctx_.self_label, moved, 0}}};
        if (auto d = ctx_.peers->Exchange(SiteOf(t.to), m, ctx_.step_timeout); !d.ok()) {
          if (first_error.ok())
            first_error = absl::UnavailableError(absl::StrCat("phase ", s, ": ", SiteOf(t.to),
                                                              " did not take the notice: ", d.status().message()));
        } else {
          ++report_.messages;
        }
      }
      for (int from : senders[s]) {
        auto r = ctx_.mailbox->Await(spec_.round_id, ExchangeKind::kDown, kMcwaPhaseStep + s, from, wait);
        if (!r.ok())
          return absl::UnavailableError(absl::StrCat("phase ", s, ": ", SiteOf(from), " (label ", from,
                                                     ") did not say its transfer was done"));
      }
    }
    return first_error;
  }

  absl::Status RunImprovedDem(int64_t load, double capacity) {
    const int n = spec_.dimension;
    int64_t w = load;
    int dims_done = 0;
    for (int k = 0; k < n; ++k) {
      const int partner = ctx_.self_label ^ (1 << k);
      if (std::binary_search(spec_.faults.begin(), spec_.faults.end(), partner)) continue;  // seed 004 section 6
      auto rows = ExchangeWith(partner, k, {{ctx_.self_label, w, capacity}});
      if (!rows.ok()) return rows.status();
      if (rows->size() != 1 || (*rows)[0].label != partner)
        return absl::InvalidArgumentError(absl::StrCat("dimension ", k, ": partner sent a malformed row"));
      const balance::LoadRow p = (*rows)[0];
      int64_t share = w;
      if (capacity + p.capacity > 0)
        share = balance::WeightedImprovedDemShare(ctx_.self_label, k, n, w, p.load, capacity, p.capacity);
      if (share < w) {
        const int64_t send = w - share;
        auto r = ctx_.mover->MoveJobs(SiteOf(partner), send, spec_.round_id);
        if (!r.ok())
          return absl::UnavailableError(absl::StrCat("dimension ", k, ": moving ", send, " jobs to ", SiteOf(partner),
                                                     ": ", r.status().message()));
        if (r->moved > 0) report_.transfers.push_back({k + 1, ctx_.self_label, partner, r->moved, 1});
        report_.moved_out += r->moved;
        report_.shortfall += r->shortfall;
      }
      w = share;
      // Both sides finish their moves before the next dimension.
      if (auto b = ExchangeWith(partner, kBarrierStep + k, {}); !b.ok()) return b.status();
      Event(absl::StrCat("dimension ", k, ": load ", w));
      ++dims_done;
    }
    report_.quota = w;
    report_.steps = 3 * n;
    return absl::OkStatus();
  }

  const RoundContext& ctx_;
  const RoundSpec& spec_;
  RoundReport report_;
};

}  // namespace

RoundReport RunRound(const RoundContext& ctx, const RoundSpec& spec, int64_t load, double capacity) {
  Runner r(ctx, spec);
  return r.Run(load, capacity);
}

}  // namespace hyperfed::federation
