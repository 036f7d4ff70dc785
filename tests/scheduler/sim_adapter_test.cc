#include "daemon/scheduler/sim_adapter.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>
#include <limits>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/scheduler/adapter_contract.h"
#include "tests/scheduler/temp_dir.h"

namespace hyperfed::scheduler::testing {
namespace {

// ---- The contract, on a fake clock ----

class SimEnv : public AdapterContractEnv {
 public:
  explicit SimEnv(std::map<std::string, std::string> options) : options_(std::move(options)) {}
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> MakeAdapter() override {
    auto a = SimAdapter::Open({.state_dir = dir_.path(), .options = options_, .clock = &clock_});
    if (!a.ok()) return a.status();
    return std::unique_ptr<SchedulerAdapter>(*std::move(a));
  }
  void LetTimePass(absl::Duration d) override { clock_.Advance(d); }
  Estimates StartEstimates() const override { return Estimates::kAlways; }

 private:
  TempDir dir_;
  FakeEnv clock_;
  std::map<std::string, std::string> options_;
};

// The sim adapter's single calls only, so that the contract also runs the
// interface's default batch calls (a loop over the single calls), which every
// adapter without its own batch calls uses.
class SingleCallsOnly : public SchedulerAdapter {
 public:
  explicit SingleCallsOnly(std::unique_ptr<SchedulerAdapter> inner) : inner_(std::move(inner)) {}
  std::string Name() const override { return inner_->Name(); }
  absl::StatusOr<std::vector<Job>> ListJobs() override { return inner_->ListJobs(); }
  absl::StatusOr<Capacity> GetCapacity() override { return inner_->GetCapacity(); }
  absl::Status Hold(const std::string& id) override { return inner_->Hold(id); }
  absl::Status Release(const std::string& id) override { return inner_->Release(id); }
  absl::Status Cancel(const std::string& id) override { return inner_->Cancel(id); }
  absl::StatusOr<JobSpec> Export(const std::string& id) override { return inner_->Export(id); }
  absl::StatusOr<std::string> Submit(const JobSpec& spec, const std::string& tag, bool held) override {
    return inner_->Submit(spec, tag, held);
  }
  absl::StatusOr<std::vector<Job>> FindByTag(const std::string& tag) override { return inner_->FindByTag(tag); }
  absl::Status SetPinned(const std::string& id, bool pinned) override { return inner_->SetPinned(id, pinned); }
  absl::Status CheckSpec(const JobSpec& spec) const override { return inner_->CheckSpec(spec); }

 private:
  std::unique_ptr<SchedulerAdapter> inner_;
};

class SingleCallsEnv : public SimEnv {
 public:
  SingleCallsEnv() : SimEnv({}) {}
  // The interface's defaults for Pending and ArrivalStarts: no estimates.
  Estimates StartEstimates() const override { return Estimates::kNever; }
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> MakeAdapter() override {
    auto a = SimEnv::MakeAdapter();
    if (!a.ok()) return a.status();
    return std::unique_ptr<SchedulerAdapter>(std::make_unique<SingleCallsOnly>(*std::move(a)));
  }
};

INSTANTIATE_TEST_SUITE_P(
    Sim, AdapterContractTest,
    ::testing::Values(
        AdapterContractParam{"Defaults", [] { return std::make_unique<SimEnv>(std::map<std::string, std::string>{}); }},
        AdapterContractParam{
            "OneFastSlot",
            [] {
              return std::make_unique<SimEnv>(std::map<std::string, std::string>{{"slots", "1"}, {"time_scale", "10"}});
            }},
        AdapterContractParam{"DefaultBatchCalls", [] { return std::make_unique<SingleCallsEnv>(); }}),
    AdapterContractParamName);

// ---- Sim-specific behaviour ----

JobSpec Spec(const std::string& name, int64_t duration_ms) {
  JobSpec s;
  s.name = name;
  s.script = "true";
  s.duration_ms = duration_ms;
  return s;
}

class SimAdapterTest : public ::testing::Test {
 protected:
  std::unique_ptr<SimAdapter> Open(std::map<std::string, std::string> options = {}) {
    auto a = SimAdapter::Open({.state_dir = dir_.path(), .options = std::move(options), .clock = &clock_});
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *std::move(a) : nullptr;
  }
  static std::string State(SimAdapter* a, const std::string& id) {
    auto j = a->GetJob(id);
    return j.ok() ? JobStateName(j->state) : j.status().ToString();
  }
  static std::string MustSubmit(SimAdapter* a, const JobSpec& spec, const std::string& tag = "", bool held = false) {
    auto id = a->Submit(spec, tag, held);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or("");
  }

