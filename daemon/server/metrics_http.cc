#include "daemon/server/metrics_http.h"

#include <httplib.h>

#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hyperfed::server {

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& listen,
                                                                    std::function<std::string()> render,
                                                                    absl::Duration refresh,
                                                                    const std::function<void(httplib::Server*)>& routes,
                                                                    const Env* env) {
  std::string host;
  int port = 0;
  if (!listen.empty() && listen[0] == '[') {
    const size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':' ||
        !absl::SimpleAtoi(listen.substr(close + 2), &port))
      return absl::InvalidArgumentError(absl::StrCat("metrics_listen '", listen, "': expected host:port"));
    host = listen.substr(1, close - 1);
  } else {
    const size_t colon = listen.rfind(':');
    if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port))
      return absl::InvalidArgumentError(absl::StrCat("metrics_listen '", listen, "': expected host:port"));
    host = listen.substr(0, colon);
  }
  if (port < 0 || port > 65535)
    return absl::InvalidArgumentError(absl::StrCat("metrics_listen '", listen, "': port out of range"));
  if (host.empty() || host == "localhost") host = "127.0.0.1";
  if (host == "*") host = "0.0.0.0";

  std::unique_ptr<MetricsServer> s(new MetricsServer);
  s->env_ = env;
  s->refresh_ = refresh;
  s->render_ = std::move(render);
  s->text_ = s->render_();
  s->http_ = std::make_unique<httplib::Server>();
  httplib::Server& h = *s->http_;
  h.new_task_queue = [] { return new httplib::ThreadPool(kMetricsThreads); };
  const auto read_timeout = absl::ToChronoMicroseconds(kMetricsReadTimeout);
  h.set_read_timeout(read_timeout);
  h.set_write_timeout(std::chrono::seconds(5));
  h.set_keep_alive_timeout(1);
  h.set_keep_alive_max_count(10);
  h.set_payload_max_length(4096);  // a scrape has no body
  // httplib's default sets SO_REUSEPORT, which would let a second process
  // bind the same port: SO_REUSEADDR only (a restart rebinds at once), so a
  // port in use is an error.
  h.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  MetricsServer* raw = s.get();
  h.Get("/metrics", [raw](const httplib::Request&, httplib::Response& res) {
    res.set_content(raw->Current(), "text/plain; version=0.0.4");
  });
  if (routes) routes(&h);
  h.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404) res.set_content("try /metrics\n", "text/plain");
  });
  const int bound = port == 0 ? h.bind_to_any_port(host) : (h.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) return absl::UnavailableError(absl::StrCat("metrics endpoint ", listen, ": cannot listen (in use?)"));
  s->port_ = bound;
  s->listener_ = env->StartThread([raw] { raw->http_->listen_after_bind(); });
  // stop() is a no-op until the listener runs: wait for it, so that a
  // shutdown right after the start cannot miss it.
  for (int i = 0; i < 2000 && !h.is_running(); ++i) env->SleepFor(absl::Milliseconds(1));
  s->refresher_ = env->StartThread([raw] { raw->RefreshLoop(); });
  return s;
}

MetricsServer::~MetricsServer() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (refresher_) refresher_->Join();
  if (http_) http_->stop();
  if (listener_) listener_->Join();
}

std::string MetricsServer::Current() const {
  std::lock_guard<std::mutex> l(mu_);
  return text_;
}

void MetricsServer::RefreshLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!env_->WaitFor(l, cv_, refresh_, [this] { return stop_; })) {
    l.unlock();
    std::string text = render_();  // may run scheduler commands: never under mu_
    l.lock();
    text_ = std::move(text);
  }
}

}  // namespace hyperfed::server
