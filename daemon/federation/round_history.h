#pragma once

// The operator's view of recent rounds (docs/design.md §6): their events in
// order, then the result. Apart from coordination state: the coordinator
// writes here, the admin service reads. Live rounds and dry runs are kept
// apart, so dry runs never evict a live round.
//
// Thread-safe.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/balance/exact.h"
#include "daemon/common/env.h"
#include "daemon/federation/round.h"

namespace hyperfed::federation {

struct RoundView {
  std::string id;
  RoundSpec spec;
  std::string mode;  // what it ran and why, in words
  std::vector<std::string> events;
  bool done = false;
  bool ok = false;
  bool dry_run = false;
  balance::LoadTable before;  // loads and capacities it balanced with
  balance::LoadTable after;   // planned (dry run) or reported
  std::vector<balance::Transfer> transfers;
  int64_t moved = 0;
  std::vector<std::string> took_part;  // the sites that accepted it
  std::vector<std::string> reported;   // the sites whose reports it took, in order
  int64_t messages = 0;
  int steps = 0;
  double share_error_before = 0, share_error_after = 0;
  absl::Time started, finished;
};

class RoundHistory {
 public:
  explicit RoundHistory(const Env* env, size_t keep = 32) : env_(env), keep_(keep) {}

  void Add(RoundView v);
  // Applies `fn` to the round and wakes its waiters; false if it is gone.
  bool Update(const std::string& id, const std::function<void(RoundView&)>& fn);
  std::optional<RoundView> Find(const std::string& id) const;
  // The round started last, live or dry.
  std::optional<RoundView> Last() const;
  // Up to `limit` rounds (0: all kept), newest first; dry runs only if asked.
  std::vector<RoundView> Recent(size_t limit, bool dry_runs) const;
  // Waits until the round has more than `seen` events or is done, or until
  // `deadline` or Close(); nullopt if it is gone.
  std::optional<RoundView> Wait(const std::string& id, size_t seen, absl::Time deadline);
  // Waits until the round is done, or until `deadline` or Close(); nullopt
  // if it is gone. A change short of the end wakes no such waiter.
  std::optional<RoundView> WaitDone(const std::string& id, absl::Time deadline);
  // Wakes every waiter for good (shutdown).
  void Close();
  size_t size() const;

 private:
  const RoundView* FindLocked(const std::string& id) const;

  const Env* env_;
  const size_t keep_;
  mutable std::mutex mu_;
  std::condition_variable cv_;        // any change
  std::condition_variable done_cv_;   // a round done or gone, or Close()
  std::deque<RoundView> live_, dry_;  // guarded by mu_; oldest first
  bool closed_ = false;               // guarded by mu_
};

}  // namespace hyperfed::federation
