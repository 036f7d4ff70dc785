#pragma once

// The adapter the daemon's parts hold: it forwards every call to the
// adapter in force, which a reload (SIGHUP, docs/operations.md "Reload")
// replaces with one made from the new scheduler.options. A call in flight
// when the adapter is replaced finishes on the one it began with (each call
// holds its own reference). The daemon replaces it only while no migration
// is unsettled and no round runs at the site: new options may change which
// jobs the adapter sees or how it recognizes its own copies.
//
// Thread-safe.

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "daemon/scheduler/adapter.h"

namespace hyperfed::scheduler {

class SwappableAdapter : public SchedulerAdapter {
 public:
  explicit SwappableAdapter(std::unique_ptr<SchedulerAdapter> first) : current_(std::move(first)) {}

  // Puts `next` in force (same Name()); returns the one it replaces, which
  // calls in flight may still be using.
  std::shared_ptr<SchedulerAdapter> Swap(std::unique_ptr<SchedulerAdapter> next);
  std::shared_ptr<SchedulerAdapter> Current() const;

  std::string Name() const override { return Current()->Name(); }
  absl::StatusOr<std::vector<Job>> ListJobs() override { return Current()->ListJobs(); }
  absl::StatusOr<Capacity> GetCapacity() override { return Current()->GetCapacity(); }
  absl::StatusOr<int64_t> CountMigratable() override { return Current()->CountMigratable(); }
  absl::StatusOr<std::vector<PendingJob>> Pending() override { return Current()->Pending(); }
  absl::StatusOr<int64_t> WidestJob() override { return Current()->WidestJob(); }
  absl::StatusOr<std::vector<int64_t>> ArrivalStarts(const std::vector<int64_t>& widths) override {
    return Current()->ArrivalStarts(widths);
  }
  absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> FreeCores() override { return Current()->FreeCores(); }
  std::vector<absl::Status> EndPlacementWindow(const std::vector<std::string>& ids) override {
    return Current()->EndPlacementWindow(ids);
  }
  absl::Status Hold(const std::string& id) override { return Current()->Hold(id); }
  absl::Status Release(const std::string& id) override { return Current()->Release(id); }
  absl::Status Cancel(const std::string& id) override { return Current()->Cancel(id); }
  absl::StatusOr<JobSpec> Export(const std::string& id) override { return Current()->Export(id); }
  absl::StatusOr<std::string> Submit(const JobSpec& spec, const std::string& tag, bool held = false) override {
    return Current()->Submit(spec, tag, held);
  }
  absl::Status CheckSpec(const JobSpec& spec) const override { return Current()->CheckSpec(spec); }
  absl::StatusOr<std::vector<Job>> FindByTag(const std::string& tag) override { return Current()->FindByTag(tag); }
  absl::Status SetPinned(const std::string& id, bool pinned) override { return Current()->SetPinned(id, pinned); }
  std::vector<absl::Status> HoldMany(const std::vector<std::string>& ids) override {
    return Current()->HoldMany(ids);
  }
  std::vector<absl::Status> ReleaseMany(const std::vector<std::string>& ids) override {
    return Current()->ReleaseMany(ids);
  }
  std::vector<absl::Status> CancelMany(const std::vector<std::string>& ids) override {
    return Current()->CancelMany(ids);
  }
  std::vector<absl::StatusOr<JobSpec>> ExportMany(const std::vector<std::string>& ids) override {
    return Current()->ExportMany(ids);
  }
  std::vector<absl::StatusOr<Job>> GetJobs(const std::vector<std::string>& ids) override {
    return Current()->GetJobs(ids);
  }
  std::vector<absl::StatusOr<std::string>> SubmitMany(const std::vector<std::pair<JobSpec, std::string>>& spec_and_tag,
                                                      bool held = false) override {
    return Current()->SubmitMany(spec_and_tag, held);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<SchedulerAdapter> current_;  // guarded by mu_
};

}  // namespace hyperfed::scheduler
