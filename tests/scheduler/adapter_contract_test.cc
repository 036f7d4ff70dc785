// The adapter contract's tests (see adapter_contract.h). Instantiated by each
// adapter's own test file.

#include "tests/scheduler/adapter_contract.h"

#include <algorithm>
#include <set>

namespace hyperfed::scheduler::testing {

// Each adapter's test file instantiates the suite; a binary built without
// any adapter must still link.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AdapterContractTest);

absl::Status AdapterContractEnv::Saturate(SchedulerAdapter* adapter) {
  auto cap = adapter->GetCapacity();
  if (!cap.ok()) return cap.status();
  std::vector<std::string> tags;
  for (int64_t i = 0; i < cap->units; ++i) {
    tags.push_back(absl::StrCat("contract-blocker-", i));
    auto id = adapter->Submit(RunnableSpec(tags.back(), absl::Hours(100)), tags.back());
    if (!id.ok()) return id.status();
  }
  const absl::Duration max_wait = MaxWait();
  for (absl::Duration waited;; waited += PollStep()) {
    bool all_running = true;
    for (const auto& tag : tags) {
      auto jobs = adapter->FindByTag(tag);
      if (!jobs.ok()) return jobs.status();
      if (jobs->size() != 1 || (*jobs)[0].state != JobState::kRunning) all_running = false;
    }
    if (all_running) return absl::OkStatus();
    if (waited >= max_wait) return absl::DeadlineExceededError("blocker jobs did not all start");
    LetTimePass(PollStep());
  }
}

void AdapterContractTest::SetUp() {
  env_ = GetParam().make_env();
  ASSERT_NE(env_, nullptr);
  if (std::string why = env_->SkipReason(); !why.empty()) GTEST_SKIP() << why;
  auto a = env_->MakeAdapter();
  ASSERT_TRUE(a.ok()) << a.status();
  adapter_ = *std::move(a);
  auto widest = adapter_->WidestJob();
  ASSERT_TRUE(widest.ok()) << widest.status();
  widest_ = *widest;
}

JobSpec AdapterContractTest::FullSpec(const std::string& name) const {
  JobSpec s = env_->RunnableSpec(name, absl::Seconds(2));
  s.script += "echo \"it's $HOME\" 'single' `back` \\ done; # größe 大\n";
  s.cores = static_cast<int>(std::min<int64_t>(3, widest_));  // a site of one core takes no wider job
  s.memory_mb = 2048;
  s.time_limit_s = 3600;
  s.workdir = "/tmp/hyperfed contract/dir";
  s.env = {{"A", "1"}, {"WITH_SPACE", "x y"}, {"QUOTES", "\"'"}, {"EMPTY", ""}, {"NL", "a\nb"}};
  s.cost = 10800.25;
  s.key = absl::StrCat("site-a/", name, "/7");
  s.owner = "alice";
  return s;
}

absl::StatusOr<Job> AdapterContractTest::ByTag(const std::string& tag) {
  auto jobs = adapter_->FindByTag(tag);
  if (!jobs.ok()) return jobs.status();
  if (jobs->size() != 1) {
    return absl::InternalError(absl::StrCat(jobs->size(), " jobs carry tag ", tag, ", want 1"));
  }
  return (*jobs)[0];
}

absl::StatusOr<Job> AdapterContractTest::Listed(const std::string& id) {
  auto jobs = adapter_->ListJobs();
  if (!jobs.ok()) return jobs.status();
  for (const auto& j : *jobs) {
    if (j.id == id) return j;
  }
  return absl::NotFoundError(absl::StrCat("job ", id, " not listed"));
}

std::string AdapterContractTest::ListedState(const std::string& id) {
  auto j = Listed(id);
  return j.ok() ? JobStateName(j->state) : j.status().ToString();
}

std::string AdapterContractTest::TagState(const std::string& tag) {
  auto j = ByTag(tag);
  return j.ok() ? JobStateName(j->state) : j.status().ToString();
}

bool AdapterContractTest::ListedPinned(const std::string& id) {
  auto j = Listed(id);
  return j.ok() && j->pinned;
}

int AdapterContractTest::ListedCount() {
  auto jobs = adapter_->ListJobs();
  return jobs.ok() ? static_cast<int>(jobs->size()) : -1;
}

absl::Status AdapterContractTest::WaitForState(const std::string& tag, JobState state) {
  for (absl::Duration waited;; waited += env_->PollStep()) {
    auto j = ByTag(tag);
    if (!j.ok()) return j.status();
    if (j->state == state) return absl::OkStatus();
    if (waited >= env_->MaxWait()) {
      return absl::DeadlineExceededError(
          absl::StrCat("job tagged ", tag, " is ", JobStateName(j->state), ", wanted ", JobStateName(state)));
    }
    env_->LetTimePass(env_->PollStep());
  }
}

namespace {

// Ids of the listed jobs, in list order, keeping only those in `ours` (a
// real scheduler may list other users' jobs).
std::vector<std::string> ListedIds(const std::vector<Job>& jobs, const std::set<std::string>& ours) {
  std::vector<std::string> ids;
  for (const auto& j : jobs) {
    if (ours.contains(j.id)) ids.push_back(j.id);
  }
  return ids;
}

TEST_P(AdapterContractTest, NameAndCapacityAreSet) {
  EXPECT_FALSE(adapter_->Name().empty());
  auto cap = adapter_->GetCapacity();
  ASSERT_TRUE(cap.ok()) << cap.status();
  EXPECT_GT(cap->units, 0);
  EXPECT_GT(cap->speed, 0);
}

TEST_P(AdapterContractTest, FreshQueueListsNothing) {
  auto jobs = adapter_->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_TRUE(jobs->empty());
}

TEST_P(AdapterContractTest, SubmittedJobsAreListedOldestFirst) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto id = adapter_->Submit(Long(absl::StrCat("order-", i)), absl::StrCat("order-", i));
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 3u) << "ids must be distinct";
  auto jobs = adapter_->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ(ListedIds(*jobs, {ids.begin(), ids.end()}), ids);
  int64_t last_queued = 0;
  for (const auto& j : *jobs) {
    EXPECT_TRUE(j.state == JobState::kPending || j.state == JobState::kRunning) << JobStateName(j.state);
    EXPECT_EQ(j.tag, j.spec.name);
    EXPECT_FALSE(j.pinned);
    EXPECT_GT(j.queued_at_ms, 0);
    EXPECT_GE(j.queued_at_ms, last_queued);
    last_queued = j.queued_at_ms;
  }
}

