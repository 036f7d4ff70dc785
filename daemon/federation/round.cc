#include "daemon/federation/round.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/balance/mcwa.h"
#include "daemon/balance/prefix_scan.h"
#include "daemon/balance/topology.h"
#include "daemon/migration/crash_point.h"

namespace hyperfed::federation {

// ------------------------------------------------------------------ rounds

namespace {

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
  std::vector<int> dims;      // dimensions it exchanges along
  int parent = -1;            // tree parent (-1: in the balancing subcube)
  std::vector<int> children;  // tree children
  int tree_depth = 0;
  int subcube_dim = 0;  // the balancing subcube's dimension
  int members = 0;      // sites in this site's component
};

absl::StatusOr<Place> PlaceOf(const balance::Topology& topo, int self_label) {
  if (!topo.alive(self_label)) return absl::FailedPreconditionError("this site is in the round's fault set");
  Place p;
  if (topo.alive_mask().empty()) {
    for (int k = 0; k < topo.dimensions(); ++k) p.dims.push_back(k);
    p.subcube_dim = topo.dimensions();
    p.members = topo.size();
    return p;
  }
  auto subcubes = balance::SelectBalancingSubcubes(topo);
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

  RoundReport Run(const SiteSnapshot& self) {
    const int64_t load = self.load;
    const double capacity = self.capacity;
    own_profile_ = self.profile;
    report_.load_before = load;
    report_.capacity = capacity;
    report_.quota = load;
    absl::Status st;
    const balance::RoundMode* mode = balance::FindRoundMode(spec_.mode);
    if (!mode) {
      st = balance::CheckRoundMode(spec_.mode);
    } else {
      if (!mode->gathers())
        st = RunPairwise(*mode, load, capacity);
      else if (spec_.prefix_scan && mode->name() == "exact")
        st = RunScanned(load, capacity);
      else
        st = RunGathered(*mode, load, capacity);
    }
    report_.ok = st.ok();
    if (!st.ok()) report_.error = std::string(st.message());
    ctx_.mailbox->Close(spec_.round_id);
    return std::move(report_);
  }

 private:
  void Event(const std::string& what) {
    if (ctx_.event) ctx_.event(what);  // the log names the site
  }

  std::string SiteOf(int label) const { return ctx_.site_of_label(label); }

  // A wait for a peer `behind` steps away, ending by the round's deadline.
  absl::Time By(int behind) const { return std::min(ctx_.env->Now() + ctx_.timeouts.Wait(behind), spec_.deadline); }
  // The timeout of one call to a peer; an error once the deadline is past.
  absl::StatusOr<absl::Duration> CallTimeout() const {
    const absl::Duration left = spec_.deadline - ctx_.env->Now();
    if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("past the round's deadline");
    return std::min(ctx_.timeouts.step, left);
  }

  // `any_left`: a call of the scan, given up once any site has left (the
  // scan cannot end without it: Mailbox::AwaitTotals).
  absl::StatusOr<balance::LoadTable> Call(int label, ExchangeMessage m, bool any_left = false) {
    auto timeout = CallTimeout();
    if (!timeout.ok()) return timeout.status();
    m.round_id = spec_.round_id;
    m.epoch = spec_.epoch;
    m.from_label = ctx_.self_label;
    // A callee that has left the round is given up when the coordinator
    // says so (Peer.LeftRound), not when its own wait ends.
    auto r = ctx_.peers->ExchangeUnless(
        SiteOf(label), m, *timeout, [&] { return ctx_.mailbox->Gone(spec_.round_id, label, any_left).has_value(); });
    if (absl::IsCancelled(r.status()))
      if (auto gone = ctx_.mailbox->Gone(spec_.round_id, label, any_left)) return *gone;
    return r;
  }

  // A kLookup to the site at `label`: its answer.
  absl::StatusOr<LookupAnswer> Lookup(int label, ExchangeMessage m) {
    auto timeout = CallTimeout();
    if (!timeout.ok()) return timeout.status();
    if (auto gone = ctx_.mailbox->Gone(spec_.round_id, label, /*any_left=*/false)) return *gone;
    m.round_id = spec_.round_id;
    m.epoch = spec_.epoch;
    m.from_label = ctx_.self_label;
    return ctx_.peers->Lookup(SiteOf(label), m, *timeout);
  }

  absl::StatusOr<balance::LoadTable> Await(MessageKind kind, int dimension, int phase, int from, int behind) {
    return ctx_.mailbox->Await(spec_.round_id, kind, dimension, phase, from, By(behind));
  }

  // One exchange with the partner across `dimension`: the lower label calls
  // and gets the partner's rows; the higher label waits for the call.
  absl::StatusOr<balance::LoadTable> ExchangeWith(MessageKind kind, int dimension, const balance::LoadTable& mine) {
    const int partner = ctx_.self_label ^ (1 << dimension);
    ctx_.mailbox->Publish(spec_.round_id, kind, dimension, mine);
    balance::LoadTable theirs;
    const std::string what = absl::StrCat(MessageKindName(kind), " in dimension ", dimension);
    if (!((ctx_.self_label >> dimension) & 1)) {
      ExchangeMessage m;
      m.kind = kind;
      m.dimension = dimension;
      m.rows = mine;
      auto r = Call(partner, std::move(m));
      if (!r.ok())
        return absl::UnavailableError(absl::StrCat("peer ", SiteOf(partner), " (label ", partner, ") failed at ", what,
                                                   ": ", r.status().message()));
      report_.messages += 2;
      theirs = *std::move(r);
    } else {
      auto r = Await(kind, dimension, 0, partner, 0);
      if (!r.ok())
        return absl::UnavailableError(absl::StrCat("peer ", SiteOf(partner), " (label ", partner, ") did not ", what,
                                                   ": ", r.status().message()));
      theirs = *std::move(r);
    }
    if (auto st = CheckRows(theirs, spec_); !st.ok()) return st;
    return theirs;
  }

  // Every live site's (label, load, capacity) row of this site's component,
  // gathered up the trees, across the balancing subcube (the full cube when
  // there are no faults) and back down the trees.
  absl::Status Gather(const balance::Topology& topo, int64_t load, double capacity, Place* place_out,
                      balance::LoadTable* table_out) {
    // Fault injection for the mid-round failure tests (HYPERFED_CRASH_AT):
    // round_started, round_after_exchange[:N], round_before_moves, and
    // round_mcwa_phase[:N] at the start of this site's N-th transfer phase
    // (after every earlier phase's jobs have arrived).
    migration::CrashPoint("round_started");
    auto place = PlaceOf(topo, ctx_.self_label);
    if (!place.ok()) return place.status();
    const int depth = place->tree_depth;
    balance::LoadTable table{{ctx_.self_label, load, capacity, own_profile_}};
    auto merge = [&](const balance::LoadTable& rows) -> absl::Status {
      auto m = balance::MergeLoadTables(table, rows);
      if (!m.ok()) return m.status();
      table = *std::move(m);
      return absl::OkStatus();
    };
    // Rows up the trees.
    for (int c : place->children) {
      auto rows = Await(MessageKind::kUp, 0, 0, c, depth);
      if (!rows.ok())
        return absl::UnavailableError(absl::StrCat("child ", SiteOf(c), " sent no loads: ", rows.status().message()));
      if (auto st = CheckRows(*rows, spec_); !st.ok()) return st;
      if (auto st = merge(*rows); !st.ok()) return st;
    }
    if (place->parent >= 0) {
      ExchangeMessage m;
      m.kind = MessageKind::kUp;
      m.rows = table;
      if (auto r = Call(place->parent, std::move(m)); !r.ok())
        return absl::UnavailableError(
            absl::StrCat("parent ", SiteOf(place->parent), " failed: ", r.status().message()));
      ++report_.messages;
      // The whole table comes back down.
      auto rows = Await(MessageKind::kDown, 0, 0, place->parent, 1 + 2 * depth + spec_.dimension);
      if (!rows.ok())
        return absl::UnavailableError(
            absl::StrCat("parent ", SiteOf(place->parent), " sent no table: ", rows.status().message()));
      if (auto st = CheckRows(*rows, spec_); !st.ok()) return st;
      table = *std::move(rows);
    } else {
      for (int d : place->dims) {
        auto rows = ExchangeWith(MessageKind::kExchange, d, table);
        if (!rows.ok()) return rows.status();
        if (auto st = merge(*rows); !st.ok()) return st;
        Event(absl::StrCat("exchanged dimension ", d, ", knows ", table.size(), " sites"));
        migration::CrashPoint("round_after_exchange");
      }
    }
    for (int c : place->children) {
      ExchangeMessage m;
      m.kind = MessageKind::kDown;
      m.rows = table;
      if (auto r = Call(c, std::move(m)); !r.ok())
        Event(absl::StrCat("child ", SiteOf(c), " did not take the table: ", r.status().message()));
      else
        ++report_.messages;
    }
    if (static_cast<int>(table.size()) != place->members)
      return absl::InternalError(absl::StrCat("gathered ", table.size(), " sites of ", place->members));
    // T up + k exchanges + T down + 1 migration (n + 1 on a full cube).
    report_.steps = 2 * depth + place->subcube_dim + 1;
    *place_out = *std::move(place);
    *table_out = std::move(table);
    return absl::OkStatus();
  }

  // The destination's start profile, from the gathered table.
  balance::StartProfile ProfileOf(int label) const {
    for (const balance::LoadRow& r : table_)
      if (r.label == label) return r.profile;
    return {};
  }

  // The mover's choice of jobs for `out` (nullopt: it does not choose).
  absl::StatusOr<std::optional<std::vector<std::vector<std::string>>>> Choose(
      const std::vector<balance::Transfer>& out, const std::vector<balance::StartProfile>& profiles) {
    std::vector<JobMover::Order> orders;
    for (size_t i = 0; i < out.size(); ++i) orders.push_back({SiteOf(out[i].to), out[i].count, profiles[i]});
    return ctx_.mover->Choose(orders, own_profile_, report_.capacity == 0, spec_.round_id);
  }

  // Moves `out` in parallel, the jobs the mover chooses; records what
  // moved. Jobs a transfer may take but that would not start sooner there
  // stay (kept). Returns the first error.
  absl::Status Move(const std::vector<balance::Transfer>& out, const std::vector<balance::StartProfile>& profiles,
                    const std::string& where, std::vector<int64_t>* moved) {
    moved->assign(out.size(), 0);
    if (out.empty()) return absl::OkStatus();
    auto chosen = Choose(out, profiles);
    if (!chosen.ok()) {
      for (const balance::Transfer& t : out) report_.shortfall += t.count;
      return absl::UnavailableError(absl::StrCat(where, "choosing jobs: ", chosen.status().message()));
    }
    std::vector<absl::StatusOr<JobMover::Result>> results(out.size(), absl::UnknownError("not run"));
    std::vector<int64_t> kept(out.size(), 0);
    ParallelFor(ctx_.executor, out.size(), [&](size_t i) {
      if (!chosen->has_value()) {
        results[i] = ctx_.mover->MoveJobs(SiteOf(out[i].to), out[i].count, spec_.round_id);
        return;
      }
      const std::vector<std::string>& ids = (**chosen)[i];
      kept[i] = out[i].count - static_cast<int64_t>(ids.size());
      if (ids.empty()) {
        results[i] = JobMover::Result{};
      } else {
        results[i] = ctx_.mover->MoveChosen(SiteOf(out[i].to), ids, spec_.round_id);
      }
    });
    absl::Status first_error;
    for (size_t i = 0; i < out.size(); ++i) {
      const balance::Transfer& t = out[i];
      const auto& r = results[i];
      report_.kept += kept[i];
      if (!r.ok()) {
        if (first_error.ok())
          first_error = absl::UnavailableError(
              absl::StrCat(where, "moving ", t.count, " jobs to ", SiteOf(t.to), ": ", r.status().message()));
        report_.shortfall += t.count - kept[i];
        continue;
      }
      (*moved)[i] = r->moved;
      report_.moved_out += r->moved;
      report_.shortfall += r->shortfall;
      if (r->moved > 0) {  // the report lists what really moved
        balance::Transfer done = t;
        done.count = r->moved;
        report_.transfers.push_back(done);
      }
      Event(absl::StrCat(where, "moved ", r->moved, " jobs to ", SiteOf(t.to),
                         r->shortfall ? absl::StrCat(" (", r->shortfall, " short)") : "",
                         kept[i] ? absl::StrCat(" (", kept[i],
                                                " kept: they would not start sooner there, or they moved within "
                                                "the hysteresis time)")
                                 : ""));
    }
    return first_error;
  }

  // A gathering mode: every site derives the same plan from the same table
  // (the mode's PlanComponent), then carries out its own transfers phase by
  // phase. Jobs relayed through a site (mcwa: tree levels up, the subcube
  // walk, tree levels down) move on in a later phase, once every transfer
  // into it of the earlier phase is done (a PHASE_DONE notice per transfer);
  // a relay that got fewer than planned sends what it has.
  absl::Status RunGathered(const balance::RoundMode& mode, int64_t load, double capacity) {
    std::vector<balance::NodeId> faults(spec_.faults.begin(), spec_.faults.end());
    auto topo = balance::Topology::Hypercube(spec_.dimension, faults);
    if (!topo.ok()) return topo.status();
    Place place;
    balance::LoadTable table;
    if (auto st = Gather(*topo, load, capacity, &place, &table); !st.ok()) return st;
    table_ = table;
    auto plan = mode.PlanComponent(*topo, table);
    if (!plan.ok()) return plan.status();
    report_.quota = plan->final_loads[ctx_.self_label];
    if (ctx_.allowance)
      for (const balance::Transfer& t : plan->transfers)
        if (t.to == ctx_.self_label) ctx_.allowance->Expect(spec_.round_id, SiteOf(t.from), t.count);
    report_.steps = std::max<int>(report_.steps, static_cast<int>(plan->metrics.steps));

    std::map<int, std::vector<balance::Transfer>> sends;  // phase -> this site's transfers
    std::map<int, std::vector<int>> senders;              // phase -> labels sending to this site
    int last_phase = 0;
    for (const balance::Transfer& t : plan->transfers) {
      if (t.from == ctx_.self_label) sends[t.step].push_back(t);
      if (t.to == ctx_.self_label) senders[t.step].push_back(t.from);
      last_phase = std::max(last_phase, t.step);
    }
    std::set<int> phases;
    for (const auto& [s, v] : sends) phases.insert(s);
    for (const auto& [s, v] : senders) phases.insert(s);
    if (phases.empty()) {
      Event("nothing to send or receive");
      return absl::OkStatus();
    }
    migration::CrashPoint("round_before_moves");
    absl::Status first_error;
    for (int s : phases) {
      if (ctx_.env->Now() >= spec_.deadline) return absl::DeadlineExceededError("past the round's deadline");
      // "round_exact_phase", "round_mcwa_phase": a crash between the phases
      // of a gathering mode's moves (named by the mode, not tested for one).
      migration::CrashPoint(absl::StrCat("round_", std::string(mode.name()), "_phase"));
      const std::vector<balance::Transfer>& out = sends[s];
      const std::string where = last_phase > 1 ? absl::StrCat("phase ", s, ": ") : "";
      std::vector<int64_t> moved;
      std::vector<balance::StartProfile> profiles;
      for (const balance::Transfer& t : out) profiles.push_back(ProfileOf(t.to));
      if (auto st = Move(out, profiles, where, &moved); !st.ok() && first_error.ok()) first_error = st;
      if (s == last_phase) continue;  // nothing waits for the last phase
      // The receiver goes on with what it got, even after a failed move.
      for (size_t i = 0; i < out.size(); ++i) {
        ExchangeMessage m;
        m.kind = MessageKind::kPhaseDone;
        m.phase = s;
        m.moved = moved[i];
        m.rows = {{ctx_.self_label, 0, 0}};  // names the sender
        if (auto d = Call(out[i].to, std::move(m)); !d.ok()) {
          if (first_error.ok())
            first_error = absl::UnavailableError(
                absl::StrCat(where, SiteOf(out[i].to), " did not take the notice: ", d.status().message()));
        } else {
          ++report_.messages;
        }
      }
      // A sender may still be in earlier phases of its own: at most a
      // tree's depth of phases behind this site.
      for (int from : senders[s]) {
        auto r = Await(MessageKind::kPhaseDone, 0, s, from, 1 + place.tree_depth);
        if (!r.ok())
          return absl::UnavailableError(absl::StrCat(where, SiteOf(from), " (label ", from,
                                                     ") did not say its transfer was done: ", r.status().message()));
      }
    }
    return first_error;
  }

  // The exact mode by prefix sums (docs/algorithms.md, "exact by prefix
  // sums"): the quotas and transfers RunGathered's exact derives from the
  // table, from O(log N) messages of O(1) numbers per site. The scan (n
  // steps: totals to the sites this one serves, from the one that serves
  // it), the runs (no message), a lookup per run routed down the sibling
  // subcube (at most level + 1 calls), then, once the partners found and
  // those that found this site cover its runs, one step of moves.
  absl::Status RunScanned(int64_t load, double capacity) {
    const int n = spec_.dimension;
    const int self = ctx_.self_label;
    std::vector<bool> alive;
    if (!spec_.faults.empty()) {
      alive.assign(size_t{1} << n, true);
      for (int f : spec_.faults) alive[f] = false;
    }
    const balance::LivePositions live(n, alive);
    migration::CrashPoint("round_started");
    if (!live.alive(self)) return absl::FailedPreconditionError("this site is in the round's fault set");
    balance::ScanState scan = balance::StartScan(self, load, capacity);
    for (int k = 0; k < n; ++k) {
      for (balance::NodeId to : live.ServedBy(self, k)) {
        ExchangeMessage m;
        m.kind = MessageKind::kScan;
        m.dimension = k;
        m.totals = balance::ScanMessage(scan);
        if (auto r = Call(to, std::move(m), /*any_left=*/true); !r.ok())
          return absl::UnavailableError(absl::StrCat("peer ", SiteOf(to), " (label ", to,
                                                     ") failed at the scan in dimension ", k, ": ",
                                                     r.status().message()));
        ++report_.messages;
      }
      balance::ScanTotals theirs;  // empty when the partner's subcube has no live site
      if (const balance::NodeId from = live.SourceFor(self, k); from >= 0) {
        auto t = ctx_.mailbox->AwaitTotals(spec_.round_id, k, from, By(1));
        if (!t.ok())
          return absl::UnavailableError(absl::StrCat("peer ", SiteOf(from), " (label ", from,
                                                     ") sent no totals in dimension ", k, ": ", t.status().message()));
        theirs = *t;
      }
      if (auto st = balance::ScanStep(&scan, theirs); !st.ok()) return st;
      Event(absl::StrCat("scanned dimension ", k, ", ", scan.block.live, " live sites so far"));
      migration::CrashPoint("round_after_exchange");
    }
    const balance::MatchView view = balance::DeriveMatch(scan);
    report_.quota = view.quota;
    ctx_.mailbox->PublishScan(spec_.round_id, Mailbox::ScanView{view, live, own_profile_});

    // Each run's first unit, looked up in the sibling subcube's list.
    std::vector<Mailbox::Partner> found;
    int hops_max = 0;
    for (const balance::MatchRun& run : view.runs) {
      int at = live.SourceFor(self, run.level);
      if (at < 0) return absl::InternalError("a run is matched against an empty subcube");
      ExchangeMessage m;
      m.kind = MessageKind::kLookup;
      m.run = run;
      m.level = run.level;
      m.position = run.begin;
      if (!run.sends) m.rows = {{self, 0, 0, own_profile_}};
      for (int hop = 1;; ++hop) {
        auto a = Lookup(at, m);
        if (!a.ok())
          return absl::UnavailableError(
              absl::StrCat("peer ", SiteOf(at), " (label ", at, ") did not answer a lookup: ", a.status().message()));
        report_.messages += 2;
        if (a->found) {
          if (a->run.level != run.level || a->run.sends == run.sends || a->run.begin > run.begin ||
              run.begin >= a->run.end || a->run.begin >= a->run.end)
            return absl::InvalidArgumentError(
                absl::StrCat("label ", at, " answered a lookup with a run that does not hold the unit asked for"));
          found.push_back({{at, a->run}, a->profile});
          hops_max = std::max(hops_max, hop);
          break;
        }
        // The next site is in the same sibling subcube, one level lower.
        if (a->next_level < 0 || a->next_level >= m.level || a->next_label < 0 || a->next_label >= (1 << n) ||
            ((a->next_label ^ self) >> run.level) != 1 || !live.alive(a->next_label) || a->position < 0)
          return absl::InvalidArgumentError(absl::StrCat("label ", at, " sent a lookup where it cannot go"));
        at = a->next_label;
        m.level = a->next_level;
        m.position = a->position;
      }
    }
    auto merged = [&](const std::vector<Mailbox::Partner>& recorded) { return MergePartners(found, recorded); };
    auto covered = [&](const std::vector<Mailbox::Partner>& recorded) { return Covers(view, merged(recorded)); };
    auto recorded = ctx_.mailbox->AwaitPartners(spec_.round_id, covered, By(n + 1));
    if (!recorded.ok()) return recorded.status();
    const std::vector<Mailbox::Partner> partners = merged(*recorded);
    absl::Status first_error;
    if (!Covers(view, partners))
      first_error = absl::DeadlineExceededError("not every partner of this site's runs was found in time");

    std::vector<balance::PartnerRun> runs;
    std::map<int, balance::StartProfile> profile_of;
    for (const Mailbox::Partner& p : partners) {
      runs.push_back(p.run);
      profile_of[p.run.label] = p.profile;
    }
    std::vector<balance::Transfer> out;
    std::vector<balance::StartProfile> profiles;
    for (const balance::Transfer& t : balance::MatchedTransfers(view, runs)) {
      if (t.to == self) {
        if (ctx_.allowance) ctx_.allowance->Expect(spec_.round_id, SiteOf(t.from), t.count);
      } else {
        out.push_back(t);
        profiles.push_back(profile_of[t.to]);
      }
    }
    // n scan steps, the longest lookup, one step of moves.
    report_.steps = n + hops_max + 1;
    if (out.empty()) {
      Event(absl::StrCat("quota ", view.quota, ": nothing to send"));
      return first_error;
    }
    if (ctx_.env->Now() >= spec_.deadline) return absl::DeadlineExceededError("past the round's deadline");
    migration::CrashPoint("round_before_moves");
    std::vector<int64_t> moved;
    if (auto st = Move(out, profiles, "", &moved); !st.ok() && first_error.ok()) first_error = st;
    return first_error;
  }

  // The partners this site found and those that found it, each (site,
  // level) once; one whose run overlaps another site's at the same level is
  // left out (honest runs never do).
  static std::vector<Mailbox::Partner> MergePartners(const std::vector<Mailbox::Partner>& found,
                                                     const std::vector<Mailbox::Partner>& recorded) {
    std::vector<Mailbox::Partner> out;
    auto add = [&](const Mailbox::Partner& p) {
      for (const Mailbox::Partner& q : out) {
        if (q.run.run.level != p.run.run.level) continue;
        if (q.run.label == p.run.label) return;
        if (std::max(q.run.run.begin, p.run.run.begin) < std::min(q.run.run.end, p.run.run.end)) return;
      }
      out.push_back(p);
    };
    for (const Mailbox::Partner& p : found) add(p);
    for (const Mailbox::Partner& p : recorded) add(p);
    return out;
  }

  // Whether the partners' runs cover every unit of the site's runs.
  static bool Covers(const balance::MatchView& view, const std::vector<Mailbox::Partner>& partners) {
    for (const balance::MatchRun& r : view.runs) {
      balance::Load got = 0;
      for (const Mailbox::Partner& p : partners)
        if (p.run.run.level == r.level && p.run.run.sends != r.sends)
          got += std::max<balance::Load>(0, std::min(r.end, p.run.run.end) - std::max(r.begin, p.run.run.begin));
      if (got < r.end - r.begin) return false;
    }
    return true;
  }

  // A pairwise mode: in each dimension whose partner takes part, exchange
  // (load, capacity), keep the mode's PairShare, move the difference, and
  // wait for both sides' moves (a barrier) before the next dimension.
  absl::Status RunPairwise(const balance::RoundMode& mode, int64_t load, double capacity) {
    const int n = spec_.dimension;
    int64_t w = load;
    for (int k = 0; k < n; ++k) {
      const int partner = ctx_.self_label ^ (1 << k);
      if (std::binary_search(spec_.faults.begin(), spec_.faults.end(), partner)) continue;  // nam §6
      auto rows = ExchangeWith(MessageKind::kExchange, k, {{ctx_.self_label, w, capacity, own_profile_}});
      if (!rows.ok()) return rows.status();
      if (rows->size() != 1 || (*rows)[0].label != partner)
        return absl::InvalidArgumentError(absl::StrCat("dimension ", k, ": partner sent a malformed row"));
      const balance::LoadRow p = (*rows)[0];
      const int64_t share = mode.PairShare(ctx_.self_label, k, n, w, p.load, capacity, p.capacity);
      // The pair's shares sum to the pair's load: what the partner sends
      // here is what this site gains.
      if (ctx_.allowance && share > w) ctx_.allowance->Expect(spec_.round_id, SiteOf(partner), share - w);
      if (ctx_.env->Now() >= spec_.deadline) return absl::DeadlineExceededError("past the round's deadline");
      if (share < w) {
        const int64_t send = w - share;
        std::vector<int64_t> moved;
        const std::vector<balance::Transfer> out{{k + 1, ctx_.self_label, partner, send, 1}};
        if (auto st = Move(out, {p.profile}, absl::StrCat("dimension ", k, ": "), &moved); !st.ok()) return st;
      }
      w = share;
      if (auto b = ExchangeWith(MessageKind::kBarrier, k, {}); !b.ok()) return b.status();
      Event(absl::StrCat("dimension ", k, ": load ", w));
    }
    report_.quota = w;
    report_.steps = 3 * n;
    return absl::OkStatus();
  }

  const RoundContext& ctx_;
  const RoundSpec& spec_;
  RoundReport report_;
  balance::StartProfile own_profile_;
  balance::LoadTable table_;  // gathering modes: the whole component's rows
};

}  // namespace

RoundReport RunRound(const RoundContext& ctx, const RoundSpec& spec, const SiteSnapshot& self) {
  Runner r(ctx, spec);
  return r.Run(self);
}

}  // namespace hyperfed::federation
