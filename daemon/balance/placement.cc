#include "daemon/balance/placement.h"

#include <algorithm>

namespace hyperfed::balance {

StartProfile ProfileAged(const StartProfile& p, int64_t age) {
  if (age <= 0 || p.free.empty()) return p;
  StartProfile out;
  out.widest = p.widest;
  // The last step at or before `age` holds then; it becomes offset 0.
  size_t first = 0;
  while (first + 1 < p.free.size() && p.free[first + 1].first <= age) ++first;
  out.free.reserve(p.free.size() - first);
  out.free.push_back({0, p.free[first].second});
  for (size_t i = first + 1; i < p.free.size(); ++i) out.free.push_back({p.free[i].first - age, p.free[i].second});
  return out;
}

void PeerForecast::Publish(int64_t at, StartProfile profile) {
  known_ = true;
  at_ = at;
  published_ = std::move(profile);
  booked_ = published_;
  std::vector<Entry> kept;
  for (const Entry& e : ledger_)
    if (e.placed_at >= at) kept.push_back(e);
  ledger_.swap(kept);
  for (const Entry& e : ledger_) BookEntry(e);
}

int64_t PeerForecast::WaitFor(int64_t now, int64_t cores, int64_t limit) const {
  if (!known_ || booked_.free.empty() || cores > booked_.widest) return kNeverStarts;
  return ProfileAged(booked_, now - at_).WaitFor(cores, limit);
}

void PeerForecast::BookEntry(const Entry& e) {
  const int64_t wait = WaitFor(e.placed_at, e.cores, e.limit);
  if (wait == kNeverStarts) return;
  // Unknown limits book nothing (Book): the profile cannot say when they end.
  Book(&booked_, std::max<int64_t>(e.placed_at - at_, 0) + wait, e.cores, e.limit);
}

void PeerForecast::Placed(int64_t now, int64_t cores, int64_t limit) {
  ledger_.push_back({now, cores, limit});
  BookEntry(ledger_.back());
}

Placer::Placer(int64_t margin) : margin_(std::max<int64_t>(margin, 1)) {}

const PeerForecast* Placer::Find(int peer) const {
  auto it = peers_.find(peer);
  return it == peers_.end() ? nullptr : &it->second;
}

Placement Placer::Decide(int64_t now, const ArrivingJob& job) const {
  Placement best;
  int64_t best_wait = kNeverStarts;
  for (const auto& [label, f] : peers_) {  // ascending labels: ties to the lower
    const int64_t wait = f.WaitFor(now, job.cores, job.limit);
    if (wait < best_wait) {
      best_wait = wait;
      best.peer = label;
    }
  }
  if (best.peer < 0) return Placement{};
  // Stays unless the best peer gains at least the margin. A job that cannot
  // run here (wait_here kNeverStarts) goes wherever it can start.
  const bool gains = job.wait_here == kNeverStarts || best_wait <= job.wait_here - margin_;
  if (!gains) return Placement{};
  best.wait = best_wait;
  best.gain = job.wait_here == kNeverStarts ? kNeverStarts : job.wait_here - best_wait;
  return best;
}

Placement Placer::Place(int64_t now, const ArrivingJob& job) {
  const Placement p = Decide(now, job);
  if (p.peer >= 0) Book(p.peer, now, job);
  return p;
}

}  // namespace hyperfed::balance