TEST_P(AdapterContractTest, PendingJobsWaitBehindFullCapacityInQueueOrder) {
  ASSERT_TRUE(env_->Saturate(adapter_.get()).ok());
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto id = adapter_->Submit(Quick(absl::StrCat("wait-", i)), absl::StrCat("wait-", i));
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  env_->LetTimePass(absl::Seconds(2));
  auto jobs = adapter_->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ(ListedIds(*jobs, {ids.begin(), ids.end()}), ids);
  for (const auto& id : ids) {
    auto j = Listed(id);
    ASSERT_TRUE(j.ok()) << j.status();
    EXPECT_EQ(j->state, JobState::kPending);
  }
}

TEST_P(AdapterContractTest, HeldSubmitIsHeldAndNeverStarts) {
  auto id = adapter_->Submit(Quick("held"), "held", /*held=*/true);
  ASSERT_TRUE(id.ok()) << id.status();
  env_->LetTimePass(absl::Seconds(5));
  auto j = Listed(*id);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->state, JobState::kHeld);
}

TEST_P(AdapterContractTest, HoldAndReleaseOfPendingJob) {
  ASSERT_TRUE(env_->Saturate(adapter_.get()).ok());
  auto id = adapter_->Submit(Quick("p"), "p");
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(adapter_->Hold(*id).ok());
  EXPECT_EQ(ListedState(*id), "held");
  EXPECT_TRUE(adapter_->Hold(*id).ok()) << "holding a held job is a no-op";
  EXPECT_EQ(ListedState(*id), "held");
  ASSERT_TRUE(adapter_->Release(*id).ok());
  EXPECT_EQ(ListedState(*id), "pending");
  EXPECT_TRUE(adapter_->Release(*id).ok()) << "releasing a pending job is a no-op";
  EXPECT_EQ(ListedState(*id), "pending");
}

