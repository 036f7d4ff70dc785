#pragma once

// A real single-node Grid Engine for tests: scripts/gridengine-cluster
// up/down under a temporary folder, on free ports. Used by tests/scheduler
// and tests/integration. The daemons are stopped by their PIDs (the script
// keeps them) when the object goes away.

#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "daemon/scheduler/subprocess.h"

namespace hyperfed::testing {

// "" when Grid Engine's daemons and commands are installed and this process
// may start them (root: execd runs each job as its owner), else why a test
// must skip.
inline std::string GridEngineMissing() {
  for (const char* b : {"/usr/lib/gridengine/sge_qmaster", "/usr/lib/gridengine/sge_execd", "/usr/bin/qsub",
                        "/usr/bin/qstat", "/usr/bin/setpriv"}) {
    if (access(b, X_OK) != 0)
      return absl::StrCat(b,
                          " is not installed (scripts/setup installs gridengine-master, gridengine-exec, "
                          "gridengine-client and util-linux)");
  }
  if (geteuid() != 0) return "Grid Engine's execd must run as root to run jobs as their owners; run the tests as root";
  return "";
}

class GridEngineCluster {
 public:
  // Starts cluster `name` with `slots` slots on its one host.
  static absl::StatusOr<std::unique_ptr<GridEngineCluster>> Start(const std::string& name, int slots = 4) {
    std::unique_ptr<GridEngineCluster> c(new GridEngineCluster);
    std::string tmpl = (std::filesystem::temp_directory_path() / "hyperfed-ge-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return absl::InternalError("mkdtemp failed");
    c->root_ = tmpl;
    chmod(tmpl.c_str(), 0755);
    c->name_ = name;
    // sge_qmaster on P, sge_execd on P+1: both must be free.
    std::mt19937 rng(static_cast<unsigned>(getpid()) * 7919u + static_cast<unsigned>(time(nullptr)) + 17u);
    for (int attempt = 0; attempt < 50 && c->port_ == 0; ++attempt) {
      const int p = 20000 + static_cast<int>(rng() % 30000);
      if (PortFree(p) && PortFree(p + 1)) c->port_ = p;
    }
    if (c->port_ == 0) return absl::InternalError("no free port pair for Grid Engine");
    auto r = c->Script({"up", name, std::to_string(c->port_), std::to_string(slots)});
    if (!r.ok()) return r.status();
    c->up_ = true;
    return c;
  }

  ~GridEngineCluster() {
    if (up_) (void)Script({"down", name_});
    if (getenv("HYPERFED_KEEP_TEST_DIR") == nullptr) {
      std::error_code ec;
      std::filesystem::remove_all(root_, ec);
    }
  }

  const std::string& name() const { return name_; }
  std::string sge_root() const { return root_ + "/" + name_; }
  int port() const { return port_; }

  // The adapter's options that point at this cluster.
  std::map<std::string, std::string> Options() const {
    return {
        {"sge_root", sge_root()}, {"qmaster_port", std::to_string(port_)}, {"execd_port", std::to_string(port_ + 1)}};
  }
  // The environment Grid Engine's commands need for this cluster.
  std::map<std::string, std::string> Env() const {
    return {{"SGE_ROOT", sge_root()},
            {"SGE_CELL", "default"},
            {"SGE_QMASTER_PORT", std::to_string(port_)},
            {"SGE_EXECD_PORT", std::to_string(port_ + 1)}};
  }

  // A Grid Engine command against this cluster, as root; fails on a
  // non-zero exit.
  absl::StatusOr<scheduler::CommandResult> Cmd(std::vector<std::string> argv, std::string stdin_text = "",
                                               std::string cwd = "") const {
    scheduler::CommandSpec spec{.argv = argv,
                                .stdin_text = std::move(stdin_text),
                                .env = Env(),
                                .cwd = std::move(cwd),
                                .timeout = absl::Seconds(30)};
    auto r = scheduler::RunCommand(spec);
    if (!r.ok()) return r.status();
    if (r->exit_code != 0) return scheduler::CommandFailure(argv, *r);
    return r;
  }

 private:
  GridEngineCluster() = default;

  static bool PortFree(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    return ok;
  }

  absl::StatusOr<scheduler::CommandResult> Script(std::vector<std::string> args) const {
    std::vector<std::string> argv = {"bash", std::string(HYPERFED_SOURCE_DIR) + "/scripts/gridengine-cluster"};
    argv.insert(argv.end(), args.begin(), args.end());
    scheduler::CommandSpec spec{
        .argv = argv, .env = {{"HYPERFED_GRIDENGINE_ROOT", root_}}, .timeout = absl::Seconds(120)};
    auto r = scheduler::RunCommand(spec);
    if (!r.ok()) return r.status();
    if (r->exit_code != 0) return scheduler::CommandFailure(argv, *r);
    return r;
  }

  std::string root_, name_;
  int port_ = 0;
  bool up_ = false;
};

}  // namespace hyperfed::testing
