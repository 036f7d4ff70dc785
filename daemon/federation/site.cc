#include "daemon/federation/site.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "daemon/balance/placement.h"
#include "daemon/balance/topology.h"
#include "daemon/common/log.h"
#include "daemon/migration/migrator.h"

namespace hyperfed::federation {
namespace {
balance::StartProfile WidestOnly(int64_t widest) {
  balance::StartProfile p;
  p.widest = widest;
  return p;
}
}  // namespace

Site::Site(const config::Config& config, LiveConfig* live, scheduler::SchedulerAdapter* adapter, JobMover* mover,
           PeerClient* peers, const Env* env)
    : config_(config),
      live_(live),
      adapter_(adapter),
      mover_(mover),
      peers_(peers),
      env_(env),
      executor_(kExecutorThreads, env),
      membership_(live, env),
      heartbeater_(live, &membership_, peers),
      history_(env),
      participant_(
          live, env, &executor_, peers, mover, [this] { return Snapshot(/*with_waits=*/true); },
          [this](const RoundSpec& spec, const RoundReport& r) { PartDone(spec, r); }),
      coordinator_(live, env, &executor_, &membership_, &participant_, peers, &history_,
                   [this] { return RefreshSelf(); }),
      arrival_(live, env, adapter, mover, &membership_),
      timer_from_(env->Now()) {}

Site::~Site() { Stop(); }

void Site::Start() {
  heartbeat_thread_ = env_->StartThread([this] { Loop(&Site::HeartbeatOnce); });
  timer_thread_ = env_->StartThread([this] { Loop(&Site::TimerOnce); });
  recovery_thread_ = env_->StartThread([this] { RecoveryLoop(); });
  // The placement loop starts with the first heartbeat that finds
  // placement on (HeartbeatOnce): a site with it off runs no third loop.
}

void Site::PlacementLoop() {
  while (true) {
    {
      std::unique_lock<std::mutex> l(mu_);
      if (stopping_) return;
      place_now_ = false;
    }
    PlaceOnce();
    const absl::Duration period = live_->balancer().heartbeat_interval;
    std::unique_lock<std::mutex> l(mu_);
    env_->WaitFor(l, cv_, period, [this] { return stopping_ || place_now_; });
  }
}

void Site::RecoveryLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!env_->WaitFor(l, cv_, kRecoveryInterval, [this] { return stopping_; })) {
    l.unlock();
    if (auto st = mover_->Recover(); !st.ok()) LogError(absl::StrCat("migration recovery: ", st.message()));
    l.lock();
  }
}

void Site::WakePlacement() {
  {
    std::lock_guard<std::mutex> l(mu_);
    place_now_ = true;
  }
  cv_.notify_all();
}

PlacementPass Site::PlaceOnce() {
  if (!live_->balancer().placement || !live_->SelfEntry()) return {};
  return arrival_.RunOnce(OwnProfile(), drained());
}

absl::Status Site::AdmitTransfer(const std::string& source_site, const std::string& round_id,
                                 const std::vector<std::string>& keys) {
  if (!IsPlacementId(round_id))
    return participant_.AdmitTransfer(source_site, round_id, static_cast<int64_t>(keys.size()));
  if (drained()) return absl::FailedPreconditionError("this site is drained: it takes no placed jobs");
  return arrival_.Admit(source_site, keys, widest_.load());
}

balance::StartProfile Site::OwnProfile(absl::Duration* age) {
  const int64_t widest = widest_.load();
  const absl::Time now = env_->Now();
  std::lock_guard<std::mutex> l(profile_mu_);
  const absl::Duration every = std::max(live_->balancer().heartbeat_interval, 10 * own_profile_cost_);
  // Jobs in their placement window are not yet placed, but Slurm's
  // `sbatch --test-only` (ArrivalStarts) queues the probe behind them, each
  // for its whole time limit: an idle cluster with one new job would say
  // that job waits its own limit here, and send every job to an idle peer.
  // While such jobs wait, the profile taken before they came is reused
  // (aged), up to kWindowedProfileAge (docs/design.md §6.10).
  const bool refresh =
      own_profile_.widest != widest ||
      (now - own_profile_at_ >= every && (now - own_profile_at_ >= kWindowedProfileAge || !JobsInWindow()));
  if (refresh) {
    balance::StartProfile fresh = widest > 0 ? StartProfileNow(widest) : WidestOnly(widest);
    const absl::Time at = env_->Now();
    own_profile_cost_ = at - now;
    // The snapshot that said no job was in its window may be a heartbeat
    // old: a job that came since may have been counted by this probe. Then
    // the profile taken before it stays, as if it had been seen in time.
    const bool keep_old =
        own_profile_.widest == widest && now - own_profile_at_ < kWindowedProfileAge && WindowOpenNow();
    if (!keep_old) {
      own_profile_ = std::move(fresh);
      own_profile_at_ = at;
    }
  }
  // Offsets are from when it was asked: from now on for the caller.
  const absl::Duration taken_ago = std::max(env_->Now() - own_profile_at_, absl::ZeroDuration());
  if (age) *age = taken_ago;
  return balance::ProfileAged(own_profile_, absl::ToInt64Milliseconds(taken_ago));
}

