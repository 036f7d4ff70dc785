#include "daemon/federation/site.h"

#include <algorithm>
#include <future>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/balance/dem.h"
#include "daemon/balance/mcwa.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"
#include "daemon/common/log.h"

namespace hyperfed::federation {
namespace {

constexpr size_t kRoundsKept = 32;

std::string Labels(const std::vector<int>& v) { return v.empty() ? "none" : absl::StrJoin(v, ","); }

// The step count the papers give for a round on this topology, to print
// beside ours: CWA's 3 log N on a full cube, MCWA's 3 log N + T around faults
// (seed 004 section 4), DEM's 3 log N for the improved DEM.
std::string PaperBound(const RoundSpec& spec) {
  const int n = spec.dimension;
  if (spec.algorithm == "improved-dem") return absl::StrCat(" (seed 003's DEM: 3 log N = ", 3 * n, ")");
  if (spec.faults.empty()) return absl::StrCat(" (the papers' CWA: 3 log N = ", 3 * n, ")");
  std::vector<balance::NodeId> f(spec.faults.begin(), spec.faults.end());
  auto topo = balance::Topology::Hypercube(n, f);
  if (!topo.ok()) return "";
  auto subcubes = balance::SelectBalancingSubcubes(*topo);
  if (!subcubes.ok() || subcubes->empty()) return "";
  int depth = 0;
  for (const auto& bs : *subcubes) depth = std::max(depth, bs.tree_depth);
  return absl::StrCat(" (seed 004's MCWA: 3 log N + T = ", 3 * n + depth, ")");
}

double ShareError(const balance::LoadTable& t) {
  std::vector<balance::Load> w;
  std::vector<double> p;
  for (const auto& r : t) {
    w.push_back(r.load);
    p.push_back(r.capacity);
  }
  return balance::MaxShareError(w, p);
}

}  // namespace

Site::Site(const config::Config& config, scheduler::SchedulerAdapter* adapter, JobMover* mover, PeerClient* peers,
           const Clock* clock)
    : config_(config),
      adapter_(adapter),
      mover_(mover),
      peers_(peers),
      clock_(clock),
      membership_(config, clock),
      mailbox_(clock) {
  ctx_.self_site = config_.site.id;
  ctx_.self_label = config_.site.label;
  ctx_.site_of_label = [this](int label) { return SiteOfLabel(label); };
  ctx_.peers = peers_;
  ctx_.mailbox = &mailbox_;
  ctx_.mover = mover_;
  ctx_.step_timeout = config_.balancer.step_timeout;
  ctx_.event = [](const std::string& e) { Log(e); };
}

Site::~Site() { Stop(); }

void Site::Start() {
  heartbeat_thread_ = std::thread([this] { HeartbeatLoop(); });
  timer_thread_ = std::thread([this] { TimerLoop(); });
}

void Site::Stop() {
  if (stopping_.exchange(true)) return;
  cv_.notify_all();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  if (timer_thread_.joinable()) timer_thread_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> l(mu_);
    workers.swap(workers_);
  }
  for (auto& t : workers)
    if (t.joinable()) t.join();
}

std::string Site::SiteOfLabel(int label) const {
  const config::RosterEntry* e = config_.FindLabel(label);
  return e ? e->id : "";
}

absl::StatusOr<std::pair<int64_t, double>> Site::Snapshot() {
  auto count = adapter_->CountMigratable();
  if (!count.ok()) return count.status();
  const int64_t load = *count;
  double capacity = 0;
  if (config_.capacity.from_adapter) {
    auto c = adapter_->GetCapacity();
    if (!c.ok()) return c.status();
    capacity = c->Value();
  } else {
    capacity = static_cast<double>(config_.capacity.units) * config_.capacity.speed;
  }
  if (drained_) capacity = 0;
  return std::make_pair(load, capacity);
}

void Site::SetDrained(bool drained) {
  if (drained_.exchange(drained) != drained)
    Log(absl::StrCat(config_.site.id, drained ? ": drained: takes no jobs; its pending jobs leave at the next round"
                                              : ": undrained: takes jobs again"));
}

// ------------------------------------------------------------------ heartbeats

