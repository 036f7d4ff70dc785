#pragma once

// A site's configuration: one YAML file per site, read into plain structs.
//
// LoadConfig reads and validates; every error names the file, the line and
// the key ("site-a.yaml:12: roster[2].endpoint: ..."), and the daemon does not
// start. See config/examples/ and docs/operations.md for the format.

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/balance/choice.h"
#include "daemon/balance/modes.h"
#include "daemon/common/log.h"
#include "daemon/common/trusted_path.h"
#include "daemon/scheduler/registry.h"

namespace hyperfed::config {

// Who the web view on site.metrics_listen answers (docs/operations.md,
// "Web view"): clients on this machine, any client, none.
enum class WebAccess { kOff, kLoopback, kOn };
// "loopback" | "on" | "off"; InvalidArgument otherwise.
absl::StatusOr<WebAccess> ParseWebAccess(std::string_view name);
std::string_view WebAccessName(WebAccess w);

struct SiteConfig {
  std::string id;              // unique in the roster; [A-Za-z0-9._-]{1,64}
  int label = 0;               // hypercube label, 0 <= label < 2^dimension
  std::string listen;          // host:port the gRPC server binds
  std::string advertise;       // host:port peers dial (default: listen)
  std::string metrics_listen;  // host:port of the Prometheus endpoint and the web view ("" = off)
  WebAccess web = WebAccess::kLoopback;
  // Host names the web view answers to besides IP addresses and
  // "localhost" (comma-separated, e.g. the name a TLS proxy passes on): a
  // request naming any other Host is refused, so that a page whose name an
  // attacker points at this address (DNS rebinding) gets nothing.
  std::string web_hosts;

  bool operator==(const SiteConfig&) const = default;
};

struct RosterEntry {
  std::string id;
  int label = 0;
  std::string endpoint;  // host:port
  // Reserved: parsed and checked (>= 0), not used yet. Every site must
  // derive the same transfers, so nearness comes from the labels shared by
  // every roster (near sites share small subcubes), not from per-site costs.
  int64_t cost = 1;
  // The most capacity (units x speed) this site may report; a heartbeat,
  // round message or report claiming more is refused (docs/security.md).
  double max_capacity = 1e6;
  // The roster drains this site: it reports capacity 0, so its pending jobs
  // leave at the next round (the first step of `hyperfedctl roster remove`).
  bool drained = false;

  bool operator==(const RosterEntry&) const = default;
};

// A lookup table of a roster's sites by id and label (positions in
// `sites`), made at the first lookup, so that a site of a large federation
// finds a peer's entry at every message without a scan
// (docs/benchmarks.md, "Federation simulation"). A copy starts without one.
// Thread-safe: a roster held const by several threads makes one table.
struct RosterLookup;
class RosterIndex {
 public:
  RosterIndex() = default;
  RosterIndex(const RosterIndex&) {}
  RosterIndex& operator=(const RosterIndex&);
  ~RosterIndex();
  // The table of `sites`, or nullptr when `sites` has changed size since it
  // was made (callers then scan). An entry it names is checked by the
  // caller; a miss is checked by a scan.
  const RosterLookup* Get(const std::vector<RosterEntry>& sites) const;

 private:
  mutable std::atomic<const RosterLookup*> table_{nullptr};
};

// The sites of the federation. Version 0 is the one in a site's YAML; the
// operators' signed rosters (docs/operations.md, "Join and leave") are
// versions 1, 2, ... and replace it.
struct Roster {
  int64_t version = 0;
  std::vector<RosterEntry> sites;
  // Sites a signed version removed: no part of the federation, kept so that
  // the migrations still in flight with them settle (their endpoint is
  // dialled for those only), also after a restart.
  std::vector<RosterEntry> departed;
  // The federation it is of (docs/design.md §6.9): a site's YAML roster is
  // of the site's `federation`; a signed one names its own, and a site takes
  // only its own federation's.
  std::string federation;
  // After this (Unix ms) a site takes a signed roster no more; 0: none (the
  // YAML's, and rosters signed before rosters expired).
  int64_t expires_unix_ms = 0;
  // The round modes a coordinator may run; empty: every mode.
  std::vector<std::string> allowed_modes;

  // Whether a coordinator may run rounds of `mode` under this roster.
  bool AllowsMode(const std::string& mode) const;
  // The smallest hypercube dimension that holds every label.
  int Dimension() const;
  const RosterEntry* FindSite(const std::string& id) const;
  const RosterEntry* FindLabel(int label) const;
  const RosterEntry* FindDeparted(const std::string& id) const;

 private:
  RosterIndex index_;
};

// Every rule a roster's sites break, as (key, why) with keys like
// "roster[2].endpoint" (`prefix` = "roster"): ids, labels and endpoints
// well formed and unique, cost >= 0, max_capacity finite and > 0. The one
// check of a roster, whether read from YAML or received signed.
std::vector<std::pair<std::string, std::string>> RosterProblems(const std::vector<RosterEntry>& sites,
                                                                const std::string& prefix);

// A site a joining daemon asks for the roster: its id (its certificate must
// name it) and endpoint.
struct Seed {
  std::string id;
  std::string endpoint;

  bool operator==(const Seed&) const = default;
};

// The most migratable pending jobs a site may report (docs/security.md):
// far above any real queue, low enough that sums over 2^20 sites stay exact.
inline constexpr int64_t kMaxReportedLoad = int64_t{1} << 32;
// The longest wait a site may say a job sent to it would have (its start
// profile, docs/algorithms.md "Jobs that gain"): a year, in ms.
inline constexpr int64_t kMaxReportedWaitMs = int64_t{366} * 24 * 3600 * 1000;

struct CapacityConfig {
  bool from_adapter = true;  // "capacity: from_adapter" (the default)
  int64_t units = 0;         // when not from the adapter: > 0
  double speed = 1.0;        // > 0

