#include "daemon/federation/round_history.h"

#include <algorithm>

namespace hyperfed::federation {

void RoundHistory::Add(RoundView v) {
  std::lock_guard<std::mutex> l(mu_);
  std::deque<RoundView>& q = v.dry_run ? dry_ : live_;
  q.push_back(std::move(v));
  if (q.size() > keep_) q.pop_front();
  cv_.notify_all();
  done_cv_.notify_all();  // a round waited for may have been dropped
}

const RoundView* RoundHistory::FindLocked(const std::string& id) const {
  for (const std::deque<RoundView>* q : {&live_, &dry_})
    for (const RoundView& r : *q)
      if (r.id == id) return &r;
  return nullptr;
}

bool RoundHistory::Update(const std::string& id, const std::function<void(RoundView&)>& fn) {
  std::lock_guard<std::mutex> l(mu_);
  RoundView* r = const_cast<RoundView*>(FindLocked(id));
  if (!r) return false;
  fn(*r);
  cv_.notify_all();
  if (r->done) done_cv_.notify_all();
  return true;
}

std::optional<RoundView> RoundHistory::Find(const std::string& id) const {
  std::lock_guard<std::mutex> l(mu_);
  const RoundView* r = FindLocked(id);
  if (!r) return std::nullopt;
  return *r;
}

std::optional<RoundView> RoundHistory::Last() const {
  std::lock_guard<std::mutex> l(mu_);
  const RoundView* best = nullptr;
  for (const std::deque<RoundView>* q : {&live_, &dry_})
    if (!q->empty() && (!best || q->back().started >= best->started)) best = &q->back();
  if (!best) return std::nullopt;
  return *best;
}

std::vector<RoundView> RoundHistory::Recent(size_t limit, bool dry_runs) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<RoundView> out(live_.begin(), live_.end());
  if (dry_runs) out.insert(out.end(), dry_.begin(), dry_.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const RoundView& a, const RoundView& b) { return a.started > b.started; });
  if (limit > 0 && out.size() > limit) out.resize(limit);
  return out;
}

std::optional<RoundView> RoundHistory::Wait(const std::string& id, size_t seen, absl::Time deadline) {
  std::unique_lock<std::mutex> l(mu_);
  env_->WaitUntil(l, cv_, deadline, [&] {
    const RoundView* r = FindLocked(id);
    return closed_ || !r || r->done || r->events.size() > seen;
  });
  const RoundView* r = FindLocked(id);
  if (!r) return std::nullopt;
  return *r;
}

std::optional<RoundView> RoundHistory::WaitDone(const std::string& id, absl::Time deadline) {
  std::unique_lock<std::mutex> l(mu_);
  env_->WaitUntil(l, done_cv_, deadline, [&] {
    const RoundView* r = FindLocked(id);
    return closed_ || !r || r->done;
  });
  const RoundView* r = FindLocked(id);
  if (!r) return std::nullopt;
  return *r;
}

void RoundHistory::Close() {
  std::lock_guard<std::mutex> l(mu_);
  closed_ = true;
  cv_.notify_all();
  done_cv_.notify_all();
}

size_t RoundHistory::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return live_.size() + dry_.size();
}

}  // namespace hyperfed::federation