void Site::HeartbeatLoop() {
  std::map<std::string, bool> was_up;
  while (!stopping_) {
    auto snap = Snapshot();
    std::string round, last;
    {
      std::lock_guard<std::mutex> l(mu_);
      round = current_round_;
      if (last_report_) last = last_report_->round_id;
    }
    if (snap.ok()) membership_.SetSelf(snap->first, snap->second, drained_, round, last);
    HeartbeatInfo hb;
    hb.site = config_.site.id;
    hb.label = config_.site.label;
    if (snap.ok()) {
      hb.load = snap->first;
      hb.capacity = snap->second;
    }
    hb.drained = drained_;
    hb.round_id = round;
    hb.last_round = last;
    for (const PeerInfo& p : membership_.View()) hb.view.emplace_back(p.site, p.up);
    std::vector<std::future<absl::Status>> calls;
    for (const config::RosterEntry& e : config_.roster) {
      if (e.id == config_.site.id) continue;
      calls.push_back(std::async(std::launch::async, [this, e, hb] {
        return peers_->Heartbeat(e.id, hb, config_.balancer.heartbeat_interval);
      }));
    }
    for (auto& c : calls) c.wait();
    for (const PeerInfo& p : membership_.View()) {
      if (p.self) continue;
      auto it = was_up.find(p.site);
      if (it == was_up.end() || it->second != p.up)
        Log(absl::StrCat(config_.site.id, ": peer ", p.site, " (label ", p.label, ") is ", p.up ? "up" : "down"));
      was_up[p.site] = p.up;
    }
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, absl::ToChronoNanoseconds(config_.balancer.heartbeat_interval), [this] { return stopping_.load(); });
  }
}

bool Site::OnHeartbeat(const HeartbeatInfo& hb) {
  return membership_.Seen(hb.site, hb.load, hb.capacity, hb.drained, hb.round_id, hb.last_round);
}

// ------------------------------------------------------------------ timer and underload

void Site::TimerLoop() {
  absl::Time next_timer = clock_->Now() + config_.balancer.interval;
  absl::Time last_underload_request = absl::InfinitePast();
  while (!stopping_) {
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_for(l, absl::ToChronoNanoseconds(config_.balancer.heartbeat_interval),
                   [this] { return stopping_.load(); });
    }
    if (stopping_) break;
    const absl::Time now = clock_->Now();
    bool busy;
    {
      std::lock_guard<std::mutex> l(mu_);
      busy = !current_round_.empty();
    }
    if (config_.balancer.interval > absl::ZeroDuration() && now >= next_timer) {
      next_timer = now + config_.balancer.interval;
      if (IsCoordinator() && !busy) {
        balance::LoadTable t;
        for (const PeerInfo& p : membership_.View())
          if (p.up) t.push_back({p.label, p.load, p.capacity});
        if (ShareError(t) >= static_cast<double>(config_.balancer.min_imbalance)) {
          auto id = Balance(false, "timer");
          if (!id.ok()) Log(absl::StrCat(config_.site.id, ": timer round not started: ", id.status().message()));
        }
      }
    }
    if (config_.balancer.underload_threshold > 0 && !busy &&
        now - last_underload_request > std::max(config_.balancer.interval, absl::Seconds(5))) {
      auto snap = Snapshot();
      if (snap.ok() && snap->first < config_.balancer.underload_threshold && !drained_) {
        bool others_have_work = false;
        for (const PeerInfo& p : membership_.View())
          if (!p.self && p.up && p.load > config_.balancer.underload_threshold) others_have_work = true;
        if (others_have_work) {
          last_underload_request = now;
          Log(absl::StrCat(config_.site.id, ": underloaded (", snap->first, " pending < ",
                           config_.balancer.underload_threshold, "): asking for a round"));
          auto id = IsCoordinator() ? Balance(false, "underload")
                                    : peers_->RequestBalance(Coordinator(), config_.site.id, "underload",
                                                             config_.balancer.step_timeout);
          if (!id.ok()) Log(absl::StrCat(config_.site.id, ": balancing request failed: ", id.status().message()));
        }
      }
    }
  }
}

// ------------------------------------------------------------------ rounds: a site's part

bool Site::OnStartRound(const RoundSpec& spec, std::string* busy_with) {
  std::lock_guard<std::mutex> l(mu_);
  if (!current_round_.empty()) {
    if (current_round_ == spec.round_id) return true;
    *busy_with = current_round_;
    return false;
  }
  if (stopping_) {
    *busy_with = "(stopping)";
    return false;
  }
  current_round_ = spec.round_id;
  workers_.emplace_back([this, spec] { RunPart(spec); });
  return true;
}

