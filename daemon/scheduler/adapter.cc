#include "daemon/scheduler/adapter.h"

namespace hyperfed::scheduler {

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kPending:
      return "pending";
    case JobState::kHeld:
      return "held";
    case JobState::kRunning:
      return "running";
    case JobState::kDone:
      return "done";
    case JobState::kCancelled:
      return "cancelled";
  }
  // Reached only for a value cast from an out-of-range integer.
  return "unknown";
}

std::vector<absl::Status> SchedulerAdapter::HoldMany(const std::vector<std::string>& ids) {
  std::vector<absl::Status> out;
  out.reserve(ids.size());
  for (const std::string& id : ids) out.push_back(Hold(id));
  return out;
}

std::vector<absl::Status> SchedulerAdapter::ReleaseMany(const std::vector<std::string>& ids) {
  std::vector<absl::Status> out;
  out.reserve(ids.size());
  for (const std::string& id : ids) out.push_back(Release(id));
  return out;
}

std::vector<absl::Status> SchedulerAdapter::CancelMany(const std::vector<std::string>& ids) {
  std::vector<absl::Status> out;
  out.reserve(ids.size());
  for (const std::string& id : ids) out.push_back(Cancel(id));
  return out;
}

std::vector<absl::StatusOr<JobSpec>> SchedulerAdapter::ExportMany(const std::vector<std::string>& ids) {
  std::vector<absl::StatusOr<JobSpec>> out;
  out.reserve(ids.size());
  for (const std::string& id : ids) out.push_back(Export(id));
  return out;
}

std::vector<absl::StatusOr<std::string>> SchedulerAdapter::SubmitMany(
    const std::vector<std::pair<JobSpec, std::string>>& spec_and_tag, bool held) {
  std::vector<absl::StatusOr<std::string>> out;
  out.reserve(spec_and_tag.size());
  for (const auto& [spec, tag] : spec_and_tag) out.push_back(Submit(spec, tag, held));
  return out;
}

}  // namespace hyperfed::scheduler
