#include "daemon/balance/placement.h"

#include <algorithm>
#include <cmath>
#include <limits>

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

void PeerForecast::Publish(int64_t at, StartProfile profile, int64_t taken) {
  known_ = true;
  at_ = at;
  published_ = std::move(profile);
  booked_ = published_;
  std::vector<Entry> kept;
  for (const Entry& e : ledger_)
    if (e.landed_at >= std::min(taken, at)) kept.push_back(e);
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
  ledger_.push_back({.placed_at = now, .landed_at = now, .cores = cores, .limit = limit});
  BookEntry(ledger_.back());
}

void PeerForecast::Landed(int64_t placed_at, int64_t at) {
  for (Entry& e : ledger_)
    if (e.placed_at == placed_at) e.landed_at = std::max(e.landed_at, at);
}

LimitAccuracy::LimitAccuracy(size_t window) : window_(std::max<size_t>(window, 1)) {}

void LimitAccuracy::Finished(int64_t run, int64_t limit) {
  if (limit <= 0 || run < 0) return;
  run = std::min(run, limit);
  if (ring_.size() < window_) {
    ring_.push_back({run, limit});
  } else {
    run_sum_ -= static_cast<double>(ring_[next_].first);
    limit_sum_ -= static_cast<double>(ring_[next_].second);
    ring_[next_] = {run, limit};
    next_ = (next_ + 1) % window_;
  }
  run_sum_ += static_cast<double>(run);
  limit_sum_ += static_cast<double>(limit);
}

double LimitAccuracy::ratio() const {
  if (ring_.empty() || limit_sum_ <= 0) return 0;
  return std::clamp(run_sum_ / limit_sum_, 0.0, 1.0);
}

Placer::Placer(int64_t margin, FitRule fit) : margin_(std::max<int64_t>(margin, 1)), fit_(fit) {}

void Placer::Landed(int peer, int64_t placed_at, int64_t at) {
  if (auto it = peers_.find(peer); it != peers_.end()) it->second.Landed(placed_at, at);
}

int64_t Placer::Slack(int64_t limit) const {
  if (fit_.alpha <= 0 || limit <= 0) return 0;
  const double s = fit_.alpha * std::pow(accuracy_.ratio(), fit_.exponent) * static_cast<double>(limit);
  // Beyond a year the slack admits every site that starts the job at all.
  return static_cast<int64_t>(std::min(s, 3.2e7));
}

const PeerForecast* Placer::Find(int peer) const {
  auto it = peers_.find(peer);
  return it == peers_.end() ? nullptr : &it->second;
}

Placement Placer::Decide(int64_t now, const ArrivingJob& job) const {
  if (const int64_t slack = Slack(job.limit); slack > 0) return DecideFit(now, job, slack);
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

// Best fit among near-ties (FitRule). The near-ties: every site (home
// included) whose start is within `slack` of the first. Of those the
// narrowest, home on equal width, then the sooner start, then the lower
// label. A job offered again (queued), or any job under home_first, stays
// while home is a near-tie. A peer that starts the job later than home
// gets it only for being narrower (best fit at arrival); one that starts it
// sooner must gain the margin, as in the earliest-start rule.
Placement Placer::DecideFit(int64_t now, const ArrivingJob& job, int64_t slack) const {
  struct Candidate {
    int label;
    int64_t wait;
    int64_t width;
  };
  std::vector<Candidate> waits;  // the peers that can start it
  int64_t earliest = job.wait_here;
  for (const auto& [label, f] : peers_) {
    const int64_t wait = f.WaitFor(now, job.cores, job.limit);
    if (wait == kNeverStarts) continue;
    waits.push_back({label, wait, f.widest()});
    earliest = std::min(earliest, wait);
  }
  if (waits.empty()) return Placement{};
  const int64_t bound = earliest >= kNeverStarts - slack ? kNeverStarts - 1 : earliest + slack;
  const bool home_near = job.wait_here <= bound;
  if (home_near && (job.queued || fit_.home_first)) return Placement{};
  int best = -1;
  int64_t best_wait = kNeverStarts, best_width = std::numeric_limits<int64_t>::max();
  for (const auto& [label, wait, width] : waits) {
    if (wait > bound) continue;
    if (width < best_width || (width == best_width && wait < best_wait)) {
      best = label;
      best_wait = wait;
      best_width = width;
    }
  }
  if (best < 0) return Placement{};
  if (home_near) {
    // Best fit: home unless the peer is narrower (an unknown home width
    // counts as the widest).
    if (fit_.home_widest > 0 && fit_.home_widest <= best_width) return Placement{};
  } else if (job.wait_here != kNeverStarts && best_wait > job.wait_here - margin_) {
    return Placement{};  // sooner, but not by the margin
  }
  Placement p;
  p.peer = best;
  p.wait = best_wait;
  p.gain = job.wait_here == kNeverStarts ? kNeverStarts : job.wait_here - best_wait;
  return p;
}

Placement Placer::Place(int64_t now, const ArrivingJob& job) {
  const Placement p = Decide(now, job);
  if (p.peer >= 0) Book(p.peer, now, job);
  return p;
}

}  // namespace hyperfed::balance
