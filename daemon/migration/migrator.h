#pragma once

// The exactly-once transfer protocol of docs/design.md §7, both sides.
//
// Invariants, under a crash of either side at any point and loss or
// duplication of any message: a job is never lost (always queued or running
// at some site) and never runnable at two sites at once.
//
// Source, per batch (one migration id per batch):
//   1. Journal OUT PREPARING: the chosen jobs' ids and keys, no specs. This
//      record is the reservation (a concurrent MigrateOut skips its jobs) and
//      tells a restart which holds are ours. (The PREPARING records of all
//      batches of one MigrateOut go in one transaction; the batches then run
//      side by side, each through steps 2 to 4 on its own.)
//   2. Hold every job (a job that can no longer be held, e.g. it just
//      started, is dropped from the batch), export the held ones' specs.
//   3. Journal OUT PREPARED with the final job list and specs, replacing the
//      PREPARING rows in one transaction.
//   0. (Before step 3) a job whose spec fails scheduler::CheckPortableSpec,
//      which every destination applies, is released and left out of the
//      batch (noted in the record): it would only fail there (issue 34).
//   4. Transfer. The reply's new ids -> release the jobs the destination
//      refused (refused_keys: they fail alone and stay here) -> cancel the
//      other held copies -> journal COMMITTED with the new ids ("" for a
//      refused job).
//
// Why journal before holding: holding first leaves, after a crash between
// hold and journal, held jobs nobody knows about; they would stay held for
// ever (an operator hold looks the same). Journaling the intent first means
// every hold we make is covered by a record.
//
// Why two states before the Transfer: the Transfer is sent only after
// PREPARED is durable, so a PREPARING record proves that no Transfer was
// ever sent. Recovery of PREPARING therefore needs no peer: it releases
// whichever of its jobs are held (some, all or none, depending on where the
// crash came) and journals ABORTED ("never sent"). This is what recovery does
// with a record "whose jobs are not all held": for PREPARING it is the
// normal case.
//
// A PREPARED record had all its jobs held when it was journaled. Held jobs
// do not start, so a job of a PREPARED record that is now pending or running
// was released by someone else (an operator, or a ForceRelease whose journal
// write the crash cut off). Such a record is never transferred again:
// recovery turns it into ABORTING, and sends Abort. Aborting through the
// destination is always safe: it either records the abort (nothing was
// submitted there, so the source's copies are the only ones and are released)
// or answers the ids it submitted (the source cancels its copies and
// commits; a copy that is already running cannot be cancelled and is noted
// in the record as a duplicate caused by the outside release).
// A job of a PREPARED record that has vanished (not listed) is a copy we
// cancelled after a reply the crash cut short: recovery retries the
// Transfer, the destination answers its stored result, and the source
// cancels the rest and commits.
//
// A PREPARED record is only retried, never released, until an answer:
// while the destination cannot be reached the jobs stay held, late but never
// lost and never twice. GiveUp journals ABORTING first (so the decision
// survives a crash) and then sends Abort; only an answered Abort releases
// holds. A Transfer answered with a final refusal (kInvalidArgument,
// kFailedPrecondition, kAborted, kAlreadyExists: IsFinalRefusal; the
// destination refuses the request itself) also leads to ABORTING, never to
// a release without an Abort answer.
// ForceRelease is the operator's override: it releases without an answer
// (journaled FORCED) and the caller must say that the destination may run
// the jobs too.
//
// Batches to the scheduler: holds, exports, cancels, releases and submits go
// to the adapter in chunks of at most `adapter_chunk` jobs through its batch
// calls (HoldMany, ExportMany, CancelMany, ReleaseMany, SubmitMany), one
// adapter transaction per chunk instead of one per job. Nothing above needs
// a chunk to be all-or-nothing: every step that is chunked is safe to repeat
// (a hold of a held job, a cancel of a cancelled one and a release of a
// pending one are no-ops; Submit is idempotent by tag), and every chunk is
// covered by the same journal record as a single call was, so a crash in the
// middle of a chunk leaves exactly what a crash between two single calls did.
//
// Destination:
//   1. Journal IN PREPARED with the specs (so the record can be completed
//      without the source), unless the id is known: COMMITTED -> answer the
//      stored ids; ABORTED -> refuse (kAborted) for ever; PREPARED -> finish.
//   (Before 1, for a new id: each spec through the adapter's CheckSpec;
//   when every one fails the Transfer is refused, kInvalidArgument, and
//   nothing is journaled.)
//   2. Submit every job with the tag "hyperfed:<migration id>:<index>".
//      Submit is idempotent by tag, so finishing a half-done record submits
//      only what is missing. A job the scheduler refuses for good
//      (kInvalidArgument) fails alone: its id is "" (issue 34, finding 5).
//      When it refuses every job, RefuseIn (below).
//   3. Journal COMMITTED with the new ids, answer them: new_ids for the
//      jobs taken, refused_keys for the others (transport.h).
// Abort: unknown id -> journal it ABORTED (a late Transfer is then refused;
// at most kMaxEarlyAbortsPerSource such records per source, the older ones
// replaced by the source's floor, below which every unknown id is refused);
// PREPARED with nothing submitted (FindByTag finds no job) -> ABORTED; any
// job submitted -> finish the record and answer the ids (the source commits);
// COMMITTED -> answer the ids. Recover finishes IN PREPARED records from the
// stored specs (FindByTag/Submit by tag).
//
// A destination crash can thus leave submitted jobs runnable while the
// source still holds its copies: held is not runnable, so the job is
// runnable at one site only until the source commits.
//
// Known limit: a destination whose scheduler refuses a job for good (a
// permanent Submit error) keeps its IN PREPARED record and answers errors;
// the source keeps the jobs held and retries. Held, not lost: the operator
// sees the record in the migration list and can ForceRelease after removing
// what the destination did submit.
//
// Concurrency: each migration is driven by one thread at a time (an
// in-memory busy set); the source's choice of jobs and its PREPARING write
// happen under one lock, so two MigrateOut calls never pick the same job.
// No lock is held across a peer call, so two sites migrating to each other
// at once do not deadlock.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/balance/choice.h"
#include "daemon/common/env.h"
#include "daemon/common/executor.h"
#include "daemon/migration/journal.h"
#include "daemon/migration/transport.h"
#include "daemon/scheduler/adapter.h"

