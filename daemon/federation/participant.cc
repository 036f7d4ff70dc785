#include "daemon/federation/participant.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/common/log.h"

namespace hyperfed::federation {

Participant::Participant(const config::Config& config, const Env* env, Executor* executor, PeerClient* peers,
                         JobMover* mover, Snapshot snapshot, Done done)
    : config_(config),
      env_(env),
      executor_(executor),
      mailbox_(env, config.site.label, config.Dimension()),
      allowance_(env),
      snapshot_(std::move(snapshot)),
      done_(std::move(done)) {
  ctx_.self_site = config_.site.id;
  ctx_.self_label = config_.site.label;
  ctx_.site_of_label = [this](int label) {
    const config::RosterEntry* e = config_.FindLabel(label);
    return e ? e->id : std::string();
  };
  ctx_.peers = peers;
  ctx_.mailbox = &mailbox_;
  ctx_.allowance = &allowance_;
  ctx_.mover = mover;
  ctx_.env = env;
  ctx_.executor = executor;
  ctx_.timeouts = ComputeRoundTimeouts(config_.balancer, config_.Dimension());
  ctx_.event = [](const std::string& e) { LogInfo(e); };
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
  mailbox_.Open(spec.round_id, spec.epoch);
  ++parts_running_;
  cv_.notify_all();  // a replaced part that has not begun ends
  if (!executor_->Submit([this, spec] { RunPart(spec); })) {
    --parts_running_;
    current_.reset();
    *why_not = "the site is stopping";
    return false;
  }
  return true;
}

void Participant::RunPart(const RoundSpec& spec) {
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
    report.site = config_.site.id;
    report.label = config_.site.label;
    report.error = stopped ? "the site is stopping" : "replaced by a newer round before it began";
    {
      std::lock_guard<std::mutex> l(mu_);
      last_report_ = report;
      --parts_running_;
      cv_.notify_all();
    }
    mailbox_.Close(spec.round_id);
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
    report.site = config_.site.id;
    report.label = config_.site.label;
    report.error = absl::StrCat("load snapshot failed: ", snap.status().message());
  } else {
    report = RunRound(ctx_, spec, *snap);
  }
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

absl::StatusOr<balance::LoadTable> Participant::OnExchange(const ExchangeMessage& m) {
  return mailbox_.Deliver(m, ctx_.timeouts.step);
}

absl::Status Participant::AdmitTransfer(const std::string& source_site, const std::string& round_id, int64_t jobs) {
  return allowance_.Admit(round_id, source_site, jobs, ctx_.timeouts.step);
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
  cv_.wait(l, [&] { return parts_running_ == 0; });
}

}  // namespace hyperfed::federation
