#pragma once

// FakeAdapter: an in-memory scheduler adapter for the migration tests. It
// stands in for the `sim` adapter (daemon/scheduler/, written separately and
// landing later) and implements the SchedulerAdapter contract faithfully:
// hold/release/cancel state rules, idempotent Submit by tag, FindByTag over
// every state. With a file path it is also file-backed: every change
// rewrites the file (write to a temporary, then rename, so a SIGKILL leaves
// the old or the new state, never half of one), and construction reads it
// back, so crash tests can kill a process and reopen the "scheduler".

#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon/migration/spec_codec.h"
#include "daemon/scheduler/adapter.h"

namespace hyperfed::migration::testing {

class FakeAdapter : public scheduler::SchedulerAdapter {
 public:
  // `path` empty: memory only. Otherwise loads `path` if it exists.
  explicit FakeAdapter(std::string site, std::string path = "") : site_(std::move(site)), path_(std::move(path)) {
    if (!path_.empty()) Load();
  }

  // ---- test helpers
  std::string Add(scheduler::JobSpec spec, bool pinned = false) {
    std::lock_guard<std::mutex> l(mu_);
    scheduler::Job j;
    j.id = absl::StrCat(site_, "-", next_id_++);
    j.spec = std::move(spec);
    j.pinned = pinned;
    j.queued_at_ms = next_time_++;
    jobs_[j.id] = j;
    Save();
    return j.id;
  }
  absl::Status Start(const std::string& id) {
    return Move(id, scheduler::JobState::kPending, scheduler::JobState::kRunning);
  }
  absl::Status Finish(const std::string& id) {
    return Move(id, scheduler::JobState::kRunning, scheduler::JobState::kDone);
  }
  // Every job in every state, in queue order.
  std::vector<scheduler::Job> AllJobs() const {
    std::lock_guard<std::mutex> l(mu_);
    return Ordered(true);
  }
  // Makes the next `n` calls of Submit fail with Unavailable.
  void FailSubmits(int n) {
    std::lock_guard<std::mutex> l(mu_);
    fail_submits_ = n;
  }

  // Makes the next `n` holds take effect and still report Unavailable, as a
  // scheduler command that timed out after doing its work.
  void HoldsTakeEffectButFail(int n) {
    std::lock_guard<std::mutex> l(mu_);
    hold_fail_after_effect_ = n;
  }
  // Submit refuses specs with this name for good (InvalidArgument), after
  // CheckSpec passed them: a scheduler that refuses at submit time.
  void RefuseSubmitsNamed(std::string name) {
    std::lock_guard<std::mutex> l(mu_);
    refused_submit_name_ = std::move(name);
  }
  // The refusal of RefuseSubmitsNamed comes before the tag is looked up
  // (as the sim adapter checks a spec first): a job submitted before is
  // then refused on a retry.
  void RefuseBeforeTagLookup(bool before) {
    std::lock_guard<std::mutex> l(mu_);
    refuse_before_tag_ = before;
  }
  // CheckSpec refuses specs with this name.
  void RefuseSpecsNamed(std::string name) {
    std::lock_guard<std::mutex> l(mu_);
    refused_name_ = std::move(name);
  }
  // The source_site of every spec CheckSpec and Submit were given, in call
  // order (issue 34: the adapter is told the authenticated sender).
  std::vector<std::string> CheckedSources() const {
    std::lock_guard<std::mutex> l(mu_);
    return checked_sources_;
  }
  std::vector<std::string> SubmittedSources() const {
    std::lock_guard<std::mutex> l(mu_);
    return submitted_sources_;
  }

  // ---- SchedulerAdapter
  std::string Name() const override { return "fake"; }

  absl::StatusOr<std::vector<scheduler::Job>> ListJobs() override {
    std::lock_guard<std::mutex> l(mu_);
    return Ordered(false);
  }

  absl::StatusOr<scheduler::Capacity> GetCapacity() override { return scheduler::Capacity{4, 1.0}; }

