#include "sim/federation/network.h"

#include <algorithm>

namespace hyperfed::fedsim {

void SimNet::SetGroup(const std::string& site, int group) {
  if (group == 0) {
    group_.erase(site);
  } else {
    group_[site] = group;
  }
}

bool SimNet::Linked(const std::string& a, const std::string& b) const {
  if (group_.empty()) return true;
  auto ga = group_.find(a), gb = group_.find(b);
  return (ga == group_.end() ? 0 : ga->second) == (gb == group_.end() ? 0 : gb->second);
}

absl::Duration SimNet::Latency(const std::string& a, const std::string& b) {
  absl::Duration d = faults_.latency;
  if (faults_.jitter > absl::ZeroDuration())
    d += absl::Nanoseconds(world_->UniformInt(0, absl::ToInt64Nanoseconds(faults_.jitter)));
  if (!slow_.empty()) {
    if (auto it = slow_.find(a); it != slow_.end()) d += it->second;
    if (auto it = slow_.find(b); it != slow_.end()) d += it->second;
  }
  return d;
}

void SimNet::Count(bool heartbeat, size_t bytes, bool request, const std::string& from, const std::string& to,
                   bool arrived) {
  const auto n = static_cast<int64_t>(bytes);
  SiteTraffic& site = stats_.sites[arrived ? to : from];
  (heartbeat ? site.heartbeat_bytes : site.round_bytes) += n;
  if (arrived) return;
  heartbeats_sent_ += heartbeat && request;
  if (heartbeat) {
    stats_.heartbeats += request;
    stats_.heartbeat_bytes += n;
  } else {
    stats_.round_messages += request;
    stats_.round_bytes += n;
  }
  stats_.largest = std::max(stats_.largest, n);
}

}  // namespace hyperfed::fedsim
