#include "daemon/migration/journal.h"

#include <sqlite3.h>

#include <cstdio>
#include <cstring>

#include "daemon/migration/spec_codec.h"
#include "gtest/gtest.h"
#include "tests/migration/test_util.h"

namespace hyperfed::migration {
namespace {

using testing::TempDir;

scheduler::JobSpec OddSpec(const std::string& key) {
  scheduler::JobSpec s;
  s.name = "job with spaces";
  s.script = "#!/bin/sh\necho '1:2:3'\n\x01\xff end";
  s.cores = 8;
  s.memory_mb = 4096;
  s.time_limit_s = 3600;
  s.workdir = "/scratch/x";
  s.env = {{"A", "1"}, {"MULTI", "line\nline"}, {"EMPTY", ""}};
  s.duration_ms = 12345;
  s.cost = 0.1 + 0.2;  // not exactly representable in short decimal
  s.key = key;
  return s;
}

MigrationRecord Sample(const std::string& id, Direction d, MigrationState st, absl::Time t, int jobs = 2) {
  MigrationRecord r;
  r.id = id;
  r.direction = d;
  r.peer = "site-b";
  r.state = st;
  r.round_id = "round-7";
  r.created = r.updated = t;
  for (int i = 0; i < jobs; ++i) {
    JournalJob j;
    j.key = absl::StrCat(id, "/k", i);
    j.source_id = absl::StrCat("s", i);
    j.spec = OddSpec(j.key);
    r.jobs.push_back(j);
  }
  return r;
}

TEST(SpecCodecTest, RoundTripsEveryField) {
  scheduler::JobSpec s = OddSpec("k");
  absl::StatusOr<scheduler::JobSpec> back = DecodeSpec(EncodeSpec(s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
  EXPECT_EQ(*DecodeSpec(EncodeSpec(scheduler::JobSpec{})), scheduler::JobSpec{});
  // The owner (issue 12, outcome 9) is a last field, written only when set,
  // so records journaled before it existed read back as they were.
  s.owner = "alice";
  back = DecodeSpec(EncodeSpec(s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->owner, "alice");
  s.owner.clear();
  EXPECT_EQ(EncodeSpec(s), EncodeSpec(OddSpec("k")));
}

TEST(SpecCodecTest, WritesNumbersAsEarlierVersionsDid) {
  // Records journaled by earlier versions (printf's %.17g) and now read the
  // same: the encoding of a spec did not change.
  for (double cost : {1.0, 0.1 + 0.2, 1e300, 5e-324, 123456789.125, 0.0}) {
    scheduler::JobSpec s = OddSpec("k");
    s.cost = cost;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", cost);
    const std::string encoded = EncodeSpec(s);
    const std::string tail = absl::StrCat(std::strlen(buf), ":", buf, "1:k");
    EXPECT_EQ(encoded.substr(encoded.size() - tail.size()), tail) << cost;
  }
  scheduler::JobSpec s = OddSpec("k");
  s.cores = -7;
  s.memory_mb = int64_t{1} << 40;
  EXPECT_NE(EncodeSpec(s).find("2:-7"), std::string::npos);
  EXPECT_NE(EncodeSpec(s).find("13:1099511627776"), std::string::npos);
}

TEST(SpecCodecTest, RejectsMalformedInput) {
  std::string good = EncodeSpec(OddSpec("k"));
  EXPECT_FALSE(DecodeSpec("").ok());
  EXPECT_FALSE(DecodeSpec(good.substr(0, good.size() - 1)).ok());
  EXPECT_FALSE(DecodeSpec(good + "x").ok());
  EXPECT_FALSE(DecodeSpec("5:spec2").ok());
  EXPECT_FALSE(DecodeSpec("99999999999999999999:x").ok());
}

TEST(JournalTest, RoundTripsARecordWithSpecs) {
  TempDir dir;
  auto j = Journal::Open(dir.File("j.db"));
  ASSERT_TRUE(j.ok()) << j.status();
  absl::Time t = absl::FromUnixMillis(1'700'000'000'123);
  MigrationRecord r = Sample("a:1", Direction::kOut, MigrationState::kPrepared, t);
  ASSERT_TRUE((*j)->Insert(r).ok());
  auto got = (*j)->Get(Direction::kOut, "a:1");
  ASSERT_TRUE(got.ok() && got->has_value());
  const MigrationRecord& g = **got;
  EXPECT_EQ(g.peer, "site-b");
  EXPECT_EQ(g.state, MigrationState::kPrepared);
  EXPECT_EQ(g.round_id, "round-7");
  EXPECT_EQ(g.created, t);
  ASSERT_EQ(g.jobs.size(), 2u);
  EXPECT_EQ(g.jobs[1].key, "a:1/k1");
  EXPECT_EQ(g.jobs[1].source_id, "s1");
  EXPECT_EQ(g.jobs[1].spec, r.jobs[1].spec);
  // The same id in the other direction is another record.
  EXPECT_FALSE((*j)->Get(Direction::kIn, "a:1")->has_value());
  auto lean = (*j)->Get(Direction::kOut, "a:1", false);
  EXPECT_EQ((**lean).jobs[0].spec, scheduler::JobSpec{});
  EXPECT_EQ((**lean).jobs[0].key, "a:1/k0");
}

TEST(JournalTest, DuplicateInsertIsAlreadyExistsAndChangesNothing) {
  TempDir dir;
  auto j = *Journal::Open(dir.File("j.db"));
  MigrationRecord r = Sample("a:1", Direction::kIn, MigrationState::kPrepared, absl::UnixEpoch());
  ASSERT_TRUE(j->Insert(r).ok());
  r.peer = "other";
  r.jobs.pop_back();
  EXPECT_EQ(j->Insert(r).code(), absl::StatusCode::kAlreadyExists);
  auto got = **j->Get(Direction::kIn, "a:1");
  EXPECT_EQ(got.peer, "site-b");
  EXPECT_EQ(got.jobs.size(), 2u);
}

TEST(JournalTest, StateChangesAndSequencePersistAcrossReopen) {
  TempDir dir;
  {
    auto j = *Journal::Open(dir.File("j.db"));
    EXPECT_EQ(*j->NextSequence(), 1);
    EXPECT_EQ(*j->NextSequence(), 2);
    ASSERT_TRUE(j->Insert(Sample("a:1", Direction::kOut, MigrationState::kPrepared, absl::UnixEpoch())).ok());
    std::vector<std::string> ids = {"b-1", "b-2"};
    ASSERT_TRUE(
        j->Update(Direction::kOut, "a:1", MigrationState::kCommitted, "done", absl::FromUnixSeconds(5), &ids).ok());
    ASSERT_TRUE(j->Update(Direction::kOut, "a:1", MigrationState::kCommitted, "again", absl::FromUnixSeconds(6)).ok());
  }
  auto j = *Journal::Open(dir.File("j.db"));
  EXPECT_EQ(*j->NextSequence(), 3);
  auto got = **j->Get(Direction::kOut, "a:1");
  EXPECT_EQ(got.state, MigrationState::kCommitted);
  EXPECT_EQ(got.note, "done; again");
  EXPECT_EQ(got.updated, absl::FromUnixSeconds(6));
  EXPECT_EQ(got.jobs[0].dest_id, "b-1");
  EXPECT_EQ(got.jobs[1].dest_id, "b-2");
}

TEST(JournalTest, UsesWalMode) {
  TempDir dir;
  auto j = *Journal::Open(dir.File("j.db"));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.File("j.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST(JournalTest, BadUpdatesChangeNothing) {
  TempDir dir;
  auto j = *Journal::Open(dir.File("j.db"));
  EXPECT_EQ(j->Update(Direction::kOut, "nope", MigrationState::kAborted, "", absl::UnixEpoch()).code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(j->Insert(Sample("a:1", Direction::kOut, MigrationState::kPrepared, absl::UnixEpoch())).ok());
  std::vector<std::string> one = {"b-1"};
  EXPECT_EQ(j->Update(Direction::kOut, "a:1", MigrationState::kCommitted, "x", absl::UnixEpoch(), &one).code(),
            absl::StatusCode::kInvalidArgument);
  auto got = **j->Get(Direction::kOut, "a:1");
  EXPECT_EQ(got.state, MigrationState::kPrepared);
  EXPECT_EQ(got.note, "");
  EXPECT_EQ(got.jobs[0].dest_id, "");
}

TEST(JournalTest, ReplacingJobsIsAtomicWithTheStateChange) {
  TempDir dir;
  auto j = *Journal::Open(dir.File("j.db"));
  ASSERT_TRUE(j->Insert(Sample("a:1", Direction::kOut, MigrationState::kPreparing, absl::UnixEpoch())).ok());
  MigrationRecord smaller = Sample("a:1", Direction::kOut, MigrationState::kPrepared, absl::UnixEpoch());
  smaller.jobs.erase(smaller.jobs.begin());
  ASSERT_TRUE(
      j->UpdateWithJobs(Direction::kOut, "a:1", MigrationState::kPrepared, "", absl::UnixEpoch(), smaller.jobs).ok());
  auto got = **j->Get(Direction::kOut, "a:1");
  EXPECT_EQ(got.state, MigrationState::kPrepared);
  ASSERT_EQ(got.jobs.size(), 1u);
  EXPECT_EQ(got.jobs[0].key, "a:1/k1");
}

TEST(JournalTest, DestinationIdsKeepEveryByte) {
  TempDir dir;
  auto j = *Journal::Open(dir.File("j.db"));
  // Quotes, backslashes, control bytes and non-ASCII go through the
  // one-statement path; a NUL byte (which that path cannot carry) through
  // the row-by-row one.
  const std::vector<std::vector<std::string>> cases = {
      {"plain", "quote\"back\\slash", "ctl\x01\x1f\n\t", "\xff\xfe caf\xc3\xa9 ]}"},
      {"12", std::string("nul\0inside", 11), "", "34"},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    const std::string id = absl::StrCat("a:", c + 1);
    ASSERT_TRUE(j->Insert(Sample(id, Direction::kIn, MigrationState::kPrepared, absl::UnixEpoch(), 4)).ok());
    ASSERT_TRUE(j->Update(Direction::kIn, id, MigrationState::kCommitted, "", absl::UnixEpoch(), &cases[c]).ok());
    auto got = **j->Get(Direction::kIn, id);
    ASSERT_EQ(got.jobs.size(), 4u);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(got.jobs[i].dest_id, cases[c][i]) << c << "/" << i;
  }
}

TEST(JournalTest, PreparedJobsReplaceTheReservedOnesWhateverWasDropped) {
  TempDir dir;
  auto j = *Journal::Open(dir.File("j.db"));
  const MigrationRecord full = Sample("a:0", Direction::kOut, MigrationState::kPrepared, absl::UnixEpoch(), 4);
  // All kept; the last dropped; one in the middle dropped; none kept.
  const std::vector<std::vector<size_t>> kept = {{0, 1, 2, 3}, {0, 1, 2}, {0, 2, 3}, {}};
  for (size_t c = 0; c < kept.size(); ++c) {
    MigrationRecord reserved = full;
    reserved.id = absl::StrCat("a:", c + 1);
    reserved.state = MigrationState::kPreparing;
    for (JournalJob& jj : reserved.jobs) jj.spec = scheduler::JobSpec{};
    ASSERT_TRUE(j->Insert(reserved).ok());
    std::vector<JournalJob> jobs;
    for (size_t k : kept[c]) jobs.push_back(full.jobs[k]);
    if (!jobs.empty()) {
      jobs.front().spec.name = "changed";  // a spec is written, not kept
      jobs.front().dest_id = "d0";
    }
    ASSERT_TRUE(
        j->UpdateWithJobs(Direction::kOut, reserved.id, MigrationState::kPrepared, "", absl::UnixEpoch(), jobs).ok());
    auto got = **j->Get(Direction::kOut, reserved.id);
    ASSERT_EQ(got.jobs.size(), jobs.size()) << c;
    for (size_t i = 0; i < jobs.size(); ++i) {
      EXPECT_EQ(got.jobs[i].key, jobs[i].key) << c << "/" << i;
      EXPECT_EQ(got.jobs[i].source_id, jobs[i].source_id) << c << "/" << i;
      EXPECT_EQ(got.jobs[i].dest_id, jobs[i].dest_id) << c << "/" << i;
      EXPECT_EQ(got.jobs[i].spec, jobs[i].spec) << c << "/" << i;
    }
  }
}

TEST(JournalTest, ListsActiveRecentAndJobHistory) {
  TempDir dir;
  auto j = *Journal::Open(dir.File("j.db"));
  ASSERT_TRUE(j->Insert(Sample("a:1", Direction::kOut, MigrationState::kCommitted, absl::FromUnixSeconds(1))).ok());
  ASSERT_TRUE(j->Insert(Sample("a:2", Direction::kOut, MigrationState::kPrepared, absl::FromUnixSeconds(2))).ok());
  ASSERT_TRUE(j->Insert(Sample("b:9", Direction::kIn, MigrationState::kPrepared, absl::FromUnixSeconds(3))).ok());
  MigrationRecord shared = Sample("b:10", Direction::kIn, MigrationState::kAborted, absl::FromUnixSeconds(4));
  shared.jobs[0].key = "a:1/k0";
  ASSERT_TRUE(j->Insert(shared).ok());

  auto out = *j->ListActive(Direction::kOut);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, "a:2");
  EXPECT_EQ(out[0].jobs[0].spec.key, "a:2/k0");  // with specs
  auto in = *j->ListActive(Direction::kIn);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].id, "b:9");

  auto recent = *j->ListRecent(3);
  ASSERT_EQ(recent.size(), 3u);
  EXPECT_EQ(recent[0].id, "b:10");
  EXPECT_EQ(recent[2].id, "a:2");
  EXPECT_TRUE(j->ListRecent(0)->empty());

  auto hist = *j->HistoryOfJob("a:1/k0");
  ASSERT_EQ(hist.size(), 2u);
  EXPECT_EQ(hist[0].id, "a:1");
  EXPECT_EQ(hist[1].id, "b:10");
  EXPECT_TRUE(j->HistoryOfJob("nothing")->empty());

  EXPECT_EQ(*j->ActiveOutJobIds(), (std::set<std::string>{"s0", "s1"}));
}

TEST(JournalTest, SummarizesUnsettledRecordsTheirJobsAndTheOldest) {
  TempDir dir;
  auto j = *Journal::Open(dir.File("j.db"));
  UnsettledSummary none = *j->Unsettled(Direction::kOut);
  EXPECT_EQ(none.migrations, 0);
  EXPECT_EQ(none.jobs, 0);
  EXPECT_FALSE(none.oldest_created.has_value());
  ASSERT_TRUE(j->Insert(Sample("a:1", Direction::kOut, MigrationState::kCommitted, absl::FromUnixSeconds(1))).ok());
  ASSERT_TRUE(j->Insert(Sample("a:2", Direction::kOut, MigrationState::kPrepared, absl::FromUnixSeconds(2))).ok());
  ASSERT_TRUE(j->Insert(Sample("a:3", Direction::kOut, MigrationState::kAborting, absl::FromUnixSeconds(5))).ok());
  ASSERT_TRUE(j->Insert(Sample("a:4", Direction::kOut, MigrationState::kForced, absl::FromUnixSeconds(0))).ok());
  ASSERT_TRUE(j->Insert(Sample("b:9", Direction::kIn, MigrationState::kPrepared, absl::FromUnixSeconds(3))).ok());

  UnsettledSummary out = *j->Unsettled(Direction::kOut);
  EXPECT_EQ(out.migrations, 2);  // a:2, a:3
  EXPECT_EQ(out.jobs, 4);
  EXPECT_EQ(out.oldest_created, absl::FromUnixSeconds(2));
  UnsettledSummary in = *j->Unsettled(Direction::kIn);
  EXPECT_EQ(in.migrations, 1);
  EXPECT_EQ(in.jobs, 2);
  EXPECT_EQ(in.oldest_created, absl::FromUnixSeconds(3));

  ASSERT_TRUE(j->Update(Direction::kOut, "a:2", MigrationState::kCommitted, "", absl::FromUnixSeconds(6)).ok());
  out = *j->Unsettled(Direction::kOut);
  EXPECT_EQ(out.migrations, 1);
  EXPECT_EQ(out.oldest_created, absl::FromUnixSeconds(5));
}

TEST(JournalTest, CountsFailuresOfTheDatabaseButNotCallersMistakes) {
  TempDir dir;
  auto j = *Journal::Open(dir.File("j.db"));
  ASSERT_TRUE(j->Insert(Sample("a:1", Direction::kOut, MigrationState::kPrepared, absl::UnixEpoch())).ok());
  EXPECT_EQ(j->Insert(Sample("a:1", Direction::kOut, MigrationState::kPrepared, absl::UnixEpoch())).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(j->Update(Direction::kOut, "nope", MigrationState::kAborted, "", absl::UnixEpoch()).code(),
            absl::StatusCode::kNotFound);
  std::vector<std::string> one = {"b-1"};
  EXPECT_EQ(j->Update(Direction::kOut, "a:1", MigrationState::kCommitted, "", absl::UnixEpoch(), &one).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(j->errors(), 0);

  // Another writer damages the database: an unreadable state, then a
  // missing table.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.File("j.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE migrations SET state = 'BOGUS'", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(j->ListActive(Direction::kOut).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(j->errors(), 1);
  ASSERT_EQ(sqlite3_exec(db, "DROP TABLE migration_jobs", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(j->Insert(Sample("a:2", Direction::kOut, MigrationState::kPrepared, absl::UnixEpoch())).code(),
            absl::StatusCode::kInternal);
  EXPECT_FALSE(j->Unsettled(Direction::kOut).ok());
  EXPECT_EQ(j->errors(), 3);
}

TEST(JournalTest, RefusesANewerSchema) {
  TempDir dir;
  { ASSERT_TRUE(Journal::Open(dir.File("j.db")).ok()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.File("j.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = 2 WHERE name = 'schema_version'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(Journal::Open(dir.File("j.db")).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(JournalTest, OpenFailsClearlyForAMissingFolder) {
  auto j = Journal::Open("/nonexistent-hyperfed-dir/j.db");
  EXPECT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("/nonexistent-hyperfed-dir/j.db"), std::string::npos);
}

}  // namespace
}  // namespace hyperfed::migration
