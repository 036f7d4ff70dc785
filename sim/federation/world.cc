#include "sim/federation/world.h"

#include <algorithm>
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hyperfed::fedsim {

namespace ctx = boost::context;

// A task's stack: the daemon's deepest paths (SQLite under the migrator)
// fit with room to spare; a guard page turns an overflow into a crash.
constexpr size_t kStackBytes = 512 * 1024;
constexpr int64_t kMaxSpins = 1000000;

struct Task {
  int node = 0;
  std::string name;
  std::function<void()> fn;
  std::shared_ptr<bool> done_flag;
  ctx::fiber fiber;  // resumes the task
  ctx::fiber back;   // resumes the world (while the task runs)
  bool started = false;
  bool done = false;
  bool abandoned = false;
  size_t slot = 0;  // in World::tasks_
  Waiter* waiter = nullptr;
  // Waits in a row that returned at once, at one instant (a task that
  // never parks would stop the world's clock: see World::Wait).
  absl::Time spin_at;
  int64_t spins = 0;
};

// A task's stack is taken from those of finished tasks when there is one:
// a task runs for every message a site handles, and a stack mapped fresh
// each time costs its mmap, its page faults and its munmap.
class StackPool {
 public:
  ~StackPool() {
    for (ctx::stack_context& s : free_) ctx::protected_fixedsize_stack(kStackBytes).deallocate(s);
  }
  ctx::stack_context Take() {
    if (free_.empty()) return ctx::protected_fixedsize_stack(kStackBytes).allocate();
    ctx::stack_context s = free_.back();
    free_.pop_back();
    return s;
  }
  void Give(const ctx::stack_context& s) { free_.push_back(s); }

 private:
  std::vector<ctx::stack_context> free_;
};

// boost.context's StackAllocator over the pool.
struct PooledStack {
  StackPool* pool;
  ctx::stack_context allocate() { return pool->Take(); }
  void deallocate(ctx::stack_context& s) noexcept { pool->Give(s); }
};

struct Waiter {
  Task* task;
  std::mutex* mu;
  const std::function<bool()>* pred;
  uint64_t id;
};

World::World(uint64_t seed, absl::Time start) : rng_(seed), now_(start), stacks_(std::make_unique<StackPool>()) {}

World::~World() {
  // Tasks still waiting (the sites' loops and workers, the tasks of dead
  // nodes) are not unwound: their code would run on against a world that is
  // gone. Their stacks are left to the process's end.
  for (auto& t : tasks_)
    if (t && t->started && !t->done) new ctx::fiber(std::move(t->fiber));
}

namespace {
std::function<void(const std::string&)>& FatalHook() {
  static auto* hook = new std::function<void(const std::string&)>;
  return *hook;
}
}  // namespace

void World::SetFatalHook(std::function<void(const std::string& why)> hook) { FatalHook() = std::move(hook); }

void World::Fatal(const std::string& why) {
  std::fprintf(stderr, "hyperfed-sim federation: %s\n", why.c_str());
  std::fflush(stderr);
  if (auto hook = std::exchange(FatalHook(), nullptr)) hook(why);
  std::_Exit(3);
}

double World::Uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

int64_t World::UniformInt(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
}

int World::AddNode(std::string name) {
  nodes_.push_back(Node{std::move(name)});
  return static_cast<int>(nodes_.size()) - 1;
}

void World::Kill(int node) {
  Node& n = nodes_[node];
  if (!n.alive) return;
  n.alive = false;
  for (Waiter* w : n.waiters) {
    w->task->waiter = nullptr;
    waiting_.erase(w->id);
  }
  n.waiters.clear();
  std::erase_if(runnable_, [&](Task* t) { return t->node == node; });
  for (auto& t : tasks_)
    if (t && t->node == node && !t->done) t->abandoned = true;
}

void World::Pause(int node, absl::Time until) {
  Node& n = nodes_[node];
  n.paused_until = std::max(n.paused_until, until);
  // Wakes the world when the pause ends (its tasks may be runnable).
  At(until, node, [] {});
}

void World::Spawn(int node, std::string name, std::function<void()> fn, std::shared_ptr<bool> done) {
  if (!nodes_[node].alive) return;
  auto t = std::make_unique<Task>();
  t->node = node;
  t->name = std::move(name);
  t->fn = std::move(fn);
  t->done_flag = std::move(done);
  runnable_.push_back(t.get());
  if (free_slots_.empty()) {
    t->slot = tasks_.size();
    tasks_.push_back(std::move(t));
  } else {
    t->slot = free_slots_.back();
    free_slots_.pop_back();
    tasks_[t->slot] = std::move(t);
  }
  ++tasks_started_;
}

void World::At(absl::Time t, int node, std::function<void()> fn, bool look) {
  uint32_t slot;
  if (free_actions_.empty()) {
    slot = static_cast<uint32_t>(actions_.size());
    actions_.emplace_back();
  } else {
    slot = free_actions_.back();
    free_actions_.pop_back();
  }
  actions_[slot] = Action{node, look, std::move(fn)};
  events_.push(Event{std::max(t, now_), ++seq_, slot});
}

void World::RunTask(Task* t) {
  current_ = t;
  current_node_ = t->node;
  if (!t->started) {
    t->started = true;
    t->fiber = ctx::fiber(std::allocator_arg, PooledStack{stacks_.get()}, [this, t](ctx::fiber&& back) {
      t->back = std::move(back);
      try {
        t->fn();
      } catch (const std::exception& e) {
        Fatal(absl::StrCat("task ", t->name, " of ", nodes_[t->node].name, " threw: ", e.what()));
      }
      t->fn = nullptr;
      t->done = true;
      if (t->done_flag) *t->done_flag = true;
      return std::move(t->back);
    });
  }
  t->fiber = std::move(t->fiber).resume();
  current_ = nullptr;
  current_node_ = -1;
}

void World::Vanish() {
  Task* t = current_;
  if (!t) Fatal("Vanish outside a task");
  Park(t);
  Fatal(absl::StrCat("task ", t->name, " ran again after it vanished"));
}

void World::Park(Task* t) { t->back = std::move(t->back).resume(); }

bool World::Wait(std::unique_lock<std::mutex>& l, absl::Time deadline, const std::function<bool()>& pred) {
  Task* t = current_;
  const bool ready = pred();
  if (ready || deadline <= now_) {
    // A loop of waits that never park holds the one thread: time stops and
    // the run would never end. Rather a clear failure than a hang.
    if (t && t->spin_at == now_) {
      if (++t->spins > kMaxSpins)
        Fatal(absl::StrCat("task ", t->name, " of ", nodes_[t->node].name, " waited ", kMaxSpins,
                           " times in a row without time passing"));
    } else if (t) {
      t->spin_at = now_;
      t->spins = 0;
    }
    return ready;
  }
  if (!t) Fatal("a blocking wait outside a simulated task (an event handler must not wait)");
  t->spins = 0;
  // Woken because pred() held when the world looked, a task may find it
  // false again when it runs (another task woken by the same change went
  // first): it waits on, as cv.wait(l, pred) does, until pred() or the
  // deadline (the Env's contract, daemon/common/env.h).
  while (true) {
    Waiter w{t, l.mutex(), &pred, ++seq_};
    t->waiter = &w;
    nodes_[t->node].waiters.push_back(&w);
    waiting_[w.id] = &w;
    if (deadline != absl::InfiniteFuture()) {
      const uint64_t id = w.id;
      // (Only this waiter's deadline: no other waiter's condition changed.)
      At(
          deadline, t->node,
          [this, id] {
            if (auto it = waiting_.find(id); it != waiting_.end()) Wake(it->second);
          },
          /*look=*/false);
    }
    l.unlock();
    Park(t);
    l.lock();
    if (pred()) return true;
    if (deadline <= now_) return false;
  }
}

void World::Wake(Waiter* w) {
  Task* t = w->task;
  auto& ws = nodes_[t->node].waiters;
  ws.erase(std::find(ws.begin(), ws.end(), w));
  waiting_.erase(w->id);
  t->waiter = nullptr;
  runnable_.push_back(t);
}

void World::Notify(Task* t, const std::mutex* mu) {
  if (!t) return;
  Waiter* w = t->waiter;
  if (!w || w->mu != mu || !nodes_[t->node].alive) return;
  WakeIfReady(w);
}

void World::WakeIfReady(Waiter* w) {
  if (!w->mu->try_lock())
    Fatal(absl::StrCat("task ", w->task->name, " of ", nodes_[w->task->node].name,
                       " waits on a lock another task holds while it waits"));
  const bool ready = (*w->pred)();
  w->mu->unlock();
  if (ready) Wake(w);
}

void World::Poll(int node) {
  if (node < 0 || !nodes_[node].alive) return;
  // A copy (waking changes the list), into a buffer that keeps its
  // capacity: no allocation per look.
  poll_.assign(nodes_[node].waiters.begin(), nodes_[node].waiters.end());
  for (Waiter* w : poll_) WakeIfReady(w);
}

bool World::Run(absl::Time until, const std::function<bool()>& stop) {
  while (true) {
    if (stop()) return true;
    if (!runnable_.empty()) {
      // The interleaving is the seed's: any runnable task may go next.
      const size_t i = static_cast<size_t>(UniformInt(0, static_cast<int64_t>(runnable_.size()) - 1));
      Task* t = runnable_[i];
      runnable_[i] = runnable_.back();
      runnable_.pop_back();
      if (paused(t->node)) {
        // Runs once the pause ends (Pause put an event there).
        const int node = t->node;
        At(nodes_[node].paused_until, node, [this, t] { runnable_.push_back(t); });
        continue;
      }
      ++steps_;
      RunTask(t);
      const int node = t->node;
      if (t->done) {
        free_slots_.push_back(t->slot);
        tasks_[t->slot].reset();
      }
      Poll(node);
      continue;
    }
    if (events_.empty() || events_.top().at > until) {
      if (until != absl::InfiniteFuture()) now_ = std::max(now_, until);
      return false;
    }
    const Event ev = events_.top();
    events_.pop();
    // Moved out, not copied (a copy of its function may allocate).
    Action e = std::move(actions_[ev.slot]);
    free_actions_.push_back(ev.slot);
    now_ = std::max(now_, ev.at);
    if (e.node >= 0 && !nodes_[e.node].alive) continue;
    if (e.node >= 0 && paused(e.node)) {
      At(nodes_[e.node].paused_until, e.node, std::move(e.fn), e.look);
      continue;
    }
    ++steps_;
    current_node_ = e.node;
    e.fn();
    current_node_ = -1;
    if (e.look) Poll(e.node);
  }
}

void World::Trace(int node, std::string_view what) { Trace(node, what, {}); }

void World::Trace(int node, std::string_view what, std::string_view more) {
  // Many lines share an instant: its text is made once.
  if (trace_time_at_ != now_) {
    trace_time_ = absl::StrFormat("%.6f ", absl::ToDoubleSeconds(now_ - absl::UnixEpoch()) - 1.7e9);
    trace_time_at_ = now_;
  }
  const std::string_view name = node >= 0 ? std::string_view(nodes_[node].name) : std::string_view("world");
  std::string line;
  line.reserve(trace_time_.size() + name.size() + 1 + what.size() + more.size());
  line.append(trace_time_).append(name).append(" ").append(what).append(more);
  for (unsigned char c : line) trace_hash_ = (trace_hash_ ^ c) * 1099511628211ull;
  trace_hash_ = (trace_hash_ ^ '\n') * 1099511628211ull;
  trace_.push_back(std::move(line));
  if (trace_limit_ && trace_.size() > 2 * trace_limit_) trace_.erase(trace_.begin(), trace_.end() - trace_limit_);
}

// ------------------------------------------------------------------ SimEnv

absl::Time SimEnv::Now() const { return LocalAt(world_->now()); }

absl::Time SimEnv::LocalAt(absl::Time world) const {
  const absl::Duration since = world - origin_;
  return world + offset_ + absl::Nanoseconds(static_cast<int64_t>(drift_ * absl::ToDoubleNanoseconds(since)));
}

absl::Time SimEnv::ToWorld(absl::Time local) const {
  if (local == absl::InfiniteFuture() || local == absl::InfinitePast()) return local;
  // local = origin + (1 + drift) * (world - origin) + offset, inverted; then
  // the earliest nanosecond at which this site's clock reads `local`, so
  // that a wait until a local time never wakes before it (rounding the
  // other way, a wait would return at once, forever).
  const double since = absl::ToDoubleNanoseconds(local - offset_ - origin_) / (1.0 + drift_);
  absl::Time w = origin_ + absl::Nanoseconds(static_cast<int64_t>(since));
  while (LocalAt(w) < local) w += absl::Nanoseconds(1);
  while (LocalAt(w - absl::Nanoseconds(1)) >= local) w -= absl::Nanoseconds(1);
  return w;
}

bool SimEnv::WaitUntil(std::unique_lock<std::mutex>& l, std::condition_variable& cv, absl::Time deadline,
                       const std::function<bool()>& pred) const {
  return world_->Wait(l, ToWorld(deadline), pred);
}

namespace {
class SimThread : public EnvThread {
 public:
  SimThread(World* world, std::shared_ptr<bool> done) : world_(world), done_(std::move(done)) {}
  void Join() override {
    std::mutex mu;
    std::unique_lock<std::mutex> l(mu);
    world_->Wait(l, absl::InfiniteFuture(), [this] { return *done_; });
  }

 private:
  World* world_;
  std::shared_ptr<bool> done_;
};
}  // namespace

std::unique_ptr<EnvThread> SimEnv::StartThread(std::function<void()> fn) const {
  auto done = std::make_shared<bool>(false);
  world_->Spawn(node_, "thread", std::move(fn), done);
  return std::make_unique<SimThread>(world_, done);
}

}  // namespace hyperfed::fedsim