void Site::RunPart(RoundSpec spec) {
  Log(absl::StrCat(config_.site.id, ": round ", spec.round_id, " (", spec.algorithm, ", faults ", Labels(spec.faults),
                   ") started by ", spec.coordinator));
  RoundReport report;
  auto snap = Snapshot();
  if (!snap.ok()) {
    report.round_id = spec.round_id;
    report.site = config_.site.id;
    report.label = config_.site.label;
    report.error = absl::StrCat("load snapshot failed: ", snap.status().message());
  } else {
    report = RunRound(ctx_, spec, snap->first, snap->second);
  }
  Log(absl::StrCat(config_.site.id, ": round ", spec.round_id, report.ok ? " done" : " ended: " + report.error,
                   ": load ", report.load_before, ", quota ", report.quota, ", moved out ", report.moved_out,
                   report.shortfall ? absl::StrCat(", short ", report.shortfall) : ""));
  {
    std::lock_guard<std::mutex> l(mu_);
    last_report_ = report;
    current_round_.clear();
    counters_.jobs_moved_out += report.moved_out;
  }
  if (spec.coordinator == config_.site.id) {
    OnReport(report);
  } else {
    auto st = peers_->ReportRound(spec.coordinator, report, config_.balancer.step_timeout);
    if (!st.ok()) Log(absl::StrCat(config_.site.id, ": could not report round ", spec.round_id, ": ", st.message()));
  }
}

absl::StatusOr<balance::LoadTable> Site::OnExchange(const ExchangeMessage& m) {
  return mailbox_.Deliver(m, config_.balancer.step_timeout);
}

// ------------------------------------------------------------------ rounds: coordination

RoundView* Site::FindLocked(const std::string& id) {
  for (RoundView& r : rounds_)
    if (r.id == id) return &r;
  return nullptr;
}

void Site::AddEvent(const std::string& round_id, const std::string& event) {
  std::lock_guard<std::mutex> l(mu_);
  if (RoundView* r = FindLocked(round_id)) r->events.push_back(event);
  cv_.notify_all();
}

std::pair<std::vector<int>, std::string> Site::NextMode() const {
  std::vector<int> faults = membership_.FaultLabels();
  std::string algo = config_.balancer.algorithm;
  std::string why;
  if (faults.empty()) {
    why = absl::StrCat(algo, " on the full ", membership_.dimension(), "-cube",
                       algo == "mcwa" ? ", where it is CWA" : "", " (configured full-cube mode)");
  } else {
    why = absl::StrCat(algo == "improved-dem" ? "improved-dem, skipping dimensions whose partner is missing"
                       : algo == "mcwa"
                           ? "mcwa (seed 004 Algorithm 3) over the balancing subcube and its trees"
                           : "exact over the MCWA topology",
                       ": positions ", Labels(faults), " are failed or empty");
  }
  return {faults, why};
}

absl::StatusOr<std::string> Site::Balance(bool dry_run, const std::string& reason) {
  const int n = membership_.dimension();
  std::vector<int> faults = membership_.FaultLabels();
  const std::string& configured = config_.balancer.algorithm;
  std::string algorithm = configured == "improved-dem" || configured == "mcwa" ? configured : "exact";
  RoundView view;
  view.spec = RoundSpec{"", config_.site.id, faults, n, algorithm};
  view.mode = NextMode().second;
  view.started = clock_->Now();
  view.dry_run = dry_run;
  auto self = Snapshot();
  if (!self.ok()) return self.status();
  membership_.SetSelf(self->first, self->second, drained_, "", "");
  for (const PeerInfo& p : membership_.View())
    if (p.up) view.before.push_back({p.label, p.load, p.capacity});
  view.share_error_before = ShareError(view.before);

  if (dry_run) {
    std::vector<balance::NodeId> f(faults.begin(), faults.end());
    auto topo = balance::Topology::Hypercube(n, f);
    if (!topo.ok()) return topo.status();
    std::vector<balance::Load> w(size_t{1} << n, 0);
    std::vector<double> p(size_t{1} << n, 0);
    for (const auto& r : view.before) {
      w[r.label] = r.load;
      p[r.label] = r.capacity;
    }
    bool any_capacity = false;
    for (double c : p) any_capacity = any_capacity || c > 0;
    absl::StatusOr<balance::Plan> plan = balance::Plan{w, w, {}, {}};
    if (any_capacity) {
      if (algorithm == "improved-dem") {
        for (auto& c : p) c = c > 0 ? c : 1e-9;  // the pair rule needs p > 0; drained sites hold ~nothing
        plan = balance::ImprovedDemPlan(*topo, w, p);
      } else if (algorithm == "mcwa") {
        for (auto& c : p) c = c > 0 ? c : 1e-9;  // as the round does: drained sites get quota 0
        plan = balance::McwaPlan(*topo, w, p);
      } else {
        plan = balance::ExactPlan(*topo, w, p);
      }
    }
    if (!plan.ok()) return plan.status();
    std::lock_guard<std::mutex> l(mu_);
    view.id = absl::StrCat("dry-", config_.site.id, "-", ++round_seq_);
    view.spec.round_id = view.id;
    view.transfers = plan->transfers;
    for (const auto& r : view.before) view.after.push_back({r.label, plan->final_loads[r.label], r.capacity});
    view.share_error_after = ShareError(view.after);
    view.moved = plan->metrics.tasks_moved;
    view.messages = plan->metrics.messages;
    view.steps = static_cast<int>(plan->metrics.steps);
    view.done = view.ok = true;
    view.finished = clock_->Now();
    view.events.push_back(absl::StrCat("dry run of ", algorithm, " over ", view.before.size(), " live sites, faults ",
                                       Labels(faults), ": would move ", view.moved, " jobs"));
    rounds_.push_back(view);
    if (rounds_.size() > kRoundsKept) rounds_.pop_front();
    return view.id;
  }

  if (!IsCoordinator()) {
    return peers_->RequestBalance(Coordinator(), config_.site.id, reason, config_.balancer.step_timeout);
  }
  std::lock_guard<std::mutex> l(mu_);
  for (const RoundView& r : rounds_)
    if (!r.done && !r.dry_run) return r.id;  // two requests resolve to one round
  if (stopping_) return absl::UnavailableError("the daemon is stopping");
  view.id = absl::StrCat(config_.site.id, "-", absl::ToUnixMillis(view.started), "-", ++round_seq_);
  view.spec.round_id = view.id;
  view.events.push_back(absl::StrCat("round ", view.id, " (", reason, "): ", algorithm, " over ", view.before.size(),
                                     " live sites of the ", n, "-cube, faults ", Labels(faults)));
  rounds_.push_back(view);
  if (rounds_.size() > kRoundsKept) rounds_.pop_front();
  workers_.emplace_back([this, id = view.id] { Coordinate(id); });
  Log(absl::StrCat(config_.site.id, ": starting round ", view.id, " (", reason, ")"));
  return view.id;
}