namespace hyperfed::migration {

// The outcome of one batch of MigrateOut.
struct OutResult {
  std::string migration_id;  // "" for the summary of a call that found no job
  int64_t moved = 0;         // jobs committed at the destination
  int64_t in_flight = 0;     // jobs left held in an unsettled record (settled by Recover)
  // Jobs asked for but not sent: not present at round start, not holdable
  // any more, or not attempted after an earlier batch failed. Reported on the
  // last result of a call.
  int64_t shortfall = 0;
  std::vector<std::string> job_keys;
  absl::Status status;  // OK when committed; else why not
};

// Jobs per adapter batch call (see "Batches to the scheduler" above): a
// whole batch of the default max_batch. One transaction of that size is
// still short (sim: a few ms), so a local submit waiting on the scheduler's
// lock is not held up for long, and each chunk costs each site one commit
// (one fsync) instead of four (docs/benchmarks.md, "Migration between two
// sim sites").
inline constexpr int64_t kDefaultAdapterChunk = 1000;

// Batches of one MigrateOut call in flight at once (with an executor): the
// source prepares one while the destination submits another. Well below
// security.max_calls_per_peer (16), which also covers heartbeats and round
// messages.
inline constexpr int64_t kBatchesInFlight = 4;

// Limits for requests from peers (docs/design.md §8: bounded batches).
// Why the migrator would not move `job`, in words ("" when it may move;
// docs/design.md §3), and the order MigrateOut takes jobs in when it is
// not given them (JobMover::MoveJobs). A round's jobs are picked by Choose
// under balancer.job_choice (default gain: the largest estimated gain
// first), and MigrateOut is given them.
std::string WhyNotMovable(const scheduler::Job& job);
inline constexpr char kMoveOrder[] = "the most recently queued first";

inline constexpr size_t kMaxIdLength = 200;

// The most records a destination keeps, per source, of ids that source
// aborted before any Transfer of them arrived (HandleAbort of an unknown
// id; issue 34, finding 6). Older ones are dropped and the source's floor
// rises instead (Journal::RecordEarlyAbort).
inline constexpr int64_t kMaxEarlyAbortsPerSource = 1024;

class Migrator {
 public:
  // Nothing is owned; everything must outlive the Migrator. `max_batch` is
  // the most jobs per Transfer call, `adapter_chunk` the most jobs per
  // adapter batch call (values below 1 count as 1).
  Migrator(std::string self_site, scheduler::SchedulerAdapter* adapter, Journal* journal, PeerTransport* transport,
           const Env* clock, int64_t max_batch, int64_t adapter_chunk = kDefaultAdapterChunk);