void Site::Loop(void (Site::*once)()) {
  while (true) {
    {
      std::unique_lock<std::mutex> l(mu_);
      if (stopping_) return;
    }
    const absl::Time began = env_->Now();
    (this->*once)();
    // Every period from the start of the last pass, not from its end: a
    // slow pass (a scheduler slow to list its jobs, a peer that does not
    // answer) does not space heartbeats wider than peers expect.
    const absl::Duration period = live_->balancer().heartbeat_interval;
    std::unique_lock<std::mutex> l(mu_);
    env_->WaitUntil(l, cv_, began + period, [this] { return stopping_; });
  }
}

void Site::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (heartbeat_thread_) heartbeat_thread_->Join();
  if (timer_thread_) timer_thread_->Join();
  if (placement_thread_) placement_thread_->Join();
  if (recovery_thread_) recovery_thread_->Join();
  coordinator_.Stop();
  participant_.Stop();
  history_.Close();
  executor_.Join();
}

bool Site::JobsInWindow() { return jobs_in_window_.load(); }

bool Site::WindowOpenNow() {
  auto pending = adapter_->Pending();
  if (!pending.ok()) return false;  // unknown: the probe stands, as before
  const bool open =
      std::any_of(pending->begin(), pending->end(), [](const scheduler::PendingJob& p) { return p.window_end_ms > 0; });
  jobs_in_window_.store(open);
  return open;
}

balance::StartProfile Site::StartProfileNow(int64_t widest) {
  const int64_t now_ms = absl::ToUnixMillis(env_->Now());
  auto clamp = [&](int64_t at_ms) { return std::clamp<int64_t>(at_ms - now_ms, 0, config::kMaxReportedWaitMs); };
  balance::StartProfile p = WidestOnly(widest);
  auto free = adapter_->FreeCores();
  if (free.ok() && !free->empty()) {
    // The scheduler's "now" is a little later than ours: its first step is
    // what is free from now.
    balance::EasyForecast f;
    f.now = 0;
    f.cores = widest;
    for (const auto& [at_ms, cores] : *free) {
      const int64_t offset = f.free_cores.empty() ? 0 : clamp(at_ms);
      const int64_t c = std::clamp<int64_t>(cores, 0, widest);
      if (!f.free_cores.empty() && f.free_cores.back().first == offset) {
        f.free_cores.back().second = c;
      } else {
        f.free_cores.push_back({offset, c});
      }
    }
    p = balance::ProfileFromForecast(f);  // merged to at most kMaxProfileSteps
  } else if (!free.ok() && !absl::IsUnimplemented(free.status())) {
    LogWarning(absl::StrCat("no start profile this round: ", free.status().message()));
  } else {
    const std::vector<int64_t> widths = balance::ProfileWidths(widest);
    auto starts = adapter_->ArrivalStarts(widths);
    if (starts.ok() && starts->size() == widths.size()) {
      std::vector<int64_t> waits;
      for (int64_t s : *starts) waits.push_back(clamp(s));
      p = balance::ProfileFromWaits(widest, widths, waits);
    } else if (!starts.ok() && !absl::IsUnimplemented(starts.status())) {
      LogWarning(absl::StrCat("no start profile this round: ", starts.status().message()));
    }
  }
  // Peers check every profile (CheckReportedRow); one they would refuse
  // would end the round, so this site checks its own first.
  if (auto st = balance::CheckStartProfile(p, config::kMaxReportedWaitMs); !st.ok()) {
    LogWarning(absl::StrCat("not publishing a start profile this round: ", st.message()));
    return WidestOnly(widest);
  }
  return p;  // with only the widest job, peers take it as starting jobs at once
}

