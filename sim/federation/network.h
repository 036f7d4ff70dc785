#pragma once

// The simulated network between the sites of a federation simulation
// (docs/design.md §10). A call is the protobuf message hyperfedd would put
// on the wire: encoded by the caller as GrpcPeers encodes it, answered at
// the destination by the server layer's own PeerHandlers (every check of a
// peer's input), in a task of the destination's incarnation. Each message
// takes a latency drawn from the seed; the seed's faults lose, duplicate
// and delay messages, cut links (partitions) and slow sites down. A call to
// a site that is down is refused (UNAVAILABLE) after one latency; a call
// whose request or reply is lost ends at the caller's deadline
// (DEADLINE_EXCEEDED), as over gRPC.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "daemon/server/peer_handlers.h"
#include "sim/federation/world.h"

namespace hyperfed::fedsim {

// What a site's incarnation answers with.
struct Endpoint {
  int node = -1;
  server::PeerHandlers* handlers = nullptr;
};

class SimNet {
 public:
  struct Faults {
    absl::Duration latency = absl::Milliseconds(2);  // one way, before jitter
    absl::Duration jitter = absl::Milliseconds(1);   // up to this much more (reorders)
    double loss = 0;                                 // each message
    double duplicate = 0;                            // each request
  };
  // What one site sent and received, requests and replies, in protobuf
  // bytes: a message counts at its sender when sent and at its receiver when
  // it arrives (a lost one at the sender only).
  struct SiteTraffic {
    int64_t round_bytes = 0;
    int64_t heartbeat_bytes = 0;
  };
  // Counts since the last Reset: round messages (every call but heartbeats)
  // and heartbeats, requests and replies, in protobuf bytes.
  struct Stats {
    int64_t round_messages = 0;
    int64_t round_bytes = 0;
    int64_t largest = 0;
    int64_t heartbeats = 0;
    int64_t heartbeat_bytes = 0;
    int64_t lost = 0;  // requests and replies lost, heartbeats apart
    std::unordered_map<std::string, SiteTraffic> sites;
  };

  explicit SimNet(World* world) : world_(world) {}
  World* world() const { return world_; }
  void SetFaults(const Faults& f) { faults_ = f; }
  const Faults& faults() const { return faults_; }

  // The site's running incarnation takes calls; Down: it is not running.
  void Up(const std::string& site, Endpoint e) { up_[site] = e; }
  void Down(const std::string& site) { up_.erase(site); }
  // Partitions: sites in different groups cannot reach each other (every
  // site is in group 0 unless put elsewhere).
  void SetGroup(const std::string& site, int group);
  void HealAll() { group_.clear(); }
  // Every message to or from `site` takes `extra` longer.
  void SetSlow(const std::string& site, absl::Duration extra) { slow_[site] = extra; }
  void ClearSlow() { slow_.clear(); }

  Stats& stats() { return stats_; }
  // Heartbeat requests sent since the world began (never reset).
  int64_t heartbeats_sent() const { return heartbeats_sent_; }
  // When a message (heartbeats too) was last lost, world time.
  absl::Time last_loss() const { return last_loss_; }
  void ResetStats() { stats_ = Stats{}; }

  // A call from the running task's site `from` to `to`, waiting on `env`
  // (the caller's clock) at most `timeout`. `handle` runs at the
  // destination: on the world's stack when `inline_handler` (it must not
  // wait: heartbeats), else in a task of the destination's incarnation.
  template <class Req, class Reply>
  absl::StatusOr<Reply> Call(const std::string& from, const std::string& to, const Env* env, const Req& req,
                             absl::Duration timeout, bool heartbeat,
                             absl::Status (server::PeerHandlers::*handle)(const std::string&, const Req&, Reply*));
  // The same call to each of `tos` at once, from the running task (no task
  // per call, as GrpcPeers puts them on one completion queue): one answer
  // per site, in order, when every call has ended.
  template <class Req, class Reply>
  std::vector<absl::StatusOr<Reply>> CallEach(const std::string& from, const std::vector<std::string>& tos,
                                              const Env* env, const Req& req, absl::Duration timeout, bool heartbeat,
                                              absl::Status (server::PeerHandlers::*handle)(const std::string&,
                                                                                           const Req&, Reply*));

 private:
  // The calls a task waits for together.
  struct Group {
    std::mutex mu;
    std::condition_variable cv;
    size_t left = 0;  // guarded by mu: calls not yet answered
  };
  template <class Reply>
  struct Pending {
    std::shared_ptr<Group> group;
    bool done = false;  // guarded by group->mu, as the two below
    absl::Status status;
    Reply reply;
  };
  // Sends one call whose answer goes to `p`.
  // (`req` is shared by every call of a CallEach: no copy per call.)
  template <class Req, class Reply>
  void Send(const std::string& from, const std::string& to, const std::shared_ptr<const Req>& req, bool heartbeat,
            absl::Status (server::PeerHandlers::*handle)(const std::string&, const Req&, Reply*),
            const std::shared_ptr<Pending<Reply>>& p);
  absl::Duration Latency(const std::string& a, const std::string& b);
  bool Linked(const std::string& a, const std::string& b) const;
  // A message from `from` to `to`, sent (`arrived` false) or arrived.
  void Count(bool heartbeat, size_t bytes, bool request, const std::string& from, const std::string& to, bool arrived);

