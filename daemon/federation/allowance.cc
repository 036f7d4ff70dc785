#include "daemon/federation/allowance.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace hyperfed::federation {

void TransferAllowance::Expect(const std::string& round_id, const std::string& source_site, int64_t count) {
  if (count <= 0) return;
  std::lock_guard<std::mutex> l(mu_);
  if (!left_.count(round_id)) {
    rounds_.push_back(round_id);
    while (rounds_.size() > static_cast<size_t>(kKeptRounds)) {
      left_.erase(rounds_.front());
      rounds_.pop_front();
    }
  }
  left_[round_id][source_site] += count;
  cv_.notify_all();
}

absl::Status TransferAllowance::Admit(const std::string& round_id, const std::string& source_site, int64_t count,
                                      absl::Duration wait) {
  if (round_id.empty()) return absl::FailedPreconditionError("a transfer outside any round is refused");
  std::unique_lock<std::mutex> l(mu_);
  auto ended = [&] { return std::find(ended_.begin(), ended_.end(), round_id) != ended_.end(); };
  env_->WaitFor(l, cv_, wait, [&] { return stopping_ || LeftLocked(round_id, source_site) >= count || ended(); });
  const int64_t allowed = LeftLocked(round_id, source_site);
  if (allowed < count) {
    return absl::FailedPreconditionError(
        absl::StrCat("the plan of round ", round_id, " as this site derived it lets ", source_site, " send ", allowed,
                     " more jobs here, not ", count, left_.count(round_id) ? "" : " (no such round planned here)"));
  }
  left_[round_id][source_site] = allowed - count;
  return absl::OkStatus();
}

void TransferAllowance::Ended(const std::string& round_id) {
  std::lock_guard<std::mutex> l(mu_);
  ended_.push_back(round_id);
  while (ended_.size() > static_cast<size_t>(kKeptRounds)) ended_.pop_front();
  cv_.notify_all();
}

int64_t TransferAllowance::Left(const std::string& round_id, const std::string& source_site) const {
  std::lock_guard<std::mutex> l(mu_);
  return LeftLocked(round_id, source_site);
}

int64_t TransferAllowance::LeftLocked(const std::string& round_id, const std::string& source_site) const {
  auto r = left_.find(round_id);
  if (r == left_.end()) return 0;
  auto s = r->second.find(source_site);
  return s == r->second.end() ? 0 : s->second;
}

void TransferAllowance::Stop() {
  std::lock_guard<std::mutex> l(mu_);
  stopping_ = true;
  cv_.notify_all();
}

}  // namespace hyperfed::federation
