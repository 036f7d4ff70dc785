// hyperfedd: the hyperfed daemon, one per site.
//
//   hyperfedd --config FILE [--check]
//   hyperfedd --settings    (the reference table of every setting, Markdown)

#include <sys/stat.h>

#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "config/config.h"
#include "config/settings.h"
#include "daemon/common/log.h"
#include "daemon/scheduler/exec_adapter.h"
#include "daemon/scheduler/gridengine_adapter.h"
#include "daemon/scheduler/registry.h"
#include "daemon/scheduler/sim_adapter.h"
#include "daemon/scheduler/slurm_adapter.h"
#include "daemon/server/daemon.h"

namespace {

constexpr char kUsage[] = "usage: hyperfedd --config FILE [--check] | --settings\n";

int Usage(const std::string& msg) {
  std::cerr << "hyperfedd: " << msg << "\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Every file the daemon makes (the journal, the sim adapter's queue, their
  // WAL files) is its account's alone: 0600 in a 0700 state_dir
  // (docs/operations.md, "Secure"). Commands an adapter runs inherit it.
  umask(077);
  // Debian's Abseil is built without NDEBUG, so every absl::Mutex (gRPC's
  // locks are) would keep a lock-order graph: about 5 % of a round's CPU in a
  // profile (docs/benchmarks.md, "Round latency"). The tests' builds check
  // lock order; a running daemon does not.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  std::string config_path;
  bool check = false;
  CLI::App app("the hyperfed daemon, one per site", "hyperfedd");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.allow_extras();  // a word nobody takes is reported below, before a missing --config
  bool settings = false;
  app.add_option("--config", config_path, "the site's configuration (YAML)")->type_name("FILE");
  app.add_flag("--check", check, "check the configuration and exit");
  app.add_flag("--settings", settings, "print the reference table of every setting (docs/operations.md) and exit");
  std::string error;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << kUsage;
    return 0;
  } catch (const CLI::ParseError& e) {
    error = e.what();
  }
  if (auto extra = app.remaining(); !extra.empty()) return Usage("unknown argument '" + extra.front() + "'");
  if (!error.empty()) return Usage(error);
  if (settings) {
    std::cout << hyperfed::config::SettingsReference();
    return 0;
  }
  if (config_path.empty()) return Usage("--config FILE is required");
  // The scheduler adapters this binary holds, one line each (a new adapter:
  // its own files under daemon/scheduler/ and one line here).
  namespace sched = hyperfed::scheduler;
  sched::AdapterRegistry adapters;
  (void)adapters.Register(std::make_unique<sched::SimAdapterFactory>());
  (void)adapters.Register(std::make_unique<sched::ExecAdapterFactory>());
  (void)adapters.Register(std::make_unique<sched::SlurmAdapterFactory>());
  (void)adapters.Register(std::make_unique<sched::GridEngineAdapterFactory>());
  auto config = hyperfed::config::LoadConfig(config_path, &adapters);
  if (!config.ok()) {
    std::cerr << "hyperfedd: " << config.status().message() << "\n";
    return 2;
  }
  if (auto st = hyperfed::server::CheckRuntime(*config); !st.ok()) {
    std::cerr << "hyperfedd: " << st.message() << "\n";
    return 2;
  }
  if (check) {
    if (config->roster.sites.empty()) {
      std::cout << config_path << ": OK (site " << config->site.id << ", joins with " << config->seeds.size()
                << " seed" << (config->seeds.size() == 1 ? "" : "s") << ")\n";
    } else {
      std::cout << config_path << ": OK (site " << config->site.id << ", label " << config->site.label << ", "
                << config->roster.sites.size() << " sites in a " << config->roster.Dimension() << "-cube)\n";
    }
    if (config->security.insecure)
      std::cout << config_path << ": WARNING: insecure: true: plain text, peers and operators not authenticated "
                << "(allowed on loopback only; local demos only)\n";
    return 0;
  }
  // SIGTERM and SIGINT end the daemon cleanly, SIGHUP reloads the config
  // file (docs/operations.md, "Reload"); the main thread waits for them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto daemon = hyperfed::server::Daemon::Create(*config, &adapters);
  if (!daemon.ok()) {
    std::cerr << "hyperfedd: " << daemon.status().message() << "\n";
    return 1;
  }
  auto port = (*daemon)->Start();
  if (!port.ok()) {
    std::cerr << "hyperfedd: " << port.status().message() << "\n";
    return 1;
  }
  int sig = 0;
  while (sigwait(&set, &sig) == 0 && sig == SIGHUP) {
    auto changed = (*daemon)->Reload(config_path);
    if (changed.ok()) {
      hyperfed::LogInfo("reloaded " + config_path + ": " + *changed);
    } else {
      hyperfed::LogError(std::string(changed.status().message()));
    }
  }
  hyperfed::LogInfo(std::string(strsignal(sig)) + ": shutting down");
  (*daemon)->Shutdown();
  return 0;
}