absl::StatusOr<std::string> Site::OnRequestBalance(const std::string& from, const std::string& reason) {
  if (!IsCoordinator())
    return absl::FailedPreconditionError(absl::StrCat("the coordinator is ", Coordinator()));
  Log(absl::StrCat(config_.site.id, ": balancing request from ", from, " (", reason, ")"));
  return Balance(false, reason.empty() ? from : absl::StrCat(reason, " at ", from));
}

void Site::Coordinate(std::string round_id) {
  RoundSpec spec;
  std::vector<int> live;
  {
    std::lock_guard<std::mutex> l(mu_);
    RoundView* r = FindLocked(round_id);
    if (!r) return;
    spec = r->spec;
    for (const auto& row : r->before) live.push_back(row.label);
  }
  Log(absl::StrCat(config_.site.id, ": coordinating round ", round_id));
  // Start the round everywhere at once.
  std::vector<std::pair<std::string, std::future<absl::StatusOr<bool>>>> calls;
  for (int label : live) {
    const std::string site = SiteOfLabel(label);
    if (site == config_.site.id) continue;
    calls.emplace_back(site, std::async(std::launch::async, [this, site, spec] {
                         return peers_->StartRound(site, spec, config_.balancer.step_timeout);
                       }));
  }
  std::vector<std::string> accepted;
  std::string busy;
  if (OnStartRound(spec, &busy)) accepted.push_back(config_.site.id);
  for (auto& [site, f] : calls) {
    auto r = f.get();
    if (r.ok() && *r) {
      accepted.push_back(site);
    } else {
      AddEvent(round_id, absl::StrCat(site, " did not take part: ",
                                      r.ok() ? "busy with another round" : std::string(r.status().message())));
    }
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    if (RoundView* r = FindLocked(round_id)) {
      r->accepted = accepted;
      r->start_answered = true;
      // Fast sites may have reported already.
      if (!r->done && r->reported.size() >= r->accepted.size()) FinishRoundLocked(*r);
    }
  }
  AddEvent(round_id, absl::StrCat(accepted.size(), " of ", live.size(), " live sites started"));
  // Wait for every report (the parts end by themselves at their step
  // timeouts). A site that dies mid-round never reports: once every site
  // still missing is down in this site's view, the round ends without it.
  const absl::Time deadline =
      clock_->Now() + config_.balancer.step_timeout * (6 + 4 * spec.dimension) + absl::Minutes(2);
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    RoundView* r = FindLocked(round_id);
    if (stopping_ || !r || r->done) return;
    std::vector<std::string> missing;
    for (const std::string& site : r->accepted)
      if (std::find(r->reported.begin(), r->reported.end(), site) == r->reported.end()) missing.push_back(site);
    bool all_down = !missing.empty();
    for (const std::string& site : missing) {
      auto p = membership_.Find(site);
      all_down = all_down && p && !p->up;
    }
    if (all_down || clock_->Now() >= deadline) {
      r->events.push_back(all_down ? absl::StrCat(absl::StrJoin(missing, ", "), " went down during the round")
                                   : "gave up waiting for the remaining reports");
      r->any_failed = true;
      FinishRoundLocked(*r);
      return;
    }
    cv_.wait_for(l, absl::ToChronoNanoseconds(config_.balancer.heartbeat_interval));
  }
}

