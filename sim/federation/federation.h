#pragma once

// `hyperfed-sim federation`: a whole federation of hyperfedd sites in one
// deterministic world (docs/design.md §10). Each site is the daemon's own
// SiteStack (sim scheduler, SQLite journal, migrator, Site with its
// membership, participant and coordinator) and the server's PeerHandlers,
// wired to a simulated network and clock. An operator drives rounds; the
// seed draws the load, the interleaving and the faults of its profile; the
// invariants of the issue are checked while it runs and at the end.
//
// A run of one seed leaves tasks of crashed sites behind (World), so it
// runs in a process of its own (RunSeeds forks one per seed).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "daemon/balance/choice.h"

namespace hyperfed::fedsim {

struct FederationOptions {
  int sites = 8;       // positions of the cube: the smallest cube that holds them
  uint64_t seed = 1;
  std::string faults = "none";  // a profile: none, crash, network, all
  int rounds = 3;               // the last one after the faults stop
  std::string algorithm = "exact";
  balance::JobChoice job_choice = balance::JobChoice::kGain;  // the daemon's default (config::BalancerConfig)
  absl::Duration latency = absl::Milliseconds(2);  // per message, one way
  int jobs_per_site = 40;                          // on average, at the start
  // balancer.heartbeat_interval (peer_timeout: 5 of them); zero:
  // HeartbeatFor(sites).
  absl::Duration heartbeat = absl::ZeroDuration();
  std::string state_root;                          // each site's state_dir is made in it
  size_t trace_lines = 400;                        // kept for a failing seed
  bool full_trace = false;                         // every line, for every seed (replaying one)
};

// The fault profiles and what each draws (docs/design.md §10).
std::vector<std::string> FaultProfiles();

// The heartbeat interval the simulation gives N sites unless told: 1 s,
// the default, at any size since the probes go along the cube
// (docs/operations.md, "Large federations").
absl::Duration HeartbeatFor(int sites);

struct RoundStats {
  int number = 0;
  std::string id;  // "" when it did not start
  std::string end;  // "finished", "ended early: ...", "not started: ...", "lost with its coordinator"
  bool clean = false;  // after the faults stopped
  int live_sites = 0;
  int64_t moved = 0;
  double share_error_before = 0, share_error_after = 0;
  int64_t messages = 0;  // round messages (every call but heartbeats), requests
  int64_t bytes = 0;     // their requests and replies
  int64_t largest = 0;   // the largest message
  int64_t heartbeats = 0, heartbeat_bytes = 0;
  // Bytes a site sent and received in the round (SimNet::SiteTraffic),
  // round messages and heartbeats apart: the mean over the sites up at its
  // start, and the most of any site.
  double site_round_bytes = 0, site_heartbeat_bytes = 0;
  int64_t max_site_round_bytes = 0, max_site_heartbeat_bytes = 0;
  double seconds = 0;           // start to end, simulated
  double deadline_seconds = 0;  // start to deadline
};

struct SeedResult {
  uint64_t seed = 0;
  int positions = 0, sites = 0, dimension = 0;
  std::vector<RoundStats> rounds;
  int64_t jobs = 0;
  int64_t crashes = 0, restarts = 0, pauses = 0, partitions = 0, drains = 0, submitted = 0;
  // What the membership (all-to-all heartbeats) costs and how it detects,
  // as its Heartbeater reports peers going up and down (docs/design.md §10):
  int64_t heartbeats_sent = 0;      // requests, over the whole run
  double serving_seconds = 0;       // summed over sites: time their loops ran
  std::vector<double> known_after;  // per crash: seconds until every live site had it down
  std::vector<double> neighbours_after;  // per crash: ... every live cube neighbour of it
  int64_t crashes_unknown = 0;      // crashes not known everywhere before the restart (or the end)
  int64_t downs = 0;                // a site's view taking a peer from up to down
  int64_t false_downs = 0;          // ... with no fault to explain it
  double HeartbeatsPerSiteSecond() const { return serving_seconds > 0 ? heartbeats_sent / serving_seconds : 0; }
  std::vector<std::string> violations;
  uint64_t trace_hash = 0;
  std::vector<std::string> trace;  // the last lines (all of them with trace_lines 0)
  double cpu_seconds = 0;
  double simulated_seconds = 0;
  int64_t steps = 0, tasks = 0;
};

// Runs one seed in this process (which it leaves with the crashed sites'
// tasks and state behind: see above). If the simulation itself breaks
// (World::Fatal) before the end, `stopped` gets the result so far, its
// violation saying why, just before the process ends.
SeedResult RunFederation(const FederationOptions& options,
                         const std::function<void(const SeedResult&)>& stopped = nullptr);

// Runs seeds [first, last] in order, each in a child process (its state in
// options.state_root/seed-N, removed after), and hands each result to
// `each`. A child that dies is a seed with a violation saying how. The
// trace comes back only for a seed with violations.
void RunSeeds(const FederationOptions& options, uint64_t first, uint64_t last,
              const std::function<void(SeedResult)>& each);

}  // namespace hyperfed::fedsim
