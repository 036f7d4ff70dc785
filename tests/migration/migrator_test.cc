// Protocol tests of the Migrator, both sides in one process. The jobs live in
// FakeAdapter (tests/migration/fake_adapter.h), which stands in for the `sim`
// scheduler adapter that lands separately.

#include "daemon/migration/migrator.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "daemon/common/env.h"
#include "gtest/gtest.h"
#include "tests/migration/fake_adapter.h"
#include "tests/migration/test_util.h"

namespace hyperfed::migration {
namespace {

using scheduler::JobState;
using testing::FakeAdapter;
using testing::Fault;
using testing::TempDir;
using testing::TestTransport;

struct Site {
  std::string name;
  std::unique_ptr<FakeAdapter> adapter;
  std::unique_ptr<Journal> journal;
  std::unique_ptr<Migrator> migrator;
};

class MigratorTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.path().empty()); }

  Site& Make(const std::string& name, int64_t max_batch = 100) {
    Site& s = sites_[name];
    s.name = name;
    s.adapter = std::make_unique<FakeAdapter>(name);
    auto j = Journal::Open(dir_.File(name + ".db"));
    EXPECT_TRUE(j.ok()) << j.status();
    s.journal = *std::move(j);
    s.migrator = std::make_unique<Migrator>(name, s.adapter.get(), s.journal.get(), &transport_, &clock_, max_batch);
    transport_.Connect(name, s.migrator.get());
    return s;
  }

  static std::string AddJob(Site& s, const std::string& key, bool pinned = false) {
    scheduler::JobSpec spec;
    spec.name = key;
    spec.script = "#!/bin/sh\ntrue\n";
    spec.key = key;
    return s.adapter->Add(spec, pinned);
  }

  // key -> (site, state) of every job that is not cancelled, over all sites;
  // fails the test if a key is there twice.
  std::map<std::string, std::pair<std::string, JobState>> Live() {
    std::map<std::string, std::pair<std::string, JobState>> live;
    for (auto& [name, s] : sites_) {
      for (const scheduler::Job& j : s.adapter->AllJobs()) {
        if (j.state == JobState::kCancelled) continue;
        EXPECT_FALSE(live.count(j.spec.key)) << j.spec.key << " live at " << live[j.spec.key].first << " and " << name;
        live[j.spec.key] = {name, j.state};
      }
    }
    return live;
  }

  MigrationState OutState(Site& s, const std::string& id) { return (**s.journal->Get(Direction::kOut, id)).state; }

  TempDir dir_;
  FakeEnv clock_;
  TestTransport transport_;
  std::map<std::string, Site> sites_;
};

TEST_F(MigratorTest, MovesTheMostRecentlyQueuedMigratableJobsFirst) {
  Site& a = Make("A");
  Site& b = Make("B");
  AddJob(a, "k0");
  AddJob(a, "k1");
  std::string running = AddJob(a, "k2");
  ASSERT_TRUE(a.adapter->Start(running).ok());
  std::string held = AddJob(a, "k3");
  ASSERT_TRUE(a.adapter->Hold(held).ok());
  AddJob(a, "k4", /*pinned=*/true);

  auto res = a.migrator->MigrateOut("B", 1, "r1");
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->size(), 1u);
  EXPECT_TRUE((*res)[0].status.ok()) << (*res)[0].status;
  EXPECT_EQ((*res)[0].moved, 1);
  EXPECT_EQ((*res)[0].shortfall, 0);
  EXPECT_EQ((*res)[0].job_keys, std::vector<std::string>{"k1"});

  auto live = Live();
  EXPECT_EQ(live["k1"], std::make_pair(std::string("B"), JobState::kPending));
  EXPECT_EQ(live["k0"].first, "A");
  EXPECT_EQ(live["k2"], std::make_pair(std::string("A"), JobState::kRunning));
  EXPECT_EQ(live["k3"], std::make_pair(std::string("A"), JobState::kHeld));
  EXPECT_EQ(live["k4"].first, "A");

  // Both journals say COMMITTED, with the destination's id.
  auto out = **a.journal->Get(Direction::kOut, (*res)[0].migration_id);
  auto in = **b.journal->Get(Direction::kIn, (*res)[0].migration_id);
  EXPECT_EQ(out.state, MigrationState::kCommitted);
  EXPECT_EQ(out.round_id, "r1");
  EXPECT_EQ(in.state, MigrationState::kCommitted);
  EXPECT_EQ(in.peer, "A");
  EXPECT_EQ(out.jobs[0].dest_id, in.jobs[0].dest_id);
  auto tagged = *b.adapter->FindByTag(Migrator::Tag(out.id, 0));
  ASSERT_EQ(tagged.size(), 1u);
  EXPECT_EQ(tagged[0].id, out.jobs[0].dest_id);
}