TEST_P(AdapterContractTest, ReleasedJobRunsToDone) {
  auto id = adapter_->Submit(Quick("rel"), "rel", /*held=*/true);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(adapter_->Release(*id).ok());
  EXPECT_TRUE(WaitForState("rel", JobState::kDone).ok());
  auto j = Listed(*id);
  EXPECT_TRUE(absl::IsNotFound(j.status())) << "done jobs are not listed";
}

TEST_P(AdapterContractTest, RunningJobCannotBeHeldReleasedOrCancelled) {
  auto id = adapter_->Submit(Long("run"), "run");
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(WaitForState("run", JobState::kRunning).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(adapter_->Hold(*id)));
  EXPECT_TRUE(absl::IsFailedPrecondition(adapter_->Release(*id)));
  EXPECT_TRUE(absl::IsFailedPrecondition(adapter_->Cancel(*id)));
  EXPECT_EQ(ListedState(*id), "running");
}

TEST_P(AdapterContractTest, CancelPendingAndHeldJobs) {
  ASSERT_TRUE(env_->Saturate(adapter_.get()).ok());
  auto pending = adapter_->Submit(Quick("cp"), "cp");
  auto held = adapter_->Submit(Quick("ch"), "ch", /*held=*/true);
  ASSERT_TRUE(pending.ok() && held.ok());
  ASSERT_TRUE(adapter_->Cancel(*pending).ok());
  ASSERT_TRUE(adapter_->Cancel(*held).ok());
  EXPECT_TRUE(absl::IsNotFound(Listed(*pending).status())) << "cancelled jobs are not listed";
  EXPECT_TRUE(absl::IsNotFound(Listed(*held).status()));
  EXPECT_EQ(TagState("cp"), "cancelled");
  EXPECT_EQ(TagState("ch"), "cancelled");
  EXPECT_TRUE(adapter_->Cancel(*pending).ok()) << "cancelling a cancelled job is a no-op";
  EXPECT_TRUE(absl::IsFailedPrecondition(adapter_->Hold(*held)));
  EXPECT_TRUE(absl::IsFailedPrecondition(adapter_->Release(*held)));
  EXPECT_EQ(TagState("ch"), "cancelled");
}

TEST_P(AdapterContractTest, DoneJobCannotBeHeldReleasedOrCancelled) {
  auto id = adapter_->Submit(Quick("d"), "d");
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(WaitForState("d", JobState::kDone).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(adapter_->Hold(*id)));
  EXPECT_TRUE(absl::IsFailedPrecondition(adapter_->Release(*id)));
  EXPECT_TRUE(absl::IsFailedPrecondition(adapter_->Cancel(*id)));
  EXPECT_EQ(TagState("d"), "done");
}

TEST_P(AdapterContractTest, SubmitIsIdempotentByTag) {
  auto first = adapter_->Submit(Long("one"), "mig-1", /*held=*/true);
  ASSERT_TRUE(first.ok()) << first.status();
  // A retried transfer may carry a different spec and held flag: the first
  // submission wins and nothing new is queued.
  auto again = adapter_->Submit(Quick("two"), "mig-1", /*held=*/false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *first);
  auto jobs = adapter_->FindByTag("mig-1");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].id, *first);
  EXPECT_EQ((*jobs)[0].spec.name, "one");
  EXPECT_EQ((*jobs)[0].state, JobState::kHeld);
  EXPECT_EQ((*jobs)[0].tag, "mig-1");
  EXPECT_EQ(ListedCount(), 1);
}

TEST_P(AdapterContractTest, SubmitIsIdempotentByTagAfterCancel) {
  auto first = adapter_->Submit(Quick("c"), "mig-c", /*held=*/true);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(adapter_->Cancel(*first).ok());
  auto again = adapter_->Submit(Quick("c"), "mig-c");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(TagState("mig-c"), "cancelled");
  EXPECT_EQ(ListedCount(), 0);
}

TEST_P(AdapterContractTest, SubmitIsIdempotentByTagAfterDone) {
  auto first = adapter_->Submit(Quick("d"), "mig-d");
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(WaitForState("mig-d", JobState::kDone).ok());
  auto again = adapter_->Submit(Quick("d"), "mig-d");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(TagState("mig-d"), "done");
  EXPECT_EQ(ListedCount(), 0);
}

