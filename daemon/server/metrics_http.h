#pragma once

// The daemon's HTTP port: Prometheus's text format at /metrics (and the web
// view, daemon/server/web.h), served by cpp-httplib
// (Debian's libcpp-httplib) from a fixed pool of kMetricsThreads threads.
//
// A scrape never runs the render function: a background thread renders
// every `refresh` and the handlers serve the last text, so a scrape costs
// no scheduler command (squeue, sinfo) and one slow render delays no
// scrape. A connection that sends no complete request within
// kMetricsReadTimeout is closed, so idle connections hold a pool thread
// for at most that long (docs/operations.md, "Watch").

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/common/env.h"

namespace httplib {
class Server;
}

namespace hyperfed::server {

inline constexpr int kMetricsThreads = 8;
inline constexpr absl::Duration kMetricsReadTimeout = absl::Seconds(1);

class MetricsServer {
 public:
  // Renders once, binds "host:port" (port 0 picks one) and serves the text
  // at /metrics, refreshed every `refresh`; `routes`, when given, adds more
  // handlers (the web view, daemon/server/web.h) before it listens. Its
  // listener and its refresh loop are threads of `env` (docs/design.md §9).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& listen, std::function<std::string()> render, absl::Duration refresh = absl::Seconds(2),
      const std::function<void(httplib::Server*)>& routes = nullptr, const Env* env = RealEnv::Get());
  ~MetricsServer();
  int port() const { return port_; }

 private:
  MetricsServer() = default;
  void RefreshLoop();
  std::string Current() const;

  int port_ = 0;
  absl::Duration refresh_;
  std::function<std::string()> render_;
  std::unique_ptr<httplib::Server> http_;
  const Env* env_ = nullptr;
  std::unique_ptr<EnvThread> listener_, refresher_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::string text_;   // guarded by mu_: the last render
};

}  // namespace hyperfed::server
