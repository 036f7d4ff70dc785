#include "daemon/federation/round.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/balance/mcwa.h"
#include "daemon/balance/topology.h"
#include "daemon/migration/crash_point.h"

namespace hyperfed::federation {

std::string MakeRoundId(const std::string& coordinator, absl::Time started, int64_t n) {
  return absl::StrCat(coordinator, "-", absl::ToUnixMillis(started), "-", n);
}

std::optional<std::string> RoundCoordinator(const std::string& round_id) {
  // The last two '-' separate the site (which may hold '-') from two numbers.
  const size_t b = round_id.rfind('-');
  if (b == std::string::npos || b == 0) return std::nullopt;
  const size_t a = round_id.rfind('-', b - 1);
  if (a == std::string::npos || a == 0) return std::nullopt;
  auto digits = [](std::string_view v) {
    return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const std::string_view id(round_id);
  if (!digits(id.substr(a + 1, b - a - 1)) || !digits(id.substr(b + 1))) return std::nullopt;
  return round_id.substr(0, a);
}

bool EpochInBounds(int64_t epoch, absl::Time now) {
  return epoch > 0 && epoch <= absl::ToUnixMillis(now + kMaxEpochAhead);
}

absl::Status CheckRoundStart(const RoundSpec& spec, absl::Time now) {
  auto invalid = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (spec.coordinator.empty()) return invalid("the round names no coordinator");
  if (auto st = balance::CheckRoundMode(spec.mode); !st.ok()) return st;
  if (!EpochInBounds(spec.epoch, now)) return invalid("epoch must be > 0 and at most a day ahead of this site's clock");
  if (spec.deadline <= absl::UnixEpoch()) return invalid("deadline_unix_ms must be > 0");
  if (spec.dimension < 0 || spec.dimension > 31) return invalid("dimension ", spec.dimension, " outside 0..31");
  std::set<int> faults;
  for (int f : spec.faults) {
    if (f < 0 || int64_t{f} >= (int64_t{1} << spec.dimension))
      return invalid("fault label ", f, " outside the ", spec.dimension, "-cube");
    if (!faults.insert(f).second) return invalid("fault label ", f, " listed twice");
  }
  return absl::OkStatus();
}

absl::Status CheckRoundRoster(const config::Roster& roster, const std::string& self, const RoundSpec& spec) {
  const int n = roster.Dimension();
  if (spec.dimension != n)
    return absl::InvalidArgumentError(
        absl::StrCat("dimension ", spec.dimension, " but this site's roster makes a ", n, "-cube"));
  const config::RosterEntry* me = roster.FindSite(self);
  if (me && std::find(spec.faults.begin(), spec.faults.end(), me->label) != spec.faults.end())
    return absl::FailedPreconditionError("this site is in the round's fault set");
  return absl::OkStatus();
}

absl::Status CheckReport(const config::Roster& roster, const RoundReport& r) {
  const config::RosterEntry* e = roster.FindSite(r.site);
  if (!e || e->label != r.label)
    return absl::InvalidArgumentError(absl::StrCat("report of ", r.site, ": label ", r.label, " is not its label"));
  if (r.moved_out < 0 || r.shortfall < 0 || r.quota < 0 || r.kept < 0 || r.messages < 0 || r.steps < 0)
    return absl::InvalidArgumentError(absl::StrCat("report of ", r.site, ": negative counts"));
  if (r.error.size() > kMaxReportError)
    return absl::InvalidArgumentError(
        absl::StrCat("report of ", r.site, ": error over ", kMaxReportError, " characters"));
  if (!r.from_journal && !r.not_begun)
    if (auto st = CheckReportedRow(roster, r.label, r.load_before, r.capacity); !st.ok()) return st;
  for (const balance::Transfer& t : r.transfers)
    if (t.count <= 0 || t.from != r.label || t.to < 0 || t.to >= (1 << roster.Dimension()))
      return absl::InvalidArgumentError(absl::StrCat("report of ", r.site, ": malformed transfer"));
  return absl::OkStatus();
}

const char* MessageKindName(MessageKind k) {
  switch (k) {
    case MessageKind::kUp:
      return "up";
    case MessageKind::kExchange:
      return "exchange";
    case MessageKind::kBarrier:
      return "barrier";
    case MessageKind::kDown:
      return "down";
    case MessageKind::kPhaseDone:
      return "phase-done";
  }
  return "?";
}

RoundTimeouts ComputeRoundTimeouts(const config::BalancerConfig& b, int dimension) {
  RoundTimeouts t;
  t.step = b.step_timeout;
  // The longest round: a gather of at most 3n sequential steps (T up, k
  // across, T down, T + k <= n) and at most 3n transfer phases, each a
  // step's wait, plus the start and the report.
  t.round = b.step_timeout * (6 * dimension + 4);
  t.report = b.step_timeout;
  return t;
}

// ------------------------------------------------------------------ Mailbox

void Mailbox::SetPosition(int self_label, int dimension) {
  std::lock_guard<std::mutex> l(mu_);
  self_label_ = self_label;
  dimension_ = dimension;
}

bool Mailbox::StaleLocked(const std::string& round_id, int64_t epoch) const {
  return round_id != fence_round_ && epoch <= fence_epoch_;
}

void Mailbox::ExpireLocked() {
  // Messages of rounds that never start here (their StartRound was lost).
  const absl::Time cutoff = env_->Now() - absl::Minutes(10);
  for (auto it = inbox_.begin(); it != inbox_.end();) it = it->second.at < cutoff ? inbox_.erase(it) : std::next(it);
  for (auto it = published_.begin(); it != published_.end();)
    it = it->second.at < cutoff ? published_.erase(it) : std::next(it);
  // A round with nothing left here is forgotten (its messages count as
  // taken only while it may still run).
  std::set<std::string> held{fence_round_};
  for (const auto& [key, e] : inbox_) held.insert(std::get<0>(key));
  for (auto it = epoch_of_.begin(); it != epoch_of_.end();)
    it = held.count(it->first) ? std::next(it) : epoch_of_.erase(it);
  for (auto it = taken_.begin(); it != taken_.end();)
    it = held.count(std::get<0>(*it)) ? std::next(it) : taken_.erase(it);
}

absl::Status Mailbox::ExpectedLocked(const ExchangeMessage& m) const {
  const int diff = m.from_label ^ self_label_;
  const bool neighbour = m.from_label >= 0 && m.from_label < (1 << dimension_) && diff != 0 && (diff & (diff - 1)) == 0;
  switch (m.kind) {
    case MessageKind::kExchange:
    case MessageKind::kBarrier:
      if (m.dimension < 0 || m.dimension >= dimension_ || diff != (1 << m.dimension))
        return absl::PermissionDeniedError(absl::StrCat("label ", m.from_label, " is not this site's partner across ",
                                                        "dimension ", m.dimension));
      break;
    case MessageKind::kUp:
    case MessageKind::kDown:
      if (!neighbour)
        return absl::PermissionDeniedError(absl::StrCat("label ", m.from_label, " is no cube neighbour of label ",
                                                        self_label_, ": it sends no ", MessageKindName(m.kind)));
      break;
    case MessageKind::kPhaseDone:
      if (m.rows.size() != 1 || m.rows[0].label != m.from_label)
        return absl::InvalidArgumentError("a phase-done notice carries one row, the sender's");
      break;
  }
  if (m.rows.size() > (size_t{1} << dimension_))
    return absl::InvalidArgumentError(absl::StrCat(m.rows.size(), " rows for a ", dimension_, "-cube"));
  const Key key{m.round_id, static_cast<int>(m.kind), m.dimension, m.phase, m.from_label};
  if (taken_.count(key))
    return absl::AlreadyExistsError(absl::StrCat("label ", m.from_label, " already sent this ",
                                                 MessageKindName(m.kind), " of round ", m.round_id));
  if (m.round_id != fence_round_) {
    // Counted per sender, so that one peer's junk never crowds out the
    // early messages of another.
    std::set<std::string> early;
    for (const auto& [k, e] : inbox_)
      if (std::get<4>(k) == m.from_label && std::get<0>(k) != fence_round_) early.insert(std::get<0>(k));
    if (!early.count(m.round_id) && early.size() >= static_cast<size_t>(kMaxEarlyRounds))
      return absl::ResourceExhaustedError(absl::StrCat("label ", m.from_label, " has sent messages of ", early.size(),
                                                       " rounds not started here; round ", m.round_id,
                                                       " is one too many"));
  }
  return absl::OkStatus();
}

void Mailbox::Open(const std::string& round_id, int64_t epoch) {
  std::lock_guard<std::mutex> l(mu_);
  if (fence_round_ != round_id) left_.clear();
  if (closed_round_ != round_id) closed_round_.clear();
  fence_round_ = round_id;
  fence_epoch_ = std::max(fence_epoch_, epoch);
  // What older rounds left behind can never be read now.
  auto stale = [&](const std::string& id) {
    auto it = epoch_of_.find(id);
    return id != round_id && it != epoch_of_.end() && it->second <= fence_epoch_;
  };
  for (auto it = inbox_.begin(); it != inbox_.end();)
    it = stale(std::get<0>(it->first)) ? inbox_.erase(it) : std::next(it);
  for (auto it = published_.begin(); it != published_.end();)
    it = std::get<0>(it->first) != round_id ? published_.erase(it) : std::next(it);
  for (auto it = epoch_of_.begin(); it != epoch_of_.end();) it = stale(it->first) ? epoch_of_.erase(it) : std::next(it);
  ExpireLocked();
  cv_.notify_all();
}

void Mailbox::Close(const std::string& round_id) {
  std::lock_guard<std::mutex> l(mu_);
  closed_round_ = round_id;
  for (auto it = inbox_.begin(); it != inbox_.end();)
    it = std::get<0>(it->first) == round_id ? inbox_.erase(it) : std::next(it);
  for (auto it = published_.begin(); it != published_.end();)
    it = std::get<0>(it->first) == round_id ? published_.erase(it) : std::next(it);
  epoch_of_.erase(round_id);
  cv_.notify_all();
}

absl::StatusOr<balance::LoadTable> Mailbox::Deliver(const ExchangeMessage& m, absl::Duration timeout) {
  std::unique_lock<std::mutex> l(mu_);
  if (StaleLocked(m.round_id, m.epoch))
    return absl::FailedPreconditionError(absl::StrCat("round ", m.round_id, " (epoch ", m.epoch,
                                                      ") is older than round ", fence_round_, " (epoch ", fence_epoch_,
                                                      "), the last this site took part in"));
  auto ended = [&] { return !closed_round_.empty() && m.round_id == closed_round_; };
  auto ended_error = [&] {
    return absl::FailedPreconditionError(absl::StrCat("this site's part of round ", m.round_id, " has ended"));
  };
  if (ended()) return ended_error();
  ExpireLocked();
  if (auto st = ExpectedLocked(m); !st.ok()) return st;
  epoch_of_[m.round_id] = m.epoch;
  const Key key{m.round_id, static_cast<int>(m.kind), m.dimension, m.phase, m.from_label};
  if (m.kind != MessageKind::kExchange && m.kind != MessageKind::kBarrier) {
    taken_.insert(key);
    inbox_[key] = Entry{m.rows, env_->Now()};
    cv_.notify_all();
    return balance::LoadTable{};
  }
  const std::tuple<std::string, int, int> mine{m.round_id, static_cast<int>(m.kind), m.dimension};
  const bool reached = env_->WaitFor(
      l, cv_, timeout, [&] { return published_.count(mine) > 0 || StaleLocked(m.round_id, m.epoch) || ended(); });
  if (StaleLocked(m.round_id, m.epoch))
    return absl::FailedPreconditionError(absl::StrCat("round ", m.round_id, " was replaced by a newer round"));
  if (ended()) return ended_error();
  if (!reached)
    return absl::DeadlineExceededError(absl::StrCat("round ", m.round_id, ": this site did not reach ",
                                                    MessageKindName(m.kind), " ", m.dimension, " in time"));
  // A second copy may have come in while this one waited.
  if (!taken_.insert(key).second)
    return absl::AlreadyExistsError(absl::StrCat("label ", m.from_label, " already sent this ",
                                                 MessageKindName(m.kind), " of round ", m.round_id));
  inbox_[key] = Entry{m.rows, env_->Now()};
  cv_.notify_all();
  return published_[mine].rows;
}

void Mailbox::Publish(const std::string& round_id, MessageKind kind, int dimension, const balance::LoadTable& rows) {
  std::lock_guard<std::mutex> l(mu_);
  published_[{round_id, static_cast<int>(kind), dimension}] = Entry{rows, env_->Now()};
  cv_.notify_all();
}

void Mailbox::Left(const std::string& round_id, int label, const std::string& why) {
  std::lock_guard<std::mutex> l(mu_);
  if (round_id != fence_round_) return;
  left_.emplace(label, why);
  cv_.notify_all();
}

std::optional<std::string> Mailbox::WhyLeft(const std::string& round_id, int label) {
  std::lock_guard<std::mutex> l(mu_);
  if (round_id != fence_round_) return std::nullopt;
  auto it = left_.find(label);
  if (it == left_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<balance::LoadTable> Mailbox::Await(const std::string& round_id, MessageKind kind, int dimension,
                                                  int phase, int from_label, absl::Time deadline) {
  std::unique_lock<std::mutex> l(mu_);
  const Key key{round_id, static_cast<int>(kind), dimension, phase, from_label};
  auto replaced = [&] { return fence_round_ != round_id; };
  auto left = [&] { return left_.count(from_label) > 0; };
  env_->WaitUntil(l, cv_, deadline, [&] { return inbox_.count(key) > 0 || replaced() || left(); });
  if (replaced()) return absl::AbortedError("the round was replaced by a newer one");
  auto it = inbox_.find(key);
  if (it == inbox_.end() && left())
    return absl::UnavailableError(absl::StrCat("it left the round (", left_.at(from_label), ")"));
  if (it == inbox_.end()) return absl::DeadlineExceededError("no message in time");
  balance::LoadTable rows = std::move(it->second.rows);
  inbox_.erase(it);
  return rows;
}

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
      st = mode->gathers() ? RunGathered(*mode, load, capacity) : RunPairwise(*mode, load, capacity);
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

  absl::StatusOr<balance::LoadTable> Call(int label, ExchangeMessage m) {
    auto timeout = CallTimeout();
    if (!timeout.ok()) return timeout.status();
    m.round_id = spec_.round_id;
    m.epoch = spec_.epoch;
    m.from_label = ctx_.self_label;
    // A callee that has left the round is given up when the coordinator
    // says so (Peer.LeftRound), not when its own wait ends.
    auto r = ctx_.peers->ExchangeUnless(SiteOf(label), m, *timeout,
                                        [&] { return ctx_.mailbox->WhyLeft(spec_.round_id, label).has_value(); });
    if (absl::IsCancelled(r.status()))
      if (auto why = ctx_.mailbox->WhyLeft(spec_.round_id, label))
        return absl::UnavailableError(absl::StrCat("it left the round (", *why, ")"));
    return r;
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
      if (mode.name() == "mcwa") migration::CrashPoint("round_mcwa_phase");
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
        m.rows = {{ctx_.self_label, moved[i], 0}};
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
