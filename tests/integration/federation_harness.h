#pragma once

// Starts a real federation for tests: one hyperfedd process per site on
// 127.0.0.1 (or an address of a network namespace) with mutual TLS (certificates from scripts/gen-certs), free
// ports, a temporary folder for configs, state and logs. Processes are
// children of the test and are stopped by their PIDs.

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hyperfed/v1/hyperfed.grpc.pb.h"

namespace hyperfed::testing {

struct FederationOptions {
  int sites = 4;
  std::vector<int> slots;  // capacity (sim slots) per site; default 4 each
  std::string algorithm = "exact";
  std::string step_timeout = "5s";
  std::string peer_timeout = "2s";
  std::string heartbeat = "300ms";
  int max_batch = 1000;
  // The round-mechanics tests compare what moved with the simulator's plan
  // counts, which the daemon's default choice ("gain") treats as upper
  // bounds (a job that would not start sooner stays): they run "newest",
  // which fills every transfer. job_choice_test.cc runs "gain".
  std::string job_choice = "newest";
  std::string hysteresis = "10m";  // a job moved this recently stays (the daemon's default)
  // balancer.placement (the daemon's default is on): the round-mechanics
  // tests compare rounds with the simulator's plans, so a job must stay
  // where it was submitted until a round moves it; placement tests turn it
  // on.
  bool placement = false;
  std::string placement_margin = "60s";
  std::string interval = "0s";  // timer rounds (0s: off)
  int underload_threshold = 0;  // 0: off
  bool insecure = false;
  // State on tmpfs (/dev/shm) when there is one; false puts it under /tmp
  // (a real disk: fsync costs what it costs in production).
  bool tmpfs = true;
  // Every site reads HYPERFED_PARTITION_FILE=<dir>/partition-<i> (see
  // daemon/server/partition_hook.h), so Cut/Heal work.
  bool partition_hook = false;
  // Per site: the address it listens on and its roster endpoint
  // ("" or missing: 127.0.0.1), and the network namespace its process runs
  // in ("" or missing: the test's own), for partitions made with real links
  // (tests/integration/netns.h).
  std::vector<std::string> hosts;
  std::vector<std::string> netns;
  // A command site i's daemon runs under (empty or missing: none), e.g.
  // valgrind for the benchmark's instruction counts; it must exec the daemon
  // in its own process, so that Pid(i) stays the daemon's.
  std::vector<std::vector<std::string>> run_under;
  // How long Start waits for every site to be healthy (sites under
  // valgrind on a loaded machine take longer).
  absl::Duration healthy_timeout = absl::Seconds(30);
  // The scheduler adapter of every site. "sim" uses `slots`; any other
  // adapter gets adapter_options[i] as site i's scheduler.options.
  std::string adapter = "sim";
  // Site i's adapter when site_adapters[i] is set and not empty (a
  // federation of several schedulers: Slurm and Grid Engine); else `adapter`.
  std::vector<std::string> site_adapters;
  std::vector<std::map<std::string, std::string>> adapter_options;
  // The sim adapter's time_scale at every site: jobs run this many times
  // faster (bench/daemon_replay.cc replays traces at high scales).
  std::string time_scale = "1";
  // balancer.min_imbalance (a timer round is skipped below it); -1: the
  // daemon's default.
  int min_imbalance = -1;
  // Sites site-<sites>.. site-<sites + joining - 1> that are not in the
  // roster and not started: their configs have no roster, only site-0 as a
  // seed (docs/operations.md, "Join and leave"). Every site's config names
  // the operators' roster key (certs/roster-pub.pem; the private half is
  // RosterKey()).
  int joining = 0;
};

class TestFederation {
 public:
  static absl::StatusOr<std::unique_ptr<TestFederation>> Start(const FederationOptions& o);
  ~TestFederation();

  // Every site, the joining ones included.
  int size() const { return static_cast<int>(sites_.size()); }
  std::string SiteId(int i) const { return "site-" + std::to_string(i); }
  std::string Endpoint(int i) const;
  // Site i's HTTP port (metrics_listen: /metrics and the web view), and
  // the URL of its /metrics.
  int MetricsPort(int i) const { return sites_[i].metrics_port; }
  std::string MetricsUrl(int i) const;
  pid_t Pid(int i) const;
  const std::string& dir() const { return dir_; }
  std::string CertDir() const { return dir_ + "/certs"; }
  std::string ConfigPath(int i) const;
  std::string Token() const { return token_; }
  // The operators' roster signing key (PEM file), for hyperfedctl roster.
  std::string RosterKey() const { return dir_ + "/certs/roster-key.pem"; }

  // An Admin stub for site i, authenticated with the admin certificate.
  std::unique_ptr<v1::Admin::Stub> Admin(int i) const;
  // A new channel to site i with the admin certificate (for other services'
  // stubs).
  std::shared_ptr<grpc::Channel> Channel(int i) const;
  // A context with a deadline and the admin token.
  std::unique_ptr<grpc::ClientContext> Context(absl::Duration timeout = absl::Seconds(10)) const;

  // Starts site i's process (again), with extra environment variables.
  absl::Status StartSite(int i, const std::map<std::string, std::string>& env = {});
  // SIGKILL and reap.
  void Kill(int i);
  // SIGTERM, wait up to 5 s, then SIGKILL.
  void Stop(int i);
  bool Running(int i);
  // Waits for site i's process to exit by itself (e.g. at a crash point).
  bool WaitExit(int i, absl::Duration timeout);

  // Cuts site i off from the listed sites (both directions need a Cut at
  // each end) / restores every link of site i.
  void Cut(int i, const std::vector<int>& from);
  void Heal(int i);

  // Every running site answers Status and sees `expected_up` others up.
  absl::Status WaitHealthy(absl::Duration timeout, int expected_up = -1);
  // The tail of site i's log.
  std::string Log(int i) const;

 private:
  TestFederation() = default;
  struct Site {
    int port = 0;
    int metrics_port = 0;
    pid_t pid = -1;
  };
  std::string Host(int i) const;
  std::string dir_;
  std::string token_;
  std::vector<Site> sites_;
  FederationOptions opts_;
};

// A whole file's text ("" when it cannot be read).
std::string ReadFile(const std::string& path);

// Paths set by CMake.
std::string HyperfeddPath();
std::string HyperfedctlPath();
std::string SourceDir();

}  // namespace hyperfed::testing
