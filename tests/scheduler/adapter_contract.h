#pragma once

// The contract every SchedulerAdapter passes (after Ray's StoreClientTestBase):
// one value-parameterised GoogleTest suite, AdapterContractTest, whose tests
// live in adapter_contract_test.cc. An adapter's test file runs it with
//
//   INSTANTIATE_TEST_SUITE_P(Sim, AdapterContractTest,
//       ::testing::Values(AdapterContractParam{"Sim", [] { return std::make_unique<SimEnv>(); }}),
//       AdapterContractParamName);
//
// where SimEnv implements AdapterContractEnv: it makes a fresh adapter with
// an empty queue and knows how to let time pass (a fake clock for `sim`; a
// real sleep for `slurm` and `exec`). The tests never assume how fast jobs
// start: they wait for states through FindByTag/ListJobs, so a real scheduler
// that starts jobs a moment after submit passes too.

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "daemon/scheduler/adapter.h"
#include "gtest/gtest.h"

namespace hyperfed::scheduler::testing {

// What an adapter's test supplies. One env per test; destroyed after the
// adapter it made. It must clean up whatever it started (a real scheduler's
// blocker jobs keep running: Cancel refuses running jobs).
class AdapterContractEnv {
 public:
  virtual ~AdapterContractEnv() = default;

  // Non-empty: the adapter cannot run here (e.g. its scheduler is not
  // installed) and every test skips, printing this.
  virtual std::string SkipReason() const { return ""; }
  // Whether ListJobs/FindByTag/GetJobs fill spec.script (Export always must).
  virtual bool ListsScripts() const { return true; }

  // What the adapter says about start times (Pending's start_ms,
  // ArrivalStarts). kNever: every start_ms is 0 and ArrivalStarts is
  // Unimplemented (the interface's defaults). kSometimes: a start_ms may be
  // 0 (unknown: Slurm before its backfill pass has seen the job). kAlways:
  // every pending job has one (the sim adapter's EASY forecast).
  enum class Estimates { kNever, kSometimes, kAlways };
  virtual Estimates StartEstimates() const { return Estimates::kNever; }
  // Whether Submit (and CheckSpec) refuse a job wider than WidestJob.
  virtual bool RefusesWiderThanWidest() const { return true; }

  // A fresh adapter over an empty queue.
  virtual absl::StatusOr<std::unique_ptr<SchedulerAdapter>> MakeAdapter() = 0;

  // Lets about `d` of the adapter's time pass: advance a fake clock, or sleep.
  virtual void LetTimePass(absl::Duration d) = 0;

  // How long (in the adapter's time) a wait for a state may take, and the
  // step between polls.
  virtual absl::Duration MaxWait() const { return absl::Seconds(60); }
  virtual absl::Duration PollStep() const { return absl::Milliseconds(100); }

  // A job that runs for about `runtime` once started, on one core.
  virtual JobSpec RunnableSpec(const std::string& name, absl::Duration runtime) const {
    JobSpec s;
    s.name = name;
    s.script = absl::StrCat("#!/bin/sh\nsleep ", absl::ToDoubleSeconds(runtime), "\n");
    s.cores = 1;
    s.duration_ms = absl::ToInt64Milliseconds(runtime);
    return s;
  }

  // Fills every processing unit with long-running jobs, so that jobs
  // submitted afterwards stay pending; returns once they all run. The default
  // submits Capacity().units one-core jobs and waits for them; an adapter
  // with a cheaper way (a Slurm reservation) may override.
  virtual absl::Status Saturate(SchedulerAdapter* adapter);
};

struct AdapterContractParam {
  std::string name;  // the test-name suffix: [A-Za-z0-9_]+
  std::function<std::unique_ptr<AdapterContractEnv>()> make_env;
};

inline void PrintTo(const AdapterContractParam& p, std::ostream* os) { *os << p.name; }

inline std::string AdapterContractParamName(const ::testing::TestParamInfo<AdapterContractParam>& info) {
  return info.param.name;
}

class AdapterContractTest : public ::testing::TestWithParam<AdapterContractParam> {
 protected:
  void SetUp() override;

  // A spec with every field set to a non-default value, including text that
  // trips naive quoting (quotes, newlines, non-ASCII).
  JobSpec FullSpec(const std::string& name) const;
  JobSpec Quick(const std::string& name) const { return env_->RunnableSpec(name, absl::Milliseconds(500)); }
  // Runs far longer than any test.
  JobSpec Long(const std::string& name) const { return env_->RunnableSpec(name, absl::Hours(10)); }

  // The job's current record through FindByTag (the one way the interface
  // shows done and cancelled jobs); the job must carry a unique tag.
  absl::StatusOr<Job> ByTag(const std::string& tag);
  // The job as ListJobs shows it; NotFound when not listed.
  absl::StatusOr<Job> Listed(const std::string& id);
  // Short forms for assertions that print the error instead of crashing:
  // the state name, or the error's text.
  std::string ListedState(const std::string& id);
  std::string TagState(const std::string& tag);
  bool ListedPinned(const std::string& id);  // false when not listed
  int ListedCount();                         // -1 on error
  // Lets time pass until the tagged job is in `state`; DeadlineExceeded
  // after env's MaxWait.
  absl::Status WaitForState(const std::string& tag, JobState state);

  std::unique_ptr<AdapterContractEnv> env_;
  std::unique_ptr<SchedulerAdapter> adapter_;  // destroyed before env_
  int64_t widest_ = 1;                         // adapter_->WidestJob()
};

}  // namespace hyperfed::scheduler::testing
