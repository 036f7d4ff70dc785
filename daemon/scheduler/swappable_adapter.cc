#include "daemon/scheduler/swappable_adapter.h"

namespace hyperfed::scheduler {

std::shared_ptr<SchedulerAdapter> SwappableAdapter::Swap(std::unique_ptr<SchedulerAdapter> next) {
  std::lock_guard<std::mutex> l(mu_);
  std::shared_ptr<SchedulerAdapter> old = std::move(current_);
  current_ = std::move(next);
  return old;
}

std::shared_ptr<SchedulerAdapter> SwappableAdapter::Current() const {
  std::lock_guard<std::mutex> l(mu_);
  return current_;
}

}  // namespace hyperfed::scheduler
