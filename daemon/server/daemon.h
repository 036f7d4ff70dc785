#pragma once

// hyperfedd's wiring: builds every part from the configuration, starts the
// gRPC server, the site's background threads, the migration recovery loop
// and the metrics endpoint, and stops them in order.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "daemon/federation/site.h"
#include "daemon/migration/journal.h"
#include "daemon/migration/migrator.h"
#include "daemon/scheduler/adapter.h"
#include "daemon/scheduler/registry.h"
#include "daemon/scheduler/swappable_adapter.h"
#include "daemon/server/metrics_http.h"
#include "daemon/server/peer_client.h"
#include "daemon/server/peer_limits.h"
#include "daemon/server/roster_keeper.h"
#include "daemon/server/services.h"
#include "daemon/server/site_stack.h"

namespace hyperfed::server {

// The most gRPC's transports may hold for this server's calls.
inline constexpr size_t kServerMemoryBytes = size_t{32} << 20;

// What `hyperfedd --check` verifies beyond the config file itself (which
// config::LoadConfig checks, the adapter and its options included), and
// start-up before anything else: state_dir is or can be made a folder for
// this account alone, the TLS files and token are readable, the roster
// opens. What only starting finds: a journal that cannot be opened, a port
// in use, a state_dir another hyperfedd holds.
absl::Status CheckRuntime(const config::Config& c);

class Daemon {
 public:
  // `adapters`: main's registry of adapter factories; it must outlive the
  // daemon (a reload makes new adapters from it).
  static absl::StatusOr<std::unique_ptr<Daemon>> Create(const config::Config& config,
                                                        const scheduler::AdapterRegistry* adapters);
  ~Daemon();

  // Starts serving. Returns the bound gRPC port.
  absl::StatusOr<int> Start();
  // Stops everything (idempotent).
  void Shutdown();
  // Re-reads the config file (SIGHUP, docs/operations.md "Reload"): the
  // balancer settings that may change while running and the adapter's
  // options (a new adapter made from them) take effect at once;
  // a change to anything else is refused whole, naming the keys that need
  // a restart, and nothing changes. Returns what changed, in words.
  absl::StatusOr<std::string> Reload(const std::string& path);

  federation::Site* site() { return site_.get(); }

 private:
  Daemon() = default;
  std::string RenderMetrics();

  // While the daemon's roster does not list it: asks the seeds for theirs.
  void JoinLoop();

  config::Config config_;
  const scheduler::AdapterRegistry* adapters_ = nullptr;
  int lock_fd_ = -1;  // <state_dir>/LOCK, locked while this daemon lives
  std::unique_ptr<federation::LiveConfig> live_;
  std::unique_ptr<RosterKeeper> roster_;
  std::unique_ptr<scheduler::SwappableAdapter> adapter_;  // a reload may replace the adapter inside
  std::unique_ptr<migration::Journal> journal_;
  std::unique_ptr<GrpcPeers> peers_;
  std::unique_ptr<PeerCallLimiter> peer_calls_;
  std::unique_ptr<migration::Migrator> migrator_;
  std::unique_ptr<federation::JobMover> mover_;
  std::unique_ptr<federation::Site> site_;
  std::unique_ptr<PeerService> peer_service_;
  std::unique_ptr<AdminService> admin_service_;
  HealthService health_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<MetricsServer> metrics_;
  std::unique_ptr<EnvThread> join_;  // JoinLoop, when the config gives seeds
  std::atomic<bool> stopping_{false};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
};

}  // namespace hyperfed::server