absl::StatusOr<SiteSnapshot> Site::Snapshot(bool with_waits) {
  SiteSnapshot snap;
  // A scheduler that cannot say how wide a job it runs (Slurm while sinfo
  // fails) reports 0: peers then send it nothing this round, and its load
  // still counts.
  auto widest = adapter_->WidestJob();
  if (!widest.ok() && with_waits)
    LogWarning(absl::StrCat("widest job unknown this round: ", widest.status().message()));
  const int64_t runs = widest.ok() ? std::max<int64_t>(*widest, 0) : 0;
  const std::optional<config::RosterEntry> self = live_->SelfEntry();
  // Peers refuse a widest job above the roster's max_capacity (as for the
  // capacity below).
  snap.profile.widest = self ? std::min<int64_t>(runs, static_cast<int64_t>(self->max_capacity)) : runs;
  // The load: pending jobs some other live site can run (docs/algorithms.md,
  // "Jobs that gain"). Before any peer has said how wide it runs, all count.
  auto pending = adapter_->Pending();
  if (!pending.ok()) return pending.status();
  std::vector<int64_t> cores;
  cores.reserve(pending->size());
  bool in_window = false;
  for (const scheduler::PendingJob& p : *pending) {
    cores.push_back(p.cores);
    in_window |= p.window_end_ms > 0;
  }
  jobs_in_window_.store(in_window);
  const int64_t elsewhere = membership_.WidestElsewhere();
  snap.load = elsewhere > 0 ? balance::MovableLoad(cores, elsewhere) : static_cast<int64_t>(cores.size());
  snap.load = std::min(snap.load, config::kMaxReportedLoad);
  if (with_waits && snap.profile.widest > 0) snap.profile = StartProfileNow(snap.profile.widest);
  double capacity = 0;
  if (config_.capacity.from_adapter) {
    auto c = adapter_->GetCapacity();
    if (!c.ok()) return c.status();
    capacity = c->Value();
  } else {
    capacity = static_cast<double>(config_.capacity.units) * config_.capacity.speed;
  }
  if (drained_ || (self && self->drained)) capacity = 0;
  // Peers refuse a row above the roster's ceiling (docs/security.md): this
  // site reports at most that, and says so once.
  if (self && capacity > self->max_capacity) {
    if (!capacity_capped_.exchange(true))
      LogWarning(absl::StrCat("capacity ", capacity, " is above this site's roster max_capacity ", self->max_capacity,
                              ": reporting ", self->max_capacity));
    capacity = self->max_capacity;
  }
  snap.capacity = capacity;
  return snap;
}

absl::StatusOr<balance::LoadRow> Site::CurrentRow() {
  const std::optional<config::RosterEntry> self = live_->SelfEntry();
  if (!self) return absl::FailedPreconditionError("this site is not in the roster");
  if (auto st = RefreshSelf(); !st.ok()) return st;
  const std::optional<PeerInfo> row = membership_.Find(config_.site.id);
  if (!row) return absl::FailedPreconditionError("this site is not in the roster");
  return balance::LoadRow{self->label, row->load, row->capacity, {}};
}

absl::Status Site::RefreshSelf() {
  auto snap = Snapshot();
  if (!snap.ok()) return snap.status();
  auto last = participant_.last_report();
  membership_.SetSelf(snap->load, snap->capacity, drained(), last ? last->round_id : "");
  widest_.store(snap->profile.widest);
  return absl::OkStatus();
}

bool Site::drained() const {
  if (drained_) return true;
  const std::optional<config::RosterEntry> self = live_->SelfEntry();
  return self && self->drained;
}

void Site::SetDrained(bool drained) {
  if (drained_.exchange(drained) != drained)
    LogInfo(drained ? "drained: takes no jobs; its pending jobs leave at the next round"
                    : "undrained: takes jobs again");
}

std::vector<PeerInfo> Site::View() {
  (void)RefreshSelf();  // a failed snapshot leaves the last row
  return membership_.View();
}

NextRound Site::Next() const {
  NextRound next;
  next.faults = membership_.FaultLabels();
  const balance::RoundShape shape{membership_.dimension(), {next.faults.begin(), next.faults.end()}};
  next.mode = live_->balancer().algorithm->Describe(shape);
  if (!next.faults.empty()) {
    auto topo = balance::Topology::Hypercube(shape.dimension, shape.faults);
    if (topo.ok())
      if (auto subcubes = balance::SelectBalancingSubcubes(*topo); subcubes.ok()) next.subcubes = *std::move(subcubes);
  }
  return next;
}

