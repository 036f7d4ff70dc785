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
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
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
    bool active = false;  // it sent or received a message (of any size)
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
    // By the network's index of a site (site_name); the sites that sent
    // or received nothing are not `active`.
    std::vector<SiteTraffic> sites;
  };

  explicit SimNet(World* world) : world_(world) {}
  World* world() const { return world_; }
  void SetFaults(const Faults& f) { faults_ = f; }
  const Faults& faults() const { return faults_; }

  // The site's running incarnation takes calls; Down: it is not running.
  void Up(const std::string& site, Endpoint e) { sites_[Index(site)].up = e; }
  void Down(const std::string& site) { sites_[Index(site)].up = Endpoint{}; }
  // Partitions: sites in different groups cannot reach each other (every
  // site is in group 0 unless put elsewhere).
  void SetGroup(const std::string& site, int group) { sites_[Index(site)].group = group; }
  void HealAll();
  // Every message to or from `site` takes `extra` longer.
  void SetSlow(const std::string& site, absl::Duration extra) { sites_[Index(site)].slow = extra; }
  void ClearSlow();

  Stats& stats() { return stats_; }
  // The site a Stats::sites index stands for.
  const std::string& site_name(size_t index) const { return sites_[index].name; }
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
  // The same, for a caller that reads no reply (heartbeats): a reply is
  // counted and dropped where it is made, not carried to the caller.
  template <class Req, class Reply>
  std::vector<absl::Status> CallEachStatus(const std::string& from, const std::vector<std::string>& tos, const Env* env,
                                           const Req& req, absl::Duration timeout, bool heartbeat,
                                           absl::Status (server::PeerHandlers::*handle)(const std::string&, const Req&,
                                                                                        Reply*));
  // As CallEach, with a request of its own to each of `tos` (`reqs[i]` to
  // `tos[i]`: a probe's gossip is its receiver's). `inline_handler` false:
  // a heartbeat-counted call whose handler waits runs in a task (ProbeFor).
  template <class Req, class Reply>
  std::vector<absl::StatusOr<Reply>> CallEachOwn(
      const std::string& from, const std::vector<std::string>& tos, const Env* env, const std::vector<Req>& reqs,
      absl::Duration timeout, bool heartbeat,
      absl::Status (server::PeerHandlers::*handle)(const std::string&, const Req&, Reply*), bool inline_handler = true);

 private:
  // A site as the network knows it, by index (names are looked up once a
  // call, not once a message).
  struct Site {
    std::string name;
    Endpoint up;  // node -1: not running
    int group = 0;
    absl::Duration slow;
  };
  // The calls a task makes together (one CallEach): the request, shared by
  // every call and its duplicates (one copy, its size taken once), and each
  // call's answer. Every message in flight holds it.
  template <class Req, class Reply>
  struct Batch {
    using Handler = absl::Status (server::PeerHandlers::*)(const std::string&, const Req&, Reply*);
    Batch(const Req& r, int f, int c, Task* t, bool hb, bool k, Handler h, bool inl)
        : req(r),
          bytes(req.ByteSizeLong()),
          from(f),
          caller(c),
          task(t),
          heartbeat(hb),
          keep(k),
          handle(h),
          inline_handler(hb && inl) {}
    const Req req;
    const size_t bytes;
    // A request of its own to each call (CallEachOwn), else `req` to all.
    std::vector<Req> own;
    std::vector<size_t> own_bytes;
    const Req& Request(uint32_t slot) const { return own.empty() ? req : own[slot]; }
    size_t Bytes(uint32_t slot) const { return own.empty() ? bytes : own_bytes[slot]; }
    const int from;    // site index
    const int caller;  // the calling task's node
    Task* const task;  // the calling task, woken by the last answer
    const bool heartbeat;
    const bool keep;  // the caller reads the replies
    const Handler handle;
    // The handler runs in the delivering event (heartbeats: it must not
    // wait), else in a task of the destination (ProbeFor, which waits).
    const bool inline_handler;
    struct Slot {
      int to = -1;        // site index
      bool done = false;  // guarded by mu, as status and reply
      absl::Status status;
      Reply reply;
    };
    std::vector<Slot> slots;
    std::mutex mu;
    std::condition_variable cv;
    size_t left = 0;  // guarded by mu: calls not yet answered
  };
  // Sends each call of a batch and waits for the answers (or the
  // deadline); then every slot is done.
  template <class Req, class Reply>
  std::shared_ptr<Batch<Req, Reply>> Each(const std::string& from, const std::vector<std::string>& tos, const Env* env,
                                          const Req& req, absl::Duration timeout, bool heartbeat, bool keep,
                                          absl::Status (server::PeerHandlers::*handle)(const std::string&, const Req&,
                                                                                       Reply*),
                                          const std::vector<Req>* own = nullptr, bool inline_handler = true);
  // A batch's answers, as CallEach returns them.
  template <class Req, class Reply>
  static std::vector<absl::StatusOr<Reply>> Replies(Batch<Req, Reply>& b, const std::vector<std::string>& tos,
                                                    absl::Duration timeout);
  static absl::Status NoAnswer(const std::string& to, absl::Duration timeout) {
    return absl::DeadlineExceededError(absl::StrCat("no answer from ", to, " within ", absl::FormatDuration(timeout)));
  }
  // Sends call `slot` of `b`.
  template <class Req, class Reply>
  void Send(const std::shared_ptr<Batch<Req, Reply>>& b, uint32_t slot);
  // A request of call `slot` arrives at its destination.
  template <class Req, class Reply>
  void Deliver(const std::shared_ptr<Batch<Req, Reply>>& b, uint32_t slot);
  // The destination answers call `slot` (`bytes`: the reply's size, when
  // `st` is ok).
  template <class Req, class Reply>
  void Answer(const std::shared_ptr<Batch<Req, Reply>>& b, uint32_t slot, absl::Status st, Reply reply, size_t bytes);
  // An answer (a reply when `reply` is given) reaches the caller.
  template <class Req, class Reply>
  void Arrive(Batch<Req, Reply>& b, uint32_t slot, size_t bytes, absl::Status st, Reply* reply);
  int Index(const std::string& site);
  absl::Duration Latency(int a, int b);
  bool Linked(int a, int b) const { return sites_[a].group == sites_[b].group; }
  // A message from `from` to `to`, sent (`arrived` false) or arrived.
  void Count(bool heartbeat, size_t bytes, bool request, int from, int to, bool arrived);

  World* const world_;
  Faults faults_;
  std::deque<Site> sites_;  // a deque: a name handed to a handler stays put
  absl::flat_hash_map<std::string, int> index_;
  Stats stats_;
  int64_t heartbeats_sent_ = 0;
  absl::Time last_loss_ = absl::InfinitePast();
};

