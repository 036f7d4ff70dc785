#pragma once

// Helpers for integration tests: submit, list and count jobs through the
// Admin service, and run a round.

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/integration/federation_harness.h"

namespace hyperfed::testing {

absl::Status Submit(TestFederation& f, int site, int count, int64_t duration_ms);
std::vector<v1::Job> ListJobs(TestFederation& f, int site);
int64_t CountState(const std::vector<v1::Job>& jobs, const std::string& state);
bool WaitRunning(TestFederation& f, int site, int count, absl::Duration timeout);
// Keys of every job not done or cancelled, across the running sites; a key
// seen twice is stored twice ("<key>#2"), so sets compare "exactly once".
std::multiset<std::string> AllKeys(TestFederation& f);

// The final event of a Balance call made at `site` (with wait).
class RoundResult {
 public:
  bool ok() const { return final_.ok(); }
  int64_t moved() const { return final_.moved(); }
  std::string message() const { return messages_; }
  const v1::RoundEvent& final_event() const { return final_; }
  v1::RoundEvent final_;
  std::string messages_;
};
absl::StatusOr<RoundResult> RunRound(TestFederation& f, int site, bool dry_run = false,
                                     absl::Duration timeout = absl::Seconds(120));

}  // namespace hyperfed::testing
