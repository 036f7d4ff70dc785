#pragma once

// The web view and its JSON API (docs/operations.md, "Web view"), on the
// metrics port.
//
// The API is the Admin service as JSON: each GET /api/v1/<call> makes that
// Admin call over an in-process channel to this daemon's own gRPC server,
// carrying the bearer token the browser sent, and answers the reply as
// protojson::Encode writes it, the encoder hyperfedctl --json prints with.
// So who may call, which arguments are valid and what comes back are the
// Admin service's own, exactly what hyperfedctl gets, in the same JSON; this
// file only maps query parameters to requests and gRPC codes to HTTP
// statuses. The page
// (daemon/server/web/) is compiled into the binary and loads nothing from
// anywhere else.
//
// Who may connect is `site.web`: "loopback" (the default) answers clients on
// this machine only, "on" any client that reaches the port, "off" nobody.
// Thread-safe: the handlers share nothing but the channel.

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"

namespace httplib {
class Server;
}

namespace hyperfed::server {

using config::WebAccess;  // site.web

// Whether a request's Host header (with or without a port) names this page:
// an IP address, "localhost", or one of `hosts` (case-insensitive). Any
// other name is refused, so that a page an attacker's name resolves to this
// address (DNS rebinding) gets nothing, loopback or not. An empty Host
// (HTTP/1.0) is refused too.
bool WebHostAllowed(const std::string& host_header, const std::vector<std::string>& hosts);

class WebView {
 public:
  // `hosts`: the names the page answers to besides IP addresses and
  // "localhost" (site.web_hosts; WebHostAllowed).
  WebView(std::shared_ptr<grpc::Channel> admin, WebAccess access, std::vector<std::string> hosts = {})
      : admin_(std::move(admin)), access_(access), hosts_(std::move(hosts)) {}
  // Adds the page, its assets and /api/v1/* to `http`.
  void Register(httplib::Server* http) const;

 private:
  std::shared_ptr<grpc::Channel> admin_;
  WebAccess access_;
  std::vector<std::string> hosts_;
};

// "::1", "127.0.0.5", "::ffff:127.0.0.1": a client on this machine.
bool IsLoopbackClient(const std::string& remote_addr);

}  // namespace hyperfed::server