  // Source side: moves `count` migratable jobs (pending, not held, not
  // running, not pinned, not in another migration), the most recently queued
  // first, to `dest_site`, in batches of at most max_batch jobs, one
  // migration id each. Every batch is journaled PREPARING in one
  // transaction before any job is held; then up to kBatchesInFlight batches
  // run at once (with an executor), each through the steps above on its
  // own. After a batch that does not commit no further batch starts: a
  // batch whose Transfer failed stays PREPARED (held, retried by Recover),
  // the ones not started are abandoned (never sent), the ones already
  // started finish. An error status only for bad arguments or a local failure
  // before anything was held; otherwise per-batch results (the last carries
  // the shortfall).
  // With `only`, exactly those jobs (in that order), those no longer
  // movable counted as shortfall; count is then only->size().
  absl::StatusOr<std::vector<OutResult>> MigrateOut(const std::string& dest_site, int64_t count,
                                                    const std::string& round_id,
                                                    const std::vector<std::string>* only = nullptr);

  // The jobs a round sends to each destination (docs/algorithms.md, "Jobs
  // that gain"): balance::ChooseJobs over this site's Pending() jobs, each
  // job's wait here from its scheduler's estimate (or, when the scheduler
  // gives none, from this site's own start profile `own`), minus jobs in a
  // migration; a job that arrived by a move within `hysteresis` in another
  // round (or by a placement) goes only if it starts at least
  // `recent_margin` sooner there (gain; newest leaves it). When draining,
  // every job that fits goes (gain ordering only). Ids per destination, at
  // most its count.
  struct Destination {
    std::string site;
    int64_t count = 0;
    balance::StartProfile profile;
  };
  struct ChoiceRules {
    balance::JobChoice choice = balance::JobChoice::kGain;
    absl::Duration hysteresis = absl::ZeroDuration();
    absl::Duration recent_margin = absl::InfiniteDuration();  // infinite: a recent job never moves
    bool draining = false;
  };
  absl::StatusOr<std::vector<std::vector<std::string>>> Choose(const std::vector<Destination>& dests,
                                                               const ChoiceRules& rules, const std::string& round_id,
                                                               const balance::StartProfile& own);

  // Destination side, for the daemon's Transfer and Abort handlers. A bad
  // request gets kInvalidArgument and changes nothing; an aborted id gets
  // kAborted; repeated calls answer the stored result. A migration id is
  // bound to its source: it must be "<source_site>:<n>" (the ids MigrateOut
  // makes, n >= 1), so one site can neither claim nor abort another's. A
  // new migration must pass the admission check (below) before anything
  // is journaled. A job this site refuses (CheckSpec, or its scheduler at
  // submit time: kInvalidArgument, final) fails alone and is named in
  // refused_keys; when every job is refused at submit time, the record is
  // ABORTED and the answer is kFailedPrecondition, so the source aborts
  // and keeps its jobs.
  // Every job of the request gets JobSpec::source_site = req.source_site
  // (the authenticated caller), whatever the request's specs said.
  absl::StatusOr<TransferReply> HandleTransfer(const TransferRequest& req);
  absl::StatusOr<AbortReply> HandleAbort(const std::string& migration_id, const std::string& source_site);