// ------------------------------------------------------------------ loops

void Site::HeartbeatOnce() {
  // The operator's wait figures (WaitLog), whatever this site's part.
  if (auto jobs = adapter_->ListJobs(); jobs.ok()) waits_.Observe(*jobs, env_->Now());
  const std::optional<config::RosterEntry> entry = live_->SelfEntry();
  HeartbeatInfo hb;
  hb.site = config_.site.id;
  hb.roster_version = live_->roster()->version;
  if (!entry) {
    // Joining, or removed: no label to speak for. The heartbeats still go to
    // the roster's sites, carrying this site's roster to those with an older
    // one (a removed site may be the first to hear of its removal); they
    // refuse the rest.
    if (!std::exchange(said_not_in_roster_, true))
      LogWarning(absl::StrCat("this site is not in roster version ", hb.roster_version,
                              ": it takes no part in rounds until a roster lists it (a removed site's daemon may "
                              "be stopped)"));
    hb.label = -1;
    heartbeater_.Tick(hb);
    return;
  }
  said_not_in_roster_ = false;
  // Only this thread starts it; Stop joins this thread before it.
  if (live_->balancer().placement && !placement_thread_)
    placement_thread_ = env_->StartThread([this] { PlacementLoop(); });
  // A scheduler that does not answer (Slurm down) is said once, and once
  // more when it answers again: peers meanwhile see this site's last row.
  if (absl::Status st = RefreshSelf(); st.ok() != scheduler_answers_) {
    scheduler_answers_ = st.ok();
    if (st.ok()) {
      LogInfo("the scheduler answers again: this site's load and capacity are current");
    } else {
      LogError(absl::StrCat("the scheduler does not answer (", st.message(),
                            "): this site's load and capacity stay as last read until it does"));
    }
  }
  hb.label = entry->label;
  auto self = membership_.Find(config_.site.id);
  if (self) {
    hb.load = self->load;
    hb.capacity = self->capacity;
    hb.last_round = self->last_round;
  }
  hb.drained = drained();
  hb.widest = widest_.load();
  // The profile peers place by: said only while this site takes placed
  // jobs (balancer.placement, not drained).
  // With it, how old it is: jobs placed here since are not in it, and the
  // peers that placed them keep them booked (balance::PeerForecast).
  if (live_->balancer().placement && !hb.drained && hb.widest > 0) {
    absl::Duration age;
    hb.free = OwnProfile(&age).free;
    hb.profile_age_ms = absl::ToInt64Milliseconds(age);
  }
  hb.round_id = participant_.current_round();
  hb.epoch = participant_.highest_epoch();
  hb.incarnation = membership_.incarnation();
  {
    std::lock_guard<std::mutex> l(mu_);
    last_heartbeat_ = hb;
  }
  heartbeater_.Tick(hb);
}

void Site::TimerOnce() {
  const absl::Time now = env_->Now();
  const config::BalancerConfig b = live_->balancer();
  if (!live_->SelfEntry()) return;  // no part in rounds (HeartbeatOnce says so)
  const bool busy = InRound();
  if (b.interval > absl::ZeroDuration() && now >= timer_from_ + b.interval) {
    timer_from_ = now;
    if (IsCoordinator() && !busy) {
      balance::LoadTable t;
      for (const PeerInfo& p : View())
        if (p.up) t.push_back({p.label, p.load, p.capacity});
      if (ShareError(t) >= static_cast<double>(b.min_imbalance)) {
        auto id = Balance(false, "timer");
        if (!id.ok()) LogError(absl::StrCat("timer round not started: ", id.status().message()));
      }
    }
  }
  if (b.underload_threshold > 0 && !busy && now - last_underload_request_ > std::max(b.interval, absl::Seconds(5))) {
    auto snap = Snapshot();
    if (snap.ok() && snap->load < b.underload_threshold && !drained()) {
      bool others_have_work = false;
      for (const PeerInfo& p : membership_.View())
        if (!p.self && p.up && p.load > b.underload_threshold) others_have_work = true;
      if (others_have_work) {
        last_underload_request_ = now;
        LogInfo(
            absl::StrCat("underloaded (", snap->load, " pending < ", b.underload_threshold, "): asking for a round"));
        auto id = Balance(false, "underload");
        if (!id.ok()) LogError(absl::StrCat("balancing request failed: ", id.status().message()));
      }
    }
  }
}