template <class Req, class Reply>
void SimNet::Send(const std::shared_ptr<Batch<Req, Reply>>& b, uint32_t slot) {
  const int from = b->from, to = b->slots[slot].to;
  Count(b->heartbeat, b->Bytes(slot), /*request=*/true, from, to, /*arrived=*/false);
  const bool lost = Linked(from, to) && world_->Chance(faults_.loss);
  stats_.lost += lost && !b->heartbeat;
  if (lost) last_loss_ = world_->now();
  if (Linked(from, to) && !lost) {
    // The incarnation running when it is sent takes it (none: refused).
    // Only a heartbeat runs the destination's code in the event (the world
    // then looks at its waiters); another call starts a task there.
    const int dest_node = sites_[to].up.node;
    world_->At(
        world_->now() + Latency(from, to), dest_node, [this, b, slot] { Deliver(b, slot); }, b->inline_handler);
    if (!b->heartbeat && world_->Chance(faults_.duplicate))
      world_->At(
          world_->now() + Latency(from, to) + Latency(from, to), dest_node, [this, b, slot] { Deliver(b, slot); },
          /*look=*/false);
  }
}

template <class Req, class Reply>
void SimNet::Deliver(const std::shared_ptr<Batch<Req, Reply>>& b, uint32_t slot) {
  const int to = b->slots[slot].to;
  const Endpoint e = sites_[to].up;
  if (e.node < 0 || !world_->alive(e.node)) {
    Answer(b, slot, absl::UnavailableError(absl::StrCat("connection to ", sites_[to].name, " refused")), Reply{}, 0);
    return;
  }
  Count(b->heartbeat, b->Bytes(slot), /*request=*/true, b->from, to, /*arrived=*/true);
  auto run = [this, e, b, slot] {
    Reply reply;
    absl::Status st = (e.handlers->*(b->handle))(sites_[b->from].name, b->Request(slot), &reply);
    size_t bytes = 0;
    if (st.ok()) {
      bytes = reply.ByteSizeLong();
      Count(b->heartbeat, bytes, /*request=*/false, b->slots[slot].to, b->from, /*arrived=*/false);
    }
    Answer(b, slot, std::move(st), std::move(reply), bytes);
  };
  if (b->inline_handler) {
    run();
  } else {
    world_->Spawn(e.node, absl::StrCat(Req::descriptor()->name(), " from ", sites_[b->from].name), run);
  }
}

template <class Req, class Reply>
void SimNet::Answer(const std::shared_ptr<Batch<Req, Reply>>& b, uint32_t slot, absl::Status st, Reply reply,
                    size_t bytes) {
  // The answer reaches the caller's incarnation (if it still runs) one
  // latency later, unless the link is cut or it is lost.
  const int from = b->slots[slot].to, to = b->from;
  if (!Linked(from, to)) return;
  if (world_->Chance(faults_.loss)) {
    stats_.lost += !b->heartbeat;
    last_loss_ = world_->now();
    return;
  }
  // It changes only the batch: the world wakes its caller if this was the
  // last answer, and looks at no other waiter. A reply the caller will not
  // read stays here.
  const absl::Time at = world_->now() + Latency(from, to);
  if (b->keep) {
    world_->At(
        at, b->caller,
        [this, b, slot, bytes, st = std::move(st), reply = std::move(reply)]() mutable {
          Arrive(*b, slot, bytes, std::move(st), &reply);
        },
        /*look=*/false);
  } else {
    world_->At(
        at, b->caller,
        [this, b, slot, bytes, st = std::move(st)]() mutable {
          Arrive<Req, Reply>(*b, slot, bytes, std::move(st), nullptr);
        },
        /*look=*/false);
  }
}

