#pragma once

// What the server's handlers reach: the Peer handlers
// (daemon/server/peer_handlers.h) and the gRPC services
// (daemon/server/services.h). Nothing here is owned.

#include <string>

#include "config/config.h"
#include "daemon/common/env.h"
#include "daemon/federation/live_config.h"
#include "daemon/federation/site.h"
#include "daemon/migration/migrator.h"
#include "daemon/scheduler/adapter.h"
#include "daemon/server/roster_keeper.h"

namespace hyperfed::server {

class GrpcPeers;        // daemon/server/peer_client.h
class PeerCallLimiter;  // daemon/server/peer_limits.h

struct ServiceDeps {
  const config::Config* config = nullptr;
  federation::LiveConfig* live = nullptr;  // the roster and settings in force
  RosterKeeper* roster = nullptr;
  federation::Site* site = nullptr;
  migration::Migrator* migrator = nullptr;
  scheduler::SchedulerAdapter* adapter = nullptr;
  GrpcPeers* peers = nullptr;
  std::string admin_token;                // "" = none configured
  PeerCallLimiter* peer_calls = nullptr;  // Peer calls in flight per site (nullptr: no limit)
  const Env* env = nullptr;               // the site's clock (nullptr: RealEnv::Get())
};

}  // namespace hyperfed::server