// ------------------------------------------------------------------ rounds

bool Site::OnHeartbeat(const HeartbeatInfo& hb, const Gossip& gossip, ProbeAck* ack) {
  return membership_.Seen(hb, gossip, ack);
}

absl::StatusOr<bool> Site::OnProbeFor(const std::string& site, absl::Duration timeout) {
  HeartbeatInfo hb;
  {
    std::lock_guard<std::mutex> l(mu_);
    // No heartbeat of its own yet (it has just started): it cannot probe,
    // and saying "not answered" would confirm a suspicion on no evidence.
    if (!last_heartbeat_) return absl::UnavailableError("this site has not sent its first heartbeat yet");
    hb = *last_heartbeat_;
  }
  // Heard lately (its probes come every interval): no probe needed.
  if (membership_.HeardRecently(site)) return true;
  hb.incarnation = membership_.incarnation();
  return heartbeater_.ProbeFor(site, hb, timeout);
}

bool Site::OnStartRound(const RoundSpec& spec, std::string* why_not) {
  if (!membership_.MayCoordinate(spec.coordinator)) {
    *why_not = absl::StrCat(spec.coordinator, " is not the coordinator here: this site's coordinator is ",
                            membership_.Coordinator());
    return false;
  }
  // A coordinator is checked (issue 34, finding 7): a fault set that names a
  // site this site hears from itself would leave that site's jobs out of
  // the round on one site's word. Declined; the round ends without this
  // site and nothing changes here (docs/design.md §6.3). "Hears from": its
  // probe or answer within Membership::HeardWithin (1.5 intervals, at most
  // peer_timeout), the time in which a live neighbour is always heard, and
  // before which no probe takes it down (§6.11). A peer silent longer may
  // well be down, and a coordinator that restarted or saw it go first
  // rightly names it (the federation simulation's crash profile: a decline
  // there leaves the round waiting out its step timeouts).
  if (!spec.faults.empty()) {
    const config::BalancerConfig b = live_->balancer();
    const absl::Time heard_since = env_->Now() - Membership::HeardWithin(b);
    for (const PeerInfo& p : membership_.View()) {
      if (p.self || !p.up || p.last_seen < heard_since ||
          std::find(spec.faults.begin(), spec.faults.end(), p.label) == spec.faults.end())
        continue;
      *why_not = absl::StrCat("round ", spec.round_id, " names ", p.site, " (label ", p.label,
                              ") as down, but this site hears from it");
      return false;
    }
  }
  return participant_.OnStartRound(spec, why_not);
}

absl::StatusOr<balance::LoadTable> Site::OnExchange(const ExchangeMessage& m) { return participant_.OnExchange(m); }
absl::StatusOr<LookupAnswer> Site::OnLookup(const ExchangeMessage& m) { return participant_.OnLookup(m); }

absl::Status Site::OnReport(const RoundReport& report) { return coordinator_.OnReport(report); }

absl::StatusOr<RoundReport> Site::OnGetReport(const std::string& from, const std::string& round_id) {
  // The round's own coordinator, even if this site now sees another (it
  // may have restarted into a view where a site below came back).
  if (!RoundStartedBy(round_id, from))
    return absl::PermissionDeniedError(absl::StrCat("round ", round_id, " is not one ", from, " started"));
  return participant_.ReportOf(round_id);
}

absl::Status Site::OnLeftRound(const std::string& from, const std::string& round_id,
                               const std::map<int, std::string>& left) {
  if (!RoundStartedBy(round_id, from))
    return absl::PermissionDeniedError(absl::StrCat("round ", round_id, " is not one ", from, " started"));
  participant_.OnLeftRound(round_id, left);
  return absl::OkStatus();
}

void Site::PartDone(const RoundSpec& spec, const RoundReport& report) {
  if (spec.coordinator == config_.site.id) {
    if (auto st = coordinator_.OnReport(report); !st.ok())
      LogError(absl::StrCat("own report of round ", spec.round_id, " not taken: ", st.message()));
    return;
  }
  // Sent once: a report lost on the way is asked for by the coordinator
  // once this site's heartbeats say it is done with the round
  // (Coordinator::SilentLocked), so the next round's part never waits here.
  const RoundTimeouts t = ComputeRoundTimeouts(live_->balancer(), spec.shape());
  const absl::Status st = peers_->ReportRound(spec.coordinator, report, t.step);
  if (st.ok() || absl::IsAlreadyExists(st)) return;
  LogError(absl::StrCat("could not report round ", spec.round_id, ": ", st.message()));
}

