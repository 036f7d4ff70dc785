#pragma once

// The deterministic world the federation simulation runs the daemon's own
// code in (docs/design.md §10). One OS thread: every "thread" a site starts
// (its loops, its executor's workers, an RPC handler) is a task, a fiber
// with its own stack (Boost.Context), and runs until it waits. Waiting goes
// through a SimEnv, which parks the task; a parked task runs again when its
// condition holds (looked at after every step of its node that ran the
// node's code; an event that ran none wakes the waiter it served through
// Notify) or its deadline comes. Time is simulated: it moves only when no task can run, to the next
// event. Which runnable task goes next is drawn from the seed, so a seed
// fixes the interleaving, event for event.
//
// The rule the daemon's code keeps for this to work: a task waits only
// through its Env, and holds no lock while it waits but the one it hands to
// WaitUntil. A task that breaks it is reported (Fatal) rather than hanging.
//
// A node is a group of tasks that live, pause and die together: one
// incarnation of a site (a crash kills the node, a restart makes a new one),
// or the operator. Tasks of a dead node are abandoned where they wait, as a
// killed process's threads are; their stacks are not unwound (they stay
// allocated until the process ends, which is why every seed runs in a
// process of its own: sim/federation/runner.h).
//
// Not thread-safe: everything runs on the thread that calls Run.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/time/time.h"
#include "daemon/common/env.h"

namespace hyperfed::fedsim {

struct Task;
struct Waiter;
class StackPool;

class World {
 public:
  World(uint64_t seed, absl::Time start);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  absl::Time now() const { return now_; }

  // Numbers from the seed (the only randomness of a run).
  uint64_t Random() { return rng_(); }
  // Uniform in [0, 1).
  double Uniform();
  // Uniform in [lo, hi].
  int64_t UniformInt(int64_t lo, int64_t hi);
  bool Chance(double p) { return p > 0 && Uniform() < p; }

  // ---- Nodes
  int AddNode(std::string name);
  bool alive(int node) const { return nodes_[node].alive; }
  const std::string& name(int node) const { return nodes_[node].name; }
  // A crash: the node's tasks stop where they are and its events are dropped.
  void Kill(int node);
  // SIGSTOP until `until`: none of its tasks runs and its events wait.
  void Pause(int node, absl::Time until);
  bool paused(int node) const { return nodes_[node].paused_until > now_; }

  // ---- Tasks and events
  // Runs `fn` as a new task of `node`; `done` (if given) is set when it
  // returns.
  void Spawn(int node, std::string name, std::function<void()> fn, std::shared_ptr<bool> done = nullptr);
  // Runs `fn` at `t` (not before now) on the world's own stack, as a step of
  // `node` (dropped if the node has died by then). `fn` must not wait.
  // After it the world looks at the node's waiters (as after a task's
  // step), unless `look` is false: `fn` then runs none of the node's own
  // code and wakes, through Notify, any waiter whose condition it changed.
  void At(absl::Time t, int node, std::function<void()> fn, bool look = true);
  // The running task (nullptr in an event), for Notify.
  Task* current_task() const { return current_; }
  // Wakes `t` if it waits on `mu` and its condition now holds (an event
  // that changed what that waiter waits for). `t` must not have ended.
  void Notify(Task* t, const std::mutex* mu);
  // The node of the running task or event (-1 between steps).
  int current_node() const { return current_node_; }
  bool InTask() const { return current_ != nullptr; }

  // Ends the running task where it is (after its node was killed, as a
  // process dies at a crash point): it never runs again.
  [[noreturn]] void Vanish();

  // For SimEnv: parks the calling task until pred() or `deadline` (global
  // time); returns pred(). Fatal outside a task.
  bool Wait(std::unique_lock<std::mutex>& l, absl::Time deadline, const std::function<bool()>& pred);

  // Runs steps until stop() holds (asked between steps) or no step is left
  // at or before `until`; time then stands at `until`. Returns whether
  // stop() held.
  bool Run(absl::Time until, const std::function<bool()>& stop);

