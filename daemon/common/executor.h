#pragma once

// A fixed pool of threads that runs queued work: a site's round parts, its
// coordinations and the fan-out of its calls to peers. The thread count is
// set once, so threads and memory stay flat however many rounds run
// (docs/design.md §9).
//
// Thread-safe. Work that waits for other queued work must not fill the pool:
// fan-outs go through ParallelFor, whose caller runs items itself. Its
// threads start, and every wait of theirs waits, through an Env (so that the
// federation simulation runs them as its tasks).

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <memory>
#include <vector>

#include "daemon/common/env.h"

namespace hyperfed {

class Executor {
 public:
  explicit Executor(int threads, const Env* env = RealEnv::Get());
  // Shutdown(), then joins the threads.
  ~Executor();

  // Queues `fn`; false (and `fn` is dropped) once Shutdown has begun.
  bool Submit(std::function<void()> fn);
  // Takes no more work; queued work still runs. Returns at once.
  void Shutdown();
  // Shutdown(), then waits until every queued and running piece has ended.
  void Join();

  int threads() const { return static_cast<int>(threads_.size()); }
  const Env* env() const { return env_; }
  // Work queued or running now.
  size_t pending() const;

 private:
  void Loop();

  const Env* const env_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  size_t running_ = 0;                       // guarded by mu_
  bool shutdown_ = false;                    // guarded by mu_
  std::vector<std::unique_ptr<EnvThread>> threads_;
  std::once_flag joined_;
};

// Calls fn(i) for every i in [0, n), on the executor's threads and on the
// calling thread, and returns when every call has returned. Never waits for
// a free pool thread: with the pool busy the caller runs every item itself.
void ParallelFor(Executor* ex, size_t n, const std::function<void(size_t)>& fn);

}  // namespace hyperfed