TEST_P(AdapterContractTest, UntaggedSubmitsAreDistinctJobs) {
  auto a = adapter_->Submit(Quick("u"), "", /*held=*/true);
  auto b = adapter_->Submit(Quick("u"), "", /*held=*/true);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(ListedCount(), 2);
  auto listed = Listed(*a);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->tag, "");
}

TEST_P(AdapterContractTest, FindByTagFindsOnlyThatTag) {
  auto a = adapter_->Submit(Quick("a"), "tag-a", /*held=*/true);
  auto b = adapter_->Submit(Quick("b"), "tag-b", /*held=*/true);
  ASSERT_TRUE(a.ok() && b.ok());
  auto found = adapter_->FindByTag("tag-b");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].id, *b);
  EXPECT_EQ((*found)[0].spec.name, "b");
  auto none = adapter_->FindByTag("tag-none");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  // A tag is matched whole, not as a prefix.
  auto prefix = adapter_->FindByTag("tag-");
  ASSERT_TRUE(prefix.ok()) << prefix.status();
  EXPECT_TRUE(prefix->empty());
}

TEST_P(AdapterContractTest, ExportReturnsTheSubmittedSpec) {
  const JobSpec spec = FullSpec("full");
  auto id = adapter_->Submit(spec, "full", /*held=*/true);
  ASSERT_TRUE(id.ok()) << id.status();
  auto exported = adapter_->Export(*id);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(*exported, spec);
  JobSpec listed_spec = spec;
  if (!env_->ListsScripts()) listed_spec.script = "";
  EXPECT_EQ(Listed(*id).value_or(Job{}).spec, listed_spec);
  EXPECT_EQ(ByTag("full").value_or(Job{}).spec, listed_spec);
}

TEST_P(AdapterContractTest, ExportWorksAfterCancel) {
  const JobSpec spec = FullSpec("gone");
  auto id = adapter_->Submit(spec, "gone", /*held=*/true);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(adapter_->Cancel(*id).ok());
  auto exported = adapter_->Export(*id);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(*exported, spec);
}

TEST_P(AdapterContractTest, PinsAreSetAndCleared) {
  ASSERT_TRUE(env_->Saturate(adapter_.get()).ok());  // so the released job stays pending
  auto id = adapter_->Submit(Quick("pin"), "pin", /*held=*/true);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(ListedPinned(*id), false);
  ASSERT_TRUE(adapter_->SetPinned(*id, true).ok());
  EXPECT_EQ(ListedPinned(*id), true);
  EXPECT_EQ(ByTag("pin").value_or(Job{}).pinned, true);
  ASSERT_TRUE(adapter_->SetPinned(*id, true).ok()) << "pinning twice is a no-op";
  // A pin is not a state: it survives hold and release.
  ASSERT_TRUE(adapter_->Release(*id).ok());
  ASSERT_TRUE(adapter_->Hold(*id).ok());
  EXPECT_EQ(ListedPinned(*id), true);
  ASSERT_TRUE(adapter_->SetPinned(*id, false).ok());
  EXPECT_EQ(ListedPinned(*id), false);
}

TEST_P(AdapterContractTest, UnknownIdsAreNotFound) {
  // One real job, so "unknown" is not just "empty queue".
  ASSERT_TRUE(adapter_->Submit(Quick("real"), "real", /*held=*/true).ok());
  for (const std::string id : {"999999999", "no-such-job", "", "-1", "1.0"}) {
    SCOPED_TRACE(absl::StrCat("id \"", id, "\""));
    EXPECT_TRUE(absl::IsNotFound(adapter_->Hold(id)));
    EXPECT_TRUE(absl::IsNotFound(adapter_->Release(id)));
    EXPECT_TRUE(absl::IsNotFound(adapter_->Cancel(id)));
    EXPECT_TRUE(absl::IsNotFound(adapter_->Export(id).status()));
    EXPECT_TRUE(absl::IsNotFound(adapter_->SetPinned(id, true)));
  }
  EXPECT_EQ(ListedCount(), 1);
}

