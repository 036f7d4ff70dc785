#pragma once

// Helpers for tests that run one hyperfedd of their own (not a
// TestFederation): a temporary folder, a port held by another socket, a
// one-site config, a daemon process stopped by its PID.

#include <sys/types.h>

#include <string>

#include "absl/time/time.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {

// A temporary folder under /tmp, removed with everything in it at the end.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A TCP socket listening on 127.0.0.1: its port is in use for anyone else.
// With reuse_port it sets SO_REUSEPORT, as a daemon that lets others share
// its port does.
class Listener {
 public:
  explicit Listener(bool reuse_port = false);
  ~Listener();
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A hyperfedd process of the test's, its stdout and stderr in `log`;
// stopped by its PID (SIGTERM) at the end if still running.
class DaemonProcess {
 public:
  DaemonProcess(const std::string& config, std::string log);
  ~DaemonProcess();
  pid_t pid() const { return pid_; }
  std::string Log() const;
  // Whether its log says `text` within `timeout`.
  bool WaitLog(const std::string& text, absl::Duration timeout = absl::Seconds(30)) const;
  bool Running();
  // SIGTERM and reap; its exit status (-1 when it did not exit by itself).
  int Stop();

 private:
  std::string log_;
  pid_t pid_ = -1;
  int status_ = 0;
  bool exited_ = false;
};

// A one-site insecure config at <dir>/site.yaml listening on
// 127.0.0.1:port, the sim adapter unless `more` says otherwise; returns its
// path.
std::string SiteConfig(const std::string& dir, int port, const std::string& state_dir, const std::string& more = "",
                       const std::string& metrics_listen = "");

// hyperfedd with `args`, run from the source folder, killed after 30 s (a
// daemon that should not have started).
Out RunDaemon(const std::string& args);

// The last line of a text.
std::string LastLine(const std::string& text);

}  // namespace hyperfed::testing