// The job choice (docs/algorithms.md, "Jobs that gain"): a job that arrived
// by a move in another round within the hysteresis time is not chosen; a
// relay in the same round is; a drained site sends it anyway; a job wider
// than the destination never goes; MigrateOut with the chosen ids moves
// exactly those.
TEST_F(MigratorTest, ChoiceKeepsRecentArrivalsAndWideJobsAndMovesExactlyTheChosen) {
  Site& a = Make("A");
  Site& b = Make("B");
  Make("C");
  AddJob(a, "k0");
  AddJob(a, "k1");
  auto moved = a.migrator->MigrateOut("B", 2, "r1");
  ASSERT_TRUE(moved.ok() && (*moved)[0].moved == 2) << moved.status();
  scheduler::JobSpec wide;
  wide.name = wide.key = "wide";
  wide.script = "#!/bin/sh\ntrue\n";
  wide.cores = 8;
  b.adapter->Add(wide, false);
  AddJob(b, "native");
  const balance::StartProfile four{4, {}};
  const std::vector<Migrator::Destination> to_c{{"C", 10, four}};
  auto keys_of = [&](const std::vector<std::string>& ids) {
    std::set<std::string> keys;
    for (const scheduler::Job& j : b.adapter->AllJobs())
      if (std::find(ids.begin(), ids.end(), j.id) != ids.end()) keys.insert(j.spec.key);
    return keys;
  };
  Migrator::ChoiceRules rules{.choice = balance::JobChoice::kNewest, .hysteresis = absl::Minutes(10)};
  auto chosen = b.migrator->Choose(to_c, rules, "r2", {});
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(keys_of((*chosen)[0]), std::set<std::string>{"native"}) << "k0 and k1 came within 10 min; wide fits not";
  chosen = b.migrator->Choose(to_c, rules, "r1", {});
  EXPECT_EQ(keys_of((*chosen)[0]), (std::set<std::string>{"k0", "k1", "native"})) << "a relay in the same round";
  rules.draining = true;
  chosen = b.migrator->Choose(to_c, rules, "r2", {});
  EXPECT_EQ(keys_of((*chosen)[0]), (std::set<std::string>{"k0", "k1", "native"})) << "a drained site sends them";
  rules.draining = false;
  clock_.Advance(absl::Minutes(11));
  chosen = b.migrator->Choose(to_c, rules, "r3", {});
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  const std::vector<std::string> ids = (*chosen)[0];
  EXPECT_EQ(keys_of(ids), (std::set<std::string>{"k0", "k1", "native"})) << "after the hysteresis time";
  // Exactly the chosen ones (one given twice counts once), not the newest.
  const std::vector<std::string> only{ids.back(), ids.back()};
  auto out = b.migrator->MigrateOut("C", 0, "r3", &only);
  ASSERT_TRUE(out.ok()) << out.status();
  int64_t n = 0;
  for (const OutResult& r : *out) n += r.moved;
  EXPECT_EQ(n, 1);
  EXPECT_EQ(Live()[*keys_of({ids.back()}).begin()].first, "C");
}

// A hold that reports an error may still have taken effect (a scheduler
// command that timed out after doing its work): the job does not move, and
// it is released, not left held with no record covering it.
TEST_F(MigratorTest, AHoldThatFailedAfterTakingEffectIsReleased) {
  Site& a = Make("A");
  Make("B");
  AddJob(a, "k0");
  AddJob(a, "k1");
  a.adapter->HoldsTakeEffectButFail(1);  // the first hold: k1, the most recent
  auto res = a.migrator->MigrateOut("B", 2, "r1");
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->size(), 1u);
  EXPECT_EQ((*res)[0].moved, 1);
  EXPECT_EQ((*res)[0].job_keys, std::vector<std::string>{"k0"});
  auto live = Live();
  EXPECT_EQ(live["k0"], std::make_pair(std::string("B"), JobState::kPending));
  EXPECT_EQ(live["k1"], std::make_pair(std::string("A"), JobState::kPending)) << "released, not held";
}

// A batch none of whose jobs could be held ends ABORTED, never sent; its
// jobs count once in the shortfall.
TEST_F(MigratorTest, ABatchWithNoJobHeldIsAShortfallOfItsJobsOnce) {
  Site& a = Make("A");
  Make("B");
  AddJob(a, "k0");
  AddJob(a, "k1");
  a.adapter->HoldsTakeEffectButFail(2);
  auto res = a.migrator->MigrateOut("B", 2, "r1");
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->size(), 1u);
  EXPECT_EQ((*res)[0].moved, 0);
  EXPECT_EQ((*res)[0].shortfall, 2);
  EXPECT_EQ(OutState(a, (*res)[0].migration_id), MigrationState::kAborted);
  EXPECT_EQ(transport_.transfers_delivered(), 0);
  auto live = Live();
  EXPECT_EQ(live["k0"], std::make_pair(std::string("A"), JobState::kPending));
  EXPECT_EQ(live["k1"], std::make_pair(std::string("A"), JobState::kPending));
}