// ---- Batch calls: one result per item, in order, each as the single call.

TEST_P(AdapterContractTest, EmptyBatchesAnswerNothing) {
  EXPECT_TRUE(adapter_->HoldMany({}).empty());
  EXPECT_TRUE(adapter_->ReleaseMany({}).empty());
  EXPECT_TRUE(adapter_->CancelMany({}).empty());
  EXPECT_TRUE(adapter_->ExportMany({}).empty());
  EXPECT_TRUE(adapter_->SubmitMany({}, true).empty());
  EXPECT_EQ(ListedCount(), 0);
}

TEST_P(AdapterContractTest, HoldReleaseCancelManyGivePerItemResults) {
  ASSERT_TRUE(env_->Saturate(adapter_.get()).ok());  // so released jobs stay pending
  auto blocker = ByTag("contract-blocker-0");
  ASSERT_TRUE(blocker.ok()) << blocker.status();
  auto p = adapter_->Submit(Quick("bp"), "bp");
  auto h = adapter_->Submit(Quick("bh"), "bh", /*held=*/true);
  ASSERT_TRUE(p.ok() && h.ok());

  // Mixed: a pending job, an unknown id, an already held job (no-op), a
  // running job, a malformed id.
  auto held = adapter_->HoldMany({*p, "999999999", *h, blocker->id, "no-such-job"});
  ASSERT_EQ(held.size(), 5u);
  EXPECT_TRUE(held[0].ok()) << held[0];
  EXPECT_TRUE(absl::IsNotFound(held[1])) << held[1];
  EXPECT_TRUE(held[2].ok()) << held[2];
  EXPECT_TRUE(absl::IsFailedPrecondition(held[3])) << held[3];
  EXPECT_TRUE(absl::IsNotFound(held[4])) << held[4];
  EXPECT_EQ(ListedState(*p), "held");
  EXPECT_EQ(ListedState(*h), "held");
  EXPECT_EQ(ListedState(blocker->id), "running");

  auto released = adapter_->ReleaseMany({*h, "", *p, blocker->id});
  ASSERT_EQ(released.size(), 4u);
  EXPECT_TRUE(released[0].ok()) << released[0];
  EXPECT_TRUE(absl::IsNotFound(released[1])) << released[1];
  EXPECT_TRUE(released[2].ok()) << released[2];
  EXPECT_TRUE(absl::IsFailedPrecondition(released[3])) << released[3];
  EXPECT_EQ(ListedState(*p), "pending");
  EXPECT_EQ(ListedState(*h), "pending");

  // The same id twice: the second cancel is a no-op.
  ASSERT_TRUE(adapter_->Hold(*h).ok());
  auto cancelled = adapter_->CancelMany({*p, "-1", *h, *p, blocker->id});
  ASSERT_EQ(cancelled.size(), 5u);
  EXPECT_TRUE(cancelled[0].ok()) << cancelled[0];
  EXPECT_TRUE(absl::IsNotFound(cancelled[1])) << cancelled[1];
  EXPECT_TRUE(cancelled[2].ok()) << cancelled[2];
  EXPECT_TRUE(cancelled[3].ok()) << cancelled[3];
  EXPECT_TRUE(absl::IsFailedPrecondition(cancelled[4])) << cancelled[4];
  EXPECT_EQ(TagState("bp"), "cancelled");
  EXPECT_EQ(TagState("bh"), "cancelled");
  EXPECT_EQ(ListedState(blocker->id), "running");

  // Cancelled jobs can be neither held nor released, in a batch as alone.
  auto after = adapter_->HoldMany({*p});
  ASSERT_EQ(after.size(), 1u);
  EXPECT_TRUE(absl::IsFailedPrecondition(after[0])) << after[0];
  after = adapter_->ReleaseMany({*h});
  ASSERT_EQ(after.size(), 1u);
  EXPECT_TRUE(absl::IsFailedPrecondition(after[0])) << after[0];
}

