#pragma once

// Placement at arrival (docs/algorithms.md, "Placement at arrival"): where a
// job that has just arrived at a site should run. Pure: no I/O, no clock;
// time is a plain integer in the caller's unit (the daemon uses ms since the
// epoch, the replay seconds). The simulator and the daemon call the same
// Placer.
//
// A site knows its own queue exactly (its scheduler's forecast gives the
// job's wait at home). Of each peer it knows the start profile the peer
// last published (StartProfile: the free cores its queue leaves from then
// on) and what it has itself placed there since: the ledger. Booking the
// ledger's jobs into the published profile corrects it for what this site
// sent after the peer spoke, so a hole one job filled is not offered to the
// next. What other sites sent there, and jobs that end early, the profile
// learns at the peer's next publication; rounds rebalance the rest.
//
// The rule: the job goes to the peer where it would start first when that
// start is at least `margin` earlier than at home; otherwise, and on ties,
// it stays. Never to a peer narrower than the job, nor to one that has not
// published a profile (a peer that says nothing would look free).
// With a FitRule, among the sites that start it within a slack of the
// first, the job takes the narrowest (FitRule below).

#include <cstdint>
#include <map>
#include <vector>

#include "daemon/balance/choice.h"
#include "daemon/balance/easy.h"

namespace hyperfed::balance {

// The profile as seen `age` after it was published: the steps from then on,
// offsets from then (the step holding `age` starts at 0). age <= 0: `p`.
StartProfile ProfileAged(const StartProfile& p, int64_t age);

// What a site knows of one peer: its last published profile and the ledger
// of jobs this site placed there since.
class PeerForecast {
 public:
  // The peer published `profile` at `at` (its offsets are from `at`); it
  // says what the peer's scheduler held at `taken` <= `at` (a site reuses
  // its profile for a while: docs/design.md §6.10). Ledger entries that
  // landed there before `taken` are in it and are dropped; later ones are
  // booked anew into it, in the order they were placed.
  void Publish(int64_t at, StartProfile profile, int64_t taken);
  void Publish(int64_t at, StartProfile profile) { Publish(at, std::move(profile), at); }
  // Whether the peer has published anything.
  bool known() const { return known_; }
  int64_t widest() const { return published_.widest; }
  int64_t published_at() const { return at_; }
  size_t ledger_size() const { return ledger_.size(); }

  // When a job of `cores` and `limit` (0: unknown, as if for ever) sent at
  // `now` would start there: an offset from now, kNeverStarts when the peer
  // is narrower than the job or has said nothing.
  int64_t WaitFor(int64_t now, int64_t cores, int64_t limit) const;
  // Records a job placed there at `now` and books its cores from its start.
  // Until Landed says otherwise, it is taken to be there from `now` on.
  void Placed(int64_t now, int64_t cores, int64_t limit);
  // The jobs placed at `placed_at` were in the peer's queue by `at` (their
  // move ended then): a profile taken before `at` does not hold them.
  void Landed(int64_t placed_at, int64_t at);

 private:
  struct Entry {
    int64_t placed_at = 0;
    int64_t landed_at = 0;  // from when the peer's queue holds it
    int64_t cores = 1;
    int64_t limit = 0;
  };
  void BookEntry(const Entry& e);

  bool known_ = false;
  int64_t at_ = 0;
  StartProfile published_;
  StartProfile booked_;  // published_ with the ledger booked; offsets from at_
  std::vector<Entry> ledger_;
};

// One job arriving at this site.
struct ArrivingJob {
  int64_t cores = 1;
  int64_t limit = 0;      // time limit (0: unknown)
  int64_t wait_here = 0;  // estimated start at home minus now; kNeverStarts: cannot run here
  // The job already waits here and is offered again (FitRule: it stays
  // while here is among the near-ties, so that it is not moved for nothing).
  bool queued = false;
};

// How close the time limits users give are to the run times, as a site sees
// it in the jobs that finished there: sum of run times over sum of limits of
// the last `window` finished jobs, in [0, 1]. 0 before any job finished (the
// limits are not trusted until some job shows they can be).
class LimitAccuracy {
 public:
  explicit LimitAccuracy(size_t window = 128);
  // A job finished after running `run` of its `limit` (limits <= 0 and
  // negative run times are ignored; a run above its limit counts as the
  // limit).
  void Finished(int64_t run, int64_t limit);
  double ratio() const;
  size_t size() const { return ring_.size(); }

