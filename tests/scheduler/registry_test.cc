#include "daemon/scheduler/registry.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "daemon/scheduler/sim_adapter.h"
#include "gtest/gtest.h"
#include "tests/scheduler/temp_dir.h"

namespace hyperfed::scheduler {
namespace {

// A factory whose options are one int ("n") and whose Create records what
// it was given and fails on purpose (an OK status: returns no adapter), so
// the tests need no real adapter.
struct Seen {
  AdapterContext ctx;
  int n = -1;
};
class Failing final : public TypedAdapterFactory<int> {
 public:
  Failing(std::string name, absl::Status status, Seen* seen = nullptr)
      : name_(std::move(name)), status_(std::move(status)), seen_(seen) {}
  std::string Name() const override { return name_; }

 protected:
  absl::StatusOr<int> Parse(const std::map<std::string, std::string>& options) const override {
    int n = 0;
    if (auto it = options.find("n"); it != options.end() && !absl::SimpleAtoi(it->second, &n))
      return OptionError("n", "scheduler option \"n\": want a number");
    return n;
  }
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> Make(const int& n, const AdapterContext& ctx) const override {
    if (seen_) *seen_ = {ctx, n};
    if (status_.ok()) return std::unique_ptr<SchedulerAdapter>();  // "made" nothing
    return status_;
  }

 private:
  std::string name_;
  absl::Status status_;
  Seen* seen_;
};

std::unique_ptr<AdapterFactory> Fails(std::string name, absl::Status status = absl::UnavailableError("x"),
                                      Seen* seen = nullptr) {
  return std::make_unique<Failing>(std::move(name), std::move(status), seen);
}

TEST(AdapterRegistryTest, DuplicateNameIsAlreadyExistsAndFirstStays) {
  AdapterRegistry r;
  ASSERT_TRUE(r.Register(Fails("x", absl::UnavailableError("first"))).ok());
  absl::Status dup = r.Register(Fails("x", absl::UnavailableError("second")));
  EXPECT_TRUE(absl::IsAlreadyExists(dup)) << dup;
  EXPECT_TRUE(absl::StrContains(dup.message(), "\"x\"")) << dup;
  auto made = r.Create("x", {});
  EXPECT_EQ(made.status().message(), "first");
}

TEST(AdapterRegistryTest, UnknownNameIsNotFoundAndListsKnownNames) {
  AdapterRegistry r;
  ASSERT_TRUE(r.Register(Fails("slurm")).ok());
  ASSERT_TRUE(r.Register(Fails("exec")).ok());
  for (const absl::Status& st : {r.Create("slurn", {}).status(), r.ParseOptions("slurn", {}).status()}) {
    ASSERT_TRUE(absl::IsNotFound(st)) << st;
    EXPECT_TRUE(absl::StrContains(st.message(), "\"slurn\"")) << st;
    EXPECT_TRUE(absl::StrContains(st.message(), "exec, slurm")) << st;
  }
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
  ASSERT_TRUE(r.Register(Fails("sim")).ok());
  ASSERT_TRUE(r.Register(Fails("exec")).ok());
  EXPECT_TRUE(r.Has("sim"));
  EXPECT_FALSE(r.Has("Sim"));
  EXPECT_EQ(r.Names(), (std::vector<std::string>{"exec", "sim"}));
}

TEST(AdapterRegistryTest, EmptyNameAndNullFactoryAreRejected) {
  AdapterRegistry r;
  EXPECT_TRUE(absl::IsInvalidArgument(r.Register(Fails(""))));
  EXPECT_TRUE(absl::IsInvalidArgument(r.Register(nullptr)));
  EXPECT_TRUE(r.Names().empty());
}

TEST(AdapterRegistryTest, ParseOptionsGivesTheTypedOptionsOrNamesTheBadOption) {
  AdapterRegistry r;
  ASSERT_TRUE(r.Register(Fails("x")).ok());
  auto good = r.ParseOptions("x", {{"n", "7"}});
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_NE(std::any_cast<int>(&*good), nullptr);
  EXPECT_EQ(std::any_cast<int>(*good), 7);
  auto bad = r.ParseOptions("x", {{"n", "seven"}});
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_EQ(OptionOf(bad.status()), "n");
}

TEST(AdapterRegistryTest, CreateTakesParsedOptionsAndPassesContextAndFactoryErrors) {
  AdapterRegistry r;
  Seen seen;
  ASSERT_TRUE(r.Register(Fails("x", absl::InvalidArgumentError("bad option"), &seen)).ok());
  FakeEnv clock;
  // Options already parsed win over the context's text.
  auto parsed = r.ParseOptions("x", {{"n", "3"}});
  ASSERT_TRUE(parsed.ok());
  auto made = r.Create("x", *parsed, {.state_dir = "/s", .options = {{"n", "5"}}, .clock = &clock});
  EXPECT_TRUE(absl::IsInvalidArgument(made.status()));
  EXPECT_EQ(made.status().message(), "bad option");
  EXPECT_EQ(seen.n, 3);
  EXPECT_EQ(seen.ctx.state_dir, "/s");
  EXPECT_EQ(seen.ctx.options.at("n"), "5");
  EXPECT_EQ(seen.ctx.clock, &clock);
  // None parsed (a config made in code): the context's text is parsed.
  (void)r.Create("x", {.options = {{"n", "5"}}});
  EXPECT_EQ(seen.n, 5);
  EXPECT_EQ(OptionOf(r.Create("x", {.options = {{"n", "five"}}}).status()), "n");
  // Options of another adapter's type are refused, not misread.
  EXPECT_TRUE(absl::IsInternal(r.Create("x", AdapterOptions(std::string("n=3")), {}).status()));
}

TEST(AdapterRegistryTest, FactoryReturningNoAdapterIsInternal) {
  AdapterRegistry r;
  ASSERT_TRUE(r.Register(Fails("null", absl::OkStatus())).ok());
  EXPECT_TRUE(absl::IsInternal(r.Create("null", {}).status()));
}

TEST(AdapterRegistryTest, SimAdapterRegistersAndIsCreatedByName) {
  AdapterRegistry r;
  ASSERT_TRUE(r.Register(std::make_unique<SimAdapterFactory>()).ok());
  EXPECT_FALSE(r.Register(std::make_unique<SimAdapterFactory>()).ok());  // the first registration stays
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