// Issue 34, finding 5: a spec the destination refuses (its CheckSpec) fails
// alone: the rest of the batch moves, the reply names the refused key, and
// the source releases exactly that job. A batch whose every spec is refused
// is refused as before: nothing journaled at the destination, every job
// kept at the source.
TEST_F(MigratorTest, Issue34_ASpecTheDestinationRefusesFailsAloneAndTheRestMove) {
  Site& a = Make("A");
  Site& b = Make("B");
  AddJob(a, "k0");
  AddJob(a, "k1");
  AddJob(a, "k2");
  b.adapter->RefuseSpecsNamed("k1");
  auto res = a.migrator->MigrateOut("B", 3, "r1");
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->size(), 1u);
  EXPECT_TRUE((*res)[0].status.ok()) << (*res)[0].status;
  EXPECT_EQ((*res)[0].moved, 2);
  EXPECT_EQ((*res)[0].shortfall, 1);
  auto live = Live();
  EXPECT_EQ(live["k0"].first, "B");
  EXPECT_EQ(live["k2"].first, "B");
  EXPECT_EQ(live["k1"], std::make_pair(std::string("A"), JobState::kPending));
  const std::string id = (*res)[0].migration_id;
  const MigrationRecord out = **a.journal->Get(Direction::kOut, id);
  EXPECT_EQ(out.state, MigrationState::kCommitted);
  EXPECT_NE(out.note.find("refused by B, kept here: k1"), std::string::npos) << out.note;
  EXPECT_EQ(*a.migrator->CommittedOut("r1"), (std::map<std::string, int64_t>{{"B", 2}}));
  EXPECT_EQ((**b.journal->Get(Direction::kIn, id)).state, MigrationState::kCommitted);
  // A repeat and an Abort answer the same: two ids, k1 refused.
  TransferRequest again;
  again.migration_id = id;
  again.source_site = "A";
  for (const JournalJob& j : out.jobs) again.jobs.push_back(j.spec);
  auto tr = b.migrator->HandleTransfer(again);
  ASSERT_TRUE(tr.ok()) << tr.status();
  EXPECT_EQ(tr->new_ids.size(), 2u);
  EXPECT_EQ(tr->refused_keys, std::vector<std::string>{"k1"});
  auto ab = b.migrator->HandleAbort(id, "A");
  ASSERT_TRUE(ab.ok()) << ab.status();
  EXPECT_FALSE(ab->aborted);
  EXPECT_EQ(ab->new_ids, tr->new_ids);
  EXPECT_EQ(ab->refused_keys, tr->refused_keys);
  EXPECT_TRUE(a.migrator->Recover().ok());
  EXPECT_TRUE(b.migrator->Recover().ok());
  // Every spec refused: the whole transfer is, and the source keeps all.
  b.adapter->RefuseSpecsNamed("k1");
  auto alone = a.migrator->MigrateOut("B", 1, "r2");
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ((*alone)[0].moved, 0);
  EXPECT_NE((*alone)[0].status.message().find("refuses it"), std::string::npos) << (*alone)[0].status;
  EXPECT_EQ(Live()["k1"], std::make_pair(std::string("A"), JobState::kPending));
  EXPECT_EQ(OutState(a, (*alone)[0].migration_id), MigrationState::kAborted);
}

// A reply that does not fit the batch (a refused key not of it, counts that
// do not add up) is not acted on: the jobs stay held and the record
// PREPARED, to be asked again.
TEST_F(MigratorTest, Issue34_AReplyThatDoesNotFitIsNotActedOn) {
  Site& a = Make("A");
  Make("B");
  AddJob(a, "k0");
  AddJob(a, "k1");
  int calls = 0;
  transport_.SetReplyFilter([&](TransferReply* r) {
    ++calls;
    r->refused_keys = {"not-ours"};
    r->new_ids.pop_back();
  });
  auto res = a.migrator->MigrateOut("B", 2, "r1");
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ((*res)[0].moved, 0);
  EXPECT_EQ((*res)[0].in_flight, 2);
  EXPECT_EQ(OutState(a, (*res)[0].migration_id), MigrationState::kPrepared);
  transport_.SetReplyFilter(nullptr);
  EXPECT_TRUE(a.migrator->Recover().ok());
  EXPECT_EQ(OutState(a, (*res)[0].migration_id), MigrationState::kCommitted);
  for (const auto& [key, where] : Live()) EXPECT_EQ(where.first, "B") << key;
}

// Issue 34, finding 5: one user's job that no site would take (here a name
// over kMaxNameLength) used to reach the destination, whose check refused
// the whole batch, every round. The source checks each spec with the same
// scheduler-independent check first (scheduler::CheckPortableSpec): that job
// stays home, released, and the rest move.
TEST_F(MigratorTest, Issue34_AJobFailingTheCommonCheckStaysHomeAndTheRestMove) {
  Site& a = Make("A");
  Site& b = Make("B");
  AddJob(a, "k0");
  scheduler::JobSpec bad;
  bad.name = std::string(scheduler::kMaxNameLength + 1, 'n');
  bad.script = "#!/bin/sh\ntrue\n";
  bad.key = "k1";
  a.adapter->Add(bad);
  AddJob(a, "k2");
  auto res = a.migrator->MigrateOut("B", 3, "r1");
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->size(), 1u);
  EXPECT_TRUE((*res)[0].status.ok()) << (*res)[0].status;
  EXPECT_EQ((*res)[0].moved, 2);
  EXPECT_EQ((*res)[0].shortfall, 1);
  auto live = Live();
  EXPECT_EQ(live["k0"].first, "B");
  EXPECT_EQ(live["k2"].first, "B");
  EXPECT_EQ(live["k1"], std::make_pair(std::string("A"), JobState::kPending)) << "left at home, released";
  const MigrationRecord r = **a.journal->Get(Direction::kOut, (*res)[0].migration_id);
  EXPECT_EQ(r.state, MigrationState::kCommitted);
  EXPECT_NE(r.note.find("k1 not sent"), std::string::npos) << r.note;
  EXPECT_EQ(b.adapter->CheckedSources().size(), 2u) << "B never saw k1";
}