  // At start-up and periodically: drives every unfinished record of both
  // directions one step further (see the top of this file). Records busy in
  // another thread are skipped. OK when every record it tried is settled;
  // otherwise the first error met (kUnavailable while a peer cannot be
  // reached); the other records are still tried.
  absl::Status Recover();

  // Gives up on an outgoing migration: journals ABORTING and sends Abort.
  // OK once settled (ABORTED, or COMMITTED when the destination had
  // submitted); kUnavailable when the Abort could not be delivered (Recover
  // keeps sending it); kFailedPrecondition for a finished migration;
  // kNotFound for an unknown id.
  absl::Status GiveUp(const std::string& migration_id);

  // Operator override: releases the held jobs of an unfinished outgoing
  // migration without an answer from the destination, journaled FORCED. The
  // caller must warn that the destination may have submitted them too.
  // kUnavailable while a Transfer for it is in flight.
  absl::Status ForceRelease(const std::string& migration_id);

  // Recent migrations of both directions, newest first (specs not loaded).
  absl::StatusOr<std::vector<MigrationRecord>> List(int limit) const;
  // The jobs this site committed to send in `round_id`, per destination
  // (from the journal: what a restarted site reports of a round it was in).
  absl::StatusOr<std::map<std::string, int64_t>> CommittedOut(const std::string& round_id) const;
  // Every migration that carried `job_key`, oldest first.
  absl::StatusOr<std::vector<MigrationRecord>> HistoryOfJob(const std::string& job_key) const;

  // The destination's tag for job `index` of `migration_id`.
  static std::string Tag(const std::string& migration_id, size_t index);
  // The PREPARING records of a move of `jobs` (each its key and source id)
  // from `self` to `dest`: batches of at most `max_batch`, numbered from
  // `first_seq` (ids "<self>:<seq>"), in order.
  static std::vector<MigrationRecord> OutBatches(const std::string& self, const std::string& dest,
                                                 const std::string& round_id, int64_t first_seq, int64_t max_batch,
                                                 std::vector<JournalJob> jobs, absl::Time now);
  // The PREPARED record a destination journals for `req`, as it arrives.
  static MigrationRecord InRecord(const TransferRequest& req, absl::Time now);

  // Called for a Transfer that starts a migration here (not for repeats of
  // one already journaled); a non-OK answer refuses it unchanged. The
  // daemon admits only what the round's plan sends here (docs/design.md
  // §6.8). Set before serving; none by default.
  using Admission = std::function<absl::Status(const TransferRequest&)>;
  void SetAdmission(Admission admission) { admission_ = std::move(admission); }

  // The executor on which MigrateOut runs the batches of one call side by
  // side (at most kBatchesInFlight at once; docs/design.md §7). Without
  // one (the default) they run one after another. Set before serving.
  void SetExecutor(Executor* executor) { executor_ = executor; }

  // What a Transfer may weigh: every batch's specs together, each as
  // `spec_bytes` measures it as sent, stay within `max_bytes` (the message
  // limit less room for the rest of the message). A batch is cut after its
  // jobs are exported, when their scripts are known: the jobs past the
  // limit are released before the batch is sent (as jobs that will not
  // move are) and the same call sends them in batches of their own
  // (docs/design.md §7). Without it (the default) batches are cut by count
  // only. Set before serving.
  using SpecBytes = std::function<size_t(const scheduler::JobSpec&)>;
  void SetMessageBudget(size_t max_bytes, SpecBytes spec_bytes) {
    budget_bytes_ = max_bytes;
    spec_bytes_ = std::move(spec_bytes);
  }

