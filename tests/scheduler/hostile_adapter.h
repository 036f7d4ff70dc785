#pragma once

// What a hostile peer sends a site through a job spec, tried against every
// adapter that drives a real scheduler (one value-parameterised suite,
// HostileAdapterTest, whose tests live in hostile_adapter_test.cc; after
// adapter_contract.h). An adapter's test file runs it with
//
//   INSTANTIATE_TEST_SUITE_P(Slurm, HostileAdapterTest,
//       ::testing::Values(HostileParam{"Slurm", [] { return std::make_unique<SlurmHost>(); }}),
//       HostileParamName);
//
// where SlurmHost implements HostileHost: it starts a fresh single-node
// scheduler and reads back, with the scheduler's own commands and never
// through the adapter, what reached it. Each test asserts that nothing of the
// hostile input reaches the scheduler: no job queued and a clear
// InvalidArgument (final: a migration gives the job back to its source), or,
// for a script's directives, a job that runs where, as whom and with what
// the site says.

#include <pwd.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "daemon/scheduler/adapter.h"
#include "daemon/scheduler/subprocess.h"
#include "gtest/gtest.h"
#include "tests/scheduler/temp_dir.h"

namespace hyperfed::scheduler::testing {

// Makes a local user (useradd, uid from UID_MIN up) unless one exists; ""
// when done, else why not.
inline std::string EnsureUser(const std::string& user) {
  if (getpwnam(user.c_str()) != nullptr) return "";
  if (geteuid() != 0) return "creating users (useradd) needs root";
  auto r = RunCommand({.argv = {"useradd", "-M", "-s", "/bin/sh", user}});
  if (!r.ok()) return r.status().ToString();
  return r->exit_code == 0 ? "" : absl::StrCat("useradd ", user, ": ", r->err);
}

// A job as the scheduler itself shows it.
struct HostJob {
  std::string id, user, name;
  std::string queue;                     // partition or cluster queue ("" = none asked for: the scheduler's choice)
  std::string account;                   // "" = none
  std::string stdout_path, stderr_path;  // as the job asked for them ("" = the scheduler's default)
  int64_t time_limit_s = 0;              // 0 = none
};

class HostileHost {
 public:
  virtual ~HostileHost() = default;

  // Non-empty: the scheduler cannot run here and every test skips,
  // printing this.
  virtual std::string SkipReason() const = 0;
  // Starts a fresh scheduler with a second queue, OtherQueue(); jobs run as
  // other users in `work_dir` (mode 1777).
  virtual absl::Status Start(const std::string& work_dir) = 0;
  // An adapter over that scheduler: submit_dir is the work folder, jobs run
  // as nobody (run_as: account) unless `options` say otherwise; an option
  // given as "" is left unset.
  virtual absl::StatusOr<std::unique_ptr<SchedulerAdapter>> MakeAdapter(std::map<std::string, std::string> options) = 0;
  // The ids of every job the scheduler holds, whoever submitted it, pending,
  // held, running or finished.
  virtual absl::StatusOr<std::vector<std::string>> HostJobIds() = 0;
  // A job that has not finished, as the scheduler records it.
  virtual absl::StatusOr<HostJob> Describe(const std::string& id) = 0;
  // The queue the adapter submits to, and another one that exists.
  virtual std::string Queue() const = 0;
  virtual std::string OtherQueue() const = 0;
  // Script lines in the scheduler's own directive syntax asking for account
  // `account`, queue OtherQueue(), stdout and stderr at `path`, job name
  // `name`, a one-second time limit, the widest job the host runs and (where
  // the scheduler has one) another shell.
  virtual std::string Directives(const std::string& account, const std::string& path,
                                 const std::string& name) const = 0;
  // The accounts the scheduler's own daemons run as.
  virtual std::vector<std::string> ServiceAccounts() const = 0;
};

struct HostileParam {
  std::string name;  // the test-name suffix: [A-Za-z0-9_]+
  std::function<std::unique_ptr<HostileHost>()> make_host;
};

inline void PrintTo(const HostileParam& p, std::ostream* os) { *os << p.name; }

inline std::string HostileParamName(const ::testing::TestParamInfo<HostileParam>& info) { return info.param.name; }

class HostileAdapterTest : public ::testing::TestWithParam<HostileParam> {
 protected:
  void SetUp() override;
  void TearDown() override;

  // A job spec that would run (one core, a script that writes `marker` in
  // the work folder when it runs).
  JobSpec Spec(const std::string& name, const std::string& marker = "") const;
  // Every job the scheduler holds; fails the test when it cannot say.
  std::vector<std::string> HostJobs();
  // Waits up to 60 s until the adapter shows the tagged job done.
  bool WaitDone(SchedulerAdapter* a, const std::string& tag);

  TempDir dir_;
  std::unique_ptr<HostileHost> host_;  // its scheduler stopped before dir_ goes
};

}  // namespace hyperfed::scheduler::testing
