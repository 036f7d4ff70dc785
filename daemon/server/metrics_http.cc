#include "daemon/server/metrics_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hyperfed::server {

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& listen,
                                                                    std::function<std::string()> render) {
  auto colon = listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 || port > 65535)
    return absl::InvalidArgumentError(absl::StrCat("metrics_listen '", listen, "': expected host:port"));
  std::string host = listen.substr(0, colon);
  if (host.empty() || host == "localhost") host = "127.0.0.1";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (host == "0.0.0.0" || host == "*") {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("metrics_listen '", listen, "': expected an IPv4 address"));
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0) {
    std::string err = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(absl::StrCat("metrics endpoint ", listen, ": ", err));
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::unique_ptr<MetricsServer> s(new MetricsServer);
  s->fd_ = fd;
  s->port_ = ntohs(addr.sin_port);
  s->render_ = std::move(render);
  s->thread_ = std::thread([p = s.get()] { p->Loop(); });
  return s;
}

MetricsServer::~MetricsServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
}

void MetricsServer::Loop() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    timeval tv{2, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[2048];
    ssize_t n = recv(c, buf, sizeof buf - 1, 0);
    std::string req = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    std::string body, status = "200 OK";
    if (req.rfind("GET /metrics", 0) == 0) {
      body = render_();
    } else {
      status = "404 Not Found";
      body = "try /metrics\n";
    }
    std::string resp = absl::StrCat("HTTP/1.0 ", status,
                                    "\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: ", body.size(),
                                    "\r\nConnection: close\r\n\r\n", body);
    size_t off = 0;
    while (off < resp.size()) {
      ssize_t w = send(c, resp.data() + off, resp.size() - off, MSG_NOSIGNAL);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    close(c);
  }
}

}  // namespace hyperfed::server
