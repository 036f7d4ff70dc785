#include "daemon/scheduler/adapter.h"

#include <cmath>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hyperfed::scheduler {

std::string RefusedEnvName(const std::string& name) {
  if (name.empty()) return "an empty name";
  if (!(absl::ascii_isalpha(name[0]) || name[0] == '_')) return "a name must start with a letter or '_'";
  for (char c : name)
    if (!(absl::ascii_isalnum(c) || c == '_')) return "a name may hold only letters, digits and '_'";
  // sbatch --export's keywords (compared without case by Slurm).
  for (const char* word : {"ALL", "NONE", "NIL"})
    if (absl::EqualsIgnoreCase(name, word)) return "a keyword of sbatch --export";
  // Read by a scheduler's own commands or daemons (Slurm: sbatch, salloc,
  // srun, SPANK plugins, the PMI libraries): a job may not set them.
  for (const char* prefix :
       {"SLURM_", "SLURMD_", "SBATCH_", "SALLOC_", "SRUN_", "SCRUN_", "SPANK_", "PMI_", "PMIX_", "PMI2_"}) {
    if (absl::StartsWith(name, prefix)) return absl::StrCat("a variable of the scheduler's own (", prefix, "*)");
  }
  // The dynamic loader's and glibc's (those glibc drops for setuid
  // programs): they change what code runs in any program that sees them.
  for (const char* prefix : {"LD_", "DYLD_", "MALLOC_"})
    if (absl::StartsWith(name, prefix)) return absl::StrCat("a loader variable (", prefix, "*)");
  if (absl::StartsWith(name, "BASH_FUNC_")) return "a shell function definition (BASH_FUNC_*)";
  // What the shell and the login environment decide: where programs are
  // found, how words split, what runs at shell start, who and where the
  // user is.
  for (const char* reserved : {"PATH",
                               "IFS",
                               "ENV",
                               "BASH_ENV",
                               "SHELL",
                               "SHELLOPTS",
                               "BASHOPTS",
                               "PS4",
                               "PROMPT_COMMAND",
                               "CDPATH",
                               "HOME",
                               "USER",
                               "LOGNAME",
                               "GLIBC_TUNABLES",
                               "GCONV_PATH",
                               "GETCONF_DIR",
                               "HOSTALIASES",
                               "LOCALDOMAIN",
                               "LOCPATH",
                               "NIS_PATH",
                               "NLSPATH",
                               "RESOLV_HOST_CONF",
                               "RES_OPTIONS",
                               "TMPDIR",
                               "TZDIR"}) {
    if (name == reserved) return "a variable reserved for the site (loader, shell or login)";
  }
  return "";
}

absl::Status SchedulerAdapter::CheckSpec(const JobSpec& s) const { return CheckPortableSpec(s); }

absl::Status CheckPortableSpec(const JobSpec& s) {
  if (s.key.size() > kMaxKeyLength)
    return absl::InvalidArgumentError(absl::StrCat("job spec: key over ", kMaxKeyLength, " characters"));
  if (s.name.size() > kMaxNameLength)
    return absl::InvalidArgumentError(absl::StrCat("job spec: name over ", kMaxNameLength, " characters"));
  if (s.script.size() > kMaxScriptBytes)
    return absl::InvalidArgumentError(absl::StrCat("job spec: script over ", kMaxScriptBytes, " bytes"));
  if (s.workdir.size() > kMaxWorkdirLength)
    return absl::InvalidArgumentError(absl::StrCat("job spec: workdir over ", kMaxWorkdirLength, " bytes"));
  if (absl::StrContains(s.workdir, '\0')) return absl::InvalidArgumentError("job spec: workdir holds a NUL");
  if (s.cores < 1) return absl::InvalidArgumentError(absl::StrCat("job spec: cores must be >= 1, got ", s.cores));
  if (s.memory_mb < 0) return absl::InvalidArgumentError("job spec: memory_mb must be >= 0");
  if (s.time_limit_s < 0) return absl::InvalidArgumentError("job spec: time_limit_s must be >= 0");
  if (s.duration_ms < 0) return absl::InvalidArgumentError("job spec: duration_ms must be >= 0");
  if (!std::isfinite(s.cost) || s.cost < 0) return absl::InvalidArgumentError("job spec: cost must be finite and >= 0");
  for (const auto& [name, value] : s.env) {
    if (std::string why = RefusedEnvName(name); !why.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("job spec: environment variable \"",
                                                     absl::CEscape(name.substr(0, 64)), "\" is refused: ", why,
                                                     " (docs/adapters.md, \"Environment\")"));
    }
    if (absl::StrContains(value, '\0'))
      return absl::InvalidArgumentError(absl::StrCat("job spec: environment variable ", name, " holds a NUL"));
  }
  if (!s.owner.empty()) {
    bool ok = s.owner.size() <= kMaxOwnerLength && (absl::ascii_islower(s.owner[0]) || s.owner[0] == '_');
    for (char c : s.owner) ok = ok && (absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_' || c == '-');
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("job spec: owner \"", absl::CEscape(s.owner.substr(0, 64)),
                                                     "\" is not a user name ([a-z_][a-z0-9_-]{0,31})"));
    }
  }
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

absl::StatusOr<std::vector<PendingJob>> SchedulerAdapter::Pending() {
  auto jobs = ListJobs();
  if (!jobs.ok()) return jobs.status();
  std::vector<PendingJob> out;
  for (const Job& j : *jobs) {
    if (j.state != JobState::kPending || j.pinned) continue;
    out.push_back({.id = j.id,
                   .key = j.spec.key,
                   .cores = j.spec.cores,
                   .queued_at_ms = j.queued_at_ms,
                   .limit_ms = j.spec.time_limit_s * 1000});
  }
  return out;
}

absl::StatusOr<int64_t> SchedulerAdapter::WidestJob() {
  auto cap = GetCapacity();
  if (!cap.ok()) return cap.status();
  return cap->units;
}

absl::StatusOr<std::vector<int64_t>> SchedulerAdapter::ArrivalStarts(const std::vector<int64_t>& widths) {
  return absl::UnimplementedError(absl::StrCat("the ", Name(), " adapter estimates no start times"));
}

absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> SchedulerAdapter::FreeCores() {
  return absl::UnimplementedError(absl::StrCat("the ", Name(), " adapter gives no free-core forecast"));
}

std::vector<absl::Status> SchedulerAdapter::EndPlacementWindow(const std::vector<std::string>& ids) {
  return std::vector<absl::Status>(ids.size(), absl::OkStatus());
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