absl::StatusOr<std::string> Site::Balance(bool dry_run, const std::string& reason, const std::string& mode) {
  if (!dry_run && !IsCoordinator())
    return peers_->RequestBalance(Coordinator(), config_.site.id, reason, live_->balancer().step_timeout);
  return coordinator_.Begin(dry_run, reason, mode);
}

absl::StatusOr<std::string> Site::OnRequestBalance(const std::string& from, const std::string& reason,
                                                   const std::string& mode) {
  if (!IsCoordinator()) return absl::FailedPreconditionError(absl::StrCat("the coordinator is ", Coordinator()));
  LogInfo(absl::StrCat("balancing request from ", from, " (", reason, ")"));
  return coordinator_.Begin(false, reason.empty() ? from : absl::StrCat(reason, " at ", from), mode);
}

std::optional<RoundView> Site::WaitRound(const std::string& round_id, size_t seen, absl::Duration timeout) {
  return history_.Wait(round_id, seen, env_->Now() + timeout);
}

std::optional<RoundView> Site::LastRound() const { return history_.Last(); }

// ------------------------------------------------------------------ jobs

SubmitResult Site::Submit(const SubmitOrder& order) {
  SubmitResult out;
  for (int i = 0; i < order.count && out.status.ok(); ++i) {
    scheduler::JobSpec spec;
    spec.name = order.name.empty() ? "job" : order.name;
    spec.cores = order.cores > 0 ? order.cores : 1;
    spec.duration_ms = order.duration_ms;
    spec.time_limit_s = order.time_limit_s;
    spec.script = absl::StrCat("#!/bin/sh\nsleep ", order.duration_ms / 1000.0, "\n");
    spec.key = absl::StrFormat("%s-%016x", config_.site.id, env_->Random());
    if (auto st = adapter_->CheckSpec(spec); !st.ok()) {
      out.status = st;
      break;
    }
    // The key doubles as the submit tag: a retried submit makes one job.
    auto id = adapter_->Submit(spec, "submit:" + spec.key);
    if (!id.ok()) {
      out.status = id.status();
      break;
    }
    out.jobs.push_back({*id, spec.key});
  }
  if (out.status.ok()) {
    LogInfo(absl::StrCat(order.count, " jobs submitted by an operator"));
  } else {
    LogError(absl::StrCat("an operator's submit took ", out.jobs.size(), " of ", order.count,
                          " jobs: ", out.status.message()));
  }
  if (!out.jobs.empty()) WakePlacement();
  return out;
}

absl::StatusOr<std::vector<std::string>> Site::ExplainJob(const std::string& job_ref) {
  auto jobs = adapter_->ListJobs();
  if (!jobs.ok()) return jobs.status();
  const scheduler::Job* job = nullptr;
  for (const scheduler::Job& j : *jobs)
    if (j.id == job_ref || j.spec.key == job_ref) job = &j;
  const std::string key = job ? job->spec.key : job_ref;
  std::vector<std::string> out;
  auto moves = mover_->MovesOf(key);
  const bool moved_before = moves.ok() && !moves->empty();
  if (moves.ok()) out = *std::move(moves);
  if (!job) {
    out.push_back(absl::StrCat("job ", job_ref, " is not queued or running at ", config_.site.id,
                               moved_before ? " now" : " (unknown here)"));
    return out;
  }
  out.push_back(absl::StrCat("job ", job->id, " (key ", key, ") is ", scheduler::JobStateName(job->state), " at ",
                             config_.site.id));
  if (std::string why = migration::WhyNotMovable(*job); !why.empty())
    out.push_back(why);
  else if (drained())
    out.push_back("this site is drained: its pending jobs leave at the next round");
  if (auto rep = participant_.last_report()) {
    out.push_back(absl::StrCat("in the last round (", rep->round_id, ") this site had ", rep->load_before,
                               " movable jobs and a quota of ", rep->quota, ": ",
                               rep->load_before > rep->quota
                                   ? absl::StrCat(rep->load_before - rep->quota, " to leave, ",
                                                  config_.balancer.job_choice == balance::JobChoice::kGain
                                                      ? "those whose estimated start gains most elsewhere first"
                                                      : migration::kMoveOrder)
                                   : "none had to leave"));
  } else {
    out.push_back("no round has run at this site since it started");
  }
  return out;
}

}  // namespace hyperfed::federation