  World* const world_;
  Faults faults_;
  std::map<std::string, Endpoint> up_;
  std::map<std::string, int> group_;  // sites outside group 0
  std::map<std::string, absl::Duration> slow_;
  Stats stats_;
  int64_t heartbeats_sent_ = 0;
  absl::Time last_loss_ = absl::InfinitePast();
};

template <class Req, class Reply>
void SimNet::Send(const std::string& from, const std::string& to, const std::shared_ptr<const Req>& req, bool heartbeat,
                  absl::Status (server::PeerHandlers::*handle)(const std::string&, const Req&, Reply*),
                  const std::shared_ptr<Pending<Reply>>& p) {
  const int caller = world_->current_node();
  const size_t req_bytes = req->ByteSizeLong();
  Count(heartbeat, req_bytes, /*request=*/true, from, to, /*arrived=*/false);
  // The answer reaches the caller's incarnation (if it still runs) one
  // latency later, unless the link is cut or it is lost.
  auto answer = [this, p, caller, from, to, heartbeat](absl::Status st, Reply reply) {
    if (!Linked(to, from)) return;
    if (world_->Chance(faults_.loss)) {
      stats_.lost += !heartbeat;
      last_loss_ = world_->now();
      return;
    }
    world_->At(world_->now() + Latency(to, from), caller,
               [this, p, from, to, heartbeat, st = std::move(st), reply = std::move(reply)] {
                 if (st.ok()) Count(heartbeat, reply.ByteSizeLong(), /*request=*/false, to, from, /*arrived=*/true);
                 std::lock_guard<std::mutex> l(p->group->mu);
                 if (p->done) return;  // a duplicate's answer, or after the deadline
                 p->done = true;
                 p->status = st;
                 p->reply = reply;
                 --p->group->left;
                 p->group->cv.notify_all();
               });
  };
  auto deliver = [this, from, to, req, req_bytes, heartbeat, handle, answer] {
    auto it = up_.find(to);
    if (it == up_.end() || !world_->alive(it->second.node)) {
      answer(absl::UnavailableError(absl::StrCat("connection to ", to, " refused")), Reply{});
      return;
    }
    Count(heartbeat, req_bytes, /*request=*/true, from, to, /*arrived=*/true);
    const Endpoint e = it->second;
    auto run = [this, e, from, to, req, heartbeat, handle, answer] {
      Reply reply;
      absl::Status st = (e.handlers->*handle)(from, *req, &reply);
      if (st.ok()) Count(heartbeat, reply.ByteSizeLong(), /*request=*/false, to, from, /*arrived=*/false);
      answer(std::move(st), std::move(reply));
    };
    if (heartbeat) {
      run();
    } else {
      world_->Spawn(e.node, absl::StrCat(Req::descriptor()->name(), " from ", from), run);
    }
  };
  const bool lost = Linked(from, to) && world_->Chance(faults_.loss);
  stats_.lost += lost && !heartbeat;
  if (lost) last_loss_ = world_->now();
  if (Linked(from, to) && !lost) {
    const int dest_node = up_.count(to) ? up_[to].node : -1;
    world_->At(world_->now() + Latency(from, to), dest_node, deliver);
    if (!heartbeat && world_->Chance(faults_.duplicate))
      world_->At(world_->now() + Latency(from, to) + Latency(from, to), dest_node, deliver);
  }
}

template <class Req, class Reply>
absl::StatusOr<Reply> SimNet::Call(const std::string& from, const std::string& to, const Env* env, const Req& req,
                                   absl::Duration timeout, bool heartbeat,
                                   absl::Status (server::PeerHandlers::*handle)(const std::string&, const Req&,
                                                                                Reply*)) {
  std::vector<absl::StatusOr<Reply>> out = CallEach(from, {to}, env, req, timeout, heartbeat, handle);
  return std::move(out[0]);
}

template <class Req, class Reply>
std::vector<absl::StatusOr<Reply>> SimNet::CallEach(const std::string& from, const std::vector<std::string>& tos,
                                                    const Env* env, const Req& req, absl::Duration timeout,
                                                    bool heartbeat,
                                                    absl::Status (server::PeerHandlers::*handle)(const std::string&,
                                                                                                 const Req&, Reply*)) {
  auto group = std::make_shared<Group>();
  group->left = tos.size();
  auto shared_req = std::make_shared<const Req>(req);
  std::vector<std::shared_ptr<Pending<Reply>>> pending;
  pending.reserve(tos.size());
  for (const std::string& to : tos) {
    pending.push_back(std::make_shared<Pending<Reply>>());
    pending.back()->group = group;
    Send(from, to, shared_req, heartbeat, handle, pending.back());
  }
  std::unique_lock<std::mutex> l(group->mu);
  env->WaitUntil(l, group->cv, env->Now() + timeout, [&] { return group->left == 0; });
  std::vector<absl::StatusOr<Reply>> out;
  out.reserve(tos.size());
  for (size_t i = 0; i < tos.size(); ++i) {
    const Pending<Reply>& p = *pending[i];
    if (!p.done) {
      out.push_back(absl::DeadlineExceededError(
          absl::StrCat("no answer from ", tos[i], " within ", absl::FormatDuration(timeout))));
    } else if (!p.status.ok()) {
      out.push_back(p.status);
    } else {
      out.push_back(p.reply);
    }
  }
  // A late answer still finds its Pending (the events hold it) and drops it.
  for (auto& p : pending) p->done = true;
  return out;
}

}  // namespace hyperfed::fedsim
