#pragma once

// The web view and its JSON API (docs/operations.md, "Web view"), on the
// metrics port.
//
// The API is the Admin service in protobuf's JSON mapping: each
// GET /api/v1/<call> makes that Admin call over an in-process channel to
// this daemon's own gRPC server, carrying the bearer token the browser sent.
// So who may call, which arguments are valid and what comes back are the
// Admin service's own, exactly what hyperfedctl gets; this file only maps
// query parameters to requests and gRPC codes to HTTP statuses. The page
// (daemon/server/web/) is compiled into the binary and loads nothing from
// anywhere else.
//
// Who may connect is `site.web`: "loopback" (the default) answers clients on
// this machine only, "on" any client that reaches the port, "off" nobody.
// Thread-safe: the handlers share nothing but the channel.

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

namespace httplib {
class Server;
}

namespace hyperfed::server {

enum class WebAccess { kOff, kLoopback, kOn };

class WebView {
 public:
  WebView(std::shared_ptr<grpc::Channel> admin, WebAccess access) : admin_(std::move(admin)), access_(access) {}
  // Adds the page, its assets and /api/v1/* to `http`.
  void Register(httplib::Server* http) const;

 private:
  std::shared_ptr<grpc::Channel> admin_;
  WebAccess access_;
};

// "::1", "127.0.0.5", "::ffff:127.0.0.1": a client on this machine.
bool IsLoopbackClient(const std::string& remote_addr);

}  // namespace hyperfed::server
