#include "daemon/server/peer_limits.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace hyperfed::server {
namespace {

constexpr char kPeerServicePrefix[] = "/hyperfed.v1.Peer/";

class PeerCallInterceptor : public grpc::experimental::Interceptor {
 public:
  PeerCallInterceptor(PeerCallLimiter* limiter, grpc::experimental::ServerRpcInfo* info)
      : limiter_(limiter), info_(info) {}

  ~PeerCallInterceptor() override {
    if (!recorded_) return;
    limiter_->Forget(info_->server_context());
    if (admitted_) limiter_->Release(key_);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (!recorded_ && methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      key_ = PeerKey(info_->server_context());
      admitted_ = limiter_->TryAcquire(key_);
      limiter_->Record(info_->server_context(), admitted_);
      recorded_ = true;
    }
    methods->Proceed();
  }

 private:
  PeerCallLimiter* limiter_;
  grpc::experimental::ServerRpcInfo* info_;
  std::string key_;
  bool recorded_ = false;
  bool admitted_ = false;
};

}  // namespace

bool PeerCallLimiter::TryAcquire(const std::string& peer) {
  std::lock_guard<std::mutex> l(mu_);
  int& n = in_flight_[peer];
  if (n >= max_) {
    if (n == 0) in_flight_.erase(peer);
    return false;
  }
  ++n;
  return true;
}

void PeerCallLimiter::Release(const std::string& peer) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = in_flight_.find(peer);
  if (it == in_flight_.end()) return;
  if (--it->second <= 0) in_flight_.erase(it);
}

int PeerCallLimiter::InFlight(const std::string& peer) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = in_flight_.find(peer);
  return it == in_flight_.end() ? 0 : it->second;
}

void PeerCallLimiter::Record(const grpc::ServerContextBase* ctx, bool admitted) {
  std::lock_guard<std::mutex> l(mu_);
  calls_[ctx] = admitted;
}

void PeerCallLimiter::Forget(const grpc::ServerContextBase* ctx) {
  std::lock_guard<std::mutex> l(mu_);
  calls_.erase(ctx);
}

grpc::Status PeerCallLimiter::Admitted(const grpc::ServerContextBase* ctx) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = calls_.find(ctx);
  if (it == calls_.end() || it->second) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      absl::StrCat("more than ", max_, " calls in flight from this peer; retry later"));
}

grpc::experimental::Interceptor* PeerCallInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  if (std::strncmp(info->method(), kPeerServicePrefix, sizeof kPeerServicePrefix - 1) != 0) return nullptr;
  return new PeerCallInterceptor(limiter_, info);
}

std::string PeerKey(grpc::ServerContextBase* ctx) {
  auto ac = ctx->auth_context();
  if (ac && ac->IsPeerAuthenticated()) {
    auto cn = ac->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME);
    if (!cn.empty()) return absl::StrCat("cn:", std::string(cn.front().data(), cn.front().size()));
  }
  return absl::StrCat("addr:", ctx->peer());
}

}  // namespace hyperfed::server
