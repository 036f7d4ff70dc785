#pragma once

// What a round's plan lets other sites send here (docs/design.md §6.8).
//
// Every site of a round derives the same plan from the same table (or, in a
// pairwise mode, the same pair share from the same two rows), so the
// destination knows how many jobs each source may send it. The round runner
// records that with Expect; the Transfer handler asks Admit before it
// journals anything, and a Transfer the plan does not cover is refused
// (FailedPrecondition: final, so the source aborts and keeps its jobs).
//
// The destination may plan a moment after the source (it reads the table
// from the same message a little later): Admit waits up to `wait` for the
// plan to cover the request. What the last kKeptRounds rounds allowed is
// kept for retries after a round ends; older rounds are forgotten.
//
// Thread-safe.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "daemon/common/env.h"

namespace hyperfed::federation {

class TransferAllowance {
 public:
  static constexpr int kKeptRounds = 8;

  explicit TransferAllowance(const Env* env) : env_(env) {}

  // The plan of `round_id` sends `count` more jobs here from `source_site`.
  void Expect(const std::string& round_id, const std::string& source_site, int64_t count);
  // Takes `count` jobs of what round_id's plan lets source_site send here,
  // waiting up to `wait` for the plan to cover them. FailedPrecondition when
  // it does not (the reason says what the plan allows).
  absl::Status Admit(const std::string& round_id, const std::string& source_site, int64_t count, absl::Duration wait);
  // This site's part of `round_id` has ended: what it planned stays, and a
  // wait for more ends at once (a part that failed before it planned never
  // will; the source aborts and keeps its jobs).
  void Ended(const std::string& round_id);
  // What is still allowed (for tests and explanations).
  int64_t Left(const std::string& round_id, const std::string& source_site) const;
  // Ends every wait (the site is stopping).
  void Stop();

 private:
  int64_t LeftLocked(const std::string& round_id, const std::string& source_site) const;

  const Env* env_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                                         // guarded by mu_
  std::deque<std::string> rounds_;                                // guarded by mu_; oldest first
  std::map<std::string, std::map<std::string, int64_t>> left_;  // guarded by mu_; round -> source -> jobs
  std::deque<std::string> ended_;                               // guarded by mu_; the last kKeptRounds
};

}  // namespace hyperfed::federation