template <class Req, class Reply>
void SimNet::Arrive(Batch<Req, Reply>& b, uint32_t slot, size_t bytes, absl::Status st, Reply* reply) {
  typename Batch<Req, Reply>::Slot& s = b.slots[slot];
  if (st.ok()) Count(b.heartbeat, bytes, /*request=*/false, s.to, b.from, /*arrived=*/true);
  {
    std::lock_guard<std::mutex> l(b.mu);
    if (s.done) return;  // a duplicate's answer, or after the deadline
    s.done = true;
    s.status = std::move(st);
    if (reply) s.reply = std::move(*reply);
    --b.left;
    b.cv.notify_all();
  }
  // (Not done: the caller still waits in CallEach, so its task lives.)
  world_->Notify(b.task, &b.mu);
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
std::shared_ptr<SimNet::Batch<Req, Reply>> SimNet::Each(
    const std::string& from, const std::vector<std::string>& tos, const Env* env, const Req& req,
    absl::Duration timeout, bool heartbeat, bool keep,
    absl::Status (server::PeerHandlers::*handle)(const std::string&, const Req&, Reply*), const std::vector<Req>* own,
    bool inline_handler) {
  auto b = std::make_shared<Batch<Req, Reply>>(req, Index(from), world_->current_node(), world_->current_task(),
                                               heartbeat, keep, handle, inline_handler);
  if (own) {
    b->own = *own;
    for (const Req& r : b->own) b->own_bytes.push_back(r.ByteSizeLong());
  }
  b->slots.resize(tos.size());
  b->left = tos.size();
  for (size_t i = 0; i < tos.size(); ++i) {
    b->slots[i].to = Index(tos[i]);
    Send(b, static_cast<uint32_t>(i));
  }
  std::unique_lock<std::mutex> l(b->mu);
  env->WaitUntil(l, b->cv, env->Now() + timeout, [&] { return b->left == 0; });
  return b;
}

template <class Req, class Reply>
std::vector<absl::StatusOr<Reply>> SimNet::CallEach(const std::string& from, const std::vector<std::string>& tos,
                                                    const Env* env, const Req& req, absl::Duration timeout,
                                                    bool heartbeat,
                                                    absl::Status (server::PeerHandlers::*handle)(const std::string&,
                                                                                                 const Req&, Reply*)) {
  auto b = Each(from, tos, env, req, timeout, heartbeat, /*keep=*/true, handle);
  return Replies(*b, tos, timeout);
}

template <class Req, class Reply>
std::vector<absl::StatusOr<Reply>> SimNet::Replies(Batch<Req, Reply>& b, const std::vector<std::string>& tos,
                                                   absl::Duration timeout) {
  std::vector<absl::StatusOr<Reply>> out;
  out.reserve(tos.size());
  for (size_t i = 0; i < tos.size(); ++i) {
    typename Batch<Req, Reply>::Slot& s = b.slots[i];
    if (!s.done) {
      out.push_back(NoAnswer(tos[i], timeout));
    } else if (!s.status.ok()) {
      out.push_back(s.status);
    } else {
      out.push_back(std::move(s.reply));
    }
    // A late answer still finds its slot (the messages in flight hold the
    // batch) and drops it.
    s.done = true;
  }
  return out;
}

template <class Req, class Reply>
std::vector<absl::StatusOr<Reply>> SimNet::CallEachOwn(
    const std::string& from, const std::vector<std::string>& tos, const Env* env, const std::vector<Req>& reqs,
    absl::Duration timeout, bool heartbeat,
    absl::Status (server::PeerHandlers::*handle)(const std::string&, const Req&, Reply*), bool inline_handler) {
  auto b = Each(from, tos, env, Req{}, timeout, heartbeat, /*keep=*/true, handle, &reqs, inline_handler);
  return Replies(*b, tos, timeout);
}

template <class Req, class Reply>
std::vector<absl::Status> SimNet::CallEachStatus(const std::string& from, const std::vector<std::string>& tos,
                                                 const Env* env, const Req& req, absl::Duration timeout, bool heartbeat,
                                                 absl::Status (server::PeerHandlers::*handle)(const std::string&,
                                                                                              const Req&, Reply*)) {
  auto b = Each(from, tos, env, req, timeout, heartbeat, /*keep=*/false, handle);
  std::vector<absl::Status> out;
  out.reserve(tos.size());
  for (size_t i = 0; i < tos.size(); ++i) {
    typename Batch<Req, Reply>::Slot& s = b->slots[i];
    out.push_back(!s.done ? NoAnswer(tos[i], timeout) : s.status);
    s.done = true;
  }
  return out;
}

}  // namespace hyperfed::fedsim
