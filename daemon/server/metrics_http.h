#pragma once

// A minimal HTTP/1.0 endpoint serving Prometheus' text format at /metrics.
// One thread accepts and answers one request per connection.

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace hyperfed::server {

class MetricsServer {
 public:
  // Binds "host:port" (port 0 picks one) and serves render() at /metrics.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& listen,
                                                              std::function<std::string()> render);
  ~MetricsServer();
  int port() const { return port_; }

 private:
  MetricsServer() = default;
  void Loop();

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::function<std::string()> render_;
  std::thread thread_;
};

}  // namespace hyperfed::server
