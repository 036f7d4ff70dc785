#include "daemon/scheduler/registry.h"

#include "absl/strings/match.h"
#include "daemon/scheduler/sim_adapter.h"
#include "gtest/gtest.h"
#include "tests/scheduler/temp_dir.h"

namespace hyperfed::scheduler {
namespace {

// A factory that records the context it was given and fails on purpose, so
// the tests need no real adapter.
AdapterFactory Failing(absl::Status status, AdapterContext* seen = nullptr) {
  return [status, seen](const AdapterContext& ctx) -> absl::StatusOr<std::unique_ptr<SchedulerAdapter>> {
    if (seen) *seen = ctx;
    return status;
  };
}

TEST(AdapterRegistryTest, DuplicateNameIsAlreadyExistsAndFirstStays) {
  AdapterRegistry r;
  ASSERT_TRUE(r.Register("x", Failing(absl::UnavailableError("first"))).ok());
  absl::Status dup = r.Register("x", Failing(absl::UnavailableError("second")));
  EXPECT_TRUE(absl::IsAlreadyExists(dup)) << dup;
  EXPECT_TRUE(absl::StrContains(dup.message(), "\"x\"")) << dup;
  auto made = r.Create("x", {});
  EXPECT_EQ(made.status().message(), "first");
}

TEST(AdapterRegistryTest, UnknownNameIsNotFoundAndListsKnownNames) {
  AdapterRegistry r;
  ASSERT_TRUE(r.Register("slurm", Failing(absl::UnavailableError("x"))).ok());
  ASSERT_TRUE(r.Register("exec", Failing(absl::UnavailableError("x"))).ok());
  auto made = r.Create("slurn", {});
  ASSERT_TRUE(absl::IsNotFound(made.status())) << made.status();
  EXPECT_TRUE(absl::StrContains(made.status().message(), "\"slurn\"")) << made.status();
  EXPECT_TRUE(absl::StrContains(made.status().message(), "exec, slurm")) << made.status();
}

TEST(AdapterRegistryTest, EmptyRegistrySaysSo) {
  AdapterRegistry r;
  auto made = r.Create("sim", {});
  ASSERT_TRUE(absl::IsNotFound(made.status()));
  EXPECT_TRUE(absl::StrContains(made.status().message(), "(none)")) << made.status();
}

TEST(AdapterRegistryTest, HasAndNamesSorted) {
  AdapterRegistry r;
  EXPECT_FALSE(r.Has("sim"));
  EXPECT_TRUE(r.Names().empty());
  ASSERT_TRUE(r.Register("sim", Failing(absl::UnavailableError("x"))).ok());
  ASSERT_TRUE(r.Register("exec", Failing(absl::UnavailableError("x"))).ok());
  EXPECT_TRUE(r.Has("sim"));
  EXPECT_FALSE(r.Has("Sim"));
  EXPECT_EQ(r.Names(), (std::vector<std::string>{"exec", "sim"}));
}

TEST(AdapterRegistryTest, EmptyNameAndNullFactoryAreRejected) {
  AdapterRegistry r;
  EXPECT_TRUE(absl::IsInvalidArgument(r.Register("", Failing(absl::UnavailableError("x")))));
  EXPECT_TRUE(absl::IsInvalidArgument(r.Register("x", nullptr)));
  EXPECT_TRUE(r.Names().empty());
}

TEST(AdapterRegistryTest, CreatePassesContextAndFactoryErrors) {
  AdapterRegistry r;
  AdapterContext seen;
  ASSERT_TRUE(r.Register("x", Failing(absl::InvalidArgumentError("bad option"), &seen)).ok());
  FakeEnv clock;
  auto made = r.Create("x", {.state_dir = "/s", .options = {{"k", "v"}}, .clock = &clock});
  EXPECT_TRUE(absl::IsInvalidArgument(made.status()));
  EXPECT_EQ(made.status().message(), "bad option");
  EXPECT_EQ(seen.state_dir, "/s");
  EXPECT_EQ(seen.options.at("k"), "v");
  EXPECT_EQ(seen.clock, &clock);
}

TEST(AdapterRegistryTest, FactoryReturningNoAdapterIsInternal) {
  AdapterRegistry r;
  ASSERT_TRUE(r.Register("null", [](const AdapterContext&) -> absl::StatusOr<std::unique_ptr<SchedulerAdapter>> {
                 return std::unique_ptr<SchedulerAdapter>();
               }).ok());
  EXPECT_TRUE(absl::IsInternal(r.Create("null", {}).status()));
}

TEST(AdapterRegistryTest, SimAdapterRegistersAndIsCreatedByName) {
  AdapterRegistry r;
  RegisterSimAdapter(&r);
  RegisterSimAdapter(&r);  // a second call leaves the first registration
  EXPECT_EQ(r.Names(), (std::vector<std::string>{"sim"}));
  testing::TempDir dir;
  FakeEnv clock;
  auto made = r.Create("sim", {.state_dir = dir.path(), .options = {{"slots", "3"}}, .clock = &clock});
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ((*made)->Name(), "sim");
  EXPECT_EQ((*made)->GetCapacity()->units, 3);
  auto bad = r.Create("sim", {.state_dir = dir.path(), .options = {{"slots", "many"}}, .clock = &clock});
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
}

TEST(JobStateNameTest, NamesEveryState) {
  EXPECT_STREQ(JobStateName(JobState::kPending), "pending");
  EXPECT_STREQ(JobStateName(JobState::kHeld), "held");
  EXPECT_STREQ(JobStateName(JobState::kRunning), "running");
  EXPECT_STREQ(JobStateName(JobState::kDone), "done");
  EXPECT_STREQ(JobStateName(JobState::kCancelled), "cancelled");
}

}  // namespace
}  // namespace hyperfed::scheduler