TEST_P(AdapterContractTest, SubmitManyIsIdempotentByTag) {
  auto single = adapter_->Submit(Long("single"), "bm-single", /*held=*/true);
  ASSERT_TRUE(single.ok()) << single.status();
  auto first = adapter_->SubmitMany({{Long("a"), "bm-a"},
                                     {Long("b"), "bm-b"},
                                     {Quick("a-again"), "bm-a"},  // a tag met earlier in the batch
                                     {Quick("s-again"), "bm-single"},
                                     {Long("untagged"), ""}},
                                    /*held=*/true);
  ASSERT_EQ(first.size(), 5u);
  for (const auto& r : first) ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(*first[0], *first[1]);
  EXPECT_EQ(*first[2], *first[0]);
  EXPECT_EQ(*first[3], *single);
  EXPECT_NE(*first[4], *first[0]);
  EXPECT_NE(*first[4], *first[1]);
  EXPECT_NE(*first[4], *single);
  EXPECT_EQ(ListedCount(), 4);
  auto a = ByTag("bm-a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->id, *first[0]);
  EXPECT_EQ(a->spec.name, "a") << "the first submission of a tag wins";
  EXPECT_EQ(a->state, JobState::kHeld);
  EXPECT_EQ(ListedState(*first[4]), "held");
  EXPECT_EQ(ByTag("bm-single").value_or(Job{}).spec.name, "single");

  // A retried batch: every tag is known, nothing new is queued, the old ids
  // come back in order, and a new tag among them is submitted once.
  auto again = adapter_->SubmitMany({{Quick("b2"), "bm-b"}, {Long("new"), "bm-new"}, {Quick("a2"), "bm-a"}},
                                    /*held=*/false);
  ASSERT_EQ(again.size(), 3u);
  for (const auto& r : again) ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*again[0], *first[1]);
  EXPECT_EQ(*again[2], *first[0]);
  EXPECT_EQ(ListedCount(), 5);
  EXPECT_EQ(TagState("bm-b"), "held") << "a retry does not change the held flag";
  auto n = ByTag("bm-new");
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->id, *again[1]);
  EXPECT_NE(n->state, JobState::kHeld);
  auto once_more = adapter_->SubmitMany({{Long("new"), "bm-new"}}, false);
  ASSERT_EQ(once_more.size(), 1u);
  ASSERT_TRUE(once_more[0].ok()) << once_more[0].status();
  EXPECT_EQ(*once_more[0], *again[1]);
  EXPECT_EQ(ListedCount(), 5);
}

TEST_P(AdapterContractTest, ExportManyGivesSpecsAndPerItemErrors) {
  const JobSpec full = FullSpec("xfull");
  const JobSpec other = Long("xother");
  auto a = adapter_->Submit(full, "xfull", /*held=*/true);
  auto b = adapter_->Submit(other, "xother", /*held=*/true);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(adapter_->Cancel(*b).ok());  // export works after cancel too
  auto specs = adapter_->ExportMany({*a, "999999999", *b, "no-such-job", *a});
  ASSERT_EQ(specs.size(), 5u);
  ASSERT_TRUE(specs[0].ok()) << specs[0].status();
  EXPECT_EQ(*specs[0], full);
  EXPECT_TRUE(absl::IsNotFound(specs[1].status())) << specs[1].status();
  ASSERT_TRUE(specs[2].ok()) << specs[2].status();
  EXPECT_EQ(*specs[2], other);
  EXPECT_TRUE(absl::IsNotFound(specs[3].status())) << specs[3].status();
  ASSERT_TRUE(specs[4].ok()) << specs[4].status();
  EXPECT_EQ(*specs[4], full);
}

TEST_P(AdapterContractTest, CountMigratableCountsPendingUnpinnedJobs) {
  auto base = adapter_->CountMigratable();
  ASSERT_TRUE(base.ok()) << base.status();
  auto held = adapter_->Submit(Long("cheld"), "cheld", /*held=*/true);
  auto pinned = adapter_->Submit(Long("cpinned"), "cpinned", /*held=*/true);
  ASSERT_TRUE(held.ok() && pinned.ok());
  ASSERT_TRUE(adapter_->SetPinned(*pinned, true).ok());
  auto after = adapter_->CountMigratable();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, *base) << "held jobs are not migratable";
  ASSERT_TRUE(adapter_->Release(*pinned).ok());
  auto jobs = adapter_->GetJobs({*pinned});
  ASSERT_TRUE(jobs[0].ok());
  const bool still_pending = jobs[0]->state == JobState::kPending;
  auto now = adapter_->CountMigratable();
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(*now, *base) << "pinned jobs are not migratable (pending: " << still_pending << ")";
}

