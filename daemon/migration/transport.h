#pragma once

// The messages of the transfer protocol (docs/design.md §7) and the interface
// the daemon implements over gRPC to carry them to a peer's Migrator.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/scheduler/adapter.h"

namespace hyperfed::migration {

struct TransferRequest {
  std::string migration_id;  // unique in the federation: "<source site>:<sequence>"
  std::string source_site;
  std::string round_id;                  // informational (explain / history); may be empty
  std::vector<scheduler::JobSpec> jobs;  // every spec has a non-empty key
};

// A job the destination refused for good (its CheckSpec or its scheduler:
// the same spec would be refused again) fails alone: the rest of the batch
// is committed, and the reply names the refused jobs by key. The source
// cancels the copies of the others and releases exactly the refused ones
// (issue 34, finding 5; docs/design.md §7).
struct TransferReply {
  // The ids at the destination of the jobs it took, in request order,
  // skipping the refused ones: new_ids.size() + refused_keys.size() is the
  // request's job count. (A source that does not know refused_keys sees a
  // count mismatch, keeps its jobs held and retries: never loses one.)
  std::vector<std::string> new_ids;
  std::vector<std::string> refused_keys;  // in request order
};

struct AbortReply {
  // true: the destination recorded the abort and will refuse the id for ever
  // (it had submitted nothing). false: it had submitted; new_ids and
  // refused_keys are as in TransferReply and the source must commit.
  bool aborted = false;
  std::vector<std::string> new_ids;
  std::vector<std::string> refused_keys;
};

// Carries Transfer and Abort to a peer's Migrator::HandleTransfer /
// HandleAbort. Thread-safe. Must preserve the handler's status code (the
// source treats kInvalidArgument, kFailedPrecondition and kAborted from the
// destination as final answers and kUnavailable, kDeadlineExceeded etc. as
// "try again later"); a call whose fate is unknown (timeout) must not be
// reported as a final answer.
class PeerTransport {
 public:
  virtual ~PeerTransport() = default;
  virtual absl::StatusOr<TransferReply> Transfer(const std::string& dest_site, const TransferRequest& req) = 0;
  virtual absl::StatusOr<AbortReply> Abort(const std::string& dest_site, const std::string& migration_id,
                                           const std::string& source_site) = 0;
};

}  // namespace hyperfed::migration
