#pragma once

// One site's part of a balancing round (docs/design.md §6): RunRound. Its
// parts have their own headers: the messages, spec and report
// (messages.h), what it needs of the layers around it (interfaces.h) and
// the mailbox its messages wait in (mailbox.h). No gRPC here. What a round
// computes is its mode's (daemon/balance/modes.h).

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "config/config.h"
#include "daemon/balance/exact.h"
#include "daemon/balance/modes.h"
#include "daemon/balance/plan.h"
#include "daemon/common/env.h"
#include "daemon/common/executor.h"
#include "daemon/federation/allowance.h"
#include "daemon/federation/interfaces.h"
#include "daemon/federation/mailbox.h"
#include "daemon/federation/membership.h"
#include "daemon/federation/messages.h"

namespace hyperfed::federation {

struct RoundContext {
  std::string self_site;
  int self_label = 0;
  // Site id at a label ("" when the position is empty).
  std::function<std::string(int label)> site_of_label;
  PeerClient* peers = nullptr;
  Mailbox* mailbox = nullptr;
  JobMover* mover = nullptr;
  const Env* env = nullptr;
  Executor* executor = nullptr;  // parallel moves; null: one after another
  // Where the runner records what the plan lets each source send here
  // (docs/design.md §6.8); null: nothing is recorded.
  TransferAllowance* allowance = nullptr;
  RoundTimeouts timeouts;
  // Plain-words progress for logs and the operator ("exchanged dimension 2").
  std::function<void(const std::string&)> event;
};

// What a site balances with: its movable load (pending jobs some other site
// can run), its capacity (0 when drained) and its start profile.
struct SiteSnapshot {
  int64_t load = 0;
  double capacity = 0;
  balance::StartProfile profile;
};

// Runs this site's part of a round from its snapshot. Never throws; the
// report says how far it got. Every wait ends by spec.deadline.
RoundReport RunRound(const RoundContext& ctx, const RoundSpec& spec, const SiteSnapshot& self);
inline RoundReport RunRound(const RoundContext& ctx, const RoundSpec& spec, int64_t load, double capacity) {
  return RunRound(ctx, spec, SiteSnapshot{load, capacity, {}});
}

}  // namespace hyperfed::federation