 private:
  size_t window_;
  size_t next_ = 0;
  std::vector<std::pair<int64_t, int64_t>> ring_;  // (run, limit)
  double run_sum_ = 0, limit_sum_ = 0;
};

// Best fit among near-ties (docs/algorithms.md, "Placement at arrival"):
// instead of the site where the job starts first, the narrowest site whose
// start is within a slack of the first, so that wide sites stay free for
// wide jobs. The slack is alpha x accuracy x limit: alpha times the run time
// the limits let one expect, so that the rule trusts the forecasts only as
// far as finished jobs showed the limits to be right. With exact limits
// (accuracy 1) it is best fit within alpha x the run time; with limits far
// above the run times the slack shrinks towards earliest start.
struct FitRule {
  double alpha = 0;         // 0: off (earliest start, the margin rule)
  int64_t home_widest = 0;  // this site's cores
  double exponent = 1;      // slack uses accuracy^exponent
  // Stay also at arrival when home is among the near-ties (fewer moves).
  bool home_first = false;
};

struct Placement {
  int peer = -1;     // the chosen peer's label; -1: stays home
  int64_t wait = 0;  // its estimated wait where it goes (offset from now)
  int64_t gain = 0;  // wait_here - wait (0 when it stays; below 0 when FitRule sends it to a narrower peer)
};

// This site's placement state: one PeerForecast per peer, by label.
class Placer {
 public:
  // margin >= 1: a peer must start the job at least this much sooner.
  explicit Placer(int64_t margin = 1, FitRule fit = {});

  void Publish(int peer, int64_t at, StartProfile profile, int64_t taken) {
    peers_[peer].Publish(at, std::move(profile), taken);
  }
  void Publish(int peer, int64_t at, StartProfile profile) { Publish(peer, at, std::move(profile), at); }
  // The peer is down, drained or gone: no job is placed there until it
  // publishes again.
  void Forget(int peer) { peers_.erase(peer); }
  const PeerForecast* Find(int peer) const;

  // Decides for one job at `now` (Placement::peer -1: stay). When a peer is
  // chosen, the job is booked into its ledger: the caller moves it there.
  // Ties between peers go to the lower label.
  Placement Place(int64_t now, const ArrivingJob& job);
  // The same decision without booking anything.
  Placement Decide(int64_t now, const ArrivingJob& job) const;
  // Books a job the caller sends to `peer` (after Decide) into its ledger.
  void Book(int peer, int64_t now, const ArrivingJob& job) { peers_[peer].Placed(now, job.cores, job.limit); }
  // The jobs booked to `peer` at `placed_at` reached its queue at `at`.
  void Landed(int peer, int64_t placed_at, int64_t at);

  int64_t margin() const { return margin_; }

  // A job that ran here finished (FitRule's accuracy).
  void Finished(int64_t run, int64_t limit) { accuracy_.Finished(run, limit); }
  const LimitAccuracy& accuracy() const { return accuracy_; }
  // The slack FitRule allows a job of this limit now (0 when off).
  int64_t Slack(int64_t limit) const;

 private:
  Placement DecideFit(int64_t now, const ArrivingJob& job, int64_t slack) const;

  int64_t margin_;
  FitRule fit_;
  LimitAccuracy accuracy_;
  std::map<int, PeerForecast> peers_;
};

}  // namespace hyperfed::balance
