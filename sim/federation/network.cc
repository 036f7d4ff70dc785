#include "sim/federation/network.h"

#include <algorithm>

namespace hyperfed::fedsim {

int SimNet::Index(const std::string& site) {
  auto [it, added] = index_.try_emplace(site, static_cast<int>(sites_.size()));
  if (added) sites_.push_back(Site{site});
  return it->second;
}

void SimNet::HealAll() {
  for (Site& s : sites_) s.group = 0;
}

void SimNet::ClearSlow() {
  for (Site& s : sites_) s.slow = absl::ZeroDuration();
}

absl::Duration SimNet::Latency(int a, int b) {
  absl::Duration d = faults_.latency;
  if (faults_.jitter > absl::ZeroDuration())
    d += absl::Nanoseconds(world_->UniformInt(0, absl::ToInt64Nanoseconds(faults_.jitter)));
  return d + sites_[a].slow + sites_[b].slow;
}

void SimNet::Count(bool heartbeat, size_t bytes, bool request, int from, int to, bool arrived) {
  const auto n = static_cast<int64_t>(bytes);
  const size_t at = static_cast<size_t>(arrived ? to : from);
  if (stats_.sites.size() <= at) stats_.sites.resize(sites_.size());
  SiteTraffic& site = stats_.sites[at];
  site.active = true;
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