TEST_P(AdapterContractTest, GetJobsGivesStatesAndPerItemErrors) {
  auto held = adapter_->Submit(Long("gheld"), "gheld", /*held=*/true);
  auto pending = adapter_->Submit(Long("gpending"), "gpending", /*held=*/true);
  ASSERT_TRUE(held.ok() && pending.ok());
  ASSERT_TRUE(adapter_->Release(*pending).ok());
  auto jobs = adapter_->GetJobs({*held, "no-such-job", *pending});
  ASSERT_EQ(jobs.size(), 3u);
  ASSERT_TRUE(jobs[0].ok()) << jobs[0].status();
  EXPECT_EQ(jobs[0]->id, *held);
  EXPECT_EQ(jobs[0]->state, JobState::kHeld);
  EXPECT_EQ(jobs[0]->tag, "gheld");
  EXPECT_TRUE(absl::IsNotFound(jobs[1].status())) << jobs[1].status();
  ASSERT_TRUE(jobs[2].ok()) << jobs[2].status();
  EXPECT_NE(jobs[2]->state, JobState::kHeld) << "released: pending or already running";
  EXPECT_TRUE(adapter_->GetJobs({}).empty());
}

// ---- What a balancer reads: Pending, WidestJob, ArrivalStarts.

TEST_P(AdapterContractTest, WidestJobIsWithinCapacityAndTheWidestSpecIsTaken) {
  auto cap = adapter_->GetCapacity();
  ASSERT_TRUE(cap.ok()) << cap.status();
  EXPECT_GE(widest_, 1);
  EXPECT_LE(widest_, cap->units);
  JobSpec wide = Long("widest");
  wide.cores = static_cast<int>(widest_);
  EXPECT_TRUE(adapter_->CheckSpec(wide).ok()) << adapter_->CheckSpec(wide);
  auto id = adapter_->Submit(wide, "widest", /*held=*/true);
  EXPECT_TRUE(id.ok()) << id.status();
  if (env_->RefusesWiderThanWidest()) {
    JobSpec wider = Long("wider");
    wider.cores = static_cast<int>(widest_ + 1);
    EXPECT_TRUE(absl::IsInvalidArgument(adapter_->CheckSpec(wider))) << adapter_->CheckSpec(wider);
    EXPECT_TRUE(absl::IsInvalidArgument(adapter_->Submit(wider, "wider").status()));
    EXPECT_TRUE(adapter_->FindByTag("wider").value_or(std::vector<Job>{Job{}}).empty()) << "nothing submitted";
  }
}

