#pragma once

// A real single-node Slurm for tests: scripts/slurm-cluster up/down under a
// temporary folder, on free ports. Used by tests/scheduler and
// tests/integration. The processes are stopped by their PIDs (the script
// keeps them) when the object goes away.

#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "daemon/scheduler/subprocess.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace hyperfed::testing {

// A file's text ("" when it cannot be read).
inline std::string ReadText(const std::string& path) {
  std::string out;
  FILE* f = fopen(path.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  fclose(f);
  return out;
}

// "" when Slurm's daemons are installed, else why the test must skip.
inline std::string SlurmMissing();

// "" when Slurm and its job_submit/lua plugin are installed, else why a
// test of the placement window must skip.
inline std::string SlurmLuaMissing() {
  if (std::string why = SlurmMissing(); !why.empty()) return why;
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib/aarch64-linux-gnu/slurm-wlm",
                          "/usr/lib/slurm-wlm", "/usr/lib64/slurm", "/usr/lib/slurm"})
    if (access(absl::StrCat(dir, "/job_submit_lua.so").c_str(), R_OK) == 0) return "";
  return "job_submit_lua.so is not installed (scripts/setup installs slurm-wlm-basic-plugins)";
}

inline std::string SlurmMissing() {
  for (const char* b : {"slurmctld", "slurmd", "munged", "sbatch", "squeue"}) {
    bool found = false;
    for (const char* dir : {"/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin"})
      found = found || access(absl::StrCat(dir, "/", b).c_str(), X_OK) == 0;
    if (!found) return absl::StrCat(b, " is not installed (scripts/setup installs slurm-wlm and munge)");
  }
  return "";
}

class SlurmCluster {
 public:
  // Starts cluster `name` with `cpus` CPUs on its one node; with
  // placement_window_s > 0, with hyperfed's job_submit.lua and that window
  // (scripts/slurm-cluster --placement-window).
  static absl::StatusOr<std::unique_ptr<SlurmCluster>> Start(const std::string& name, int cpus = 4,
                                                             int placement_window_s = 0) {
    std::unique_ptr<SlurmCluster> c(new SlurmCluster);
    std::string tmpl = (std::filesystem::temp_directory_path() / "hyperfed-slurm-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return absl::InternalError("mkdtemp failed");
    c->root_ = tmpl;
    // munged wants every folder above its socket searchable by all.
    chmod(tmpl.c_str(), 0755);
    c->name_ = name;
    // slurmctld on P, slurmd on P+1: both must be free.
    std::mt19937 rng(static_cast<unsigned>(getpid()) * 7919u + static_cast<unsigned>(time(nullptr)));
    for (int attempt = 0; attempt < 50 && c->port_ == 0; ++attempt) {
      const int p = 20000 + static_cast<int>(rng() % 30000) * 1;
      if (PortFree(p) && PortFree(p + 1)) c->port_ = p;
    }
    if (c->port_ == 0) return absl::InternalError("no free port pair for slurm");
    std::vector<std::string> args = {"up", name, std::to_string(c->port_), std::to_string(cpus)};
    if (placement_window_s > 0) args.push_back(absl::StrCat("--placement-window=", placement_window_s));
    auto r = c->Script(args);
    if (!r.ok()) return r.status();
    c->conf_ = std::string(absl::StripAsciiWhitespace(r->out));
    c->up_ = true;
    return c;
  }

  ~SlurmCluster() {
    if (up_) (void)Script({"down", name_});
    if (getenv("HYPERFED_KEEP_TEST_DIR") == nullptr) {
      std::error_code ec;
      std::filesystem::remove_all(root_, ec);
    }
  }

  const std::string& conf() const { return conf_; }
  const std::string& name() const { return name_; }
  std::string dir() const { return root_ + "/" + name_; }
  int port() const { return port_; }

  // A Slurm command against this cluster; fails on a non-zero exit.
  absl::StatusOr<scheduler::CommandResult> Cmd(std::vector<std::string> argv, std::string stdin_text = "",
                                               std::string cwd = "") const {
    scheduler::CommandSpec spec{.argv = argv,
                                .stdin_text = std::move(stdin_text),
                                .env = {{"SLURM_CONF", conf_}},
                                .cwd = std::move(cwd),
                                .timeout = absl::Seconds(30)};
    auto r = scheduler::RunCommand(spec);
    if (!r.ok()) return r.status();
    if (r->exit_code != 0) return scheduler::CommandFailure(argv, *r);
    return r;
  }

  // slurmctld's PID (to stop and continue it).
  pid_t CtldPid() const {
    std::string s;
    FILE* f = fopen((dir() + "/slurmctld.launch.pid").c_str(), "r");
    if (!f) return -1;
    char buf[32] = {0};
    if (fgets(buf, sizeof buf, f) == nullptr) buf[0] = 0;
    fclose(f);
    return static_cast<pid_t>(atoi(buf));
  }

 private:
  SlurmCluster() = default;

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
    std::vector<std::string> argv = {"bash", std::string(HYPERFED_SOURCE_DIR) + "/scripts/slurm-cluster"};
    argv.insert(argv.end(), args.begin(), args.end());
    scheduler::CommandSpec spec{.argv = argv, .env = {{"HYPERFED_SLURM_ROOT", root_}}, .timeout = absl::Seconds(90)};
    auto r = scheduler::RunCommand(spec);
    if (!r.ok()) return r.status();
    if (r->exit_code != 0) return scheduler::CommandFailure(argv, *r);
    return r;
  }

  std::string root_, name_, conf_;
  int port_ = 0;
  bool up_ = false;
};

// What squeue says of one job (found false when it lists no such job).
struct SlurmJobView {
  bool found = false;
  std::string state, reason, admin_comment, comment;
  int64_t eligible_s = 0, start_s = 0;
};
inline SlurmJobView SqueueJob(const SlurmCluster& c, const std::string& id) {
  SlurmJobView v;
  auto r = c.Cmd({"squeue", "--json"});
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return v;
  const nlohmann::json doc = nlohmann::json::parse(r->out);
  for (const auto& j : doc["jobs"]) {
    if (absl::StrCat(j["job_id"].get<int64_t>()) != id) continue;
    v.found = true;
    v.state = j["job_state"].get<std::string>();
    v.reason = j["state_reason"].get<std::string>();
    v.admin_comment = j["admin_comment"].get<std::string>();
    v.comment = j["comment"].get<std::string>();
    v.eligible_s = j["eligible_time"].get<int64_t>();
    v.start_s = j["start_time"].get<int64_t>();
  }
  return v;
}

}  // namespace hyperfed::testing