  TempDir dir_;
  FakeEnv clock_;
};

TEST_F(SimAdapterTest, SlotsLimitRunningJobs) {
  auto a = Open({{"slots", "2"}});
  for (int i = 0; i < 5; ++i) MustSubmit(a.get(), Spec(absl::StrCat("j", i), 60'000));
  auto stats = a->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->running, 2);
  EXPECT_EQ(stats->pending, 3);
  auto jobs = a->ListJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 5u);
  EXPECT_EQ((*jobs)[0].state, JobState::kRunning);
  EXPECT_EQ((*jobs)[1].state, JobState::kRunning);
  EXPECT_EQ((*jobs)[2].state, JobState::kPending);
}

TEST_F(SimAdapterTest, JobsFinishAfterDurationOverTimeScaleAndSlotsPassOnInOrder) {
  auto a = Open({{"slots", "1"}, {"time_scale", "10"}});
  const std::string j1 = MustSubmit(a.get(), Spec("j1", 10'000));  // runs 1000 ms
  const std::string j2 = MustSubmit(a.get(), Spec("j2", 5'000));   // then 500 ms
  const std::string j3 = MustSubmit(a.get(), Spec("j3", 10'000));  // then 1000 ms
  clock_.Advance(absl::Milliseconds(999));
  EXPECT_EQ(State(a.get(), j1), "running");
  EXPECT_EQ(State(a.get(), j2), "pending");
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(State(a.get(), j1), "done");
  EXPECT_EQ(State(a.get(), j2), "running");
  // One jump over two finishes: j2 ends at 1500 and j3 starts then, not at
  // the time we look.
  clock_.Advance(absl::Milliseconds(1499));
  EXPECT_EQ(State(a.get(), j2), "done");
  EXPECT_EQ(State(a.get(), j3), "running");
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(State(a.get(), j3), "done");
  EXPECT_EQ(*a->CountDone(), 3);
}

TEST_F(SimAdapterTest, LazyReplayStartsFreedSlotsAtTheFinishTime) {
  auto a = Open({{"slots", "2"}});
  MustSubmit(a.get(), Spec("a", 1'000));
  MustSubmit(a.get(), Spec("b", 3'000));
  const std::string c = MustSubmit(a.get(), Spec("c", 1'500));  // starts at 1000 in a's slot, ends 2500
  const std::string d = MustSubmit(a.get(), Spec("d", 1'000));  // starts at 2500, ends 3500
  clock_.Advance(absl::Milliseconds(3'499));
  EXPECT_EQ(State(a.get(), c), "done");
  EXPECT_EQ(State(a.get(), d), "running");
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(State(a.get(), d), "done");
}

TEST_F(SimAdapterTest, HeldJobsNeverStartAndReleasedOnesQueueBehindOlderPending) {
  auto a = Open({{"slots", "1"}});
  const std::string h = MustSubmit(a.get(), Spec("h", 100), "", /*held=*/true);
  const std::string p = MustSubmit(a.get(), Spec("p", 1'000));
  EXPECT_EQ(State(a.get(), p), "running");
  clock_.Advance(absl::Hours(24));
  EXPECT_EQ(State(a.get(), h), "held");
  EXPECT_EQ(State(a.get(), p), "done");
  ASSERT_TRUE(a->Release(h).ok());
  EXPECT_EQ(State(a.get(), h), "running");
}

TEST_F(SimAdapterTest, OldestPendingJobStartsFirst) {
  auto a = Open({{"slots", "1"}});
  MustSubmit(a.get(), Spec("blocker", 1'000));
  const std::string first = MustSubmit(a.get(), Spec("first", 1'000), "", /*held=*/true);
  const std::string second = MustSubmit(a.get(), Spec("second", 1'000));
  ASSERT_TRUE(a->Release(first).ok());  // released later, but submitted earlier
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(State(a.get(), first), "running");
  EXPECT_EQ(State(a.get(), second), "pending");
}

TEST_F(SimAdapterTest, ZeroDurationJobIsDoneAtOnce) {
  auto a = Open();
  const std::string id = MustSubmit(a.get(), Spec("now", 0));
  EXPECT_EQ(State(a.get(), id), "done");
}

TEST_F(SimAdapterTest, CapacityComesFromOptions) {
  auto a = Open({{"slots", "8"}, {"speed", "2.5"}});
  auto cap = a->GetCapacity();
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(cap->units, 8);
  EXPECT_EQ(cap->speed, 2.5);
  EXPECT_EQ(cap->Value(), 20.0);
  EXPECT_EQ(a->Name(), "sim");
}

TEST_F(SimAdapterTest, PinMarkerPinsAtSubmit) {
  auto a = Open({{"pin_marker", "local:"}});
  const std::string pinned = MustSubmit(a.get(), Spec("local:build", 10), "", true);
  const std::string free = MustSubmit(a.get(), Spec("build-local:", 10), "", true);
  EXPECT_TRUE(a->GetJob(pinned)->pinned);
  EXPECT_FALSE(a->GetJob(free)->pinned);
  ASSERT_TRUE(a->SetPinned(pinned, false).ok());  // the operator may unpin it
  EXPECT_FALSE(a->GetJob(pinned)->pinned);
}

TEST_F(SimAdapterTest, NoPinMarkerPinsNothing) {
  auto a = Open();
  EXPECT_FALSE(a->GetJob(MustSubmit(a.get(), Spec("", 10), "", true))->pinned);
}

TEST_F(SimAdapterTest, BadOptionsAreRejectedNamingTheOptionAndTouchNothing) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"slots", "0"},       {"slots", "-1"},       {"slots", "abc"},  {"slots", "1.5"},
      {"slots", ""},        {"slots", "99999999"}, {"speed", "0"},    {"speed", "-2"},
      {"speed", "nan"},     {"speed", "inf"},      {"speed", "fast"}, {"time_scale", "0"},
      {"time_scale", "-1"}, {"time_scale", "x"},   {"slot", "4"},     {"Slots", "4"}};
  const std::string state_dir = dir_.Sub("never");
  for (const auto& [name, value] : bad) {
    SCOPED_TRACE(absl::StrCat(name, "=", value));
    auto a = SimAdapter::Open({.state_dir = state_dir, .options = {{name, value}}, .clock = &clock_});
    ASSERT_FALSE(a.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(a.status())) << a.status();
    EXPECT_TRUE(absl::StrContains(a.status().message(), absl::StrCat("\"", name, "\""))) << a.status();
  }
  EXPECT_FALSE(std::filesystem::exists(state_dir));
}

TEST_F(SimAdapterTest, UnusableStateDirIsAnError) {
  EXPECT_TRUE(absl::IsInvalidArgument(SimAdapter::Open({.state_dir = "", .options = {}, .clock = &clock_}).status()));
  const std::string file = dir_.Sub("a-file");
  {
    FILE* f = fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fclose(f);
  }
  auto a = SimAdapter::Open({.state_dir = file, .options = {}, .clock = &clock_});
  EXPECT_FALSE(a.ok());
  // A queue file that is not a database.
  const std::string junk_dir = dir_.Sub("junk");
  std::filesystem::create_directories(junk_dir);
  {
    FILE* f = fopen((std::filesystem::path(junk_dir) / kSimDbFile).c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("this is not an SQLite database, not even close; it is long enough to have a header\n", f);
    fclose(f);
  }
  auto b = SimAdapter::Open({.state_dir = junk_dir, .options = {}, .clock = &clock_});
  EXPECT_FALSE(b.ok());
}

TEST_F(SimAdapterTest, BadSpecIsRejectedAndSubmitsNothing) {
  auto a = Open();
  std::vector<JobSpec> bad(5, Spec("bad", 10));
  bad[0].cores = 0;
  bad[1].memory_mb = -1;
  bad[2].time_limit_s = -1;
  bad[3].duration_ms = -5;
  bad[4].cost = std::numeric_limits<double>::quiet_NaN();
  for (const auto& spec : bad) {
    auto id = a->Submit(spec, "bad-tag");
    EXPECT_TRUE(absl::IsInvalidArgument(id.status())) << id.status();
  }
  EXPECT_TRUE(a->FindByTag("bad-tag")->empty());
  EXPECT_EQ(MustSubmit(a.get(), Spec("good", 10)), "1") << "rejected submits use no id";
}

TEST_F(SimAdapterTest, BadSpecInABatchIsRejectedAloneAndTheRestIsSubmitted) {
  auto a = Open();
  JobSpec bad = Spec("bad", 10);
  bad.cores = 0;
  auto r = a->SubmitMany({{Spec("g1", 10), "g1"}, {bad, "bad"}, {Spec("g2", 10), "g2"}}, /*held=*/true);
  ASSERT_EQ(r.size(), 3u);
  ASSERT_TRUE(r[0].ok()) << r[0].status();
  EXPECT_TRUE(absl::IsInvalidArgument(r[1].status())) << r[1].status();
  ASSERT_TRUE(r[2].ok()) << r[2].status();
  EXPECT_EQ(*r[0], "1");
  EXPECT_EQ(*r[2], "2") << "a rejected item uses no id";
  EXPECT_TRUE(a->FindByTag("bad")->empty());
  EXPECT_EQ(State(a.get(), "1"), "held");
  EXPECT_EQ(State(a.get(), "2"), "held");
}

TEST_F(SimAdapterTest, EmptyTagCannotBeSearched) {
  auto a = Open();
  EXPECT_TRUE(absl::IsInvalidArgument(a->FindByTag("").status()));
}

TEST_F(SimAdapterTest, IdsAreIncreasingIntegers) {
  auto a = Open();
  EXPECT_EQ(MustSubmit(a.get(), Spec("a", 1)), "1");
  EXPECT_EQ(MustSubmit(a.get(), Spec("b", 1)), "2");
  EXPECT_EQ(MustSubmit(a.get(), Spec("c", 1), "t"), "3");
  EXPECT_EQ(MustSubmit(a.get(), Spec("c", 1), "t"), "3");
  EXPECT_EQ(MustSubmit(a.get(), Spec("d", 1)), "4");
  // Non-canonical spellings of a real id name no job.
  EXPECT_TRUE(absl::IsNotFound(a->Export("01").status()));
  EXPECT_TRUE(absl::IsNotFound(a->Export("+1").status()));
  EXPECT_TRUE(absl::IsNotFound(a->Export(" 1").status()));
}

TEST_F(SimAdapterTest, StringsWithAnyByteRoundTrip) {
  auto a = Open();
  JobSpec s = Spec(std::string("nul\0inside", 10), 10);
  s.script = std::string("\0\x01\xff", 3);
  // Environment names and values are what an environment can hold
  // (RefusedEnvName; no NUL), any other byte is kept.
  s.env["K"] = std::string("\x01\xff\n", 3);
  s.owner = "alice";
  const std::string id = MustSubmit(a.get(), s, std::string("t\0a", 3), true);
  EXPECT_EQ(*a->Export(id), s);
  EXPECT_TRUE(a->FindByTag("t")->empty());
  EXPECT_EQ(a->FindByTag(std::string("t\0a", 3))->size(), 1u);
}

// A batch's tags are looked up in one statement (a JSON array; row by row
// when a tag holds a NUL byte): a retry finds every job, whatever its tag.
TEST_F(SimAdapterTest, RetriedSubmitsFindTagsOfAnyByte) {
  auto a = Open();
  const std::vector<std::vector<std::string>> batches = {
      {"plain", "quote\"back\\slash", "ctl\x01\x1f\n", "\xff\xfe caf\xc3\xa9 ]}", "[1,2]"},
      {"plain-2", std::string("nul\0inside", 11), "x"},
  };
  for (const std::vector<std::string>& tags : batches) {
    std::vector<std::pair<JobSpec, std::string>> batch;
    for (const std::string& t : tags) batch.emplace_back(Spec("j", 10), t);
    auto first = a->SubmitMany(batch, true);
    auto again = a->SubmitMany(batch, true);
    ASSERT_EQ(first.size(), tags.size());
    ASSERT_EQ(again.size(), tags.size());
    for (size_t i = 0; i < tags.size(); ++i) {
      ASSERT_TRUE(first[i].ok() && again[i].ok()) << first[i].status() << again[i].status();
      EXPECT_EQ(*again[i], *first[i]) << i;
      EXPECT_EQ(a->FindByTag(tags[i])->size(), 1u) << i;
    }
  }
  EXPECT_EQ(a->ListJobs()->size(), 8u);
}

TEST_F(SimAdapterTest, StatsCountEveryState) {
  auto a = Open({{"slots", "1"}});
  const std::string done = MustSubmit(a.get(), Spec("done", 10));
  clock_.Advance(absl::Milliseconds(10));
  MustSubmit(a.get(), Spec("running", 1'000));
  MustSubmit(a.get(), Spec("pending", 1'000));
  MustSubmit(a.get(), Spec("held", 1'000), "", true);
  ASSERT_TRUE(a->Cancel(MustSubmit(a.get(), Spec("cancelled", 1'000))).ok());
  auto s = a->Stats();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->done, 1);
  EXPECT_EQ(s->running, 1);
  EXPECT_EQ(s->pending, 1);
  EXPECT_EQ(s->held, 1);
  EXPECT_EQ(s->cancelled, 1);
}

// ---- Persistence ----

TEST_F(SimAdapterTest, QueueSurvivesCloseAndReopen) {
  JobSpec full = Spec("full", 60'000);
  full.env = {{"A", "b"}};
  full.key = "site-a/42";
  full.cost = 3.5;
  std::string running, held, cancelled, done, pinned;
  {
    auto a = Open({{"slots", "1"}});
    done = MustSubmit(a.get(), Spec("done", 10), "mig-done");
    clock_.Advance(absl::Milliseconds(10));
    running = MustSubmit(a.get(), full, "mig-run");
    held = MustSubmit(a.get(), Spec("held", 10), "mig-held", true);
    cancelled = MustSubmit(a.get(), Spec("cancelled", 10), "mig-cancel");
    ASSERT_TRUE(a->Cancel(cancelled).ok());
    pinned = MustSubmit(a.get(), Spec("pinned", 10));
    ASSERT_TRUE(a->SetPinned(pinned, true).ok());
  }
  auto b = Open({{"slots", "1"}});
  EXPECT_EQ(State(b.get(), done), "done");
  EXPECT_EQ(State(b.get(), running), "running");
  EXPECT_EQ(State(b.get(), held), "held");
  EXPECT_EQ(State(b.get(), cancelled), "cancelled");
  EXPECT_EQ(State(b.get(), pinned), "pending");
  EXPECT_TRUE(b->GetJob(pinned)->pinned);
  EXPECT_EQ(*b->Export(running), full);
  // Tags are still idempotent, whatever the state.
  EXPECT_EQ(MustSubmit(b.get(), Spec("x", 1), "mig-done"), done);
  EXPECT_EQ(MustSubmit(b.get(), Spec("x", 1), "mig-cancel"), cancelled);
  EXPECT_EQ(MustSubmit(b.get(), Spec("x", 1), "mig-held"), held);
  // Ids keep increasing.
  EXPECT_EQ(MustSubmit(b.get(), Spec("new", 1)), "6");
  // The queue's time carries on: the running job ends 60 s after it started.
  clock_.Advance(absl::Seconds(60));
  EXPECT_EQ(State(b.get(), running), "done");
  EXPECT_EQ(State(b.get(), pinned), "running");
}

TEST_F(SimAdapterTest, ClockSteppingBackDoesNotUndoQueueTime) {
  std::string id;
  {
    auto a = Open();
    id = MustSubmit(a.get(), Spec("j", 1'000));
    clock_.Advance(absl::Seconds(5));
    ASSERT_TRUE(a->Tick().ok());
  }
  FakeEnv earlier;  // the default start, 5 s before clock_
  auto b = SimAdapter::Open({.state_dir = dir_.path(), .options = {}, .clock = &earlier});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(State(b->get(), id), "done");
  const std::string next = MustSubmit(b->get(), Spec("k", 1'000));
  EXPECT_EQ(State(b->get(), next), "running");
  earlier.Advance(absl::Seconds(5));  // still the queue's time: no progress yet
  EXPECT_EQ(State(b->get(), next), "running");
  earlier.Advance(absl::Seconds(1));
  EXPECT_EQ(State(b->get(), next), "done");
}

TEST_F(SimAdapterTest, TwoConnectionsOnOneQueueStayConsistent) {
  auto a = Open();
  auto b = Open();
  const std::string id = MustSubmit(a.get(), Spec("j", 10), "shared", true);
  EXPECT_EQ(MustSubmit(b.get(), Spec("j", 10), "shared"), id);
  ASSERT_TRUE(b->Cancel(id).ok());
  EXPECT_EQ(State(a.get(), id), "cancelled");
}

// Pending's queue is kept between calls: every write, of this connection or
// another, must show in the next answer.
TEST_F(SimAdapterTest, PendingSeesEveryWriteOfEitherConnection) {
  auto a = Open({{"slots", "1"}});
  auto b = Open({{"slots", "1"}});
  auto pending = [&a] {
    std::vector<std::string> ids;
    auto p = a->Pending();
    EXPECT_TRUE(p.ok()) << p.status();
    for (const PendingJob& j : p.value_or(std::vector<PendingJob>{})) ids.push_back(j.id);
    return ids;
  };
  const std::string blocker = MustSubmit(a.get(), Spec("blocker", 1'000));
  const std::string p1 = MustSubmit(a.get(), Spec("p1", 1'000));
  EXPECT_EQ(pending(), std::vector<std::string>{p1});
  EXPECT_EQ(pending(), std::vector<std::string>{p1});
  const std::string p2 = MustSubmit(b.get(), Spec("p2", 1'000));
  EXPECT_EQ(pending(), (std::vector<std::string>{p1, p2})) << "another connection's submit";
  ASSERT_TRUE(a->Hold(p1).ok());
  EXPECT_EQ(pending(), std::vector<std::string>{p2}) << "this connection's hold";
  ASSERT_TRUE(b->SetPinned(p2, true).ok());
  EXPECT_TRUE(pending().empty()) << "another connection's pin";
  ASSERT_TRUE(b->SetPinned(p2, false).ok());
  ASSERT_TRUE(b->Release(p1).ok());
  EXPECT_EQ(pending(), (std::vector<std::string>{p1, p2}));
  clock_.Advance(absl::Seconds(1));  // the blocker ends, p1 starts
  EXPECT_EQ(pending(), std::vector<std::string>{p2}) << "a start by the passing of time";
  EXPECT_EQ(State(a.get(), blocker), "done");
}

// Forecasts are made outside the adapter's lock, on the queue as read:
// calls that change the queue meanwhile neither wait for them nor show in
// them half-done, and the next forecast sees every change.
TEST_F(SimAdapterTest, ForecastsWhileTheQueueChangesStayWhole) {
  auto a = Open({{"slots", "1"}});
  MustSubmit(a.get(), Spec("blocker", 1'000'000));
  std::atomic<bool> done{false};
  std::vector<std::thread> readers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!done.load()) {
        auto p = a->Pending();
        auto f = a->FreeCores();
        if (!p.ok() || !f.ok() || f->empty()) ++bad;
        // One core, busy: the queue's jobs start one after another.
        for (size_t i = 1; p.ok() && i < p->size(); ++i)
          if ((*p)[i].start_ms <= (*p)[i - 1].start_ms) ++bad;
      }
    });
  }
  std::vector<std::string> ids;
  for (int i = 0; i < 200; ++i) {
    ids.push_back(MustSubmit(a.get(), Spec(absl::StrCat("j", i), 1'000)));
    if (i % 3 == 0) {
      ASSERT_TRUE(a->Hold(ids[i / 2]).ok());
    }
  }
  done.store(true);
  for (auto& th : readers) th.join();
  EXPECT_EQ(bad.load(), 0);
  auto fresh = Open({{"slots", "1"}});
  auto want = fresh->Pending();
  auto got = a->Pending();
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    EXPECT_EQ((*got)[i].id, (*want)[i].id);
    EXPECT_EQ((*got)[i].start_ms, (*want)[i].start_ms);
  }
}

TEST_F(SimAdapterTest, ConcurrentSubmitsOfOneTagMakeOneJob) {
  auto a = Open();
  std::vector<std::thread> threads;
  std::vector<std::set<std::string>> seen(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto id = a->Submit(Spec("c", 10), absl::StrCat("tag-", i % 5), true);
        if (id.ok()) seen[t].insert(*id);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<std::string> all;
  for (const auto& s : seen) all.insert(s.begin(), s.end());
  EXPECT_EQ(all.size(), 5u);
  EXPECT_EQ(a->ListJobs()->size(), 5u);
}

// Reads PRAGMA data_version on its own connection: it changes when another
// connection commits a write.
class DataVersion {
 public:
  explicit DataVersion(const std::string& dir) {
    sqlite3_open((std::filesystem::path(dir) / kSimDbFile).c_str(), &db_);
  }
  ~DataVersion() { sqlite3_close(db_); }
  int64_t Get() {
    sqlite3_stmt* st = nullptr;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db_, "PRAGMA data_version", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
  }

 private:
  sqlite3* db_ = nullptr;
};

TEST_F(SimAdapterTest, ReadsWriteNothingUnlessTheQueueMoved) {
  auto a = Open({{"slots", "1"}});
  const std::string id = MustSubmit(a.get(), Spec("j", 1'000));
  DataVersion dv(dir_.path());
  const int64_t before = dv.Get();
  clock_.Advance(absl::Milliseconds(500));
  ASSERT_TRUE(a->ListJobs().ok());
  ASSERT_TRUE(a->FindByTag("none").ok());
  ASSERT_TRUE(a->Export(id).ok());
  EXPECT_EQ(dv.Get(), before);
  clock_.Advance(absl::Milliseconds(500));
  EXPECT_EQ(State(a.get(), id), "done");
  EXPECT_NE(dv.Get(), before);
}

// ---- EASY backfilling (daemon/balance/easy.h) on hand-worked examples ----

JobSpec Wide(const std::string& name, int cores, int64_t duration_ms, int64_t time_limit_s = 0) {
  JobSpec s = Spec(name, duration_ms);
  s.cores = cores;
  s.time_limit_s = time_limit_s;
  return s;
}

// When a job started and when it ended, in ms after `origin`, read from the
// queue file with a connection of its own ({-1, -1} when it never started).
struct Span {
  int64_t start = -1, end = -1;
  friend bool operator==(const Span&, const Span&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Span& s) {
    return os << "[" << s.start << ", " << s.end << ")";
  }
};
std::map<std::string, Span> Spans(const std::string& dir, int64_t origin_ms) {
  std::map<std::string, Span> out;
  sqlite3* db = nullptr;
  if (sqlite3_open((std::filesystem::path(dir) / kSimDbFile).c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT name, started_at_ms, finish_at_ms FROM jobs", -1, &st, nullptr) == SQLITE_OK) {
      while (sqlite3_step(st) == SQLITE_ROW) {
        Span sp;
        if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
          sp = {sqlite3_column_int64(st, 1) - origin_ms, sqlite3_column_int64(st, 2) - origin_ms};
        }
        out[reinterpret_cast<const char*>(sqlite3_column_text(st, 0))] = sp;
      }
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

class SimEasyTest : public SimAdapterTest {
 protected:
  int64_t T0() const { return absl::ToUnixMillis(clock_.Now()); }
  // Pending()'s estimate of each listed job, in ms after `origin`, by name.
  std::map<std::string, int64_t> Forecast(SimAdapter* a, int64_t origin_ms) {
    std::map<std::string, int64_t> out;
    auto pending = a->Pending();
    EXPECT_TRUE(pending.ok()) << pending.status();
    for (const PendingJob& p : pending.value_or(std::vector<PendingJob>{}))
      out[a->GetJob(p.id)->spec.name] = p.start_ms - origin_ms;
    return out;
  }
};

// The adapter keeps its forecast while nothing happens (QueueCache): at any
// moment it must answer what an adapter forecasting afresh answers. Random
// queues with time limits (some jobs running past theirs), small steps of
// time, now and then a submit or a hold from the other connection.
TEST_F(SimEasyTest, AKeptForecastIsTheForecastMadeAfresh) {
  std::mt19937_64 rng(16);
  for (int trial = 0; trial < 6; ++trial) {
    TempDir dir;
    auto open = [&] {
      auto a = SimAdapter::Open({.state_dir = dir.path(), .options = {{"cores", "4"}}, .clock = &clock_});
      EXPECT_TRUE(a.ok()) << a.status();
      return *std::move(a);
    };
    auto kept = open();
    auto other = open();
    auto job = [&](int i) {
      return Wide(absl::StrCat("j", i), 1 + static_cast<int>(rng() % 4), 500 + static_cast<int64_t>(rng() % 30'000),
                  static_cast<int64_t>(rng() % 3) == 0 ? 0 : 1 + static_cast<int64_t>(rng() % 20));
    };
    for (int i = 0; i < 12; ++i) MustSubmit(kept.get(), job(i));
    for (int step = 0; step < 60; ++step) {
      clock_.Advance(absl::Milliseconds(static_cast<int64_t>(rng() % 1'500)));
      if (step % 15 == 7) MustSubmit(other.get(), job(100 + step));
      if (step % 20 == 11) {
        auto p = other->Pending();
        if (p.ok() && !p->empty()) {
          ASSERT_TRUE(other->Hold(p->back().id).ok());
        }
      }
      auto afresh = open();  // no forecast kept yet
      auto want = afresh->Pending();
      auto got = kept->Pending();
      ASSERT_TRUE(want.ok() && got.ok());
      ASSERT_EQ(got->size(), want->size()) << trial << "/" << step;
      for (size_t i = 0; i < got->size(); ++i) {
        EXPECT_EQ((*got)[i].id, (*want)[i].id) << trial << "/" << step;
        EXPECT_EQ((*got)[i].start_ms, (*want)[i].start_ms) << trial << "/" << step << " job " << (*got)[i].id;
      }
      EXPECT_EQ(*kept->FreeCores(), *afresh->FreeCores()) << trial << "/" << step;
      EXPECT_EQ(*kept->ArrivalStarts({1, 2, 3, 4}), *afresh->ArrivalStarts({1, 2, 3, 4})) << trial << "/" << step;
    }
  }
}

// 4 cores. A (2 cores, 10 s) starts; B (4 cores) cannot and reserves t=10
// (A's end); C (2 cores, 5 s) ends before that and backfills at once; D
// (2 cores, 20 s) would end after it with no extra core, so it waits; E
// (1 core, 5 s) backfills at t=5 into C's cores, ending exactly at t=10. B
// starts at its reservation, D after B.
TEST_F(SimEasyTest, BackfillsOnlyJobsEndingByTheReservation) {
  auto a = Open({{"cores", "4"}});
  const int64_t t0 = T0();
  for (const JobSpec& s : {Wide("A", 2, 10'000), Wide("B", 4, 5'000), Wide("C", 2, 5'000), Wide("D", 2, 20'000),
                           Wide("E", 1, 5'000)})
    MustSubmit(a.get(), s);
  // Without time limits the sim knows every run time: the forecast is exact.
  EXPECT_EQ(Forecast(a.get(), t0), (std::map<std::string, int64_t>{{"B", 10'000}, {"D", 15'000}, {"E", 5'000}}));
  auto arrival = a->ArrivalStarts({1, 2, 3, 4});
  ASSERT_TRUE(arrival.ok()) << arrival.status();
  EXPECT_EQ(*arrival, (std::vector<int64_t>{t0 + 15'000, t0 + 15'000, t0 + 35'000, t0 + 35'000}));
  clock_.Advance(absl::Seconds(100));  // one lazy jump over every event
  ASSERT_TRUE(a->Tick().ok());
  EXPECT_EQ(Spans(dir_.path(), t0), (std::map<std::string, Span>{{"A", {0, 10'000}},
                                                                   {"B", {10'000, 15'000}},
                                                                   {"C", {0, 5'000}},
                                                                   {"D", {15'000, 35'000}},
                                                                   {"E", {5'000, 10'000}}}));
}

// 6 cores. A (3 cores, 10 s) runs; B (4 cores) reserves t=10, when 6 cores
// are free: 2 extra. C (2 cores, 100 s) ends long after t=10 but fits in
// the extra cores: it backfills and uses them up. D (1 core, 100 s) fits
// in the free core but not beside the reservation: it waits. E (1 core,
// 5 s) ends before t=10: it backfills.
TEST_F(SimEasyTest, BackfillsALongJobOnlyIntoTheExtraCores) {
  auto a = Open({{"cores", "6"}});
  const int64_t t0 = T0();
  for (const JobSpec& s : {Wide("A", 3, 10'000), Wide("B", 4, 10'000), Wide("C", 2, 100'000), Wide("D", 1, 100'000),
                           Wide("E", 1, 5'000)})
    MustSubmit(a.get(), s);
  EXPECT_EQ(Forecast(a.get(), t0), (std::map<std::string, int64_t>{{"B", 10'000}, {"D", 20'000}}));
  clock_.Advance(absl::Seconds(7));  // E has ended: its core still may not go to D
  EXPECT_EQ(State(a.get(), "4"), "pending");
  clock_.Advance(absl::Seconds(200));
  ASSERT_TRUE(a->Tick().ok());
  EXPECT_EQ(Spans(dir_.path(), t0), (std::map<std::string, Span>{{"A", {0, 10'000}},
                                                                   {"B", {10'000, 20'000}},
                                                                   {"C", {0, 100'000}},
                                                                   {"D", {20'000, 120'000}},
                                                                   {"E", {0, 5'000}}}));
}

// EASY plans with time limits, not run times. 4 cores. A (2 cores, limit
// 20 s, runs 5 s); B (4 cores) reserves t=20; X (2 cores, limit 25 s, runs
// 1 s) would end by its limit after t=20: it waits, though it would really
// be done in a second; C (2 cores, limit 15 s, runs 10 s) backfills. When A
// ends early (t=5) B still does not fit; when C ends (t=10) B starts, early.
TEST_F(SimEasyTest, PlansWithTimeLimitsAndStartsEarlierWhenJobsEndEarly) {
  auto a = Open({{"cores", "4"}});
  const int64_t t0 = T0();
  for (const JobSpec& s : {Wide("A", 2, 5'000, 20), Wide("B", 4, 5'000), Wide("X", 2, 1'000, 25),
                           Wide("C", 2, 10'000, 15)})
    MustSubmit(a.get(), s);
  // The forecast: A until 20, C until 15: B at 20, X after B (at 25).
  EXPECT_EQ(Forecast(a.get(), t0), (std::map<std::string, int64_t>{{"B", 20'000}, {"X", 25'000}}));
  clock_.Advance(absl::Seconds(5));
  // A is done; C runs to its limit 15 at the latest: B then, X after.
  EXPECT_EQ(Forecast(a.get(), t0), (std::map<std::string, int64_t>{{"B", 15'000}, {"X", 20'000}}));
  clock_.Advance(absl::Seconds(60));
  ASSERT_TRUE(a->Tick().ok());
  EXPECT_EQ(Spans(dir_.path(), t0), (std::map<std::string, Span>{{"A", {0, 5'000}},
                                                                   {"B", {10'000, 15'000}},
                                                                   {"C", {0, 10'000}},
                                                                   {"X", {15'000, 16'000}}}));
}

// A sim job runs for its duration even past its limit. 2 cores. A (1 core,
// limit 2 s, runs 10 s); B (2 cores) waits; C (1 core, 1 s) backfills (it
// ends by A's limit). Past t=2, A is expected to end at any moment: D
// (1 core, 1 s, submitted at t=3) would outlive that, so it waits behind B,
// and no instant has 3 cores in use.
TEST_F(SimEasyTest, AJobPastItsLimitKeepsItsCoresAndTheReservation) {
  auto a = Open({{"cores", "2"}});
  const int64_t t0 = T0();
  MustSubmit(a.get(), Wide("A", 1, 10'000, 2));
  MustSubmit(a.get(), Wide("B", 2, 1'000));
  MustSubmit(a.get(), Wide("C", 1, 1'000));
  clock_.Advance(absl::Seconds(3));
  MustSubmit(a.get(), Wide("D", 1, 1'000));
  EXPECT_EQ(State(a.get(), "4"), "pending");
  clock_.Advance(absl::Seconds(60));
  ASSERT_TRUE(a->Tick().ok());
  EXPECT_EQ(Spans(dir_.path(), t0), (std::map<std::string, Span>{{"A", {0, 10'000}},
                                                                   {"B", {10'000, 11'000}},
                                                                   {"C", {0, 1'000}},
                                                                   {"D", {11'000, 12'000}}}));
}

// Time limits and run times scale alike: time_scale 10 makes a 20 s limit
// 2 s.
TEST_F(SimEasyTest, TimeScaleScalesLimitsToo) {
  auto a = Open({{"cores", "2"}, {"time_scale", "10"}});
  const int64_t t0 = T0();
  MustSubmit(a.get(), Wide("A", 1, 10'000, 20));  // runs 1 s, limit 2 s
  MustSubmit(a.get(), Wide("B", 2, 10'000));      // reserves t=2 s
  EXPECT_EQ(Forecast(a.get(), t0), (std::map<std::string, int64_t>{{"B", 2'000}}));
}

// Random queues, submitted over time and replayed in lazy jumps: at no
// instant are more cores in use than the cluster has, every job starts
// after it was queued, and held jobs never start.
TEST_F(SimEasyTest, NoInstantHasMoreCoresInUseThanTheCluster) {
  std::mt19937 rng(13);
  for (int64_t cores : {1, 3, 8}) {
    SCOPED_TRACE(absl::StrCat("cores ", cores));
    TempDir dir;
    auto opened = SimAdapter::Open({.state_dir = dir.path(), .options = {{"cores", absl::StrCat(cores)}}, .clock = &clock_});
    ASSERT_TRUE(opened.ok()) << opened.status();
    SimAdapter* a = opened->get();
    const int64_t t0 = T0();
    std::map<std::string, int64_t> width, queued;
    for (int i = 0; i < 120; ++i) {
      const std::string name = absl::StrCat("r", i);
      const int w = static_cast<int>(1 + rng() % cores);
      const int64_t run = 1'000 * static_cast<int64_t>(rng() % 20);
      const int64_t limit = rng() % 3 == 0 ? 0 : static_cast<int64_t>(1 + rng() % 25);  // some too short
      width[name] = w;
      queued[name] = T0() - t0;
      MustSubmit(a, Wide(name, w, run, limit), "", /*held=*/i % 17 == 5);
      if (rng() % 4 == 0) clock_.Advance(absl::Milliseconds(rng() % 7'000));
    }
    clock_.Advance(absl::Hours(10));
    ASSERT_TRUE(a->Tick().ok());
    std::map<int64_t, int64_t> delta;
    for (const auto& [name, span] : Spans(dir.path(), t0)) {
      const int i = std::stoi(name.substr(1));
      if (i % 17 == 5) {
        EXPECT_EQ(span.start, -1) << name << " is held";
        continue;
      }
      ASSERT_GE(span.start, queued[name]) << name;
      delta[span.start] += width[name];
      delta[span.end] -= width[name];
    }
    int64_t used = 0;
    for (const auto& [t, d] : delta) {
      used += d;
      ASSERT_LE(used, cores) << "at t=" << t;
    }
    EXPECT_EQ(used, 0);
  }
}

TEST_F(SimEasyTest, ForecastRunsAsItWouldAndEstimatesAreExactWithoutLimits) {
  // Whatever EASY forecasts for jobs without limits (run times known) is
  // what then happens, as long as nothing else arrives.
  std::mt19937 rng(7);
  auto a = Open({{"cores", "5"}});
  const int64_t t0 = T0();
  for (int i = 0; i < 40; ++i)
    MustSubmit(a.get(), Wide(absl::StrCat("f", i), static_cast<int>(1 + rng() % 5), 1'000 * (1 + rng() % 9)));
  const std::map<std::string, int64_t> forecast = Forecast(a.get(), t0);
  clock_.Advance(absl::Hours(1));
  ASSERT_TRUE(a->Tick().ok());
  const auto spans = Spans(dir_.path(), t0);
  ASSERT_FALSE(forecast.empty());
  for (const auto& [name, start] : forecast) EXPECT_EQ(spans.at(name).start, start) << name;
}

TEST_F(SimEasyTest, PendingSkipsHeldPinnedAndRunningJobs) {
  auto a = Open({{"cores", "1"}, {"pin_marker", "local:"}});
  const int64_t t0 = T0();
  const std::string run = MustSubmit(a.get(), Spec("run", 1'000));
  const std::string pinned = MustSubmit(a.get(), Spec("local:p", 1'000));
  const std::string held = MustSubmit(a.get(), Spec("held", 1'000), "", /*held=*/true);
  const std::string last = MustSubmit(a.get(), Spec("last", 1'000));
  auto pending = a->Pending();
  ASSERT_TRUE(pending.ok()) << pending.status();
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].id, last);
  // The pinned job keeps its place ahead of it.
  EXPECT_EQ((*pending)[0].start_ms, t0 + 2'000);
  EXPECT_EQ((*pending)[0].cores, 1);
  EXPECT_EQ((*pending)[0].queued_at_ms, t0);
}

TEST_F(SimEasyTest, FreeCoresShowTheHolesOfTheForecastAndPendingCarriesLimits) {
  // 4 cores: a 3-core job runs 1 s; a 4-core job waits for it, then runs
  // 2 s: 1 core is free now, none from 1 s to 3 s, all from 3 s.
  auto a = Open({{"cores", "4"}});
  const int64_t t0 = T0();
  MustSubmit(a.get(), Wide("three", 3, 1'000));
  MustSubmit(a.get(), Wide("four", 4, 2'000));
  auto free = a->FreeCores();
  ASSERT_TRUE(free.ok()) << free.status();
  EXPECT_EQ(*free, (std::vector<std::pair<int64_t, int64_t>>{{t0, 1}, {t0 + 1'000, 0}, {t0 + 3'000, 4}}));
  auto pending = a->Pending();
  ASSERT_TRUE(pending.ok()) << pending.status();
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].limit_ms, 2'000) << "no time limit: its run time";
}

TEST_F(SimEasyTest, ArrivalStartsRefuseWidthsThatCannotRunAndWidestIsCores) {
  auto a = Open({{"cores", "3"}});
  EXPECT_EQ(a->WidestJob().value_or(-1), 3);
  for (int64_t bad : {0, -1, 4}) EXPECT_TRUE(absl::IsInvalidArgument(a->ArrivalStarts({1, bad}).status())) << bad;
  const int64_t t0 = T0();
  auto empty = a->ArrivalStarts({3, 1});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(*empty, (std::vector<int64_t>{t0, t0})) << "an idle cluster starts anything now";
}

TEST_F(SimEasyTest, JobsWiderThanTheClusterAreRefused) {
  auto a = Open({{"cores", "4"}});
  EXPECT_TRUE(absl::IsInvalidArgument(a->CheckSpec(Wide("w", 5, 10))));
  auto id = a->Submit(Wide("w", 5, 10), "w");
  EXPECT_TRUE(absl::IsInvalidArgument(id.status())) << id.status();
  EXPECT_TRUE(absl::StrContains(id.status().message(), "cores")) << id.status();
  EXPECT_TRUE(a->FindByTag("w")->empty());
  auto many = a->SubmitMany({{Wide("ok", 4, 10), "ok"}, {Wide("w", 5, 10), "w"}});
  EXPECT_TRUE(many[0].ok());
  EXPECT_TRUE(absl::IsInvalidArgument(many[1].status()));
}

// A queue written when `cores` was larger (or by an older version, which
// gave every job one slot) may hold a job wider than the cluster: it takes
// the whole cluster instead of waiting for ever.
TEST_F(SimEasyTest, AJobQueuedWiderThanTheClusterTakesTheWholeCluster) {
  const int64_t t0 = T0();
  {
    auto a = Open({{"cores", "4"}});
    MustSubmit(a.get(), Wide("wide", 4, 1'000), "", /*held=*/true);
    MustSubmit(a.get(), Wide("one", 1, 1'000), "", /*held=*/true);
  }
  auto a = Open({{"cores", "2"}});
  ASSERT_TRUE(a->Release("1").ok());
  ASSERT_TRUE(a->Release("2").ok());
  EXPECT_EQ(a->Pending()->at(0).cores, 1) << "the wide one runs; the other waits";
  clock_.Advance(absl::Seconds(5));
  ASSERT_TRUE(a->Tick().ok());
  EXPECT_EQ(Spans(dir_.path(), t0), (std::map<std::string, Span>{{"wide", {0, 1'000}}, {"one", {1'000, 2'000}}}));
}

TEST_F(SimEasyTest, CoresAndSlotsAreOneOption) {
  EXPECT_EQ(Open({{"cores", "6"}})->GetCapacity()->units, 6);
  EXPECT_EQ(Open({{"slots", "5"}})->GetCapacity()->units, 5);
  auto both = SimAdapter::Open({.state_dir = dir_.Sub("both"), .options = {{"cores", "4"}, {"slots", "4"}},
                                .clock = &clock_});
  ASSERT_FALSE(both.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(both.status())) << both.status();
  EXPECT_TRUE(absl::StrContains(both.status().message(), "\"cores\"")) << both.status();
  EXPECT_TRUE(absl::StrContains(both.status().message(), "\"slots\"")) << both.status();
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("both")));
  for (const std::string bad : {"0", "x", "1000001"}) {
    auto a = SimAdapter::Open({.state_dir = dir_.Sub("bad"), .options = {{"cores", bad}}, .clock = &clock_});
    EXPECT_TRUE(absl::IsInvalidArgument(a.status())) << bad;
    EXPECT_TRUE(absl::StrContains(a.status().message(), "\"cores\"")) << a.status();
  }
}

// The demo's load: 2,000 pending 1-core jobs on one 4-core site. Prints how
// long a forecast (Pending, ArrivalStarts) and a plain call take.
TEST_F(SimEasyTest, ForecastOfTwoThousandPendingJobsIsFast) {
  auto a = Open({{"cores", "4"}});
  std::vector<std::pair<JobSpec, std::string>> batch;
  for (int i = 0; i < 2'000; ++i) batch.push_back({Spec(absl::StrCat("d", i), 60'000), ""});
  for (const auto& r : a->SubmitMany(batch)) ASSERT_TRUE(r.ok()) << r.status();
  clock_.Advance(absl::Seconds(90));  // some ended, some started: real events
  const absl::Time t = absl::Now();
  auto pending = a->Pending();
  const absl::Duration pending_took = absl::Now() - t;
  ASSERT_TRUE(pending.ok()) << pending.status();
  ASSERT_EQ(pending->size(), 1'992u);
  EXPECT_EQ(pending->back().start_ms - pending->front().start_ms, 497 * 60'000);
  const absl::Time t2 = absl::Now();
  auto arrival = a->ArrivalStarts({1, 2, 4});
  const absl::Duration arrival_took = absl::Now() - t2;
  ASSERT_TRUE(arrival.ok());
  const absl::Time t3 = absl::Now();
  ASSERT_TRUE(a->CountMigratable().ok());
  const absl::Duration count_took = absl::Now() - t3;
  std::cout << "2,000 jobs on 4 cores: Pending " << pending_took << ", ArrivalStarts " << arrival_took
            << ", CountMigratable " << count_took << "\n";
  EXPECT_LT(pending_took, absl::Seconds(2));
}

// ---- Crashes ----

// Checks the database file with a connection of its own.
std::string IntegrityCheck(const std::string& dir) {
  sqlite3* db = nullptr;
  std::string result = "cannot open";
  if (sqlite3_open((std::filesystem::path(dir) / kSimDbFile).c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      result = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return result;
}

// Runs `child` in a forked process that must die of SIGKILL (a test failure
// otherwise). The child never returns into GoogleTest: it leaves by _exit,
// so no destructor (TempDir's!) runs in it.
void RunChildThatDies(const std::function<void()>& child) {
  fflush(nullptr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    child();
    _exit(3);  // it should have been killed
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

struct CrashCase {
  std::string point;  // crash hook point at which the child dies
  std::string op;     // what the child does when it dies
};

void PrintTo(const CrashCase& c, std::ostream* os) { *os << c.op << " killed at " << c.point; }

class SimAdapterCrashTest : public SimAdapterTest, public ::testing::WithParamInterface<CrashCase> {};

// Before the fatal call, the queue (slots=1) holds: 1 running (1000 ms),
// 2 pending, 3 held, all tagged. The fatal call is killed mid-transaction;
// afterwards the queue must be exactly as before it.
TEST_P(SimAdapterCrashTest, KillMidTransactionLeavesTheQueueAsBefore) {
  const CrashCase c = GetParam();
  const std::map<std::string, std::string> opts = {{"slots", "1"}};
  {
    auto a = Open(opts);
    JobSpec with_env = Spec("j2", 1'000);
    with_env.env = {{"K", "V"}};
    MustSubmit(a.get(), Spec("j1", 1'000), "t1");
    MustSubmit(a.get(), with_env, "t2");
    MustSubmit(a.get(), Spec("j3", 1'000), "t3", true);
  }
  RunChildThatDies([&] {
    FakeEnv child_clock;  // the same start as clock_
    auto a = SimAdapter::Open({.state_dir = dir_.path(), .options = opts, .clock = &child_clock});
    if (!a.ok()) _exit(2);
    (*a)->SetCrashHookForTesting([&](absl::string_view p) {
      if (p == c.point) raise(SIGKILL);
    });
    if (c.op == "submit") {
      JobSpec s = Spec("crash", 10);
      s.env = {{"A", "1"}, {"B", "2"}};
      (void)(*a)->Submit(s, "crash");
    } else if (c.op == "submit-many") {
      // One transaction for the batch: a kill inside it keeps none of it.
      JobSpec s = Spec("crash", 10);
      s.env = {{"A", "1"}, {"B", "2"}};
      (void)(*a)->SubmitMany({{s, "crash"}, {Spec("crash2", 10), "crash2"}});
    } else if (c.op == "hold-many") {
      (void)(*a)->HoldMany({"2", "3"});
    } else if (c.op == "cancel-many") {
      (void)(*a)->CancelMany({"2", "3"});
    } else if (c.op == "release-many") {
      (void)(*a)->ReleaseMany({"3", "2"});
    } else if (c.op == "cancel") {
      (void)(*a)->Cancel("2");
    } else if (c.op == "hold") {
      (void)(*a)->Hold("2");
    } else if (c.op == "release") {
      (void)(*a)->Release("3");
    } else if (c.op == "advance") {
      child_clock.Advance(absl::Seconds(1));  // j1 ends, j2 starts: a fill
      (void)(*a)->Tick();
    }
  });
  EXPECT_EQ(IntegrityCheck(dir_.path()), "ok");
  auto a = Open(opts);
  EXPECT_EQ(State(a.get(), "1"), "running");
  EXPECT_EQ(State(a.get(), "2"), "pending");
  EXPECT_EQ(State(a.get(), "3"), "held");
  EXPECT_EQ(a->GetJob("2")->spec.env, (std::map<std::string, std::string>{{"K", "V"}}));
  EXPECT_TRUE(a->FindByTag("crash")->empty());
  EXPECT_TRUE(a->FindByTag("crash2")->empty());
  EXPECT_EQ(a->ListJobs()->size(), 3u);
  // A retried submit goes through once, with the next id.
  EXPECT_EQ(MustSubmit(a.get(), Spec("crash", 10), "crash"), "4");
  EXPECT_EQ(MustSubmit(a.get(), Spec("crash", 10), "crash"), "4");
  // And the queue runs on normally.
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(State(a.get(), "1"), "done");
  EXPECT_EQ(State(a.get(), "2"), "running");
}

INSTANTIATE_TEST_SUITE_P(
    Points, SimAdapterCrashTest,
    ::testing::Values(CrashCase{"submit:job-row", "submit"}, CrashCase{"submit:before-commit", "submit"},
                      CrashCase{"cancel:before-commit", "cancel"}, CrashCase{"hold:before-commit", "hold"},
                      CrashCase{"release:before-commit", "release"}, CrashCase{"fill:job-started", "advance"},
                      CrashCase{"tick:before-commit", "advance"}, CrashCase{"submit:job-row", "submit-many"},
                      CrashCase{"submit:before-commit", "submit-many"}, CrashCase{"hold:before-commit", "hold-many"},
                      CrashCase{"cancel:before-commit", "cancel-many"},
                      CrashCase{"release:before-commit", "release-many"}),
    [](const ::testing::TestParamInfo<CrashCase>& info) {
      std::string n = info.param.point;
      if (absl::EndsWith(info.param.op, "-many")) n += "_many";
      for (char& ch : n) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return n;
    });

// A kill at an arbitrary moment, from outside: every submit the child saw
// acknowledged is there, and the tags present are a gap-free prefix (no
// half-done submit, no lost one).
TEST_F(SimAdapterTest, KillAtAnyMomentLosesNoAcknowledgedSubmit) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  fflush(nullptr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto a = SimAdapter::Open({.state_dir = dir_.path(), .options = {{"slots", "2"}}, .clock = &clock_});
    if (!a.ok()) _exit(2);
    for (int i = 0;; ++i) {
      JobSpec s = Spec(absl::StrCat("k", i), 1'000);
      s.env = {{"I", absl::StrCat(i)}};
      if (!(*a)->Submit(s, absl::StrCat("k-", i)).ok()) _exit(2);
      if (write(fds[1], &i, sizeof i) != sizeof i) _exit(2);
    }
  }
  close(fds[1]);
  int acked = -1;
  for (int n = 0; n < 30; ++n) {
    int i = 0;
    ASSERT_EQ(read(fds[0], &i, sizeof i), static_cast<ssize_t>(sizeof i));
    acked = i;
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status));

  EXPECT_EQ(IntegrityCheck(dir_.path()), "ok");
  auto a = Open({{"slots", "2"}});
  auto stats = a->Stats();
  ASSERT_TRUE(stats.ok());
  const int64_t total = stats->pending + stats->held + stats->running + stats->done + stats->cancelled;
  EXPECT_GT(total, acked);
  EXPECT_EQ(stats->running, 2);
  for (int64_t i = 0; i < total; ++i) {
    auto jobs = a->FindByTag(absl::StrCat("k-", i));
    ASSERT_TRUE(jobs.ok());
    ASSERT_EQ(jobs->size(), 1u) << "tag k-" << i;
    EXPECT_EQ((*jobs)[0].id, absl::StrCat(i + 1));
    EXPECT_EQ((*jobs)[0].spec.env.at("I"), absl::StrCat(i)) << "a job row without its env";
  }
  EXPECT_TRUE(a->FindByTag(absl::StrCat("k-", total))->empty());
}

}  // namespace
}  // namespace hyperfed::scheduler::testing
