#include "daemon/common/executor.h"

#include <algorithm>
#include <atomic>
#include <memory>

namespace hyperfed {

Executor::Executor(int threads, const Env* env) : env_(env) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.push_back(env_->StartThread([this] { Loop(); }));
}

Executor::~Executor() { Join(); }

bool Executor::Submit(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (shutdown_) return false;
    queue_.push_back(std::move(fn));
  }
  cv_.notify_one();
  return true;
}

void Executor::Shutdown() {
  {
    std::lock_guard<std::mutex> l(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
}

void Executor::Join() {
  Shutdown();
  std::call_once(joined_, [this] {
    for (auto& t : threads_) t->Join();
  });
}

size_t Executor::pending() const {
  std::lock_guard<std::mutex> l(mu_);
  return queue_.size() + running_;
}

void Executor::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    env_->WaitIdle(l, cv_, [this] { return shutdown_ || !queue_.empty(); });
    if (queue_.empty()) return;  // shut down and drained
    std::function<void()> fn = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    l.unlock();
    fn();
    l.lock();
    --running_;
  }
}

void ParallelFor(Executor* ex, size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  struct Shared {
    std::atomic<size_t> next{0};
    std::mutex mu;
    std::condition_variable cv;
    size_t done = 0;  // guarded by mu
  };
  auto shared = std::make_shared<Shared>();
  const size_t total = n;
  // Runs items until none is left. Helpers that start after the caller has
  // returned find none and touch only `shared`, which they keep alive; `fn`
  // is read only while an item is unfinished, so the caller is still waiting.
  auto work = [shared, total, &fn] {
    while (true) {
      const size_t i = shared->next.fetch_add(1);
      if (i >= total) return;
      fn(i);
      std::lock_guard<std::mutex> l(shared->mu);
      if (++shared->done == total) shared->cv.notify_all();
    }
  };
  const size_t helpers = ex ? std::min(n - 1, static_cast<size_t>(ex->threads())) : 0;
  for (size_t h = 0; h < helpers; ++h) {
    // A helper must not capture `fn` by reference beyond the caller's wait:
    // it claims an index first and exits when none is left.
    ex->Submit([work] { work(); });
  }
  work();
  std::unique_lock<std::mutex> l(shared->mu);
  (ex ? ex->env() : RealEnv::Get())->WaitIdle(l, shared->cv, [&] { return shared->done == total; });
}

}  // namespace hyperfed