TEST_F(MigratorTest, SplitsIntoBatchesAndReportsTheShortfall) {
  Site& a = Make("A", /*max_batch=*/2);
  Make("B");
  for (int i = 0; i < 5; ++i) AddJob(a, absl::StrCat("k", i));
  auto res = a.migrator->MigrateOut("B", 7, "r1");
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->size(), 3u);
  EXPECT_EQ((*res)[0].moved, 2);
  EXPECT_EQ((*res)[1].moved, 2);
  EXPECT_EQ((*res)[2].moved, 1);
  EXPECT_EQ((*res)[2].shortfall, 2);
  EXPECT_EQ((*res)[0].job_keys, (std::vector<std::string>{"k4", "k3"}));
  EXPECT_NE((*res)[0].migration_id, (*res)[1].migration_id);
  for (const auto& [key, where] : Live()) EXPECT_EQ(where.first, "B") << key;
  EXPECT_EQ(transport_.transfers_delivered(), 3);
}

TEST_F(MigratorTest, NothingToMoveIsAShortfallNotAnError) {
  Site& a = Make("A");
  Make("B");
  auto res = a.migrator->MigrateOut("B", 3, "r1");
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->size(), 1u);
  EXPECT_EQ((*res)[0].migration_id, "");
  EXPECT_EQ((*res)[0].shortfall, 3);
  EXPECT_TRUE(a.migrator->MigrateOut("B", 0, "r1")->empty());
}