  absl::Status Hold(const std::string& id) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("no job ", id));
    auto& st = it->second.state;
    if (st == scheduler::JobState::kHeld) return absl::OkStatus();
    if (st != scheduler::JobState::kPending)
      return absl::FailedPreconditionError(absl::StrCat("job ", id, " not pending"));
    st = scheduler::JobState::kHeld;
    Save();
    if (hold_fail_after_effect_ > 0) {
      --hold_fail_after_effect_;
      return absl::UnavailableError("injected: the hold timed out after taking effect");
    }
    return absl::OkStatus();
  }

  absl::Status Release(const std::string& id) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("no job ", id));
    auto& st = it->second.state;
    if (st == scheduler::JobState::kPending) return absl::OkStatus();
    if (st != scheduler::JobState::kHeld) return absl::FailedPreconditionError(absl::StrCat("job ", id, " not held"));
    st = scheduler::JobState::kPending;
    Save();
    return absl::OkStatus();
  }

  absl::Status Cancel(const std::string& id) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("no job ", id));
    auto& st = it->second.state;
    if (st == scheduler::JobState::kCancelled) return absl::OkStatus();
    if (st == scheduler::JobState::kRunning || st == scheduler::JobState::kDone) {
      return absl::FailedPreconditionError(absl::StrCat("job ", id, " running or done"));
    }
    st = scheduler::JobState::kCancelled;
    Save();
    return absl::OkStatus();
  }

  absl::Status CheckSpec(const scheduler::JobSpec& spec) const override {
    if (absl::Status st = SchedulerAdapter::CheckSpec(spec); !st.ok()) return st;  // the contract: common rules first
    std::lock_guard<std::mutex> l(mu_);
    checked_sources_.push_back(spec.source_site);
    if (!refused_name_.empty() && spec.name == refused_name_)
      return absl::InvalidArgumentError(absl::StrCat("injected: no job named ", spec.name, " here"));
    return absl::OkStatus();
  }

  absl::StatusOr<scheduler::JobSpec> Export(const std::string& id) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("no job ", id));
    return it->second.spec;
  }

  absl::StatusOr<std::string> Submit(const scheduler::JobSpec& spec, const std::string& tag, bool held) override {
    std::lock_guard<std::mutex> l(mu_);
    submitted_sources_.push_back(spec.source_site);
    if (refuse_before_tag_ && !refused_submit_name_.empty() && spec.name == refused_submit_name_)
      return absl::InvalidArgumentError("injected refusal: the scheduler does not take " + spec.name);
    if (!tag.empty()) {
      for (const auto& [id, j] : jobs_) {
        if (j.tag == tag) return id;
      }
    }
    if (fail_submits_ > 0) {
      --fail_submits_;
      return absl::UnavailableError("injected submit failure");
    }
    if (!refused_submit_name_.empty() && spec.name == refused_submit_name_)
      return absl::InvalidArgumentError("injected refusal: the scheduler does not take " + spec.name);
    // The contract: Submit refuses what CheckSpec refuses.
    if (!refused_name_.empty() && spec.name == refused_name_)
      return absl::InvalidArgumentError(absl::StrCat("injected: no job named ", spec.name, " here"));
    scheduler::Job j;
    j.id = absl::StrCat(site_, "-", next_id_++);
    j.spec = spec;
    j.tag = tag;
    j.state = held ? scheduler::JobState::kHeld : scheduler::JobState::kPending;
    j.queued_at_ms = next_time_++;
    jobs_[j.id] = j;
    Save();
    return j.id;
  }

  absl::StatusOr<std::vector<scheduler::Job>> FindByTag(const std::string& tag) override {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<scheduler::Job> out;
    if (tag.empty()) return out;
    for (const auto& [id, j] : jobs_) {
      if (j.tag == tag) out.push_back(j);
    }
    return out;
  }

  absl::Status SetPinned(const std::string& id, bool pinned) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("no job ", id));
    it->second.pinned = pinned;
    Save();
    return absl::OkStatus();
  }

 private:
  absl::Status Move(const std::string& id, scheduler::JobState from, scheduler::JobState to) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("no job ", id));
    if (it->second.state != from) return absl::FailedPreconditionError(absl::StrCat("job ", id, ": wrong state"));
    it->second.state = to;
    Save();
    return absl::OkStatus();
  }

  std::vector<scheduler::Job> Ordered(bool all) const {
    std::vector<scheduler::Job> out;
    for (const auto& [id, j] : jobs_) {
      if (all || (j.state != scheduler::JobState::kDone && j.state != scheduler::JobState::kCancelled)) {
        out.push_back(j);
      }
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const scheduler::Job& a, const scheduler::Job& b) { return a.queued_at_ms < b.queued_at_ms; });
    return out;
  }

  void Save() const {
    if (path_.empty()) return;
    std::string out;
    AppendField(&out, "fake1");
    AppendField(&out, absl::StrCat(next_id_));
    AppendField(&out, absl::StrCat(next_time_));
    AppendField(&out, absl::StrCat(jobs_.size()));
    for (const auto& [id, j] : jobs_) {
      AppendField(&out, j.id);
      AppendField(&out, EncodeSpec(j.spec));
      AppendField(&out, absl::StrCat(static_cast<int>(j.state)));
      AppendField(&out, j.pinned ? "1" : "0");
      AppendField(&out, j.tag);
      AppendField(&out, absl::StrCat(j.queued_at_ms));
    }
    std::string tmp = path_ + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f << out;
    }
    std::rename(tmp.c_str(), path_.c_str());
  }

  void Load() {
    std::ifstream f(path_, std::ios::binary);
    if (!f) return;
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    std::string_view in(text);
    std::string v, n_s;
    int64_t n = 0;
    if (!ReadField(&in, &v) || v != "fake1") return;
    ReadField(&in, &v), (void)absl::SimpleAtoi(v, &next_id_);
    ReadField(&in, &v), (void)absl::SimpleAtoi(v, &next_time_);
    ReadField(&in, &n_s), (void)absl::SimpleAtoi(n_s, &n);
    for (int64_t i = 0; i < n; ++i) {
      scheduler::Job j;
      std::string spec, state, pinned, queued;
      ReadField(&in, &j.id);
      ReadField(&in, &spec);
      ReadField(&in, &state);
      ReadField(&in, &pinned);
      ReadField(&in, &j.tag);
      ReadField(&in, &queued);
      j.spec = *DecodeSpec(spec);
      int st = 0;
      (void)absl::SimpleAtoi(state, &st);
      j.state = static_cast<scheduler::JobState>(st);
      j.pinned = pinned == "1";
      (void)absl::SimpleAtoi(queued, &j.queued_at_ms);
      jobs_[j.id] = j;
    }
  }

  const std::string site_;
  const std::string path_;
  mutable std::mutex mu_;
  std::map<std::string, scheduler::Job> jobs_;
  int64_t next_id_ = 1;
  int64_t next_time_ = 1000;
  int fail_submits_ = 0;
  int hold_fail_after_effect_ = 0;
  std::string refused_name_;
  std::string refused_submit_name_;
  bool refuse_before_tag_ = false;
  mutable std::vector<std::string> checked_sources_;
  std::vector<std::string> submitted_sources_;
};

}  // namespace hyperfed::migration::testing
