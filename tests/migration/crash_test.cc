// Crash tests for the exactly-once protocol (docs/design.md §7): for every
// crash point of daemon/migration/crash_point.h, a child process runs a
// migration and dies by SIGKILL at that point; the test then reopens both
// sites' state, runs Recover on both until nothing is left to do, and checks
// the invariants: every job key is live (not cancelled) exactly once across
// the sites, so never lost and never runnable at two sites, and nothing is
// left held.
//
// Each site's scheduler is a file-backed FakeAdapter (it stands in for the
// `sim` adapter, which lands separately) and its journal a real SQLite file.
// The destination runs in its own process for every call (ForkTransport), so
// a destination crash kills only the destination, as between two machines;
// a source crash kills the source.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "absl/strings/numbers.h"
#include "daemon/common/env.h"
#include "daemon/migration/crash_point.h"
#include "daemon/migration/migrator.h"
#include "daemon/migration/spec_codec.h"
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

// Jobs per adapter batch call: 2, so that a batch of 3 jobs is two chunks
// and the "_one" points (which fire per chunk) are reached twice in a batch,
// with a crash between the chunks of one batch.
constexpr int64_t kChunk = 2;

std::string JobsFile(const std::string& dir, const std::string& site) { return dir + "/" + site + ".jobs"; }
std::string JournalFile(const std::string& dir, const std::string& site) { return dir + "/" + site + ".db"; }

// Runs every call in a fresh child process that opens the destination's
// state, handles the call and writes the answer to a pipe. A destination
// killed mid-call is, to the caller, an unanswered call.
class ForkTransport : public PeerTransport {
 public:
  explicit ForkTransport(std::string dir, std::string refuse = "") : dir_(std::move(dir)), refuse_(std::move(refuse)) {}
  void Queue(Fault f) { faults_.push_back(f); }
  bool dest_killed() const { return dest_killed_; }

  absl::StatusOr<TransferReply> Transfer(const std::string& dest, const TransferRequest& req) override {
    absl::StatusOr<std::string> out = Call(dest, [&](Migrator& m) {
      absl::StatusOr<TransferReply> r = m.HandleTransfer(req);
      return r.ok() ? Encode(r.status(), false, r->new_ids, r->refused_keys) : Encode(r.status(), false, {}, {});
    });
    if (!out.ok()) return out.status();
    bool aborted;
    TransferReply reply;
    absl::Status s = Decode(*out, &aborted, &reply.new_ids, &reply.refused_keys);
    if (!s.ok()) return s;
    return reply;
  }

  absl::StatusOr<AbortReply> Abort(const std::string& dest, const std::string& id, const std::string& source) override {
    absl::StatusOr<std::string> out = Call(dest, [&](Migrator& m) {
      absl::StatusOr<AbortReply> r = m.HandleAbort(id, source);
      return r.ok() ? Encode(r.status(), r->aborted, r->new_ids, r->refused_keys) : Encode(r.status(), false, {}, {});
    });
    if (!out.ok()) return out.status();
    AbortReply reply;
    absl::Status s = Decode(*out, &reply.aborted, &reply.new_ids, &reply.refused_keys);
    if (!s.ok()) return s;
    return reply;
  }