TEST_F(MigratorTest, BadArgumentsAreRefused) {
  Site& a = Make("A");
  AddJob(a, "k0");
  EXPECT_EQ(a.migrator->MigrateOut("A", 1, "r").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(a.migrator->MigrateOut("", 1, "r").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(a.migrator->MigrateOut("B", -1, "r").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(a.migrator->List(10)->empty());
  EXPECT_EQ(a.adapter->AllJobs()[0].state, JobState::kPending);
}

TEST_F(MigratorTest, GivesAKeyToAJobThatHasNone) {
  Site& a = Make("A");
  Site& b = Make("B");
  std::string id = AddJob(a, "");
  auto res = a.migrator->MigrateOut("B", 1, "r1");
  ASSERT_TRUE(res.ok());
  EXPECT_EQ((*res)[0].job_keys, std::vector<std::string>{"A:" + id});
  EXPECT_EQ(b.adapter->AllJobs()[0].spec.key, "A:" + id);
}

TransferRequest Request(const std::string& id, std::vector<std::string> keys, const std::string& source = "A") {
  TransferRequest req;
  req.migration_id = id;
  req.source_site = source;
  for (const std::string& k : keys) {
    scheduler::JobSpec s;
    s.key = k;
    s.script = "x";
    req.jobs.push_back(s);
  }
  return req;
}

// Issue 34, finding 2: users_map is looked up by (source site, owner), so
// the adapter must learn the site that sent a job from the caller's
// certificate (the handler's source_site), never from the spec; and the
// site is not stored in the journal's specs, so a record finished by
// Recover gets it from the record's peer.
TEST_F(MigratorTest, Issue34_EveryIncomingJobCarriesTheAuthenticatedSourceSite) {
  Site& b = Make("B");
  TransferRequest req = Request("A:1", {"k0", "k1"});
  req.jobs[0].source_site = "C";  // what a hostile A might write
  ASSERT_TRUE(b.migrator->HandleTransfer(req).ok());
  EXPECT_EQ(b.adapter->CheckedSources(), (std::vector<std::string>{"A", "A"}));
  EXPECT_EQ(b.adapter->SubmittedSources(), (std::vector<std::string>{"A", "A"}));
  // Submit fails once; Recover finishes the record from the journal.
  b.adapter->FailSubmits(1);
  EXPECT_FALSE(b.migrator->HandleTransfer(Request("A:2", {"k2"})).ok());
  ASSERT_TRUE(b.migrator->Recover().ok());
  EXPECT_EQ(b.adapter->SubmittedSources(), (std::vector<std::string>{"A", "A", "A", "A"}));
  // Neither the journal's encoding nor the wire carries it.
  scheduler::JobSpec with = req.jobs[0], without = req.jobs[0];
  without.source_site = "";
  EXPECT_EQ(EncodeSpec(with), EncodeSpec(without));
  EXPECT_EQ(DecodeSpec(EncodeSpec(with))->source_site, "");
}

// A job refused on a retry that an earlier pass had submitted (found by its
// tag) was taken: reported refused, the source would release its copy and
// the job would run at both sites.
TEST_F(MigratorTest, Issue34_AJobSubmittedBeforeItsRefusalIsNotReportedRefused) {
  Site& b = Make("B");
  TransferRequest req = Request("A:1", {"k0", "k1"});
  req.jobs[0].name = "k0";
  req.jobs[1].name = "k1";
  b.adapter->FailSubmits(1);  // k0 fails for now, k1 is submitted
  EXPECT_EQ(b.migrator->HandleTransfer(req).status().code(), absl::StatusCode::kUnavailable);
  ASSERT_EQ(b.adapter->AllJobs().size(), 1u);
  b.adapter->RefuseSubmitsNamed("k1");
  b.adapter->RefuseBeforeTagLookup(true);
  ASSERT_TRUE(b.migrator->Recover().ok());
  auto tr = b.migrator->HandleTransfer(req);
  ASSERT_TRUE(tr.ok()) << tr.status();
  EXPECT_EQ(tr->new_ids.size(), 2u);
  EXPECT_TRUE(tr->refused_keys.empty());
  EXPECT_EQ(b.adapter->AllJobs().size(), 2u) << "k1 once, k0 once";
}

TEST_F(MigratorTest, RepeatedTransferAnswersTheStoredResult) {
  Site& b = Make("B");
  TransferRequest req = Request("A:1", {"k0", "k1"});
  auto first = b.migrator->HandleTransfer(req);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = b.migrator->HandleTransfer(req);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->new_ids, second->new_ids);
  EXPECT_EQ(b.adapter->AllJobs().size(), 2u);
}

TEST_F(MigratorTest, RepeatedIdWithOtherJobsOrSourceIsRefused) {
  Site& b = Make("B");
  ASSERT_TRUE(b.migrator->HandleTransfer(Request("A:1", {"k0"})).ok());
  EXPECT_EQ(b.migrator->HandleTransfer(Request("A:1", {"k9"})).status().code(), absl::StatusCode::kInvalidArgument);
  TransferRequest other = Request("A:1", {"k0"});
  other.source_site = "C";
  EXPECT_EQ(b.migrator->HandleTransfer(other).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b.migrator->HandleAbort("A:1", "C").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b.adapter->AllJobs().size(), 1u);
}

TEST_F(MigratorTest, BadTransferRequestsChangeNothing) {
  Site& b = Make("B");
  std::vector<TransferRequest> bad;
  bad.push_back(Request("", {"k0"}));
  bad.push_back(Request("A:1", {}));
  bad.push_back(Request("A:1", {""}));
  bad.push_back(Request("A:1", {"k0", "k0"}));
  bad.push_back(Request("bad id", {"k0"}));
  TransferRequest self = Request("A:1", {"k0"});
  self.source_site = "B";
  bad.push_back(self);
  TransferRequest cores = Request("A:1", {"k0"});
  cores.jobs[0].cores = 0;
  bad.push_back(cores);
  TransferRequest mem = Request("A:1", {"k0"});
  mem.jobs[0].memory_mb = -1;
  bad.push_back(mem);
  TransferRequest cost = Request("A:1", {"k0"});
  cost.jobs[0].cost = std::nan("");
  bad.push_back(cost);
  for (const TransferRequest& r : bad) {
    EXPECT_EQ(b.migrator->HandleTransfer(r).status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(b.migrator->HandleAbort("", "A").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(b.adapter->AllJobs().empty());
  EXPECT_TRUE(b.migrator->List(10)->empty());
}

TEST_F(MigratorTest, AbortBeforeTransferIsRecordedAndTheTransferRefusedForEver) {
  Site& b = Make("B");
  auto ab = b.migrator->HandleAbort("A:1", "A");
  ASSERT_TRUE(ab.ok());
  EXPECT_TRUE(ab->aborted);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(b.migrator->HandleTransfer(Request("A:1", {"k0"})).status().code(), absl::StatusCode::kAborted);
  }
  EXPECT_TRUE(b.migrator->HandleAbort("A:1", "A")->aborted);
  EXPECT_TRUE(b.adapter->AllJobs().empty());
  // Still refused after a restart.
  b.migrator.reset();
  b.journal.reset();
  b.journal = *Journal::Open(dir_.File("B.db"));
  b.migrator = std::make_unique<Migrator>("B", b.adapter.get(), b.journal.get(), &transport_, &clock_, 100);
  EXPECT_EQ(b.migrator->HandleTransfer(Request("A:1", {"k0"})).status().code(), absl::StatusCode::kAborted);
}

// Issue 34, finding 6: Abort of an id never seen stores a record (so a late
// Transfer of it is refused), and any certified site may send such aborts.
// Per source only kMaxEarlyAbortsPerSource records are kept; the oldest go,
// and the highest id dropped becomes that source's floor: a Transfer of an
// unknown id at or below it is refused like an aborted one.
TEST_F(MigratorTest, Issue34_AFloodOfUnknownAbortsIsBoundedAndStillRefusesLateTransfers) {
  Site& b = Make("B");
  const int64_t cap = kMaxEarlyAbortsPerSource;
  for (int64_t i = 1; i <= cap + 50; ++i) {
    auto ab = b.migrator->HandleAbort(absl::StrCat("A:", i), "A");
    ASSERT_TRUE(ab.ok()) << i << ": " << ab.status();
    ASSERT_TRUE(ab->aborted);
  }
  // Another source's aborts are not dropped for A's.
  ASSERT_TRUE(b.migrator->HandleAbort("C:7", "C")->aborted);
  auto recs = b.journal->ListRecent(static_cast<int>(cap) * 3);
  ASSERT_TRUE(recs.ok()) << recs.status();
  int64_t from_a = 0;
  for (const MigrationRecord& r : *recs) from_a += r.peer == "A";
  EXPECT_EQ(from_a, cap);
  // Every aborted id is refused, kept or dropped, before and after a restart.
  for (int restart = 0; restart < 2; ++restart) {
    for (int64_t i : {int64_t{1}, int64_t{50}, int64_t{51}, cap + 50}) {
      EXPECT_EQ(b.migrator->HandleTransfer(Request(absl::StrCat("A:", i), {"k0"})).status().code(),
                absl::StatusCode::kAborted)
          << i;
    }
    EXPECT_EQ(b.migrator->HandleTransfer(Request("C:7", {"k0"}, "C")).status().code(), absl::StatusCode::kAborted);
    b.migrator.reset();
    b.journal.reset();
    b.journal = *Journal::Open(dir_.File("B.db"));
    b.migrator = std::make_unique<Migrator>("B", b.adapter.get(), b.journal.get(), &transport_, &clock_, 100);
  }
  EXPECT_TRUE(b.adapter->AllJobs().empty());
  // A new id above the floor still moves.
  auto tr = b.migrator->HandleTransfer(Request(absl::StrCat("A:", cap + 51), {"k0"}));
  EXPECT_TRUE(tr.ok()) << tr.status();
  // Ids a source's MigrateOut never makes ("<site>:<n>") are refused, and
  // an abort of one stores nothing.
  EXPECT_EQ(b.migrator->HandleAbort("A:x", "A").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b.migrator->HandleTransfer(Request("A:0x5", {"k9"})).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(MigratorTest, AbortAfterSubmitAnswersTheNewIds) {
  Site& b = Make("B");
  auto tr = b.migrator->HandleTransfer(Request("A:1", {"k0", "k1"}));
  ASSERT_TRUE(tr.ok());
  auto ab = b.migrator->HandleAbort("A:1", "A");
  ASSERT_TRUE(ab.ok());
  EXPECT_FALSE(ab->aborted);
  EXPECT_EQ(ab->new_ids, tr->new_ids);
}

TEST_F(MigratorTest, UnreachableDestinationKeepsJobsHeldUntilAnAnsweredAbort) {
  Site& a = Make("A");
  Site& b = Make("B");
  AddJob(a, "k0");
  AddJob(a, "k1");
  transport_.SetDown("B", true);
  auto res = a.migrator->MigrateOut("B", 2, "r1");
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->size(), 1u);
  const std::string id = (*res)[0].migration_id;
  EXPECT_EQ((*res)[0].in_flight, 2);
  EXPECT_EQ((*res)[0].moved, 0);
  EXPECT_EQ((*res)[0].status.code(), absl::StatusCode::kUnavailable);
  for (const auto& [k, w] : Live()) EXPECT_EQ(w, std::make_pair(std::string("A"), JobState::kHeld));

  EXPECT_EQ(a.migrator->Recover().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(a.migrator->GiveUp(id).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(OutState(a, id), MigrationState::kAborting);
  for (const auto& [k, w] : Live()) EXPECT_EQ(w.second, JobState::kHeld);
  // A job of a migration being given up is not chosen again.
  EXPECT_EQ((*a.migrator->MigrateOut("B", 1, "r2"))[0].shortfall, 1);

  transport_.SetDown("B", false);
  ASSERT_TRUE(a.migrator->Recover().ok());
  EXPECT_EQ(OutState(a, id), MigrationState::kAborted);
  for (const auto& [k, w] : Live()) EXPECT_EQ(w, std::make_pair(std::string("A"), JobState::kPending));
  // A Transfer that was delayed in the network arrives now: refused.
  TransferRequest late = Request(id, {"k1", "k0"});
  EXPECT_EQ(b.migrator->HandleTransfer(late).status().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(b.adapter->AllJobs().empty());
  EXPECT_EQ(a.migrator->GiveUp(id).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a.migrator->GiveUp("A:999").code(), absl::StatusCode::kNotFound);
}

TEST_F(MigratorTest, LostReplyThenGiveUpCommitsBecauseTheDestinationSubmitted) {
  Site& a = Make("A");
  Make("B");
  AddJob(a, "k0");
  transport_.Queue(Fault::kDropReply);
  auto res = a.migrator->MigrateOut("B", 1, "r1");
  ASSERT_TRUE(res.ok());
  const std::string id = (*res)[0].migration_id;
  EXPECT_EQ((*res)[0].in_flight, 1);
  // Runnable at B, held at A: runnable at one site only.
  auto live_a = a.adapter->AllJobs();
  EXPECT_EQ(live_a[0].state, JobState::kHeld);
  ASSERT_TRUE(a.migrator->GiveUp(id).ok());
  EXPECT_EQ(OutState(a, id), MigrationState::kCommitted);
  EXPECT_EQ(Live()["k0"], std::make_pair(std::string("B"), JobState::kPending));
}

TEST_F(MigratorTest, LostRequestIsRetriedByRecover) {
  Site& a = Make("A");
  Make("B");
  AddJob(a, "k0");
  transport_.Queue(Fault::kDropRequest);
  auto res = a.migrator->MigrateOut("B", 1, "r1");
  ASSERT_TRUE(res.ok());
  EXPECT_EQ((*res)[0].in_flight, 1);
  ASSERT_TRUE(a.migrator->Recover().ok());
  EXPECT_EQ(OutState(a, (*res)[0].migration_id), MigrationState::kCommitted);
  EXPECT_EQ(Live()["k0"].first, "B");
}

TEST_F(MigratorTest, DuplicatedMessagesSubmitOnce) {
  Site& a = Make("A");
  Site& b = Make("B");
  AddJob(a, "k0");
  AddJob(a, "k1");
  transport_.Queue(Fault::kDuplicate);
  auto res = a.migrator->MigrateOut("B", 2, "r1");
  ASSERT_TRUE(res.ok());
  EXPECT_EQ((*res)[0].moved, 2);
  EXPECT_EQ(transport_.transfers_delivered(), 2);
  EXPECT_EQ(b.adapter->AllJobs().size(), 2u);
  Live();
  // A duplicated Abort after an unreachable Transfer.
  AddJob(a, "k2");
  transport_.SetDown("B", true);
  auto res2 = a.migrator->MigrateOut("B", 1, "r2");
  transport_.SetDown("B", false);
  transport_.Queue(Fault::kDuplicate);
  ASSERT_TRUE(a.migrator->GiveUp((*res2)[0].migration_id).ok());
  EXPECT_EQ(Live()["k2"], std::make_pair(std::string("A"), JobState::kPending));
}

TEST_F(MigratorTest, AJobReleasedBehindOurBackIsAbortedNotSent) {
  Site& a = Make("A");
  Site& b = Make("B");
  std::string j0 = AddJob(a, "k0");
  AddJob(a, "k1");
  transport_.SetDown("B", true);
  auto res = a.migrator->MigrateOut("B", 2, "r1");
  const std::string id = (*res)[0].migration_id;
  // An operator releases one held job and it starts.
  ASSERT_TRUE(a.adapter->Release(j0).ok());
  ASSERT_TRUE(a.adapter->Start(j0).ok());
  transport_.SetDown("B", false);
  ASSERT_TRUE(a.migrator->Recover().ok());
  EXPECT_EQ(OutState(a, id), MigrationState::kAborted);
  EXPECT_EQ(transport_.transfers_delivered(), 0);
  EXPECT_TRUE(b.adapter->AllJobs().empty());
  auto live = Live();
  EXPECT_EQ(live["k0"], std::make_pair(std::string("A"), JobState::kRunning));
  EXPECT_EQ(live["k1"], std::make_pair(std::string("A"), JobState::kPending));
}

TEST_F(MigratorTest, ForceReleaseReleasesWithoutAnAnswer) {
  Site& a = Make("A");
  Make("B");
  AddJob(a, "k0");
  transport_.SetDown("B", true);
  auto res = a.migrator->MigrateOut("B", 1, "r1");
  const std::string id = (*res)[0].migration_id;
  ASSERT_TRUE(a.migrator->ForceRelease(id).ok());
  auto r = **a.journal->Get(Direction::kOut, id);
  EXPECT_EQ(r.state, MigrationState::kForced);
  EXPECT_NE(r.note.find("may also have been submitted"), std::string::npos);
  EXPECT_EQ(Live()["k0"], std::make_pair(std::string("A"), JobState::kPending));
  EXPECT_EQ(a.migrator->ForceRelease(id).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a.migrator->GiveUp(id).code(), absl::StatusCode::kFailedPrecondition);
  transport_.SetDown("B", false);
  EXPECT_TRUE(a.migrator->Recover().ok());
  EXPECT_EQ(Live()["k0"].first, "A");
}

TEST_F(MigratorTest, DestinationSubmitFailureIsCompletedLater) {
  Site& a = Make("A");
  Site& b = Make("B");
  AddJob(a, "k0");
  AddJob(a, "k1");
  b.adapter->FailSubmits(1);
  transport_.Queue(Fault::kNone);
  auto res = a.migrator->MigrateOut("B", 2, "r1");
  const std::string id = (*res)[0].migration_id;
  EXPECT_EQ((*res)[0].in_flight, 2);
  EXPECT_EQ((**b.journal->Get(Direction::kIn, id)).state, MigrationState::kPrepared);
  ASSERT_TRUE(b.migrator->Recover().ok());
  EXPECT_EQ((**b.journal->Get(Direction::kIn, id)).state, MigrationState::kCommitted);
  ASSERT_TRUE(a.migrator->Recover().ok());
  EXPECT_EQ(OutState(a, id), MigrationState::kCommitted);
  auto live = Live();
  EXPECT_EQ(live["k0"].first, "B");
  EXPECT_EQ(live["k1"].first, "B");
}

TEST_F(MigratorTest, RecoverAbandonsAPreparingRecordAndReleasesItsHolds) {
  Site& a = Make("A");
  std::string j0 = AddJob(a, "k0");
  std::string j1 = AddJob(a, "k1");
  MigrationRecord r;
  r.id = "A:50";
  r.peer = "B";
  r.state = MigrationState::kPreparing;
  for (auto [id, key] : {std::pair{j0, "k0"}, std::pair{j1, "k1"}}) {
    JournalJob jj;
    jj.source_id = id;
    jj.key = key;
    r.jobs.push_back(jj);
  }
  ASSERT_TRUE(a.journal->Insert(r).ok());
  ASSERT_TRUE(a.adapter->Hold(j0).ok());  // the crash came after one hold
  ASSERT_TRUE(a.migrator->Recover().ok());
  EXPECT_EQ(OutState(a, "A:50"), MigrationState::kAborted);
  for (const auto& [k, w] : Live()) EXPECT_EQ(w.second, JobState::kPending);
}

TEST_F(MigratorTest, ListAndHistoryFollowAJobAcrossHops) {
  Site& a = Make("A");
  Site& b = Make("B");
  AddJob(a, "k0");
  ASSERT_TRUE(a.migrator->MigrateOut("B", 1, "r1").ok());
  clock_.Advance(absl::Seconds(10));
  auto back = b.migrator->MigrateOut("A", 1, "r2");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)[0].moved, 1);
  EXPECT_EQ(Live()["k0"].first, "A");

  auto hist = a.migrator->HistoryOfJob("k0");
  ASSERT_TRUE(hist.ok());
  ASSERT_EQ(hist->size(), 2u);
  EXPECT_EQ((*hist)[0].direction, Direction::kOut);
  EXPECT_EQ((*hist)[0].round_id, "r1");
  EXPECT_EQ((*hist)[1].direction, Direction::kIn);
  EXPECT_EQ((*hist)[1].peer, "B");
  EXPECT_EQ((*hist)[1].round_id, "r2");
  auto list = b.migrator->List(10);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].direction, Direction::kOut);  // newest first
  EXPECT_EQ((*list)[0].jobs[0].key, "k0");
  EXPECT_EQ((*list)[0].created - (*list)[1].created, absl::Seconds(10));
}

TEST_F(MigratorTest, ConcurrentMigrationsNeverPickAJobTwiceNorDeadlock) {
  Site& a = Make("A", 2);
  Site& b = Make("B", 2);
  for (int i = 0; i < 10; ++i) AddJob(a, absl::StrCat("a", i));
  for (int i = 0; i < 10; ++i) AddJob(b, absl::StrCat("b", i));
  std::vector<std::thread> threads;
  std::atomic<int64_t> moved{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Site& from = t % 2 ? a : b;
      auto res = from.migrator->MigrateOut(t % 2 ? "B" : "A", 4, "r");
      ASSERT_TRUE(res.ok());
      for (const OutResult& r : *res) moved += r.moved;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(moved, 16);
  auto live = Live();
  EXPECT_EQ(live.size(), 20u);
  for (const auto& [k, w] : live) EXPECT_EQ(w.second, JobState::kPending);
}

TEST_F(MigratorTest, AMigrationIdIsBoundToItsSource) {
  Site& b = Make("B");
  // C may neither claim nor abort A's migration ids.
  TransferRequest claim = Request("A:7", {"k0"});
  claim.source_site = "C";
  EXPECT_EQ(b.migrator->HandleTransfer(claim).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b.migrator->HandleAbort("A:7", "C").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(b.migrator->List(10)->empty()) << "nothing recorded";
  // A's own Transfer of that id then goes through.
  ASSERT_TRUE(b.migrator->HandleTransfer(Request("A:7", {"k0"})).ok());
  EXPECT_EQ(b.adapter->AllJobs().size(), 1u);
}

TEST_F(MigratorTest, AdmissionRefusalChangesNothing) {
  Site& b = Make("B");
  int asked = 0;
  b.migrator->SetAdmission([&](const TransferRequest& r) {
    ++asked;
    return r.round_id == "planned" ? absl::OkStatus() : absl::FailedPreconditionError("not in the plan");
  });
  TransferRequest req = Request("A:1", {"k0"});
  req.round_id = "other";
  EXPECT_EQ(b.migrator->HandleTransfer(req).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(b.adapter->AllJobs().empty());
  EXPECT_TRUE(b.migrator->List(10)->empty());
  req.round_id = "planned";
  ASSERT_TRUE(b.migrator->HandleTransfer(req).ok());
  // A repeat of a journaled migration is answered without asking again.
  ASSERT_TRUE(b.migrator->HandleTransfer(req).ok());
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(b.adapter->AllJobs().size(), 1u);
}

// Issue 34, finding 5: a job the destination's scheduler refuses at submit
// time (final) fails alone too; when it refuses every job of the batch, the
// record is aborted and the source keeps them all.
TEST_F(MigratorTest, ASchedulerRefusalAtSubmitFailsAloneAndTheSourceKeepsThatJob) {
  Site& a = Make("A");
  Site& b = Make("B");
  AddJob(a, "k0");
  AddJob(a, "k1");
  AddJob(a, "k2");
  // k1 passes CheckSpec at B but B's scheduler refuses it when submitted.
  b.adapter->RefuseSubmitsNamed("k1");
  auto res = a.migrator->MigrateOut("B", 3, "r1");
  ASSERT_TRUE(res.ok()) << res.status();
  const std::string id = (*res)[0].migration_id;
  EXPECT_EQ((*res)[0].moved, 2);
  EXPECT_EQ((*res)[0].in_flight, 0) << "nothing left held";
  EXPECT_EQ(OutState(a, id), MigrationState::kCommitted);
  const MigrationRecord in = **b.journal->Get(Direction::kIn, id);
  EXPECT_EQ(in.state, MigrationState::kCommitted);
  EXPECT_NE(in.note.find("k1 (injected refusal"), std::string::npos) << in.note;
  auto live = Live();
  ASSERT_EQ(live.size(), 3u);
  EXPECT_EQ(live["k1"], std::make_pair(std::string("A"), JobState::kPending));
  EXPECT_EQ(live["k0"].first, "B");
  EXPECT_EQ(live["k2"].first, "B");
  // Recovery on both sides has nothing left to do.
  EXPECT_TRUE(b.migrator->Recover().ok());
  EXPECT_TRUE(a.migrator->Recover().ok());
  // Only k1 left: refused alone is refused whole.
  auto last = a.migrator->MigrateOut("B", 1, "r2");
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ((*last)[0].moved, 0);
  EXPECT_EQ((*last)[0].in_flight, 0);
  EXPECT_EQ(OutState(a, (*last)[0].migration_id), MigrationState::kAborted);
  EXPECT_EQ((**b.journal->Get(Direction::kIn, (*last)[0].migration_id)).state, MigrationState::kAborted);
  EXPECT_EQ(Live()["k1"], std::make_pair(std::string("A"), JobState::kPending));
}

}  // namespace
}  // namespace hyperfed::migration
