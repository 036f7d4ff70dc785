#include "daemon/federation/arrival.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon/common/log.h"

namespace hyperfed::federation {

namespace {
constexpr char kPlacementPrefix[] = "placement:";
// A peer's protocol from which it takes placed jobs.
bool TakesPlacements(const std::string& protocol) { return ProtocolAtLeast(protocol, 1, 4); }
}  // namespace

bool IsPlacementId(const std::string& round_id) { return absl::StartsWith(round_id, kPlacementPrefix); }

ArrivalPlacement::ArrivalPlacement(LiveConfig* live, const Env* env, scheduler::SchedulerAdapter* adapter,
                                   JobMover* mover, Membership* membership)
    : live_(live),
      env_(env),
      adapter_(adapter),
      mover_(mover),
      membership_(membership),
      placer_(std::max<int64_t>(1, absl::ToInt64Milliseconds(live->balancer().placement_margin))) {}

void ArrivalPlacement::LearnProfiles() {
  std::set<int> live_peers;
  const absl::Time now = env_->Now();
  for (const PeerInfo& p : membership_->View()) {
    if (p.self || !p.up || p.drained || p.capacity <= 0 || p.profile.free.empty() || !TakesPlacements(p.protocol))
      continue;
    if (auto b = backoff_until_.find(p.label); b != backoff_until_.end()) {
      if (now < b->second) continue;
      backoff_until_.erase(b);
    }
    live_peers.insert(p.label);
    auto it = heard_.find(p.label);
    if (it != heard_.end() && it->second == p.profile_at) continue;
    heard_[p.label] = p.profile_at;
    placer_.Publish(p.label, absl::ToUnixMillis(p.profile_at), p.profile, absl::ToUnixMillis(p.profile_taken));
  }
  for (auto it = heard_.begin(); it != heard_.end();) {
    if (live_peers.count(it->first)) {
      ++it;
      continue;
    }
    placer_.Forget(it->first);
    it = heard_.erase(it);
  }
}

PlacementPass ArrivalPlacement::RunOnce(const balance::StartProfile& own, bool drained) {
  PlacementPass pass;
  std::lock_guard<std::mutex> l(pass_mu_);
  const config::BalancerConfig b = live_->balancer();
  const std::optional<config::RosterEntry> self = live_->SelfEntry();
  if (!b.placement || drained || !self) return pass;
  LearnProfiles();
  auto pending = adapter_->Pending();
  if (!pending.ok()) {
    pass.error = absl::StrCat("pending jobs: ", pending.status().message());
    return pass;
  }
  const int64_t now = absl::ToUnixMillis(env_->Now());
  // Peers' labels to site ids, for the moves.
  std::map<int, std::string> site_of;
  for (const PeerInfo& p : membership_->View()) site_of[p.label] = p.site;

  std::set<std::string> seen;
  std::vector<std::string> kept_new;
  std::map<int, std::vector<std::string>> go;  // label -> job ids
  // New jobs first (their scheduler may hold them in a window), then the
  // waiting ones; each in queue order.
  for (int round = 0; round < 2; ++round) {
    for (const scheduler::PendingJob& p : *pending) {
      const std::string key = p.key.empty() ? p.id : p.key;
      const bool fresh = !seen_.count(key);
      if (fresh != (round == 0)) continue;
      seen.insert(key);
      if (fresh) ++pass.new_jobs;
      // The wait here: the scheduler's estimate, else this site's own
      // profile. A job in its placement window has none of its own (Slurm
      // says it starts when the window ends).
      int64_t wait = balance::kNeverStarts;
      if (p.start_ms > 0 && p.window_end_ms == 0) {
        wait = std::max<int64_t>(0, p.start_ms - now);
      } else if (!fresh && p.window_end_ms == 0) {
        // A waiting job its scheduler gives no start of yet (Slurm, the
        // moments after its window was ended here): this site's profile
        // counts the job itself (`sbatch --test-only` queues the probe
        // behind it for its whole limit), so it stays this pass.
        continue;
      } else if (!own.free.empty()) {
        wait = own.WaitFor(p.cores, p.limit_ms);
      } else {
        if (fresh) kept_new.push_back(p.id);  // nothing to compare with: it stays
        continue;
      }
      // A destination takes at most its widest job's cores of waiting
      // placed jobs from one source (Admit): this pass sends it no more.
      const balance::ArrivingJob job{.cores = p.cores, .limit = p.limit_ms, .wait_here = wait};
      balance::Placement where = placer_.Decide(now, job);
      if (where.peer >= 0) {
        const balance::PeerForecast* f = placer_.Find(where.peer);
        const size_t cap = static_cast<size_t>(std::max<int64_t>(1, f ? f->widest() : 1));
        if (!site_of.count(where.peer) || go[where.peer].size() >= cap) where.peer = -1;
      }
      if (where.peer >= 0) {
        placer_.Book(where.peer, now, job);
        go[where.peer].push_back(p.id);
      } else if (fresh) {
        kept_new.push_back(p.id);
      }
    }
  }
  seen_ = std::move(seen);
  for (auto& [label, ids] : go) {
    const std::string& dest = site_of[label];
    const std::string id = absl::StrCat(kPlacementPrefix, now, "-", next_id_++);
    auto r = mover_->MoveChosen(dest, ids, id);
    if (!r.ok()) {
      // Refused (it holds as many of our placed jobs as it takes, or it is
      // drained or stopped placing) or unreachable: no placement there for
      // a while; rounds still balance with it.
      backoff_until_[label] = env_->Now() + std::max(absl::Seconds(5), 5 * b.heartbeat_interval);
      placer_.Forget(label);
      heard_.erase(label);
      pass.failed += static_cast<int64_t>(ids.size());
      if (pass.error.empty())
        pass.error = absl::StrCat("placing ", ids.size(), " jobs at ", dest, ": ", r.status().message());
      continue;
    }
    // The jobs are in its queue from now: a profile it took before does not
    // hold them, so they stay booked until one taken later comes.
    placer_.Landed(label, now, absl::ToUnixMillis(env_->Now()));
    pass.placed += r->moved;
    pass.failed += r->shortfall;
    if (r->moved > 0) pass.to[dest] += r->moved;
  }
  // New jobs that stay may start here now. A chosen job that did not move
  // is released from its window too: it stays, and rounds see it.
  pass.kept = static_cast<int64_t>(kept_new.size());
  if (pass.failed > 0)
    for (auto& [label, ids] : go) kept_new.insert(kept_new.end(), ids.begin(), ids.end());
  if (!kept_new.empty()) {
    const std::vector<absl::Status> ended = adapter_->EndPlacementWindow(kept_new);
    for (const absl::Status& st : ended)
      if (!st.ok() && !absl::IsNotFound(st) && pass.error.empty())
        pass.error = absl::StrCat("ending the placement window: ", st.message());
  }
  {
    std::lock_guard<std::mutex> c(mu_);
    ++counters_.passes;
    counters_.placed += pass.placed;
    counters_.kept += pass.kept;
    counters_.failed += pass.failed;
    for (const auto& [dest, n] : pass.to) counters_.to[dest] += n;
  }
  if (pass.placed > 0) {
    std::string where;
    for (const auto& [dest, n] : pass.to) absl::StrAppend(&where, where.empty() ? "" : ", ", n, " to ", dest);
    LogInfo(absl::StrCat("placed ", pass.placed, " jobs where they start sooner: ", where));
  }
  // Errors at most once a minute: a peer refusing more placed jobs
  // refuses them every pass until its queue drains.
  if (!pass.error.empty()) {
    const absl::Time now_t = env_->Now();
    std::lock_guard<std::mutex> c(mu_);
    if (now_t - last_logged_ >= absl::Minutes(1)) {
      LogWarning(absl::StrCat("placement: ", pass.error));
      last_logged_ = now_t;
    }
  }
  return pass;
}

absl::Status ArrivalPlacement::Admit(const std::string& source_site, const std::vector<std::string>& keys,
                                     int64_t cores) {
  if (!live_->balancer().placement)
    return absl::FailedPreconditionError("placement is off at this site (balancer.placement)");
  const int64_t limit = std::max<int64_t>(1, cores);
  if (static_cast<int64_t>(keys.size()) > limit)
    return absl::FailedPreconditionError(absl::StrCat("placement from ", source_site, ": ", keys.size(),
                                                      " jobs at once, more than this site's ", limit, " cores"));
  auto pending = adapter_->Pending();
  if (!pending.ok()) return absl::UnavailableError(absl::StrCat("pending jobs: ", pending.status().message()));
  std::set<std::string> waiting;
  for (const scheduler::PendingJob& p : *pending) waiting.insert(p.key);
  std::lock_guard<std::mutex> l(mu_);
  std::set<std::string>& mine = admitted_[source_site];
  for (auto it = mine.begin(); it != mine.end();) it = waiting.count(*it) ? std::next(it) : mine.erase(it);
  if (static_cast<int64_t>(mine.size() + keys.size()) > limit)
    return absl::FailedPreconditionError(absl::StrCat("placement from ", source_site, ": ", mine.size(),
                                                      " of its placed jobs wait here; ", keys.size(),
                                                      " more would be over this site's ", limit, " cores"));
  mine.insert(keys.begin(), keys.end());
  return absl::OkStatus();
}

PlacementCounters ArrivalPlacement::counters() const {
  std::lock_guard<std::mutex> l(mu_);
  return counters_;
}

}  // namespace hyperfed::federation
