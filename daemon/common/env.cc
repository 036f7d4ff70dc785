#include "daemon/common/env.h"

#include <random>
#include <thread>

namespace hyperfed {
namespace {
class OsThread : public EnvThread {
 public:
  explicit OsThread(std::function<void()> fn) : t_(std::move(fn)) {}
  ~OsThread() override { Join(); }
  void Join() override {
    if (t_.joinable()) t_.join();
  }

 private:
  std::thread t_;
};
}  // namespace

std::unique_ptr<EnvThread> Env::StartThread(std::function<void()> fn) const {
  return std::make_unique<OsThread>(std::move(fn));
}

void Env::SleepFor(absl::Duration d) const {
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> l(mu);
  WaitUntil(l, cv, Now() + d, [] { return false; });
}

bool RealEnv::WaitUntil(std::unique_lock<std::mutex>& l, std::condition_variable& cv, absl::Time deadline,
                        const std::function<bool()>& pred) const {
  if (deadline == absl::InfiniteFuture()) {
    cv.wait(l, pred);
    return true;
  }
  return cv.wait_until(l, absl::ToChronoTime(deadline), pred);
}

uint64_t Env::Random() const {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return rng();
}

uint64_t FakeEnv::Random() const {
  // splitmix64: every number of the sequence once, well mixed.
  uint64_t z = random_state_.fetch_add(0x9e3779b97f4a7c15ull) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

RealEnv* RealEnv::Get() {
  static RealEnv* e = new RealEnv;
  return e;
}

bool FakeEnv::WaitUntil(std::unique_lock<std::mutex>& l, std::condition_variable& cv, absl::Time deadline,
                        const std::function<bool()>& pred) const {
  if (pred()) return true;
  Waiter w{l.mutex(), &cv};
  // Registered before the first check of the time: a move that happens after
  // the check takes this waiter's mutex to notify, so it cannot be missed.
  l.unlock();
  {
    std::lock_guard<std::mutex> r(reg_mu_);
    waiters_.insert(&w);
  }
  l.lock();
  while (!pred() && Now() < deadline) cv.wait(l);
  l.unlock();
  {
    std::lock_guard<std::mutex> r(reg_mu_);
    waiters_.erase(&w);
  }
  l.lock();
  return pred();
}

void FakeEnv::WakeAll() {
  std::lock_guard<std::mutex> r(reg_mu_);
  for (Waiter* w : waiters_) {
    { std::lock_guard<std::mutex> g(*w->mu); }
    w->cv->notify_all();
  }
}

void FakeEnv::Advance(absl::Duration d) {
  now_ns_ += absl::ToInt64Nanoseconds(d);
  WakeAll();
}

void FakeEnv::Set(absl::Time t) {
  now_ns_ = absl::ToUnixNanos(t);
  WakeAll();
}

int FakeEnv::waiters() const {
  std::lock_guard<std::mutex> r(reg_mu_);
  return static_cast<int>(waiters_.size());
}

}  // namespace hyperfed
