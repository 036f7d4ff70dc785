#pragma once

// One site's part of a balancing round (DESIGN section 6), and the interfaces
// it needs from the layers around it. No gRPC here: the server layer
// implements PeerClient; the daemon wires a JobMover onto the migration
// layer. The arithmetic is the balance library's step functions.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/balance/exact.h"
#include "daemon/balance/plan.h"
#include "daemon/common/clock.h"

namespace hyperfed::federation {

enum class ExchangeKind { kUp = 1, kExchange = 2, kDown = 3 };

// kDown with step kMcwaPhaseStep + s: the sender's MCWA transfer of plan
// phase s (1 <= s < kMcwaPhases) to the callee is done.
inline constexpr int kMcwaPhaseStep = 2000;
inline constexpr int kMcwaPhases = 100;

struct ExchangeMessage {
  std::string round_id;
  ExchangeKind kind = ExchangeKind::kExchange;
  // The dimension for kExchange; 1000 + k for the barrier after migrating in
  // dimension k; kMcwaPhaseStep + s for an MCWA phase-s notice.
  int step = 0;
  int from_label = 0;
  balance::LoadTable rows;
};

struct RoundSpec {
  std::string round_id;
  std::string coordinator;
  std::vector<int> faults;  // sorted labels
  int dimension = 0;
  std::string algorithm;    // "exact", "mcwa" or "improved-dem"
};

struct RoundReport {
  std::string round_id;
  std::string site;
  int label = 0;
  bool ok = false;
  std::string error;        // where this site's part ended, in words
  int64_t load_before = 0;
  int64_t quota = 0;
  int64_t moved_out = 0;
  int64_t shortfall = 0;
  std::vector<balance::Transfer> transfers;  // what this site sent (planned counts)
  int64_t messages = 0;
  int steps = 0;
  balance::LoadTable table;  // the gathered table (exact mode)
};

struct HeartbeatInfo {
  std::string site;
  int label = 0;
  int64_t load = 0;
  double capacity = 0;
  bool drained = false;
  std::string round_id;
  std::string last_round;
  std::vector<std::pair<std::string, bool>> view;  // site, up
};

// Calls to other sites. Thread-safe. Implemented over gRPC by the server
// layer, in-process by tests.
class PeerClient {
 public:
  virtual ~PeerClient() = default;
  // kExchange returns the callee's rows; kUp and kDown return nothing.
  virtual absl::StatusOr<balance::LoadTable> Exchange(const std::string& site, const ExchangeMessage& m,
                                                      absl::Duration timeout) = 0;
  // True when the site accepted the round.
  virtual absl::StatusOr<bool> StartRound(const std::string& site, const RoundSpec& spec, absl::Duration timeout) = 0;
  virtual absl::Status ReportRound(const std::string& site, const RoundReport& report, absl::Duration timeout) = 0;
  // Returns the id of the round that will serve the request.
  virtual absl::StatusOr<std::string> RequestBalance(const std::string& site, const std::string& from,
                                                     const std::string& reason, absl::Duration timeout) = 0;
  virtual absl::Status Heartbeat(const std::string& site, const HeartbeatInfo& info, absl::Duration timeout) = 0;
};

// Moves jobs to another site exactly once (the migration layer).
class JobMover {
 public:
  virtual ~JobMover() = default;
  struct Result {
    int64_t moved = 0;
    int64_t shortfall = 0;
  };
  virtual absl::StatusOr<Result> MoveJobs(const std::string& dest_site, int64_t count, const std::string& round_id) = 0;
};

// Messages of rounds that arrive before or while the round runs. The gRPC
// handler puts, the round runner takes. Thread-safe.
class Mailbox {
 public:
  explicit Mailbox(const Clock* clock) : clock_(clock) {}

  // Handler side. kUp/kDown: stores the rows and returns an empty table.
  // kExchange: waits until this site has published its own rows for that
  // step (it has reached the step), stores the caller's rows and returns
  // this site's rows. DeadlineExceeded when this site does not get there.
  absl::StatusOr<balance::LoadTable> Deliver(const ExchangeMessage& m, absl::Duration timeout);

  // Runner side: this site's rows for an exchange step, for the partner.
  void Publish(const std::string& round_id, int step, const balance::LoadTable& rows);
  // Runner side: the rows `from_label` sent for (kind, step).
  absl::StatusOr<balance::LoadTable> Await(const std::string& round_id, ExchangeKind kind, int step, int from_label,
                                           absl::Duration timeout);
  // Drops a finished round's messages (and any older than ten minutes).
  void Forget(const std::string& round_id);

 private:
  using Key = std::tuple<std::string, int, int, int>;  // round, kind, step, from
  struct Entry {
    balance::LoadTable rows;
    absl::Time at;
  };
  void ExpireLocked();

  const Clock* clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, Entry> inbox_;                                  // guarded by mu_
  std::map<std::pair<std::string, int>, Entry> published_;      // guarded by mu_
};

struct RoundContext {
  std::string self_site;
  int self_label = 0;
  // Site id at a label ("" when the position is empty).
  std::function<std::string(int label)> site_of_label;
  PeerClient* peers = nullptr;
  Mailbox* mailbox = nullptr;
  JobMover* mover = nullptr;
  absl::Duration step_timeout = absl::Seconds(10);
  // Plain-words progress for logs and the operator ("exchanged dimension 2").
  std::function<void(const std::string&)> event;
};

// Runs this site's part of a round from its load snapshot (migratable
// pending jobs) and capacity (0 when drained). Never throws; the report
// says how far it got.
RoundReport RunRound(const RoundContext& ctx, const RoundSpec& spec, int64_t load, double capacity);

}  // namespace hyperfed::federation