void Site::OnReport(const RoundReport& report) {
  std::lock_guard<std::mutex> l(mu_);
  RoundView* r = FindLocked(report.round_id);
  if (!r || r->done) return;
  std::vector<std::string> sends;
  for (const auto& t : report.transfers) sends.push_back(absl::StrCat(t.count, " to ", SiteOfLabel(t.to)));
  r->events.push_back(absl::StrCat(report.site, report.ok ? "" : " ended early (" + report.error + ")",
                                   ": load ", report.load_before, ", quota ", report.quota,
                                   sends.empty() ? ", sent nothing" : ", sent " + absl::StrJoin(sends, ", "),
                                   report.shortfall ? absl::StrCat(" (", report.shortfall, " short)") : ""));
  // The table was read from heartbeats when the round started; a site's
  // report carries the load it really balanced with (jobs submitted since
  // its last heartbeat count), so "before" and "after" show what the round
  // did.
  if (const config::RosterEntry* e = config_.FindSite(report.site))
    for (balance::LoadRow& row : r->before)
      if (row.label == e->label) row.load = report.load_before;
  // Keep the report on the view: the transfers and messages add up.
  r->messages += report.messages;
  r->steps = std::max(r->steps, report.steps);
  for (const auto& t : report.transfers) {
    r->transfers.push_back(t);
    r->moved += t.count;
  }
  r->reported.push_back(report.site);
  if (!report.ok) r->any_failed = true;
  if (r->start_answered && r->reported.size() >= r->accepted.size()) FinishRoundLocked(*r);
  cv_.notify_all();
}

void Site::FinishRoundLocked(RoundView& r) {
  std::map<int, balance::LoadRow> after;
  for (const auto& row : r.before) after[row.label] = row;
  for (const auto& t : r.transfers) {
    after[t.from].load -= t.count;
    after[t.to].load += t.count;
  }
  r.after.clear();
  for (const auto& [label, row] : after) r.after.push_back(row);
  r.share_error_before = ShareError(r.before);
  r.share_error_after = ShareError(r.after);
  r.ok = !r.any_failed && r.start_answered && r.reported.size() >= r.accepted.size() &&
         r.accepted.size() == r.before.size();
  r.done = true;
  r.finished = clock_->Now();
  r.events.push_back(absl::StrCat("round ", r.id, r.ok ? " finished" : " ended early", ": moved ", r.moved,
                                  " jobs; max share error ", absl::StrFormat("%.2f", r.share_error_before), " -> ",
                                  absl::StrFormat("%.2f", r.share_error_after), "; ", r.messages,
                                  " round messages, ", r.steps, " steps", PaperBound(r.spec)));
  Log(absl::StrCat(config_.site.id, ": ", r.events.back()));
  const double secs = absl::ToDoubleSeconds(r.finished - r.started);
  ++counters_.rounds;
  if (!r.ok) ++counters_.rounds_failed;
  counters_.last_round_seconds = secs;
  counters_.round_seconds_sum += secs;
  cv_.notify_all();
}

std::optional<RoundView> Site::WaitRound(const std::string& round_id, size_t seen, absl::Duration timeout) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_for(l, absl::ToChronoNanoseconds(timeout), [&] {
    RoundView* r = FindLocked(round_id);
    return stopping_ || !r || r->done || r->events.size() > seen;
  });
  RoundView* r = FindLocked(round_id);
  if (!r) return std::nullopt;
  return *r;
}

std::optional<RoundView> Site::LastRound() const {
  std::lock_guard<std::mutex> l(mu_);
  if (rounds_.empty()) return std::nullopt;
  return rounds_.back();
}

std::optional<RoundReport> Site::LastReport() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_report_;
}

SiteCounters Site::counters() const {
  std::lock_guard<std::mutex> l(mu_);
  return counters_;
}

}  // namespace hyperfed::federation
