#include "tests/integration/daemon_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/federation_harness.h"

namespace hyperfed::testing {

TempDir::TempDir() {
  char d[] = "/tmp/hyperfedd-test-XXXXXX";
  path_ = mkdtemp(d) ? d : "";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

Listener::Listener(bool reuse_port) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  int yes = 1;
  if (reuse_port) setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof yes);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  if (bind(fd_, reinterpret_cast<sockaddr*>(&a), n) == 0 && listen(fd_, 1) == 0 &&
      getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &n) == 0)
    port_ = ntohs(a.sin_port);
}

Listener::~Listener() { close(fd_); }

DaemonProcess::DaemonProcess(const std::string& config, std::string log) : log_(std::move(log)) {
  pid_ = fork();
  if (pid_ == 0) {
    const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    execl(HyperfeddPath().c_str(), "hyperfedd", "--config", config.c_str(), nullptr);
    _exit(127);
  }
}

DaemonProcess::~DaemonProcess() {
  if (Running()) Stop();
}

std::string DaemonProcess::Log() const { return ReadFile(log_); }

bool DaemonProcess::WaitLog(const std::string& text, absl::Duration timeout) const {
  for (absl::Time end = absl::Now() + timeout; absl::Now() < end;
       std::this_thread::sleep_for(std::chrono::milliseconds(50)))
    if (absl::StrContains(Log(), text)) return true;
  return false;
}

bool DaemonProcess::Running() {
  if (pid_ <= 0 || exited_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
  return !exited_;
}

int DaemonProcess::Stop() {
  if (Running()) {
    kill(pid_, SIGTERM);
    waitpid(pid_, &status_, 0);
    exited_ = true;
  }
  return WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
}

std::string SiteConfig(const std::string& dir, int port, const std::string& state_dir, const std::string& more,
                       const std::string& metrics_listen) {
  const std::string path = dir + "/site.yaml";
  std::ofstream(path) << "site: {id: site-a, label: 0, listen: \"127.0.0.1:" << port << "\""
                      << (metrics_listen.empty() ? "" : ", metrics_listen: \"" + metrics_listen + "\"") << "}\n"
                      << "roster:\n"
                      << "  - {id: site-a, label: 0, endpoint: \"127.0.0.1:" << port << "\"}\n"
                      << "state_dir: " << state_dir << "\n"
                      << "security: {insecure: true}\n"
                      << more;
  return path;
}

Out RunDaemon(const std::string& args) {
  return Shell(absl::StrCat("cd ", SourceDir(), " && timeout -s KILL 30 ", HyperfeddPath(), " ", args));
}

std::string LastLine(const std::string& text) {
  std::string t = text;
  if (!t.empty() && t.back() == '\n') t.pop_back();
  return t.substr(t.rfind('\n') == std::string::npos ? 0 : t.rfind('\n') + 1);
}

}  // namespace hyperfed::testing
