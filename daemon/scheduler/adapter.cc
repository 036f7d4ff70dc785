#include "daemon/scheduler/adapter.h"

#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"

namespace hyperfed::scheduler {

absl::Status SchedulerAdapter::CheckSpec(const JobSpec& s) const {
  if (s.key.size() > kMaxKeyLength)
    return absl::InvalidArgumentError(absl::StrCat("job spec: key over ", kMaxKeyLength, " characters"));
  if (s.name.size() > kMaxNameLength)
    return absl::InvalidArgumentError(absl::StrCat("job spec: name over ", kMaxNameLength, " characters"));
  if (s.script.size() > kMaxScriptBytes)
    return absl::InvalidArgumentError(absl::StrCat("job spec: script over ", kMaxScriptBytes, " bytes"));
  if (s.cores < 1) return absl::InvalidArgumentError(absl::StrCat("job spec: cores must be >= 1, got ", s.cores));
  if (s.memory_mb < 0) return absl::InvalidArgumentError("job spec: memory_mb must be >= 0");
  if (s.time_limit_s < 0) return absl::InvalidArgumentError("job spec: time_limit_s must be >= 0");
  if (s.duration_ms < 0) return absl::InvalidArgumentError("job spec: duration_ms must be >= 0");
  if (!std::isfinite(s.cost) || s.cost < 0) return absl::InvalidArgumentError("job spec: cost must be finite and >= 0");
  return absl::OkStatus();
}

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

absl::StatusOr<int64_t> SchedulerAdapter::CountMigratable() {
  auto jobs = ListJobs();
  if (!jobs.ok()) return jobs.status();
  int64_t n = 0;
  for (const Job& j : *jobs) n += j.state == JobState::kPending && !j.pinned;
  return n;
}

std::vector<absl::StatusOr<Job>> SchedulerAdapter::GetJobs(const std::vector<std::string>& ids) {
  std::vector<absl::StatusOr<Job>> out;
  auto jobs = ListJobs();
  if (!jobs.ok()) {
    out.assign(ids.size(), jobs.status());
    return out;
  }
  std::map<std::string, const Job*> by_id;
  for (const Job& j : *jobs) by_id[j.id] = &j;
  for (const std::string& id : ids) {
    auto it = by_id.find(id);
    if (it == by_id.end())
      out.push_back(absl::NotFoundError("no queued or running job " + id));
    else
      out.push_back(*it->second);
  }
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