 private:
  static std::string Encode(const absl::Status& s, bool aborted, const std::vector<std::string>& ids,
                            const std::vector<std::string>& refused) {
    std::string out;
    AppendField(&out, absl::StrCat(static_cast<int>(s.code())));
    AppendField(&out, std::string(s.message()));
    AppendField(&out, aborted ? "1" : "0");
    AppendField(&out, absl::StrCat(ids.size()));
    for (const std::string& id : ids) AppendField(&out, id);
    for (const std::string& key : refused) AppendField(&out, key);
    return out;
  }
  static absl::Status Decode(std::string_view in, bool* aborted, std::vector<std::string>* ids,
                             std::vector<std::string>* refused) {
    std::string code, msg, ab, n_s, id;
    int c = 0;
    size_t n = 0;
    if (!ReadField(&in, &code) || !ReadField(&in, &msg) || !ReadField(&in, &ab) || !absl::SimpleAtoi(code, &c)) {
      return absl::InternalError("fork transport: bad answer");
    }
    if (c != 0) return absl::Status(static_cast<absl::StatusCode>(c), msg);
    *aborted = ab == "1";
    if (!ReadField(&in, &n_s) || !absl::SimpleAtoi(n_s, &n)) return absl::InternalError("fork transport: bad answer");
    while (!in.empty()) {
      if (!ReadField(&in, &id)) return absl::InternalError("fork transport: bad answer");
      (ids->size() < n ? ids : refused)->push_back(id);
    }
    return absl::OkStatus();
  }

  template <typename F>
  absl::StatusOr<std::string> Call(const std::string& dest, F handle) {
    Fault f = Fault::kNone;
    if (!faults_.empty()) {
      f = faults_.front();
      faults_.erase(faults_.begin());
    }
    if (f == Fault::kDropRequest) return absl::UnavailableError("fork transport: request lost");
    int fds[2];
    if (pipe(fds) != 0) return absl::InternalError("pipe");
    pid_t pid = fork();
    if (pid < 0) return absl::InternalError("fork");
    if (pid == 0) {
      close(fds[0]);
      FakeAdapter adapter(dest, JobsFile(dir_, dest));
      if (!refuse_.empty()) adapter.RefuseSpecsNamed(refuse_);
      auto journal = Journal::Open(JournalFile(dir_, dest));
      if (!journal.ok()) _exit(21);
      FakeEnv clock;
      Migrator m(dest, &adapter, journal->get(), nullptr, &clock, 100, kChunk);
      std::string out = handle(m);
      size_t off = 0;
      while (off < out.size()) {
        ssize_t n = write(fds[1], out.data() + off, out.size() - off);
        if (n <= 0) _exit(22);
        off += static_cast<size_t>(n);
      }
      _exit(0);
    }
    close(fds[1]);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
      dest_killed_ = true;
      return absl::UnavailableError("fork transport: destination died");
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return absl::InternalError("fork transport: child failed");
    if (f == Fault::kDropReply) return absl::DeadlineExceededError("fork transport: reply lost");
    return out;
  }

  std::string dir_;
  std::string refuse_;  // the job name the destination's scheduler refuses
  std::vector<Fault> faults_;
  bool dest_killed_ = false;
};

enum class Scenario {
  kPlain,              // MigrateOut of 4 jobs in batches of 3 and 1
  kRecoverAfterLoss,   // the Transfer is lost; Recover retries it
  kLostReplyGiveUp,    // delivered, reply lost; GiveUp: Abort answers the ids
  kUnreachableGiveUp,  // never delivered; GiveUp: Abort is recorded
  kRefusedAlone,       // as kPlain, and B refuses a3 (of the first batch): it fails alone
};

// The job B's scheduler refuses in kRefusedAlone ("" in the others).
std::string Refused(Scenario sc) { return sc == Scenario::kRefusedAlone ? "a3" : ""; }

constexpr int kChildDestKilled = 10;