  bool operator==(const CapacityConfig&) const = default;
};

struct BalancerConfig {
  // Round mode: an entry of the registry of round modes
  // (daemon/balance/modes.h, docs/design.md §5); never null.
  const balance::RoundMode* algorithm = balance::FindRoundMode(balance::kDefaultRoundMode);
  absl::Duration interval = absl::Seconds(30);  // timer rounds; 0 = off
  int64_t underload_threshold = 0;              // a site below this many pending jobs asks for a round; 0 = off
  int64_t min_imbalance = 1;                    // skip a timer round when max_share_error < this
  absl::Duration heartbeat_interval = absl::Seconds(1);
  absl::Duration peer_timeout = absl::Seconds(5);   // no heartbeat for this long: peer down
  absl::Duration step_timeout = absl::Seconds(10);  // a round step waits this long for a peer
  int64_t max_batch = 1000;                         // jobs per Transfer call, 1..100000
  // Which jobs a round moves (docs/algorithms.md, "Jobs that gain"): those
  // whose estimated start improves most, or the most recently queued.
  balance::JobChoice job_choice = balance::JobChoice::kGain;
  // A job that arrived by a move (a round's or a placement's) this recently
  // moves again only when it starts at least placement_margin sooner.
  absl::Duration hysteresis = absl::Minutes(10);
  // Placement at arrival (docs/design.md, "Placement at arrival"): each new
  // pending job goes at once to the site where it would start first, by at
  // least placement_margin; off: this site places nothing and takes no
  // placed job (rounds still run).
  bool placement = true;
  absl::Duration placement_margin = absl::Seconds(60);

  bool operator==(const BalancerConfig&) const = default;
};

struct SchedulerConfig {
  std::string adapter = "sim";                 // registry name
  std::map<std::string, std::string> options;  // adapter options, as strings
  std::map<std::string, int> option_lines;     // the line of each option, for errors
  // The options as the adapter read them (its factory's ParseOptions), set
  // by LoadConfig given the adapters; empty for a config made in code (the
  // registry then parses `options` when it makes the adapter).
  scheduler::AdapterOptions parsed;
};

struct SecurityConfig {
  // Plain text: only for local demos, and only when site.listen and
  // site.metrics_listen are loopback addresses (docs/operations.md, "Secure").
  bool insecure = false;
  std::string cert;              // PEM: this site's certificate (names its site id)
  std::string key;               // PEM: its private key (no group or other access)
  std::string ca;                // PEM: the federation's CA
  std::string admin_token_file;  // file holding the admin bearer token (no group or other access)
  bool reflection = false;       // serve gRPC reflection (off unless configured)
  // PEM: the federation operators' public key (Ed25519). Rosters signed
  // with its private key replace the YAML roster; "" = none is accepted.
  std::string roster_key;
  int max_calls_per_peer = 16;  // Peer calls in flight per calling site; beyond: RESOURCE_EXHAUSTED
  int max_threads = 64;         // gRPC handler threads (grpc::ResourceQuota::SetMaxThreads)

  bool operator==(const SecurityConfig&) const = default;
};

// The federation a site belongs to when its config names none.
inline constexpr char kDefaultFederation[] = "default";

struct Config {
  std::string path;  // the file it was read from
  SiteConfig site;
  // The federation this site belongs to (docs/design.md §6.9): it takes only
  // signed rosters that name it. Operators whose roster key signs for more
  // than one federation give each its own name; [A-Za-z0-9._-]{1,64}.
  std::string federation = kDefaultFederation;
  // The roster in this file (version 0): every site, this one included. May
  // be empty when `seeds` are given: the site then fetches the roster.
  Roster roster;
  std::vector<Seed> seeds;
  CapacityConfig capacity;
  BalancerConfig balancer;
  SchedulerConfig scheduler;
  std::string state_dir;
  SecurityConfig security;
  // log: {level: debug|info|warning|error, format: text|json} (default info, text).
  LogOptions log;
};

// Reads and validates `path`. Relative paths inside the file (certificates,
// token file, state_dir) are taken relative to the file's folder. Given the
// scheduler adapters this binary holds, it also resolves scheduler.adapter
// and has the adapter read its options (scheduler.parsed): an unknown
// adapter or a bad option is an error naming the file and line. Without
// them (tools and tests that read only the file) those two are not checked.
absl::StatusOr<Config> LoadConfig(const std::string& path, const scheduler::AdapterRegistry* adapters = nullptr);

// Parses YAML text as if read from `path` (for tests).
absl::StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& path,
                                   const scheduler::AdapterRegistry* adapters = nullptr);

// Checks cross-field rules; the messages name keys but no line.
absl::Status Validate(const Config& c);

// True when `host_port`'s host is a loopback address: 127.0.0.0/8, ::1 or
// "localhost" (the one rule for where `insecure: true` may listen).
bool IsLoopback(const std::string& host_port);

// "" when group and others can neither read nor write `path` (a key or
// token file), else why not, naming the file and its mode.
std::string CheckSecretFileMode(const std::string& path);

// The one rule for files and folders the daemon trusts (daemon/common/trusted_path.h).
using ::hyperfed::CheckTrustedPath;

}  // namespace hyperfed::config
