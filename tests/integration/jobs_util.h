#pragma once

// Helpers for integration tests: submit, list and count jobs through the
// Admin service, and run a round.

#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"

namespace hyperfed::testing {

// What a shell command printed (stdout and stderr) and its exit code (-1
// when it did not exit normally).
struct Out {
  int code = -1;
  std::string text;
};
Out Shell(const std::string& cmd);

// A Peer stub to site `to`, presenting the certificate of `as` (a site id,
// or "admin"): a stand-in peer.
std::unique_ptr<v1::Peer::Stub> PeerAs(TestFederation& f, int to, const std::string& as);

absl::Status Submit(TestFederation& f, int site, int count, int64_t duration_ms, int cores = 1);
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
                                     absl::Duration timeout = absl::Seconds(120), const std::string& mode = "");
// The same over a connection the caller keeps (f.Admin(site)): the
// benchmarks time rounds, not a TLS handshake per round.
absl::StatusOr<RoundResult> RunRound(TestFederation& f, v1::Admin::Stub& admin, bool dry_run = false,
                                     absl::Duration timeout = absl::Seconds(120), const std::string& mode = "");

// For tests in which a site dies in a round: asks `site` for an operator
// round and returns its id once the round has begun (Balance with wait
// false), without waiting for its end, which waits for the dead site.
absl::StatusOr<std::string> StartRound(TestFederation& f, int site, absl::Duration timeout = absl::Seconds(30));
// Waits until round `id` is over as `site` sees it (its coordinator's list,
// Admin.Rounds): done, or no longer listed (lost with a coordinator that
// died). False if it still runs after `timeout`.
bool WaitRoundOver(TestFederation& f, int site, const std::string& id, absl::Duration timeout);

// An HTTP GET of `url`: the body, or what went wrong (code != 0).
Out Fetch(const std::string& url);
// The samples of a page in Prometheus' text format: series (name and
// labels, as written) -> value. Comment lines are skipped.
std::map<std::string, double> ParseMetrics(const std::string& text);

// A crash point of the transfer protocol (HYPERFED_CRASH_AT) and the site
// that crashes there: 0 the source, 1 the destination.
struct CrashCase {
  const char* point;
  int site;
};
inline void PrintTo(const CrashCase& c, std::ostream* os) { *os << c.point << " at site-" << c.site; }

// Every step of a transfer on both sides. The "_one" points fire once per
// adapter chunk (kDefaultAdapterChunk jobs); a round of one chunk reaches
// only ":1". Crashes between the chunks of one batch are covered by
// tests/migration/crash_test.cc (chunks of 2).
inline const std::vector<CrashCase>& TransferCrashCases() {
  static const std::vector<CrashCase> cases{
      {"out_after_intent", 0},  {"out_after_hold_one:1", 0},   {"out_after_hold", 0},   {"out_after_prepared", 0},
      {"out_after_reply", 0},   {"out_after_cancel_one:1", 0}, {"out_after_cancel", 0}, {"out_after_committed", 0},
      {"in_after_prepared", 1}, {"in_after_submit_one:1", 1},  {"in_after_submit", 1},  {"in_after_committed", 1}};
  return cases;
}

// A test name for a crash case: the point with ':' made '_'.
inline std::string CrashCaseName(const ::testing::TestParamInfo<CrashCase>& i) {
  std::string n = i.param.point;
  for (char& ch : n)
    if (ch == ':') ch = '_';
  return n;
}

}  // namespace hyperfed::testing