// The source process. Never returns.
[[noreturn]] void RunSource(const std::string& dir, Scenario sc, const std::string& point) {
  setenv(kCrashEnvVar, point.c_str(), 1);
  FakeAdapter adapter("A", JobsFile(dir, "A"));
  auto journal = Journal::Open(JournalFile(dir, "A"));
  if (!journal.ok()) _exit(31);
  FakeEnv clock;
  ForkTransport transport(dir, Refused(sc));
  Migrator m("A", &adapter, journal->get(), &transport, &clock, 3, kChunk);
  switch (sc) {
    case Scenario::kPlain:
    case Scenario::kRefusedAlone:
      (void)m.MigrateOut("B", 4, "r1");
      break;
    case Scenario::kRecoverAfterLoss:
      transport.Queue(Fault::kDropRequest);
      (void)m.MigrateOut("B", 2, "r1");
      (void)m.Recover();
      break;
    case Scenario::kLostReplyGiveUp:
    case Scenario::kUnreachableGiveUp: {
      transport.Queue(sc == Scenario::kLostReplyGiveUp ? Fault::kDropReply : Fault::kDropRequest);
      auto res = m.MigrateOut("B", 2, "r1");
      if (res.ok() && !res->empty()) (void)m.GiveUp((*res)[0].migration_id);
      break;
    }
  }
  _exit(transport.dest_killed() ? kChildDestKilled : 0);
}

const std::vector<std::string> kKeys = {"a0", "a1", "a2", "a3", "a4", "b0", "b1"};

void MakeSites(const std::string& dir) {
  FakeAdapter a("A", JobsFile(dir, "A"));
  FakeAdapter b("B", JobsFile(dir, "B"));
  for (const std::string& k : kKeys) {
    scheduler::JobSpec s;
    s.key = k;
    s.name = k;
    s.script = "#!/bin/sh\necho " + k + "\n";
    (k[0] == 'a' ? a : b).Add(s);
  }
}

// Runs the scenario with a crash at `point`; returns how it ended:
// "source" (the source died), "dest" (a destination call died) or "none".
std::string CrashAndRecover(Scenario sc, const std::string& point, int order) {
  // tmpfs when there is one: fsync costs nothing there, and a SIGKILL does
  // not lose what the kernel already has.
  TempDir dir(access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "");
  EXPECT_FALSE(dir.path().empty());
  MakeSites(dir.path());
  pid_t pid = fork();
  if (pid == 0) RunSource(dir.path(), sc, point);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  std::string how;
  if (WIFSIGNALED(status)) {
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
    how = "source";
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == kChildDestKilled) {
    how = "dest";
  } else {
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    how = "none";
  }

  // Restart both sites (no crash points now) with a working network.
  FakeEnv clock;
  TestTransport transport;
  FakeAdapter aa("A", JobsFile(dir.path(), "A")), ba("B", JobsFile(dir.path(), "B"));
  if (!Refused(sc).empty()) ba.RefuseSpecsNamed(Refused(sc));
  auto aj = Journal::Open(JournalFile(dir.path(), "A"));
  auto bj = Journal::Open(JournalFile(dir.path(), "B"));
  EXPECT_TRUE(aj.ok() && bj.ok());
  if (!aj.ok() || !bj.ok()) return how;
  Migrator am("A", &aa, aj->get(), &transport, &clock, 3, kChunk);
  Migrator bm("B", &ba, bj->get(), &transport, &clock, 3, kChunk);
  transport.Connect("A", &am);
  transport.Connect("B", &bm);
  bool settled = false;
  for (int round = 0; round < 4 && !settled; ++round) {
    absl::Status s1 = (order == 0 ? am : bm).Recover();
    absl::Status s2 = (order == 0 ? bm : am).Recover();
    settled = s1.ok() && s2.ok() && (*aj)->ListActive(Direction::kOut)->empty() &&
              (*aj)->ListActive(Direction::kIn)->empty() && (*bj)->ListActive(Direction::kOut)->empty() &&
              (*bj)->ListActive(Direction::kIn)->empty();
  }
  EXPECT_TRUE(settled) << "unfinished migrations after recovery";

  std::map<std::string, int> live;
  for (auto* ad : {&aa, &ba}) {
    for (const scheduler::Job& j : ad->AllJobs()) {
      if (j.state == JobState::kCancelled) continue;
      ++live[j.spec.key];
      EXPECT_NE(j.state, JobState::kHeld) << j.spec.key << " left held at " << j.id;
    }
  }
  for (const std::string& k : kKeys) EXPECT_EQ(live[k], 1) << "job " << k;
  if (!Refused(sc).empty()) {
    bool home = false;
    for (const scheduler::Job& j : aa.AllJobs())
      home = home || (j.spec.key == Refused(sc) && j.state == JobState::kPending);
    EXPECT_TRUE(home) << Refused(sc) << ", refused by B, is not pending at A";
  }
  EXPECT_EQ(live.size(), kKeys.size());
  return how;
}

