#include "daemon/federation/coordinator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/balance/mcwa.h"
#include "daemon/balance/topology.h"
#include "daemon/common/log.h"

namespace hyperfed::federation {

double ShareError(const balance::LoadTable& t) {
  std::vector<balance::Load> w;
  std::vector<double> p;
  for (const auto& r : t) {
    w.push_back(r.load);
    p.push_back(r.capacity);
  }
  return balance::MaxShareError(w, p);
}

namespace {

std::string Labels(const std::vector<int>& v) { return v.empty() ? "none" : absl::StrJoin(v, ","); }

}  // namespace

Coordinator::Coordinator(const LiveConfig* live, const Env* env, Executor* executor, Membership* membership,
                         Participant* participant, PeerClient* peers, RoundHistory* history,
                         std::function<absl::Status()> refresh_self)
    : live_(live),
      self_(live->self()),
      env_(env),
      executor_(executor),
      membership_(membership),
      participant_(participant),
      peers_(peers),
      history_(history),
      refresh_self_(std::move(refresh_self)) {}

bool UsePrefixScan(const std::string& mode, const std::vector<PeerInfo>& peers, const balance::RoundShape& shape) {
  if (mode != "exact") return false;
  int live = 0;
  for (const PeerInfo& p : peers) {
    if (!p.up) continue;
    ++live;
    if (!p.protocol.empty() && !ProtocolAtLeast(p.protocol, 1, 9)) return false;
  }
  if (live < kPrefixScanMinSites) return false;
  if (shape.faults.empty()) return true;
  auto topo = balance::Topology::Hypercube(shape.dimension, shape.faults);
  if (!topo.ok()) return false;
  auto components = balance::SelectBalancingSubcubes(*topo);
  return components.ok() && components->size() == 1;
}

absl::StatusOr<std::string> Coordinator::Begin(bool dry_run, const std::string& reason, const std::string& mode_name) {
  // One roster and one set of settings for the whole round.
  const config::BalancerConfig settings = live_->balancer();
  const std::shared_ptr<const config::Roster> roster = live_->roster();
  if (!roster->FindSite(self_))
    return absl::FailedPreconditionError(absl::StrCat("this site is not in roster version ", roster->version));
  const std::string name = mode_name.empty() ? std::string(settings.algorithm->name()) : mode_name;
  const balance::RoundMode* mode = balance::FindRoundMode(name);
  if (!mode) return balance::CheckRoundMode(name);
  // Every participant would decline it (Participant::OnStartRound).
  if (!roster->AllowsMode(name))
    return absl::FailedPreconditionError(absl::StrCat("mode ", name, " is not allowed by roster version ",
                                                      roster->version,
                                                      " (allowed: ", absl::StrJoin(roster->allowed_modes, ", "), ")"));
  if (auto st = refresh_self_(); !st.ok()) return st;
  // One view for both the fault set and the live rows: a peer timing out
  // between two reads would be in neither. Rows of the round's roster only
  // (the view may be of a newer one).
  std::vector<PeerInfo> peers = membership_->View();
  std::erase_if(peers, [&](const PeerInfo& p) {
    const config::RosterEntry* e = roster->FindSite(p.site);
    return !e || e->label != p.label;
  });
  const int dimension = roster->Dimension();
  const std::vector<int> faults = Membership::FaultLabelsOf(peers, dimension);
  balance::RoundShape shape{dimension, {faults.begin(), faults.end()}};
  RoundView view;
  view.spec.coordinator = self_;
  view.spec.roster_version = roster->version;
  view.spec.faults = faults;
  view.spec.dimension = shape.dimension;
  view.spec.mode = name;
  view.spec.prefix_scan = UsePrefixScan(name, peers, shape);
  view.mode = mode->Describe(shape) + (view.spec.prefix_scan ? ", by prefix sums" : "");
  view.started = env_->Now();
  view.dry_run = dry_run;
  std::vector<std::string> live;
  for (const PeerInfo& p : peers) {
    if (!p.up) continue;
    view.before.push_back({p.label, p.load, p.capacity});
    live.push_back(p.site);
  }
  view.share_error_before = ShareError(view.before);

  if (dry_run) {
    // The dry run is the round: the same planning code on the same table,
    // each site's row asked of it now as a round's start asks it, not the
    // row of its last heartbeat.
    AskCurrentRows(*roster, ComputeRoundTimeouts(settings, shape).step, peers, &view);
    auto plan = balance::PlanRound(*mode, shape, view.before);
    if (!plan.ok()) return plan.status();
    {
      std::lock_guard<std::mutex> l(mu_);
      view.id = absl::StrCat("dry-", self_, "-", ++seq_);
    }
    view.spec.round_id = view.id;
    view.transfers = plan->transfers;
    for (const auto& r : view.before) view.after.push_back({r.label, plan->final_loads[r.label], r.capacity});
    view.share_error_after = ShareError(view.after);
    view.moved = plan->metrics.tasks_moved;
    view.messages = plan->metrics.messages;
    view.steps = static_cast<int>(plan->metrics.steps);
    view.done = view.ok = true;
    view.finished = env_->Now();
    view.events.push_back(absl::StrCat("dry run of ", view.mode, ", over ", view.before.size(),
                                       " live sites: would move ", view.moved, " jobs"));
    const std::string id = view.id;
    history_->Add(std::move(view));
    return id;
  }

  // A row this site has heard from nobody yet (a non-neighbour's, not yet
  // relayed, docs/design.md §6.11) is asked of its site now, as the dry run
  // asks every row, so that no table starts from a row nobody said.
  std::vector<PeerInfo> unheard;
  for (const PeerInfo& p : peers)
    if (p.up && !p.self && p.row_at == absl::InfinitePast()) unheard.push_back(p);
  if (!unheard.empty())
    AskCurrentRows(*roster, std::min(ComputeRoundTimeouts(settings, shape).step, live_->balancer().heartbeat_interval),
                   unheard, &view);
  std::vector<std::string> asked = std::exchange(view.events, {});  // told after the round's first line

  std::unique_lock<std::mutex> l(mu_);
  if (running_) return running_->spec.round_id;  // two requests resolve to one round
  if (stopping_) return absl::UnavailableError("the daemon is stopping");
  RoundSpec& spec = view.spec;
  // Newer than any round this site or a live peer has seen, and (clock
  // permitting) than any an earlier coordinator started.
  spec.epoch =
      std::max({participant_->highest_epoch() + 1, membership_->HighestEpoch() + 1, absl::ToUnixMillis(view.started)});
  const RoundTimeouts timeouts = ComputeRoundTimeouts(settings, shape);
  spec.deadline = view.started + timeouts.round;
  view.id = spec.round_id = MakeRoundId(self_, view.started, ++seq_);
  view.events.push_back(absl::StrCat("round ", view.id, " (", reason, "): ", name, " over ", view.before.size(),
                                     " live sites of the ", shape.dimension, "-cube, faults ", Labels(faults)));
  view.events.insert(view.events.end(), asked.begin(), asked.end());
  running_ = Running{spec, live, {}, {}, false, {}, false, roster, timeouts, view.started};
  running_->result.before = view.before;
  running_->result.share_error_before = view.share_error_before;
  history_->Add(view);
  if (!executor_->Submit([this, spec] { Coordinate(spec); })) {
    running_.reset();
    history_->Update(view.id, [](RoundView& r) {
      r.events.push_back("not started: the daemon is stopping");
      r.done = true;
    });
    return absl::UnavailableError("the daemon is stopping");
  }
  LogInfo(absl::StrCat("starting round ", view.id, " (", reason, ")"));
  return view.id;
}

void Coordinator::AskCurrentRows(const config::Roster& roster, absl::Duration timeout,
                                 const std::vector<PeerInfo>& peers, RoundView* view) {
  std::vector<std::string> others;
  std::vector<size_t> rows;  // index into view->before of each site asked
  for (const PeerInfo& p : peers) {
    if (!p.up || p.self) continue;
    for (size_t i = 0; i < view->before.size(); ++i)
      if (view->before[i].label == p.label) {
        others.push_back(p.site);
        rows.push_back(i);
      }
  }
  std::vector<absl::StatusOr<balance::LoadRow>> answers = peers_->CurrentLoads(others, timeout);
  answers.resize(others.size(), absl::UnavailableError("no answer"));
  const absl::Time now = env_->Now();
  for (size_t k = 0; k < others.size(); ++k) {
    balance::LoadRow& row = view->before[rows[k]];
    absl::Status st = answers[k].status();
    if (st.ok() && answers[k]->label != row.label)
      st = absl::InvalidArgumentError(absl::StrCat("it answered for label ", answers[k]->label));
    if (st.ok()) st = CheckReportedRow(roster, row.label, answers[k]->load, answers[k]->capacity);
    if (st.ok()) {
      row.load = answers[k]->load;
      row.capacity = answers[k]->capacity;
      continue;
    }
    const auto seen = std::find_if(peers.begin(), peers.end(), [&](const PeerInfo& p) { return p.site == others[k]; });
    view->events.push_back(
        seen->row_at == absl::InfinitePast()
            ? absl::StrCat(others[k], ": planned on no row, none heard yet (asked now: ", st.message(), ")")
            : absl::StrCat(others[k], ": planned on the row of its last heartbeat, ",
                           absl::FormatDuration(absl::Trunc(now - seen->row_at, absl::Milliseconds(100))),
                           " old (asked now: ", st.message(), ")"));
  }
  view->share_error_before = ShareError(view->before);
}

void Coordinator::Coordinate(RoundSpec spec) {
  std::vector<std::string> live;
  RoundTimeouts timeouts;
  {
    std::lock_guard<std::mutex> l(mu_);
    live = running_->live;
    timeouts = running_->timeouts;
    // A site that restarts from here on is known by its incarnation: news
    // of it crosses the cube within log2 N intervals (docs/design.md
    // §6.11), where its row, relayed in turn, may take far longer.
    for (const std::string& site : live)
      if (auto p = membership_->Find(site)) running_->incarnation[site] = p->incarnation;
  }
  // Start the round here, then at every other live site at once.
  std::vector<PeerClient::StartAnswer> answers(live.size());
  std::vector<std::string> others;
  for (size_t i = 0; i < live.size(); ++i) {
    if (live[i] == self_) {
      answers[i].accepted = participant_->OnStartRound(spec, &answers[i].why_not);
    } else {
      others.push_back(live[i]);
    }
  }
  std::vector<PeerClient::StartAnswer> theirs = peers_->StartRound(others, spec, timeouts.step);
  theirs.resize(others.size(), {false, "no answer"});
  for (size_t i = 0, k = 0; i < live.size(); ++i)
    if (live[i] != self_) answers[i] = std::move(theirs[k++]);
  std::vector<std::string> events;
  std::unique_lock<std::mutex> l(mu_);
  Running& run = *running_;
  for (size_t i = 0; i < live.size(); ++i) {
    if (answers[i].accepted) {
      run.accepted.push_back(live[i]);
    } else {
      const std::string why = absl::StrCat("did not take part: ", answers[i].why_not);
      events.push_back(absl::StrCat(live[i], " ", why));
      // One whose answer never came may have begun it: it leaves once down.
      if (answers[i].answered) run.left.emplace(live[i], why);
      run.any_failed = true;
      if (!answers[i].answered) run.unanswered.push_back(live[i]);
    }
  }
  run.start_answered = true;
  events.push_back(absl::StrCat(run.accepted.size(), " of ", live.size(), " live sites started"));
  history_->Update(spec.round_id, [&](RoundView& v) {
    for (auto& e : events) v.events.push_back(e);
    v.took_part = run.accepted;
  });
  // Wait for every report (the parts end by themselves at the deadline). A
  // site that dies mid-round never reports: once every site still missing
  // is down in this site's view, the round ends without it.
  const absl::Time give_up = spec.deadline + timeouts.report;
  auto gone = [&] { return !running_ || running_->spec.round_id != spec.round_id; };  // OnReport finished it
  while (true) {
    if (gone()) return;
    if (CompleteLocked()) return FinishLocked("");
    if (stopping_) return FinishLocked("the coordinator is stopping");
    const std::vector<std::string> missing = MissingLocked();
    bool all_down = !missing.empty();
    for (const std::string& site : missing) {
      auto p = membership_->Find(site);
      all_down = all_down && p && !p->up;
    }
    if (all_down) return FinishLocked(absl::StrCat(absl::StrJoin(missing, ", "), " went down during the round"));
    // Those down leave it (one whose answer to the start never came is not
    // waited for then either: MissingLocked).
    for (const auto* sites : {&running_->accepted, &running_->unanswered})
      for (const std::string& site : *sites)
        if (auto p = membership_->Find(site); p && !p->up && !running_->reports.count(site))
          running_->left.emplace(site, "went down");
    // News at once; a site the last telling missed, once a pass.
    if (UntoldLocked() || !running_->missed.empty()) {
      TellLeftLocked(l);
      if (gone()) return;
    }
    if (env_->Now() >= give_up) return FinishLocked("gave up waiting for the remaining reports");
    // A site that restarted since it took part never reports by itself,
    // and a report can be lost: a site done with the round is asked for it.
    // One at a time, each call within the step timeout and the round's.
    for (const std::string& site : SilentLocked()) {
      // Its own report may have come while this site asked another.
      if (running_->reports.count(site)) continue;
      const absl::Duration left = std::min(timeouts.step, give_up - env_->Now());
      if (stopping_ || left <= absl::ZeroDuration()) break;
      l.unlock();
      auto report = peers_->GetReport(site, spec.round_id, left);
      l.lock();
      if (gone()) return;
      if (!report.ok()) {
        // Asked again at the next look, unless it still runs its part (a
        // refuted suspicion raised its incarnation): then once its row says
        // it is out of the round.
        if (absl::IsFailedPrecondition(report.status()))
          if (auto p = membership_->Find(site)) running_->incarnation[site] = p->incarnation;
        continue;
      }
      if (report->site != site || report->round_id != spec.round_id) continue;
      if (auto st = TakeReportLocked(*report); !st.ok())
        LogWarning(absl::StrCat("report of round ", spec.round_id, " from ", site, " refused: ", st.message()));
      if (gone()) return;
    }
    // Liveness changes with time, not with a notification: look again
    // every heartbeat interval.
    env_->WaitUntil(l, cv_, std::min(give_up, env_->Now() + live_->balancer().heartbeat_interval),
                    [&] { return stopping_ || gone() || CompleteLocked() || UntoldLocked(); });
  }
}

bool Coordinator::UntoldLocked() const {
  if (!running_ || !running_->start_answered) return false;
  for (const auto& [site, why] : running_->left)
    if (!running_->told.count(site)) return true;
  return false;
}

void Coordinator::TellLeftLocked(std::unique_lock<std::mutex>& l) {
  Running& run = *running_;
  const std::string round_id = run.spec.round_id;
  // Every site that left, each time: telling is idempotent, and a site the
  // last telling did not reach (stopped, cut) gets all of it when it does.
  std::map<int, std::string> left;
  std::vector<std::string> fresh;
  for (const auto& [site, why] : run.left) {
    if (const config::RosterEntry* e = run.roster->FindSite(site)) left.emplace(e->label, absl::StrCat(site, " ", why));
    if (run.told.insert(site).second) fresh.push_back(site);
  }
  // The sites still in it: those that took part and have not reported; on
  // news, all of them, else those the last telling missed.
  std::vector<std::string> to;
  bool self_in = false;
  for (const std::string& site : run.accepted) {
    if (run.reports.count(site) || run.left.count(site)) continue;
    if (fresh.empty() && !run.missed.count(site)) continue;
    if (site == self_) {
      self_in = true;
    } else {
      to.push_back(site);
    }
  }
  if (left.empty() || (to.empty() && !self_in)) return;
  const absl::Duration timeout = std::min(run.timeouts.step, live_->balancer().heartbeat_interval);
  if (!fresh.empty())
    history_->Update(round_id, [&](RoundView& v) {
      v.events.push_back(absl::StrCat("told ", to.size() + (self_in ? 1 : 0), " sites still in the round that ",
                                      absl::StrJoin(fresh, ", "), fresh.size() == 1 ? " has" : " have", " left it"));
    });
  l.unlock();
  if (self_in) participant_->OnLeftRound(round_id, left);
  std::vector<absl::Status> sent = peers_->LeftRound(to, round_id, left, timeout);
  l.lock();
  if (!running_ || running_->spec.round_id != round_id) return;  // it finished meanwhile
  for (size_t i = 0; i < to.size() && i < sent.size(); ++i) {
    if (sent[i].ok() || absl::IsUnimplemented(sent[i])) {
      running_->missed.erase(to[i]);
    } else if (running_->missed.insert(to[i]).second) {
      LogInfo(absl::StrCat("round ", round_id, ": telling ", to[i], " who left: ", sent[i].message(),
                           " (told again every heartbeat interval)"));
    }
  }
}

std::vector<std::string> Coordinator::MissingLocked() const {
  std::vector<std::string> out;
  for (const std::string& site : running_->accepted)
    if (!running_->reports.count(site)) out.push_back(site);
  for (const std::string& site : running_->unanswered) {
    if (running_->reports.count(site)) continue;
    auto p = membership_->Find(site);
    if (p && p->up) out.push_back(site);  // one that is down is not waited for
  }
  return out;
}

bool Coordinator::CompleteLocked() const {
  if (!running_ || !running_->start_answered) return false;
  return MissingLocked().empty();
}

std::vector<std::string> Coordinator::SilentLocked() const {
  std::vector<std::string> out;
  if (!running_ || !running_->start_answered) return out;
  const std::string& id = running_->spec.round_id;
  for (const auto* sites : {&running_->accepted, &running_->unanswered})
    for (const std::string& site : *sites) {
      if (site == self_ || running_->reports.count(site)) continue;
      auto p = membership_->Find(site);
      if (!p || !p->up) continue;
      // Its row (its own probe's, or relayed: §6.11) said since the start
      // that it is out of the round, or it restarted since.
      const auto at_start = running_->incarnation.find(site);
      if ((p->row_at > running_->started && p->round_id != id) ||
          (at_start != running_->incarnation.end() && p->incarnation > at_start->second))
        out.push_back(site);
    }
  return out;
}

absl::Status Coordinator::OnReport(const RoundReport& report) {
  std::lock_guard<std::mutex> l(mu_);
  return TakeReportLocked(report);
}

absl::Status Coordinator::TakeReportLocked(const RoundReport& report) {
  if (!running_ || running_->spec.round_id != report.round_id)
    return absl::FailedPreconditionError(absl::StrCat("round ", report.round_id, " is not running here"));
  const std::vector<std::string>& live = running_->live;
  if (std::find(live.begin(), live.end(), report.site) == live.end())
    return absl::PermissionDeniedError(absl::StrCat(report.site, " is not in round ", report.round_id));
  if (running_->reports.count(report.site))
    return absl::AlreadyExistsError(absl::StrCat(report.site, " has already reported round ", report.round_id));
  const std::shared_ptr<const config::Roster> round_roster = running_->roster;  // FinishLocked may end running_
  const config::Roster& roster = *round_roster;
  if (auto st = CheckReport(roster, report); !st.ok()) return st;
  for (const balance::Transfer& t : report.transfers) {
    const config::RosterEntry* to = roster.FindLabel(t.to);
    if (!to || to->id == report.site || std::find(live.begin(), live.end(), to->id) == live.end())
      return absl::InvalidArgumentError(absl::StrCat("a transfer to label ", t.to, ", which is not in the round"));
  }
  running_->reports.emplace(report.site, report);
  if (!report.ok) running_->any_failed = true;
  // The sites still waiting for it are told, unless it had left already.
  // A report from its journal comes only from a site not running its part
  // (it restarted, or the start never reached it).
  if (!report.ok)
    running_->left.emplace(report.site, report.from_journal
                                            ? "is not running its part (it restarted, or the start never reached it)"
                                            : absl::StrCat("ended its part: ", report.error));
  // A site whose answer to the start never came, asked from its journal:
  // what it committed counts, but it is no site that reported its part.
  const std::vector<std::string>& unanswered = running_->unanswered;
  const bool only_counted =
      report.from_journal && std::find(unanswered.begin(), unanswered.end(), report.site) != unanswered.end();
  const config::RosterEntry* e = roster.FindSite(report.site);
  running_->result.Add(report, e ? e->label : -1, !only_counted);
  std::vector<std::string> sends;
  for (const auto& t : report.transfers) {
    const config::RosterEntry* to = roster.FindLabel(t.to);
    sends.push_back(absl::StrCat(t.count, " to ", to ? to->id : absl::StrCat("label ", t.to)));
  }
  history_->Update(report.round_id, [&](RoundView& r) {
    const std::string sent = sends.empty() ? "sent nothing" : "sent " + absl::StrJoin(sends, ", ");
    if (only_counted) {
      r.events.push_back(absl::StrCat(report.site, " (its answer to the start never came), from its journal: ", sent));
    } else if (report.from_journal) {
      r.events.push_back(absl::StrCat(report.site, " ", report.error, ": ", sent));
    } else {
      r.events.push_back(absl::StrCat(report.site, report.ok ? "" : " ended early (" + report.error + ")", ": load ",
                                    report.load_before, ", quota ", report.quota, ", ", sent,
                                    report.shortfall ? absl::StrCat(" (", report.shortfall, " short)") : "",
                                    report.kept ? absl::StrCat(" (", report.kept,
                                                               " kept: they would not start sooner there,",
                                                               " or they moved within the hysteresis time)")
                                                : ""));
    }
    running_->result.RecordIn(&r);
  });
  // The last report ends the round here, on the reporter's thread: waking
  // Coordinate's thread to do it would add a thread switch to every round's
  // critical path (docs/benchmarks.md, "Round latency"). Coordinate then
  // finds the round gone and returns.
  // Coordinate's thread waits for the end (handled here), a stop, or a
  // site that left and was not told yet: only a failed report adds one. A
  // good report that is not the last wakes no thread (6 of 7 at 8 sites).
  if (CompleteLocked()) {
    FinishLocked("");
  } else if (!report.ok) {
    cv_.notify_all();
  }
  return absl::OkStatus();
}

void Coordinator::FinishLocked(const std::string& why) {
  Running run = std::move(*running_);
  running_.reset();
  const bool ok = why.empty() && !run.any_failed && run.accepted.size() == run.live.size();
  absl::Time finished = env_->Now();
  run.result.Finish();
  const RoundResult& result = run.result;
  std::string summary;
  history_->Update(run.spec.round_id, [&](RoundView& r) {
    if (!why.empty()) r.events.push_back(why);
    result.RecordIn(&r);
    r.ok = ok;
    r.done = true;
    r.finished = finished;
    const balance::RoundMode* mode = balance::FindRoundMode(r.spec.mode);
    const std::string paper = mode ? mode->PaperSteps(r.spec.shape()) : "";
    r.events.push_back(absl::StrCat("round ", r.id, ok ? " finished" : " ended early", ": moved ", result.moved,
                                    " jobs; max share error ", absl::StrFormat("%.2f", result.share_error_before),
                                    " -> ", absl::StrFormat("%.2f", result.share_error_after), "; ", result.messages,
                                    " round messages, ", result.steps, " steps",
                                    paper.empty() ? "" : absl::StrCat(" (", paper, ")")));
    summary = r.events.back();
  });
  const double secs = absl::ToDoubleSeconds(finished - run.started);
  ++counters_.rounds;
  if (!ok) ++counters_.rounds_failed;
  counters_.rounds_failed_in_a_row = ok ? 0 : counters_.rounds_failed_in_a_row + 1;
  counters_.last_round_seconds = secs;
  counters_.round_seconds_sum += secs;
  counters_.last_share_error_before = result.share_error_before;
  counters_.last_share_error_after = result.share_error_after;
  (ok ? LogInfo : LogError)(summary);
  cv_.notify_all();
}

void RoundResult::Add(const RoundReport& report, int label, bool counted) {
  // The table was read from heartbeats when the round started; a site's
  // report carries the load and capacity it really balanced with.
  if (label >= 0 && !report.from_journal && !report.not_begun)
    for (balance::LoadRow& row : before)
      if (row.label == label) {
        row.load = report.load_before;
        row.capacity = report.capacity;
      }
  if (counted) reported.push_back(report.site);
  messages += report.messages;
  steps = std::max(steps, report.steps);
  for (const auto& t : report.transfers) {
    transfers.push_back(t);
    moved += t.count;
  }
}

void RoundResult::Finish() {
  std::map<int, balance::LoadRow> rows;
  for (const auto& row : before) rows[row.label] = row;
  for (const auto& t : transfers) {
    auto from = rows.find(t.from), to = rows.find(t.to);
    if (from == rows.end() || to == rows.end()) continue;
    from->second.load -= t.count;
    to->second.load += t.count;
  }
  after.clear();
  for (const auto& [label, row] : rows) after.push_back(row);
  share_error_before = ShareError(before);
  share_error_after = ShareError(after);
}

void RoundResult::RecordIn(RoundView* view) const {
  view->before = before;
  view->after = after;
  view->transfers = transfers;
  view->moved = moved;
  view->reported = reported;
  view->messages = messages;
  view->steps = steps;
  view->share_error_before = share_error_before;
  view->share_error_after = share_error_after;
}

std::string Coordinator::running() const {
  std::lock_guard<std::mutex> l(mu_);
  return running_ ? running_->spec.round_id : "";
}

SiteCounters Coordinator::counters() const {
  std::lock_guard<std::mutex> l(mu_);
  SiteCounters c = counters_;
  c.jobs_moved_out = participant_->jobs_moved_out();
  return c;
}

void Coordinator::Stop() {
  std::lock_guard<std::mutex> l(mu_);
  stopping_ = true;
  cv_.notify_all();
}

}  // namespace hyperfed::federation
