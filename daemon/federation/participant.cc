#include "daemon/federation/participant.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/common/log.h"

namespace hyperfed::federation {

Participant::Participant(const LiveConfig* live, const Env* env, Executor* executor, PeerClient* peers,
                         JobMover* mover, Snapshot snapshot, Done done)
    : live_(live),
      env_(env),
      executor_(executor),
      mailbox_(env, -1, 0),
      allowance_(env),
      snapshot_(std::move(snapshot)),
      done_(std::move(done)) {
  base_.self_site = live->self();
  base_.peers = peers;
  base_.mailbox = &mailbox_;
  base_.allowance = &allowance_;
  base_.mover = mover;
  base_.env = env;
  base_.executor = executor;
  base_.event = [](const std::string& e) { LogInfo(e); };
  SyncMailbox();
}

absl::Duration Participant::SyncMailbox() {
  const std::shared_ptr<const config::Roster> roster = live_->roster();
  const config::RosterEntry* self = roster->FindSite(live_->self());
  {
    // A round in progress keeps the place it began with (OnStartRound).
    std::lock_guard<std::mutex> l(mu_);
    // Not in the roster: no label, so no message is expected.
    if (!current_) mailbox_.SetPosition(self ? self->label : -1, roster->Dimension());
  }
  return live_->balancer().step_timeout;
}

bool Participant::OnStartRound(const RoundSpec& spec, std::string* why_not) {
  std::lock_guard<std::mutex> l(mu_);
  if (current_ && current_->round_id == spec.round_id) return true;
  if (stopping_) {
    *why_not = "the site is stopping";
    return false;
  }
  if (spec.deadline <= env_->Now()) {
    *why_not = absl::StrCat("round ", spec.round_id, " is past its deadline");
    return false;
  }
  // The same field checks whatever the roster (issue 34, finding 6): a
  // start on another roster version is declined below, but never with an
  // epoch or fault set no start may have.
  if (auto st = CheckRoundStart(spec, env_->Now()); !st.ok()) {
    *why_not = absl::StrCat("round ", spec.round_id, ": ", st.message());
    return false;
  }
  // One roster for every check and the part: the one this site holds now.
  std::shared_ptr<const config::Roster> roster = live_->roster();
  if (spec.roster_version != roster->version) {
    *why_not = absl::StrCat("round ", spec.round_id, " was planned with roster version ", spec.roster_version,
                            ", this site has version ", roster->version);
    return false;
  }
  if (!roster->FindSite(live_->self())) {
    *why_not = absl::StrCat("this site is not in roster version ", roster->version);
    return false;
  }
  if (auto st = CheckRoundRoster(*roster, live_->self(), spec); !st.ok()) {
    *why_not = absl::StrCat("round ", spec.round_id, ": ", st.message());
    return false;
  }
  // The operators' roster says which modes a coordinator may run (issue
  // 34, finding 7; docs/design.md §6.9).
  if (!roster->AllowsMode(spec.mode)) {
    *why_not =
        absl::StrCat("round ", spec.round_id, " has mode ", spec.mode, ", which roster version ", roster->version,
                     " does not allow (allowed: ", absl::StrJoin(roster->allowed_modes, ", "), ")");
    return false;
  }
  // Not newer than the last round started here: refused, so that a round
  // that has ended here never runs twice.
  if (spec.epoch <= highest_epoch_) {
    *why_not = absl::StrCat("round ", spec.round_id, " (epoch ", spec.epoch, ") is not newer than ",
                            current_ ? "round " + current_->round_id : std::string("a round this site has seen"),
                            " (epoch ", current_ ? current_->epoch : highest_epoch_, ")");
    return false;
  }
  if (current_)
    LogWarning(absl::StrCat("round ", current_->round_id, " replaced by the newer round ", spec.round_id, " of ",
                            spec.coordinator));
  highest_epoch_ = spec.epoch;
  current_ = spec;
  // Opening the round fences off the older one: its waits end now.
  mailbox_.SetPosition(roster->FindSite(live_->self())->label, roster->Dimension());
  mailbox_.Open(spec.round_id, spec.epoch, balance::RoundDepth(spec.shape()));
  ++parts_running_;
  cv_.notify_all();  // a replaced part that has not begun ends
  if (!executor_->Submit([this, spec, roster] { RunPart(spec, roster); })) {
    --parts_running_;
    current_.reset();
    *why_not = "the site is stopping";
    return false;
  }
  return true;
}

void Participant::RunPart(const RoundSpec& spec, std::shared_ptr<const config::Roster> roster) {
  // The round's own context: the roster and settings it began with.
  RoundContext ctx = base_;
  ctx.self_label = roster->FindSite(live_->self())->label;
  ctx.site_of_label = [roster](int label) {
    const config::RosterEntry* e = roster->FindLabel(label);
    return e ? e->id : std::string();
  };
  ctx.timeouts = ComputeRoundTimeouts(live_->balancer(), spec.shape());
  bool replaced, stopped;
  {
    // A replaced part may still be unwinding (a move in flight): one part
    // runs at a time, so the two never count the same jobs. A part replaced
    // before it began does not begin.
    std::unique_lock<std::mutex> l(mu_);
    auto mine = [&] { return current_ && current_->round_id == spec.round_id; };
    env_->WaitUntil(l, cv_, spec.deadline, [&] { return !mine() || parts_running_ == 1 || stopping_; });
    stopped = stopping_;
    replaced = !mine() || stopped;
  }
  if (replaced) {
    RoundReport report;
    report.round_id = spec.round_id;
    report.site = ctx.self_site;
    report.label = ctx.self_label;
    report.error = stopped ? "the site is stopping" : "replaced by a newer round before it began";
    report.not_begun = true;
    {
      std::lock_guard<std::mutex> l(mu_);
      last_report_ = report;
      --parts_running_;
      cv_.notify_all();
    }
    mailbox_.Close(spec.round_id);
    allowance_.Ended(spec.round_id);
    done_(spec, report);
    return;
  }
  LogInfo(absl::StrCat("round ", spec.round_id, " (", spec.mode, ", faults ",
                       spec.faults.empty() ? "none" : absl::StrJoin(spec.faults, ","), ") started by ",
                       spec.coordinator));
  RoundReport report;
  auto snap = snapshot_();
  if (!snap.ok()) {
    report.round_id = spec.round_id;
    report.site = ctx.self_site;
    report.label = ctx.self_label;
    report.error = absl::StrCat("load snapshot failed: ", snap.status().message());
    report.not_begun = true;
  } else {
    report = RunRound(ctx, spec, *snap);
  }
  allowance_.Ended(spec.round_id);
  (report.ok ? LogInfo : LogError)(
      absl::StrCat("round ", spec.round_id, report.ok ? " done" : " ended: " + report.error, ": load ",
                   report.load_before, ", quota ", report.quota, ", moved out ", report.moved_out,
                   report.shortfall ? absl::StrCat(", short ", report.shortfall) : ""));
  {
    std::lock_guard<std::mutex> l(mu_);
    last_report_ = report;
    moved_out_ += report.moved_out;
    if (current_ && current_->round_id == spec.round_id) current_.reset();
    --parts_running_;
    cv_.notify_all();
  }
  done_(spec, report);
}

void Participant::OnLeftRound(const std::string& round_id, const std::map<int, std::string>& left) {
  for (const auto& [label, why] : left) mailbox_.Left(round_id, label, why);
}

absl::StatusOr<balance::LoadTable> Participant::OnExchange(const ExchangeMessage& m) {
  return mailbox_.Deliver(m, SyncMailbox());
}

absl::StatusOr<LookupAnswer> Participant::OnLookup(const ExchangeMessage& m) {
  return mailbox_.Lookup(m, SyncMailbox());
}

absl::Status Participant::AdmitTransfer(const std::string& source_site, const std::string& round_id, int64_t jobs) {
  return allowance_.Admit(round_id, source_site, jobs, live_->balancer().step_timeout);
}

absl::StatusOr<RoundReport> Participant::ReportOf(const std::string& round_id) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (current_ && current_->round_id == round_id)
      return absl::FailedPreconditionError(absl::StrCat("round ", round_id, " still runs here"));
    if (last_report_ && last_report_->round_id == round_id) return *last_report_;
  }
  auto committed = base_.mover->CommittedOut(round_id);
  if (!committed.ok()) return committed.status();
  const std::shared_ptr<const config::Roster> roster = live_->roster();
  const config::RosterEntry* self = roster->FindSite(live_->self());
  if (!self) return absl::FailedPreconditionError(absl::StrCat("this site is not in roster version ", roster->version));
  RoundReport r;
  r.round_id = round_id;
  r.site = live_->self();
  r.label = self->label;
  r.from_journal = true;
  r.error = "restarted during the round: its transfers are those its journal committed";
  for (const auto& [dest, jobs] : *committed) {
    const config::RosterEntry* to = roster->FindSite(dest);
    if (!to || jobs <= 0) continue;
    r.transfers.push_back({.step = 0, .from = self->label, .to = to->label, .count = jobs});
    r.moved_out += jobs;
  }
  return r;
}

std::string Participant::current_round() const {
  std::lock_guard<std::mutex> l(mu_);
  return current_ ? current_->round_id : "";
}

int64_t Participant::highest_epoch() const {
  std::lock_guard<std::mutex> l(mu_);
  return highest_epoch_;
}

std::optional<RoundReport> Participant::last_report() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_report_;
}

int64_t Participant::jobs_moved_out() const {
  std::lock_guard<std::mutex> l(mu_);
  return moved_out_;
}

void Participant::Stop() {
  std::unique_lock<std::mutex> l(mu_);
  stopping_ = true;
  cv_.notify_all();  // a part that has not begun does not begin
  // A fence no round passes: every wait of the current part ends.
  mailbox_.Open("(stopping)", std::numeric_limits<int64_t>::max());
  allowance_.Stop();
  env_->WaitIdle(l, cv_, [&] { return parts_running_ == 0; });
}

}  // namespace hyperfed::federation
