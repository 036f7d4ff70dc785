#pragma once

// A site's parts below the gRPC server, wired as hyperfedd wires them: the
// scheduler adapter, the migration journal and migrator, the job mover and
// the federation Site. The daemon puts its gRPC server in front; the
// federation simulation (sim/federation, docs/design.md §10) builds the same
// for each simulated site, so both run one wiring.

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "config/config.h"
#include "daemon/common/env.h"
#include "daemon/federation/live_config.h"
#include "daemon/federation/round.h"
#include "daemon/federation/site.h"
#include "daemon/migration/journal.h"
#include "daemon/migration/migrator.h"
#include "daemon/migration/transport.h"
#include "daemon/scheduler/registry.h"
#include "daemon/scheduler/swappable_adapter.h"

namespace hyperfed::server {

struct SiteStack {
  std::unique_ptr<scheduler::SwappableAdapter> adapter;  // a reload may replace the adapter inside
  std::unique_ptr<migration::Journal> journal;
  std::unique_ptr<migration::Migrator> migrator;
  std::unique_ptr<federation::JobMover> mover;
  std::unique_ptr<federation::Site> site;
};

// Opens the adapter (config.scheduler) and the journal in config.state_dir
// (which must exist) and wires the rest; `adapters` (main's registry)
// makes the adapter. `live`, `peers` and `transport`
// must outlive the stack; the Site is not started.
absl::StatusOr<SiteStack> OpenSiteStack(const config::Config& config, const scheduler::AdapterRegistry& adapters,
                                        federation::LiveConfig* live, federation::PeerClient* peers,
                                        migration::PeerTransport* transport, const Env* env);

}  // namespace hyperfed::server