  // ---- The trace: one line per thing that happened, "<seconds> <node> <what>".
  void Trace(int node, std::string_view what);
  // The same line with `what` and `more` joined (no string made for them).
  void Trace(int node, std::string_view what, std::string_view more);
  const std::vector<std::string>& trace() const { return trace_; }
  // Keeps only the last `n` lines (0: all); a hash of every line stays.
  void SetTraceLimit(size_t n) { trace_limit_ = n; }
  uint64_t trace_hash() const { return trace_hash_; }
  uint64_t steps() const { return steps_; }
  uint64_t tasks_started() const { return tasks_started_; }

  // Ends the process with `why` (a broken rule of the simulation itself),
  // after the hook, if one is set, has reported what it can.
  [[noreturn]] static void Fatal(const std::string& why);
  static void SetFatalHook(std::function<void(const std::string& why)> hook);

 private:
  struct Node {
    std::string name;
    bool alive = true;
    absl::Time paused_until = absl::InfinitePast();
    std::vector<Waiter*> waiters;  // registration order
  };
  // An event's place in the queue: small, so that the heap (tens of
  // thousands of messages in flight when all sites heartbeat at once) moves
  // 32 bytes per step of a sift, not the event's function.
  struct Event {
    absl::Time at;
    uint64_t seq;
    uint32_t slot;  // in actions_
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  struct Action {
    int node = -1;
    bool look = true;
    std::function<void()> fn;
  };

  void RunTask(Task* t);
  // Wakes the waiters of `node` whose condition now holds.
  void Poll(int node);
  void Wake(Waiter* w);
  // Wakes `w` if its condition holds now (asked under its lock; a lock held
  // by another task while it waits breaks the world's rule: Fatal).
  void WakeIfReady(Waiter* w);
  void Park(Task* t);

  std::mt19937_64 rng_;
  absl::Time now_;
  // Stacks of finished tasks, for the next ones (before tasks_: it outlives
  // their fibers).
  std::unique_ptr<StackPool> stacks_;
  std::vector<Node> nodes_;
  std::vector<std::unique_ptr<Task>> tasks_;  // every task, finished ones freed
  std::vector<size_t> free_slots_;            // of tasks_
  std::vector<Task*> runnable_;
  std::unordered_map<uint64_t, Waiter*> waiting_;  // by id: every parked waiter
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::vector<Action> actions_;         // by Event::slot
  std::vector<uint32_t> free_actions_;  // of actions_
  std::vector<Waiter*> poll_;           // Poll's copy of a node's waiters (kept for its capacity)
  uint64_t seq_ = 0;
  Task* current_ = nullptr;
  int current_node_ = -1;
  uint64_t steps_ = 0, tasks_started_ = 0;
  std::vector<std::string> trace_;
  absl::Time trace_time_at_ = absl::InfinitePast();  // trace_time_ is now_'s text
  std::string trace_time_;
  size_t trace_limit_ = 0;
  uint64_t trace_hash_ = 1469598103934665603ull;  // FNV-1a
};

// A site's (or the operator's) Env in the world: its clock is the world's
// plus a fixed offset and a rate error (drift), its waits park the task,
// its threads are tasks of its node.
class SimEnv : public Env {
 public:
  SimEnv(World* world, int node, absl::Duration offset = absl::ZeroDuration(), double drift = 0)
      : world_(world), node_(node), offset_(offset), drift_(drift), origin_(world->now()) {}
  absl::Time Now() const override;
  bool WaitUntil(std::unique_lock<std::mutex>& l, std::condition_variable& cv, absl::Time deadline,
                 const std::function<bool()>& pred) const override;
  void WaitIdle(std::unique_lock<std::mutex>& l, std::condition_variable& cv,
                const std::function<bool()>& pred) const override {
    world_->Wait(l, absl::InfiniteFuture(), pred);
  }
  std::unique_ptr<EnvThread> StartThread(std::function<void()> fn) const override;
  // From the world's seed.
  uint64_t Random() const override { return world_->Random(); }
  int node() const { return node_; }
  // The earliest world time at which this clock reads `local`.
  absl::Time ToWorld(absl::Time local) const;
  // What this clock reads at world time `world`.
  absl::Time LocalAt(absl::Time world) const;

 private:
  World* const world_;
  const int node_;
  const absl::Duration offset_;
  const double drift_;
  const absl::Time origin_;
};

}  // namespace hyperfed::fedsim
