#pragma once

// Bounds on what one calling site can make this daemon do at once
// (docs/operations.md, "Secure"): at most `max_per_peer` Peer calls in
// flight per authenticated site (its certificate's CN; without a
// certificate, per connection). A call beyond that gets RESOURCE_EXHAUSTED
// before its handler does any work.
//
// How it is wired: a gRPC server interceptor (PeerCallInterceptorFactory)
// takes a slot when a Peer call's metadata has arrived and gives it back
// when the call is destroyed; the handler asks Admitted(ctx) first
// (PeerService::Admit) and refuses the call when no slot was free.
//
// Thread-safe.

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace hyperfed::server {

class PeerCallLimiter {
 public:
  explicit PeerCallLimiter(int max_per_peer) : max_(max_per_peer) {}

  // Takes a slot for `peer`; false (and nothing taken) when `peer` already
  // has max_per_peer calls in flight.
  bool TryAcquire(const std::string& peer);
  // Gives back a slot TryAcquire took.
  void Release(const std::string& peer);
  int InFlight(const std::string& peer) const;
  int max_per_peer() const { return max_; }

  // The interceptor's verdict for a call: recorded when its metadata
  // arrives, forgotten when it ends.
  void Record(const grpc::ServerContextBase* ctx, bool admitted);
  void Forget(const grpc::ServerContextBase* ctx);
  // OK, or RESOURCE_EXHAUSTED when the call got no slot. A call the
  // interceptor never saw is admitted.
  grpc::Status Admitted(const grpc::ServerContextBase* ctx) const;

 private:
  const int max_;
  mutable std::mutex mu_;
  std::map<std::string, int> in_flight_;                  // guarded by mu_; no zero entries
  std::map<const grpc::ServerContextBase*, bool> calls_;  // guarded by mu_
};

// Makes, for every call to a method of the Peer service, an interceptor that
// holds a slot of `limiter` for the call's lifetime. `limiter` must outlive
// the server.
class PeerCallInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit PeerCallInterceptorFactory(PeerCallLimiter* limiter) : limiter_(limiter) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override;

 private:
  PeerCallLimiter* limiter_;
};

// The key a call is limited by: "cn:<CN>" of a verified client certificate,
// else "addr:<peer address>".
std::string PeerKey(grpc::ServerContextBase* ctx);

}  // namespace hyperfed::server