void RunAll(Scenario sc, const std::set<std::string>& must_hit) {
  std::vector<std::string> points;
  for (std::string_view p : kAllCrashPoints) points.emplace_back(p);
  // out_after_intent comes once per call: one transaction journals every
  // batch PREPARING.
  for (const char* p : {"out_after_hold_one:2", "out_after_cancel_one:2", "in_after_submit_one:2"}) {
    points.emplace_back(p);
  }
  std::set<std::string> hit;
  int order = 0;
  for (const std::string& p : points) {
    SCOPED_TRACE("crash point " + p);
    std::string how = CrashAndRecover(sc, p, order ^= 1);
    if (how != "none") hit.insert(p);
  }
  for (const std::string& p : must_hit) EXPECT_TRUE(hit.count(p)) << p << " was never reached";
}

TEST(MigrationCrashTest, PlainMigrationSurvivesACrashAtEveryPoint) {
  RunAll(Scenario::kPlain, {"out_after_intent", "out_after_hold_one", "out_after_hold_one:2", "out_after_hold",
                            "out_after_prepared", "out_after_reply", "out_after_cancel_one", "out_after_cancel_one:2",
                            "out_after_cancel", "out_after_committed", "in_after_prepared", "in_after_submit_one",
                            "in_after_submit_one:2", "in_after_submit", "in_after_committed"});
}

TEST(MigrationCrashTest, RetryByRecoverSurvivesACrashAtEveryPoint) {
  RunAll(Scenario::kRecoverAfterLoss,
         {"out_after_prepared", "out_after_reply", "out_after_cancel_one", "out_after_cancel", "out_after_committed",
          "in_after_prepared", "in_after_submit_one", "in_after_submit", "in_after_committed"});
}

TEST(MigrationCrashTest, GiveUpAfterLostReplySurvivesACrashAtEveryPoint) {
  RunAll(Scenario::kLostReplyGiveUp,
         {"out_after_aborting", "out_after_abort_reply", "out_after_cancel_one", "out_after_cancel",
          "out_after_committed", "in_after_prepared", "in_after_submit", "in_after_committed"});
}

// Issue 34, finding 5: a job the destination refuses fails alone; a crash
// anywhere leaves it at the source, released, and the rest moved once.
TEST(MigrationCrashTest, ARefusedJobFailsAloneThroughACrashAtEveryPoint) {
  RunAll(Scenario::kRefusedAlone,
         {"out_after_prepared", "out_after_reply", "out_after_release_refused", "out_after_cancel_one",
          "out_after_cancel", "out_after_committed", "in_after_prepared", "in_after_submit", "in_after_committed"});
}

TEST(MigrationCrashTest, GiveUpWhenUnreachableSurvivesACrashAtEveryPoint) {
  RunAll(Scenario::kUnreachableGiveUp, {"out_after_aborting", "out_after_abort_reply", "out_after_release",
                                        "out_after_aborted", "in_after_abort_recorded"});
}

TEST(CrashPointTest, KillsOnTheNthVisitOfTheNamedPointOnly) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv(kCrashEnvVar, "x:2", 1);
    CrashPoint("y");
    CrashPoint("x");
    CrashPoint("y");
    CrashPoint("x");
    _exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  pid = fork();
  if (pid == 0) {
    setenv(kCrashEnvVar, "x", 1);
    CrashPoint("xy");
    CrashPoint("y");
    _exit(7);
  }
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
}

}  // namespace
}  // namespace hyperfed::migration