TEST_P(AdapterContractTest, PendingListsMovableJobsInQueueOrderWithCoresAndEstimates) {
  ASSERT_TRUE(env_->Saturate(adapter_.get()).ok());
  auto blocker = ByTag("contract-blocker-0");
  ASSERT_TRUE(blocker.ok()) << blocker.status();
  // The adapter's time (a fake clock for sim) as the blockers started,
  // less a second of rounding (Slurm counts in seconds).
  const int64_t before_ms = blocker->queued_at_ms - 1'000;
  const int wide = static_cast<int>(std::min<int64_t>(2, widest_));
  std::vector<std::string> ids;   // what Pending must list, in order
  std::vector<int> cores;
  std::set<std::string> hidden;  // held, pinned, running
  for (int i = 0; i < 4; ++i) {
    JobSpec s = Long(absl::StrCat("pend-", i));
    s.cores = i == 1 ? wide : 1;
    s.key = absl::StrCat("site/pend-", i);
    auto id = adapter_->Submit(s, absl::StrCat("pend-", i), /*held=*/i == 2);
    ASSERT_TRUE(id.ok()) << id.status();
    if (i == 2) {
      hidden.insert(*id);  // held
    } else {
      ids.push_back(*id);
      cores.push_back(s.cores);
    }
  }
  // A pinned pending job keeps its place in the queue but cannot move.
  auto pinned = adapter_->Submit(Long("pend-pinned"), "pend-pinned", /*held=*/true);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  ASSERT_TRUE(adapter_->SetPinned(*pinned, true).ok());
  ASSERT_TRUE(adapter_->Release(*pinned).ok());
  hidden.insert(*pinned);
  hidden.insert(blocker->id);

  auto pending = adapter_->Pending();
  ASSERT_TRUE(pending.ok()) << pending.status();
  std::vector<std::string> got;
  std::vector<int> got_cores;
  std::vector<int64_t> starts;
  std::set<std::string> wanted(ids.begin(), ids.end());
  for (const PendingJob& p : *pending) {
    EXPECT_FALSE(hidden.contains(p.id)) << "job " << p.id << " is held, pinned or running";
    if (!wanted.contains(p.id)) continue;
    got.push_back(p.id);
    got_cores.push_back(static_cast<int>(p.cores));
    starts.push_back(p.start_ms);
    EXPECT_EQ(p.key, absl::StrCat("site/pend-", got.size() == 1 ? 0 : got.size() == 2 ? 1 : 3));
    EXPECT_GT(p.queued_at_ms, 0);
  }
  EXPECT_EQ(got, ids) << "queue order";
  EXPECT_EQ(got_cores, cores);
  switch (env_->StartEstimates()) {
    case AdapterContractEnv::Estimates::kNever:
      for (int64_t s : starts) EXPECT_EQ(s, 0);
      break;
    case AdapterContractEnv::Estimates::kSometimes:
      for (int64_t s : starts) EXPECT_TRUE(s == 0 || s > before_ms) << s;
      break;
    case AdapterContractEnv::Estimates::kAlways:
      // Behind jobs that run for 100 hours: after an hour at least, and
      // (FCFS) the first no later than the last.
      ASSERT_EQ(starts.size(), 3u);
      for (int64_t s : starts) EXPECT_GT(s, before_ms + 3'600'000) << s;
      EXPECT_LE(starts[0], starts[2]);
      break;
  }
}

TEST_P(AdapterContractTest, PendingOfAnEmptyQueueIsEmpty) {
  auto pending = adapter_->Pending();
  ASSERT_TRUE(pending.ok()) << pending.status();
  EXPECT_TRUE(pending->empty());
}

TEST_P(AdapterContractTest, ArrivalStartsAreMonotoneInWidthAndRefuseWidthsThatCannotRun) {
  ASSERT_TRUE(env_->Saturate(adapter_.get()).ok());
  auto blocker = ByTag("contract-blocker-0");
  ASSERT_TRUE(blocker.ok()) << blocker.status();
  ASSERT_TRUE(adapter_->Submit(Long("arr-0"), "arr-0").ok());
  std::vector<int64_t> widths;
  for (int64_t w = 1; w <= widest_ && widths.size() < 8; ++w) widths.push_back(w);
  if (widths.back() != widest_) widths.push_back(widest_);
  auto starts = adapter_->ArrivalStarts(widths);
  if (env_->StartEstimates() == AdapterContractEnv::Estimates::kNever) {
    EXPECT_TRUE(absl::IsUnimplemented(starts.status())) << starts.status();
    return;
  }
  ASSERT_TRUE(starts.ok()) << starts.status();
  ASSERT_EQ(starts->size(), widths.size());
  const int64_t before_ms = blocker->queued_at_ms - 1'000;
  for (size_t i = 0; i < starts->size(); ++i) {
    SCOPED_TRACE(absl::StrCat("width ", widths[i]));
    EXPECT_GT((*starts)[i], before_ms);
    if (i > 0) {
      EXPECT_GE((*starts)[i], (*starts)[i - 1]) << "a wider job never starts sooner";
    }
  }
  auto none = adapter_->ArrivalStarts({});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  for (int64_t bad : {int64_t{0}, int64_t{-1}, widest_ + 1}) {
    SCOPED_TRACE(absl::StrCat("width ", bad));
    EXPECT_TRUE(absl::IsInvalidArgument(adapter_->ArrivalStarts({1, bad}).status()));
  }
  EXPECT_EQ(TagState("arr-0"), "pending") << "asking changes nothing";
}

}  // namespace
}  // namespace hyperfed::scheduler::testing