 private:
  // Drives an outgoing record (already marked busy by the caller) as far as
  // it can go. `known`: the record as this call has just journaled it, so
  // the first step does not read it back; *committed (if given) is set when
  // this call's Transfer committed it.
  // *refused (if given): how many of its jobs the destination refused (they
  // stay here, released).
  absl::Status DriveOut(const std::string& id, const MigrationRecord* known = nullptr, bool* committed = nullptr,
                        int64_t* refused = nullptr);
  // The keys of the record's jobs that are pending or running again (its
  // jobs were all held when it was journaled PREPARED).
  absl::StatusOr<std::vector<std::string>> UnheldKeys(const MigrationRecord& r);
  absl::Status SendTransfer(const MigrationRecord& r, int64_t* refused = nullptr);
  absl::Status SendAbort(const MigrationRecord& r);
  absl::Status CommitOut(const MigrationRecord& r, const std::vector<std::string>& new_ids, const std::string& note);
  absl::Status AbandonPreparing(const MigrationRecord& r, const std::string& note);
  // Releases every job of the record (unknown, running and done ones are
  // left alone), in chunks.
  absl::Status ReleaseAll(const MigrationRecord& r);
  // Steps 2 and 3 of a PREPARING record: holds, exports, journals
  // PREPARED (then *prepared is that record) or ABORTED (no job could be
  // held).
  // *over gets the source ids of the jobs cut off by the message budget
  // (released, counted in *dropped too).
  absl::Status PrepareBatch(MigrationRecord b, int64_t* dropped, std::optional<MigrationRecord>* prepared,
                            std::vector<std::string>* over);
  // MigrateOut's movable jobs in the order it takes them: `only` (those
  // still movable), else the whole queue in kMoveOrder. Caller holds
  // select_mu_.
  absl::StatusOr<std::vector<scheduler::Job>> Candidates(const std::vector<std::string>* only);
  // One batch of MigrateOut, journaled PREPARING and marked busy by the
  // caller (RunBatch clears the mark): prepares and drives it, or, when not
  // `attempt`, abandons it. Adds the jobs that did not move to *shortfall.
  OutResult RunBatch(MigrationRecord b, bool attempt, int64_t* shortfall, std::vector<std::string>* over);
  // Destination: submits what is missing of an IN PREPARED record, journals
  // COMMITTED and returns the new ids, one per job, "" for a job the
  // scheduler refused for good (it fails alone); when it refused every job,
  // RefuseIn. Caller holds the record busy. Takes the record: its specs go
  // to the scheduler without another copy.
  absl::StatusOr<std::vector<std::string>> CompleteIn(MigrationRecord r);
  // Destination: the scheduler refused a job of an IN PREPARED record for
  // good. Cancels what was submitted of it and journals ABORTED
  // (then kFailedPrecondition); kUnavailable if a submitted job could not
  // be cancelled (it may run: the record stays PREPARED for an operator).
  absl::Status RefuseIn(const MigrationRecord& r, const absl::Status& why);

  absl::Status Validate(const TransferRequest& req) const;

  bool TryAcquire(const std::string& busy_key);
  void Acquire(const std::string& busy_key);
  void ReleaseBusy(const std::string& busy_key);

  const std::string self_site_;
  scheduler::SchedulerAdapter* const adapter_;
  Journal* const journal_;
  PeerTransport* const transport_;
  const Env* const clock_;
  const int64_t max_batch_;
  const int64_t adapter_chunk_;
  Admission admission_;
  Executor* executor_ = nullptr;
  size_t budget_bytes_ = 0;  // 0: no budget
  SpecBytes spec_bytes_;

  // Serializes the source's choice of jobs with its PREPARING writes.
  std::mutex select_mu_;
  // Records being driven: "out:<id>" / "in:<id>".
  std::mutex busy_mu_;
  std::condition_variable busy_cv_;
  std::set<std::string> busy_;
};

}  // namespace hyperfed::migration
