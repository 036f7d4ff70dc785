#include "daemon/migration/migrator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/migration/crash_point.h"

namespace hyperfed::migration {
namespace {

using scheduler::Job;
using scheduler::JobState;

// Marks a record busy for the scope.
class BusyGuard {
 public:
  BusyGuard(std::function<void()> release) : release_(std::move(release)) {}
  ~BusyGuard() { release_(); }

 private:
  std::function<void()> release_;
};

std::string OutKey(const std::string& id) { return "out:" + id; }
std::string InKey(const std::string& id) { return "in:" + id; }

// Answers from the destination that are about the request itself, not the
// path to it: retrying the same Transfer cannot succeed, so the source gives
// up through Abort (which is always safe).
bool IsFinalRefusal(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kAlreadyExists:
      return true;
    default:
      return false;
  }
}

absl::Status Annotate(const absl::Status& s, const std::string& what) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

bool PrintableId(const std::string& s) {
  if (s.empty() || s.size() > kMaxIdLength) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 127; });
}

// The n of a migration id "<source>:<n>", the only form MigrateOut makes
// (n from the journal's sequence, >= 1); 0 when `id` is not one of
// `source`'s. Binding ids to their source and numbering them lets a
// destination bound what it remembers of aborts (issue 34, finding 6).
int64_t SequenceOf(const std::string& id, const std::string& source) {
  if (!absl::StartsWith(id, source + ":")) return 0;
  const std::string n = id.substr(source.size() + 1);
  int64_t v = 0;
  if (n.empty() || n.size() > 18 || !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      n[0] == '0' || !absl::SimpleAtoi(n, &v))
    return 0;
  return v;
}

// The reply to a source for a record's jobs and their destination ids
// (one per job, "" for a job refused here): TransferReply's layout.
template <typename Reply>
void FillReply(const std::vector<JournalJob>& jobs, const std::vector<std::string>& dest_ids, Reply* reply) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (i < dest_ids.size() && !dest_ids[i].empty())
      reply->new_ids.push_back(dest_ids[i]);
    else
      reply->refused_keys.push_back(jobs[i].key);
  }
}
std::vector<std::string> DestIds(const std::vector<JournalJob>& jobs) {
  std::vector<std::string> out;
  out.reserve(jobs.size());
  for (const JournalJob& j : jobs) out.push_back(j.dest_id);
  return out;
}

// The destination id of every job of `r` from a reply's new_ids and
// refused_keys ("" for a refused job), or Internal when the reply does not
// fit the record (not a final answer: the source keeps holding and asks
// again).
absl::StatusOr<std::vector<std::string>> ExpandReply(const MigrationRecord& r, const std::vector<std::string>& new_ids,
                                                     const std::vector<std::string>& refused_keys,
                                                     const std::string& what) {
  auto bad = [&](const std::string& why) {
    return absl::InternalError(absl::StrCat(what, " ", r.id, ": ", r.peer, " answered ", new_ids.size(), " ids and ",
                                            refused_keys.size(), " refused jobs for ", r.jobs.size(), " jobs: ", why));
  };
  if (new_ids.size() + refused_keys.size() != r.jobs.size()) return bad("the counts do not add up");
  if (new_ids.empty()) return bad("a destination refusing every job aborts the migration instead");
  std::set<std::string> refused(refused_keys.begin(), refused_keys.end());
  if (refused.size() != refused_keys.size()) return bad("a key refused twice");
  std::vector<std::string> out;
  out.reserve(r.jobs.size());
  size_t next = 0;
  for (const JournalJob& j : r.jobs) {
    if (refused.erase(j.key) > 0) {
      out.emplace_back();
    } else {
      if (next >= new_ids.size() || new_ids[next].empty()) return bad("an id missing or empty");
      out.push_back(new_ids[next++]);
    }
  }
  if (!refused.empty() || next != new_ids.size()) return bad("a refused key not of this migration");
  return out;
}

// Calls fn(begin, end) for each chunk [begin, end) of at most `chunk` of n items.
template <typename F>
void ForChunks(size_t n, int64_t chunk, F fn) {
  const size_t step = static_cast<size_t>(chunk);
  for (size_t begin = 0; begin < n; begin += step) fn(begin, std::min(n, begin + step));
}

std::vector<std::string> SourceIds(const std::vector<JournalJob>& jobs, size_t begin, size_t end) {
  std::vector<std::string> ids;
  ids.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) ids.push_back(jobs[i].source_id);
  return ids;
}

std::vector<std::string> Keys(const MigrationRecord& r) {
  std::vector<std::string> keys;
  keys.reserve(r.jobs.size());
  for (const JournalJob& j : r.jobs) keys.push_back(j.key);
  return keys;
}

}  // namespace

std::string WhyNotMovable(const Job& j) {
  if (j.pinned) return "it is pinned: it never moves";
  switch (j.state) {
    case JobState::kPending:
      return "";
    case JobState::kRunning:
      return "it is running: running jobs never move";
    case JobState::kHeld:
      return "it is held: held jobs do not move (a migration in flight or an operator hold)";
    default:
      return "it is no longer queued";
  }
}

Migrator::Migrator(std::string self_site, scheduler::SchedulerAdapter* adapter, Journal* journal,
                   PeerTransport* transport, const Env* clock, int64_t max_batch, int64_t adapter_chunk)
    : self_site_(std::move(self_site)),
      adapter_(adapter),
      journal_(journal),
      transport_(transport),
      clock_(clock),
      max_batch_(std::max<int64_t>(1, max_batch)),
      adapter_chunk_(std::max<int64_t>(1, adapter_chunk)) {}

std::string Migrator::Tag(const std::string& migration_id, size_t index) {
  return absl::StrCat("hyperfed:", migration_id, ":", index);
}

std::vector<MigrationRecord> Migrator::OutBatches(const std::string& self, const std::string& dest,
                                                  const std::string& round_id, int64_t first_seq, int64_t max_batch,
                                                  std::vector<JournalJob> jobs, absl::Time now) {
  std::vector<MigrationRecord> batches;
  const auto n = static_cast<int64_t>(jobs.size());
  for (int64_t first = 0, b = 0; first < n; first += max_batch, ++b) {
    MigrationRecord r;
    r.id = absl::StrCat(self, ":", first_seq + b);
    r.direction = Direction::kOut;
    r.peer = dest;
    r.state = MigrationState::kPreparing;
    r.round_id = round_id;
    r.created = r.updated = now;
    for (int64_t i = first; i < std::min(n, first + max_batch); ++i) r.jobs.push_back(std::move(jobs[i]));
    batches.push_back(std::move(r));
  }
  return batches;
}

MigrationRecord Migrator::InRecord(const TransferRequest& req, absl::Time now) {
  MigrationRecord r;
  r.id = req.migration_id;
  r.direction = Direction::kIn;
  r.peer = req.source_site;
  r.state = MigrationState::kPrepared;
  r.round_id = req.round_id;
  r.created = r.updated = now;
  r.jobs.reserve(req.jobs.size());
  for (const scheduler::JobSpec& s : req.jobs) r.jobs.push_back(JournalJob{.key = s.key, .spec = s});
  return r;
}

bool Migrator::TryAcquire(const std::string& key) {
  std::lock_guard<std::mutex> l(busy_mu_);
  return busy_.insert(key).second;
}

void Migrator::Acquire(const std::string& key) {
  std::unique_lock<std::mutex> l(busy_mu_);
  clock_->WaitIdle(l, busy_cv_, [&] { return !busy_.count(key); });
  busy_.insert(key);
}

void Migrator::ReleaseBusy(const std::string& key) {
  {
    std::lock_guard<std::mutex> l(busy_mu_);
    busy_.erase(key);
  }
  busy_cv_.notify_all();
}

// ---------------------------------------------------------------- source

absl::StatusOr<std::vector<std::vector<std::string>>> Migrator::Choose(const std::vector<Destination>& dests,
                                                                       const ChoiceRules& rules,
                                                                       const std::string& round_id,
                                                                       const balance::StartProfile& own) {
  std::vector<std::vector<std::string>> out(dests.size());
  int64_t wanted = 0;
  for (const Destination& d : dests) wanted += std::max<int64_t>(d.count, 0);
  if (wanted == 0) return out;
  auto pending = adapter_->Pending();
  if (!pending.ok()) return Annotate(pending.status(), "choose jobs: pending jobs");
  auto active = journal_->ActiveOutJobIds();
  if (!active.ok()) return active.status();
  const absl::Time now = clock_->Now();
  std::set<std::string> recent;
  // A drained site sends everything that fits, however recently it came.
  if (rules.hysteresis > absl::ZeroDuration() && !rules.draining) {
    auto r = journal_->ArrivedSince(now - rules.hysteresis, round_id);
    if (!r.ok()) return r.status();
    recent = *std::move(r);
  }
  const int64_t now_ms = absl::ToUnixMillis(now);
  std::vector<const scheduler::PendingJob*> jobs;
  std::vector<balance::Candidate> cands;
  bool estimates = false;
  for (const scheduler::PendingJob& p : *pending) {
    if (active->count(p.id)) continue;
    balance::Candidate c;
    c.cores = p.cores;
    c.limit = p.limit_ms;
    c.recent = !p.key.empty() && recent.count(p.key);
    if (p.start_ms > 0) {
      c.wait_here = std::max<int64_t>(0, p.start_ms - now_ms);
      estimates = true;
    } else {
      const int64_t own_wait = own.free.empty() ? balance::kNeverStarts : own.WaitFor(p.cores);
      if (own_wait != balance::kNeverStarts) {
        c.wait_here = own_wait;
        estimates = true;
      }
    }
    jobs.push_back(&p);
    cands.push_back(c);
  }
  std::vector<balance::Outgoing> transfers;
  for (const Destination& d : dests) transfers.push_back({0, d.count, d.profile});
  // Without any estimate of its own queue a site cannot weigh gains: the
  // newest jobs go (with the fit rule).
  const balance::JobChoice choice = estimates ? rules.choice : balance::JobChoice::kNewest;
  const int64_t min_gain = rules.draining ? std::numeric_limits<int64_t>::min() / 4 : 1;
  const int64_t recent_min_gain = rules.recent_margin == absl::InfiniteDuration()
                                      ? balance::kNeverStarts
                                      : std::max<int64_t>(1, absl::ToInt64Milliseconds(rules.recent_margin));
  for (const balance::Chosen& c : balance::ChooseJobs(choice, cands, transfers, min_gain, recent_min_gain))
    out[c.transfer].push_back(jobs[c.job]->id);
  return out;
}

absl::StatusOr<std::vector<OutResult>> Migrator::MigrateOut(const std::string& dest_site, int64_t count,
                                                            const std::string& round_id,
                                                            const std::vector<std::string>* only) {
  if (only) count = static_cast<int64_t>(only->size());
  if (!PrintableId(dest_site)) return absl::InvalidArgumentError("MigrateOut: bad destination site id");
  if (dest_site == self_site_) return absl::InvalidArgumentError("MigrateOut: destination is this site");
  if (count < 0) return absl::InvalidArgumentError(absl::StrCat("MigrateOut: negative count ", count));
  if (round_id.size() > kMaxIdLength) return absl::InvalidArgumentError("MigrateOut: round id too long");
  std::vector<OutResult> results;
  if (count == 0) return results;

  // Choose the jobs and journal them PREPARING under one lock: the journal
  // record is what keeps the next call from choosing them too.
  std::vector<MigrationRecord> batches;
  int64_t shortfall = 0;
  {
    std::lock_guard<std::mutex> l(select_mu_);
    absl::StatusOr<std::vector<Job>> candidates = Candidates(only);
    if (!candidates.ok()) return candidates.status();
    int64_t take = std::min<int64_t>(count, static_cast<int64_t>(candidates->size()));
    shortfall = count - take;
    const int64_t n_batches = (take + max_batch_ - 1) / max_batch_;
    // One transaction reserves every batch's sequence number, one more
    // journals every batch PREPARING: two writes for the whole call.
    absl::StatusOr<int64_t> seq = n_batches > 0 ? journal_->NextSequence(n_batches) : int64_t{0};
    if (!seq.ok()) return Annotate(seq.status(), "MigrateOut: journal");
    std::vector<JournalJob> jobs;
    jobs.reserve(take);
    for (int64_t i = 0; i < take; ++i) {
      Job& j = (*candidates)[i];
      JournalJob jj;
      // A job that has no federation key yet gets one on its first move.
      jj.key = j.spec.key.empty() ? absl::StrCat(self_site_, ":", j.id) : std::move(j.spec.key);
      jj.source_id = std::move(j.id);
      jobs.push_back(std::move(jj));
    }
    batches = OutBatches(self_site_, dest_site, round_id, *seq, max_batch_, std::move(jobs), clock_->Now());
    // Busy before the records exist, so a concurrent Recover never takes
    // our fresh PREPARING records for crashed ones.
    for (const MigrationRecord& r : batches) TryAcquire(OutKey(r.id));  // fresh ids: always free
    // Nothing is held yet: if this fails there is nothing to undo.
    if (absl::Status st = journal_->InsertAll(batches); !st.ok()) {
      for (const MigrationRecord& b : batches) ReleaseBusy(OutKey(b.id));
      return Annotate(st, "MigrateOut: journal");
    }
    CrashPoint(kCrashOutAfterIntent);
  }
  if (batches.empty()) {
    OutResult none;
    none.shortfall = shortfall;
    results.push_back(none);
    return results;
  }

  // Up to kBatchesInFlight batches at once, in order of their ids; after a
  // batch that did not commit, no further batch starts (those are
  // abandoned, never sent) but those already started finish.
  results.resize(batches.size());
  std::vector<int64_t> batch_shortfall(batches.size(), 0);
  std::vector<std::vector<std::string>> batch_over(batches.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> stopped{false};
  const size_t workers = std::min<size_t>(batches.size(), static_cast<size_t>(kBatchesInFlight));
  ParallelFor(executor_, workers, [&](size_t) {
    for (size_t i = next.fetch_add(1); i < batches.size(); i = next.fetch_add(1)) {
      results[i] = RunBatch(std::move(batches[i]), !stopped.load(), &batch_shortfall[i], &batch_over[i]);
      if (!results[i].status.ok()) stopped.store(true);
    }
  });
  for (int64_t n : batch_shortfall) shortfall += n;
  // Jobs cut off by the message budget were released, not sent: while every
  // batch committed, the same call sends them in batches of their own (each
  // carries at least one job, so this ends).
  std::vector<std::string> over;
  for (std::vector<std::string>& o : batch_over) over.insert(over.end(), o.begin(), o.end());
  const bool all_ok = std::all_of(results.begin(), results.end(), [](const OutResult& r) { return r.status.ok(); });
  if (over.empty() || !all_ok) {
    results.back().shortfall = shortfall;
    return results;
  }
  results.back().shortfall = shortfall - static_cast<int64_t>(over.size());
  absl::StatusOr<std::vector<OutResult>> more =
      MigrateOut(dest_site, static_cast<int64_t>(over.size()), round_id, &over);
  if (!more.ok()) {
    results.back().shortfall += static_cast<int64_t>(over.size());
    results.back().status = more.status();
    return results;
  }
  results.insert(results.end(), std::make_move_iterator(more->begin()), std::make_move_iterator(more->end()));
  return results;
}

absl::StatusOr<std::vector<Job>> Migrator::Candidates(const std::vector<std::string>* only) {
  // With `only`, just those jobs are read; else the whole queue.
  absl::StatusOr<std::vector<Job>> listed;
  if (only) {
    std::vector<std::string> ids;
    ids.reserve(only->size());
    std::unordered_set<std::string_view> seen;
    seen.reserve(only->size());
    for (const std::string& id : *only)
      if (seen.insert(id).second) ids.push_back(id);  // each job once, whatever the list says
    listed.emplace().reserve(ids.size());
    std::vector<absl::StatusOr<Job>> got = adapter_->GetJobs(ids);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i >= got.size()) return absl::InternalError("MigrateOut: no answer from GetJobs");
      if (absl::IsNotFound(got[i].status())) continue;  // gone: shortfall
      if (!got[i].ok()) return Annotate(got[i].status(), "MigrateOut: read jobs");
      listed->push_back(*std::move(got[i]));
    }
  } else {
    listed = adapter_->ListJobs();
    if (!listed.ok()) return Annotate(listed.status(), "MigrateOut: list jobs");
  }
  absl::StatusOr<std::set<std::string>> active = journal_->ActiveOutJobIds();
  if (!active.ok()) return active.status();
  std::vector<Job>& out = *listed;
  std::erase_if(out, [&active](const Job& j) { return !WhyNotMovable(j).empty() || active->count(j.id) > 0; });
  if (!only) {
    // kMoveOrder: most recently queued first; among equal times, later in
    // queue order.
    std::stable_sort(out.begin(), out.end(),
                     [](const Job& a, const Job& b) { return a.queued_at_ms < b.queued_at_ms; });
    std::reverse(out.begin(), out.end());
  }
  return listed;
}

OutResult Migrator::RunBatch(MigrationRecord b, bool attempt, int64_t* shortfall, std::vector<std::string>* over) {
  BusyGuard guard([this, key = OutKey(b.id)] { ReleaseBusy(key); });
  OutResult res;
  res.migration_id = b.id;
  if (!attempt) {
    res.job_keys = Keys(b);
    res.status = AbandonPreparing(b, "not attempted: an earlier batch did not complete");
    if (res.status.ok()) res.status = absl::AbortedError("not attempted: an earlier batch did not complete");
    *shortfall += static_cast<int64_t>(b.jobs.size());
    return res;
  }
  int64_t dropped = 0;
  std::optional<MigrationRecord> prepared;
  absl::Status st = PrepareBatch(std::move(b), &dropped, &prepared, over);
  *shortfall += dropped;
  bool committed = false;
  int64_t refused = 0;
  if (st.ok() && prepared.has_value()) st = DriveOut(res.migration_id, &*prepared, &committed, &refused);
  if (st.ok() && committed) {  // the usual end: nothing to read back
    res.job_keys = Keys(*prepared);
    res.moved = static_cast<int64_t>(prepared->jobs.size()) - refused;
    *shortfall += refused;  // refused at the destination: still here
    return res;
  }
  absl::StatusOr<std::optional<MigrationRecord>> after = journal_->Get(Direction::kOut, res.migration_id, false);
  if (!after.ok() || !after->has_value()) {
    res.status = after.ok() ? absl::InternalError("MigrateOut: record vanished") : after.status();
    return res;
  }
  const MigrationRecord& r = **after;
  res.job_keys = Keys(r);
  int64_t n = static_cast<int64_t>(r.jobs.size());
  switch (r.state) {
    case MigrationState::kCommitted:
      // A job the destination refused (no id) stayed here.
      res.moved = std::count_if(r.jobs.begin(), r.jobs.end(), [](const JournalJob& j) { return !j.dest_id.empty(); });
      *shortfall += n - res.moved;
      res.status = absl::OkStatus();
      break;
    case MigrationState::kAborted:
    case MigrationState::kForced:
      // A record PrepareBatch aborted itself (no job held) has its jobs in
      // `dropped` already.
      if (prepared.has_value()) *shortfall += n;
      res.status = st.ok() ? absl::AbortedError(absl::StrCat("migration ", r.id, " aborted: ", r.note)) : st;
      break;
    default:  // PREPARING, PREPARED, ABORTING: held, settled later
      res.in_flight = n;
      res.status = st.ok() ? absl::UnavailableError(absl::StrCat("migration ", r.id, " not settled")) : st;
      break;
  }
  return res;
}

absl::Status Migrator::PrepareBatch(MigrationRecord b, int64_t* dropped, std::optional<MigrationRecord>* prepared,
                                    std::vector<std::string>* over) {
  const std::string id = b.id;  // b is moved from below
  std::vector<JournalJob> jobs = std::move(b.jobs);
  std::vector<JournalJob> held;
  std::vector<std::string> notes;
  // Jobs that will not move but may be held now: a hold that timed out may
  // have taken effect, and an unexported job was held. The PREPARING record
  // still covers them; they are released before PREPARED drops them from it.
  std::vector<std::string> to_release;
  ForChunks(jobs.size(), adapter_chunk_, [&](size_t begin, size_t end) {
    std::vector<absl::Status> st = adapter_->HoldMany(SourceIds(jobs, begin, end));
    for (size_t i = begin; i < end; ++i) {
      JournalJob& j = jobs[i];
      // A job that started, finished or vanished since the listing cannot be
      // held; it simply does not move.
      const absl::Status& s = i - begin < st.size() ? st[i - begin] : absl::InternalError("no answer from HoldMany");
      if (!s.ok()) {
        notes.push_back(absl::StrCat(j.key, " not held: ", s.message()));
        // NotFound: gone; FailedPrecondition: started or ended. Anything
        // else says nothing about whether the hold took effect.
        if (!absl::IsNotFound(s) && !absl::IsFailedPrecondition(s)) to_release.push_back(j.source_id);
        continue;
      }
      held.push_back(std::move(j));
    }
    CrashPoint(kCrashOutAfterHoldOne);
  });
  CrashPoint(kCrashOutAfterHold);
  std::vector<JournalJob> ready;
  size_t ready_bytes = 0;
  ForChunks(held.size(), adapter_chunk_, [&](size_t begin, size_t end) {
    std::vector<absl::StatusOr<scheduler::JobSpec>> specs = adapter_->ExportMany(SourceIds(held, begin, end));
    for (size_t i = begin; i < end; ++i) {
      JournalJob& j = held[i];
      absl::StatusOr<scheduler::JobSpec> spec =
          i - begin < specs.size() ? std::move(specs[i - begin]) : absl::InternalError("no answer from ExportMany");
      if (!spec.ok()) {
        notes.push_back(absl::StrCat(j.key, " not exported: ", spec.status().message()));
        to_release.push_back(j.source_id);
        continue;
      }
      j.spec = *std::move(spec);
      j.spec.key = j.key;
      // What every destination refuses is not sent: it would fail the
      // whole batch there, round after round (issue 34, finding 5). The job
      // stays here, released, and the note says why.
      if (absl::Status c = scheduler::CheckPortableSpec(j.spec); !c.ok()) {
        notes.push_back(absl::StrCat(j.key, " not sent: ", c.message()));
        to_release.push_back(j.source_id);
        continue;
      }
      // Past the message budget: released now, sent in a later batch of
      // this call (MigrateOut). The first job always goes: one spec fits.
      if (budget_bytes_ > 0 && spec_bytes_) {
        const size_t bytes = spec_bytes_(j.spec);
        if (!ready.empty() && ready_bytes + bytes > budget_bytes_) {
          over->push_back(j.source_id);
          to_release.push_back(j.source_id);
          continue;
        }
        ready_bytes += bytes;
      }
      ready.push_back(std::move(j));
    }
  });
  if (!over->empty())
    notes.push_back(absl::StrCat(over->size(), " jobs past the message limit: released, sent in the next batch"));
  absl::Status release_failed;
  ForChunks(to_release.size(), adapter_chunk_, [&](size_t begin, size_t end) {
    std::vector<std::string> ids(to_release.begin() + begin, to_release.begin() + end);
    std::vector<absl::Status> st = adapter_->ReleaseMany(ids);
    for (size_t i = 0; i < ids.size(); ++i) {
      const absl::Status s = i < st.size() ? st[i] : absl::InternalError("no answer from ReleaseMany");
      // Releasing a pending job is a no-op; a gone, running or ended one
      // needs nothing.
      if (!s.ok() && !absl::IsNotFound(s) && !absl::IsFailedPrecondition(s) && release_failed.ok())
        release_failed = Annotate(s, absl::StrCat("migration ", id, ": release ", ids[i], ", which will not move"));
    }
  });
  // The record stays PREPARING, which still lists these jobs: Recover
  // releases every job of it later, and no Transfer is sent.
  if (!release_failed.ok()) return release_failed;
  *dropped += static_cast<int64_t>(jobs.size() - ready.size());
  std::string note = absl::StrJoin(notes, "; ");
  if (ready.empty()) {
    return journal_->Update(Direction::kOut, id, MigrationState::kAborted, note.empty() ? "no job could be held" : note,
                            clock_->Now());
  }
  // If this write fails the record stays PREPARING and Recover releases the
  // holds; no Transfer is sent.
  const absl::Time now = clock_->Now();
  if (absl::Status s = journal_->UpdateWithJobs(Direction::kOut, id, MigrationState::kPrepared, note, now, ready);
      !s.ok()) {
    return s;
  }
  CrashPoint(kCrashOutAfterPrepared);
  MigrationRecord& r = prepared->emplace(std::move(b));
  r.state = MigrationState::kPrepared;
  r.updated = now;
  r.note = note;  // b is fresh: its note was empty
  r.jobs = std::move(ready);
  return absl::OkStatus();
}

absl::Status Migrator::AbandonPreparing(const MigrationRecord& r, const std::string& note) {
  // No Transfer was sent for a PREPARING record, so nobody else can have
  // these jobs: releasing is safe. Release of a pending job is a no-op;
  // a running or vanished one is left alone.
  if (absl::Status s = ReleaseAll(r); !s.ok()) return s;
  return journal_->Update(Direction::kOut, r.id, MigrationState::kAborted, note, clock_->Now());
}

absl::Status Migrator::ReleaseAll(const MigrationRecord& r) {
  absl::Status first = absl::OkStatus();
  ForChunks(r.jobs.size(), adapter_chunk_, [&](size_t begin, size_t end) {
    if (!first.ok()) return;
    std::vector<absl::Status> st = adapter_->ReleaseMany(SourceIds(r.jobs, begin, end));
    for (size_t i = begin; i < end && first.ok(); ++i) {
      absl::Status s = i - begin < st.size() ? st[i - begin] : absl::InternalError("no answer from ReleaseMany");
      if (!s.ok() && s.code() != absl::StatusCode::kNotFound && s.code() != absl::StatusCode::kFailedPrecondition) {
        first = Annotate(s, absl::StrCat("migration ", r.id, ": release ", r.jobs[i].source_id));
      }
    }
  });
  return first;
}

absl::Status Migrator::DriveOut(const std::string& id, const MigrationRecord* known, bool* committed,
                                int64_t* refused) {
  // Each pass moves the record at least one state on, or returns.
  for (int pass = 0; pass < 4; ++pass) {
    std::optional<MigrationRecord> read;
    if (pass > 0 || known == nullptr) {
      absl::StatusOr<std::optional<MigrationRecord>> got = journal_->Get(Direction::kOut, id);
      if (!got.ok()) return got.status();
      if (!got->has_value()) return absl::NotFoundError(absl::StrCat("no outgoing migration ", id));
      read = **std::move(got);
    }
    const MigrationRecord& r = read.has_value() ? *read : *known;
    switch (r.state) {
      case MigrationState::kCommitted:
      case MigrationState::kAborted:
      case MigrationState::kForced:
        return absl::OkStatus();
      case MigrationState::kPreparing:
        return AbandonPreparing(r, "prepare interrupted; never sent");
      case MigrationState::kAborting:
        return SendAbort(r);
      case MigrationState::kPrepared: {
        // Every job was held when PREPARED was written; one that is runnable
        // again was released behind our back: never send it (again). Asked
        // of a record this call has just held and journaled too: on Slurm
        // the hold, export and journal of a batch take about a second, in
        // which an administrator's release would let the job start here
        // while it is sent (one GetJobs per batch).
        absl::StatusOr<std::vector<std::string>> unheld = UnheldKeys(r);
        if (!unheld.ok()) return unheld.status();
        if (!unheld->empty()) {
          if (absl::Status s = journal_->Update(
                  Direction::kOut, id, MigrationState::kAborting,
                  absl::StrCat("no longer held at the source: ", absl::StrJoin(*unheld, ", ")), clock_->Now());
              !s.ok()) {
            return s;
          }
          CrashPoint(kCrashOutAfterAborting);
          continue;
        }
        absl::Status s = SendTransfer(r, refused);
        if (s.ok() && committed != nullptr) *committed = true;
        if (s.ok() || !IsFinalRefusal(s)) return s;
        if (absl::Status j = journal_->Update(Direction::kOut, id, MigrationState::kAborting,
                                              absl::StrCat("transfer refused: ", s.ToString()), clock_->Now());
            !j.ok()) {
          return j;
        }
        CrashPoint(kCrashOutAfterAborting);
        continue;
      }
    }
  }
  return absl::InternalError(absl::StrCat("migration ", id, ": no progress"));
}

absl::StatusOr<std::vector<std::string>> Migrator::UnheldKeys(const MigrationRecord& r) {
  // Only this record's jobs are looked at (not the whole queue).
  std::vector<std::string> ids = SourceIds(r.jobs, 0, r.jobs.size());
  std::vector<absl::StatusOr<Job>> got = adapter_->GetJobs(ids);
  if (got.size() != ids.size()) {
    return absl::InternalError(absl::StrCat("migration ", r.id, ": no answer from GetJobs"));
  }
  std::vector<std::string> unheld;
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const absl::StatusOr<Job>& j = got[i];
    if (!j.ok() && !absl::IsNotFound(j.status()))
      return Annotate(j.status(), absl::StrCat("migration ", r.id, ": read job ", ids[i]));
    // A job not found, done or cancelled has vanished (see migrator.h); a
    // pending or running one was released behind our back.
    if (j.ok() && (j->state == JobState::kPending || j->state == JobState::kRunning)) unheld.push_back(r.jobs[i].key);
  }
  return unheld;
}

absl::Status Migrator::SendTransfer(const MigrationRecord& r, int64_t* refused) {
  TransferRequest req;
  req.migration_id = r.id;
  req.source_site = self_site_;
  req.round_id = r.round_id;
  req.jobs.reserve(r.jobs.size());
  for (const JournalJob& j : r.jobs) req.jobs.push_back(j.spec);
  absl::StatusOr<TransferReply> reply = transport_->Transfer(r.peer, req);
  if (!reply.ok()) return Annotate(reply.status(), absl::StrCat("transfer ", r.id, " to ", r.peer));
  // Not a final answer we can act on when it does not fit: keep holding,
  // retry later.
  absl::StatusOr<std::vector<std::string>> ids = ExpandReply(r, reply->new_ids, reply->refused_keys, "transfer");
  if (!ids.ok()) return ids.status();
  if (refused != nullptr) *refused = static_cast<int64_t>(reply->refused_keys.size());
  CrashPoint(kCrashOutAfterReply);
  return CommitOut(r, *ids, "");
}

absl::Status Migrator::CommitOut(const MigrationRecord& r, const std::vector<std::string>& new_ids,
                                 const std::string& note) {
  std::vector<std::string> notes;
  if (!note.empty()) notes.push_back(note);
  // The jobs the destination refused ("" ids) stay here: released, never
  // cancelled (issue 34, finding 5). Released first: a crash after it
  // leaves a PREPARED record with unheld jobs, which recovery settles
  // through Abort, and the destination answers this same result.
  MigrationRecord refused, taken;
  std::vector<std::string> refused_keys;
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const bool no_id = i >= new_ids.size() || new_ids[i].empty();
    (no_id ? refused : taken).jobs.push_back(r.jobs[i]);
    if (no_id) refused_keys.push_back(r.jobs[i].key);
  }
  refused.id = taken.id = r.id;
  if (!refused_keys.empty()) {
    if (absl::Status s = ReleaseAll(refused); !s.ok()) return s;
    CrashPoint(kCrashOutAfterReleaseRefused);
    notes.push_back(absl::StrCat("refused by ", r.peer, ", kept here: ", absl::StrJoin(refused_keys, ", ")));
  }
  absl::Status failed = absl::OkStatus();
  ForChunks(taken.jobs.size(), adapter_chunk_, [&](size_t begin, size_t end) {
    if (!failed.ok()) return;
    std::vector<absl::Status> st = adapter_->CancelMany(SourceIds(taken.jobs, begin, end));
    for (size_t i = begin; i < end; ++i) {
      const JournalJob& j = taken.jobs[i];
      absl::Status s = i - begin < st.size() ? st[i - begin] : absl::InternalError("no answer from CancelMany");
      if (s.code() == absl::StatusCode::kFailedPrecondition) {
        // Running (or done) here after someone released our hold: the
        // destination has its copy too. Nothing safe is left to do but say so.
        notes.push_back(absl::StrCat("DUPLICATE: ", j.key, " could not be cancelled at ", self_site_, " (", s.message(),
                                     ") and was submitted at ", r.peer));
      } else if (!s.ok() && s.code() != absl::StatusCode::kNotFound) {
        if (failed.ok()) failed = Annotate(s, absl::StrCat("migration ", r.id, ": cancel ", j.source_id));
      }
    }
    if (failed.ok()) CrashPoint(kCrashOutAfterCancelOne);
  });
  // Not committed: the record stays as it was and the cancels are retried
  // (a repeated cancel is a no-op).
  if (!failed.ok()) return failed;
  CrashPoint(kCrashOutAfterCancel);
  if (absl::Status s = journal_->Update(Direction::kOut, r.id, MigrationState::kCommitted, absl::StrJoin(notes, "; "),
                                        clock_->Now(), &new_ids);
      !s.ok()) {
    return s;
  }
  CrashPoint(kCrashOutAfterCommitted);
  return absl::OkStatus();
}

absl::Status Migrator::SendAbort(const MigrationRecord& r) {
  absl::StatusOr<AbortReply> reply = transport_->Abort(r.peer, r.id, self_site_);
  if (!reply.ok()) return Annotate(reply.status(), absl::StrCat("abort ", r.id, " at ", r.peer));
  CrashPoint(kCrashOutAfterAbortReply);
  if (!reply->aborted) {
    absl::StatusOr<std::vector<std::string>> ids = ExpandReply(r, reply->new_ids, reply->refused_keys, "abort");
    if (!ids.ok()) return ids.status();
    return CommitOut(r, *ids, "the destination had submitted; committed on its abort answer");
  }
  // The destination recorded the abort and will refuse the id: ours are the
  // only copies.
  if (absl::Status s = ReleaseAll(r); !s.ok()) return s;
  CrashPoint(kCrashOutAfterRelease);
  if (absl::Status s = journal_->Update(Direction::kOut, r.id, MigrationState::kAborted,
                                        absl::StrCat("abort answered by ", r.peer), clock_->Now());
      !s.ok()) {
    return s;
  }
  CrashPoint(kCrashOutAfterAborted);
  return absl::OkStatus();
}

absl::Status Migrator::GiveUp(const std::string& migration_id) {
  if (!TryAcquire(OutKey(migration_id))) {
    return absl::UnavailableError(absl::StrCat("migration ", migration_id, " is in progress; try again"));
  }
  BusyGuard guard([this, key = OutKey(migration_id)] { ReleaseBusy(key); });
  absl::StatusOr<std::optional<MigrationRecord>> got = journal_->Get(Direction::kOut, migration_id);
  if (!got.ok()) return got.status();
  if (!got->has_value()) return absl::NotFoundError(absl::StrCat("no outgoing migration ", migration_id));
  MigrationRecord r = **got;
  if (IsTerminal(r.state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("migration ", migration_id, " is already ", MigrationStateName(r.state)));
  }
  if (r.state == MigrationState::kPreparing) return AbandonPreparing(r, "given up before sending");
  if (r.state == MigrationState::kPrepared) {
    // Durable first: after a crash, Recover keeps aborting instead of
    // retrying the Transfer.
    if (absl::Status s = journal_->Update(Direction::kOut, r.id, MigrationState::kAborting, "given up", clock_->Now());
        !s.ok()) {
      return s;
    }
    CrashPoint(kCrashOutAfterAborting);
  }
  return SendAbort(r);
}

absl::Status Migrator::ForceRelease(const std::string& migration_id) {
  if (!TryAcquire(OutKey(migration_id))) {
    return absl::UnavailableError(absl::StrCat("migration ", migration_id, " is in progress; try again"));
  }
  BusyGuard guard([this, key = OutKey(migration_id)] { ReleaseBusy(key); });
  absl::StatusOr<std::optional<MigrationRecord>> got = journal_->Get(Direction::kOut, migration_id, false);
  if (!got.ok()) return got.status();
  if (!got->has_value()) return absl::NotFoundError(absl::StrCat("no outgoing migration ", migration_id));
  const MigrationRecord& r = **got;
  if (IsTerminal(r.state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("migration ", migration_id, " is already ", MigrationStateName(r.state)));
  }
  if (r.state == MigrationState::kPreparing) return AbandonPreparing(r, "released by the operator; never sent");
  // Release first: a crash before the FORCED write leaves a PREPARED record
  // with unheld jobs, which recovery aborts through the destination.
  if (absl::Status s = ReleaseAll(r); !s.ok()) return s;
  return journal_->Update(Direction::kOut, r.id, MigrationState::kForced,
                          absl::StrCat("operator forced release without an answer from ", r.peer,
                                       "; the jobs may also have been submitted there"),
                          clock_->Now());
}

// ----------------------------------------------------------- destination

absl::Status Migrator::Validate(const TransferRequest& req) const {
  if (!PrintableId(req.migration_id)) return absl::InvalidArgumentError("Transfer: bad migration id");
  if (!PrintableId(req.source_site)) return absl::InvalidArgumentError("Transfer: bad source site id");
  if (req.source_site == self_site_) return absl::InvalidArgumentError("Transfer: source is this site");
  if (SequenceOf(req.migration_id, req.source_site) == 0)
    return absl::InvalidArgumentError(absl::StrCat("Transfer: migration id ", req.migration_id, " is not one of ",
                                                   req.source_site, "'s (\"", req.source_site, ":<n>\")"));
  if (req.round_id.size() > kMaxIdLength) return absl::InvalidArgumentError("Transfer: round id too long");
  if (req.jobs.empty() || static_cast<int64_t>(req.jobs.size()) > max_batch_) {
    return absl::InvalidArgumentError(
        absl::StrCat("Transfer: job count ", req.jobs.size(), " not in 1..", max_batch_, " (this site's max_batch)"));
  }
  std::set<std::string> keys;
  for (size_t i = 0; i < req.jobs.size(); ++i) {
    const scheduler::JobSpec& s = req.jobs[i];
    std::string where = absl::StrCat("Transfer: jobs[", i, "]: ");
    if (s.key.empty()) return absl::InvalidArgumentError(where + "a moved job needs its key");
    if (!keys.insert(s.key).second) return absl::InvalidArgumentError(where + "duplicate key " + s.key);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> Migrator::CompleteIn(MigrationRecord r) {
  std::vector<std::string> ids;
  ids.reserve(r.jobs.size());
  absl::Status failed = absl::OkStatus();
  // Jobs this site's scheduler refused for good (InvalidArgument: final,
  // scheduler::SchedulerAdapter::Submit): they fail alone, with "" as
  // their id (issue 34, finding 5).
  std::vector<std::pair<size_t, std::string>> refusals;  // index, why
  absl::Status first_refusal = absl::OkStatus();
  ForChunks(r.jobs.size(), adapter_chunk_, [&](size_t begin, size_t end) {
    if (!failed.ok()) return;
    // Idempotent by tag: a job submitted before a crash is found, not
    // submitted again.
    std::vector<std::pair<scheduler::JobSpec, std::string>> batch;
    batch.reserve(end - begin);
    for (size_t i = begin; i < end; ++i) {
      batch.emplace_back(std::move(r.jobs[i].spec), Tag(r.id, i));
      // Not in the journal's encoding of a spec: the record's source is.
      batch.back().first.source_site = r.peer;
    }
    std::vector<absl::StatusOr<std::string>> got = adapter_->SubmitMany(batch, false);
    for (size_t i = begin; i < end; ++i) {
      absl::StatusOr<std::string> id =
          i - begin < got.size() ? std::move(got[i - begin]) : absl::InternalError("no answer from SubmitMany");
      if (absl::IsInvalidArgument(id.status())) {
        if (first_refusal.ok()) first_refusal = Annotate(id.status(), absl::StrCat("submit job ", i));
        refusals.emplace_back(i, absl::StrCat(r.jobs[i].key, " (", id.status().message(), ")"));
        ids.emplace_back();
        continue;
      }
      if (!id.ok()) {
        failed = Annotate(id.status(), absl::StrCat("migration ", r.id, ": submit job ", i));
        return;
      }
      ids.push_back(*std::move(id));
    }
    CrashPoint(kCrashInAfterSubmitOne);
  });
  if (!failed.ok()) return failed;
  // A job refused now that an earlier pass submitted (a scheduler may check
  // a spec before it looks up the tag, and its rules may have changed) was
  // taken: reported refused, the source would release its copy and it would
  // run at both sites. Found by its tag, it keeps its id.
  std::vector<std::string> refused_notes;
  for (const auto& [i, why] : refusals) {
    absl::StatusOr<std::vector<Job>> found = adapter_->FindByTag(Tag(r.id, i));
    if (!found.ok()) return Annotate(found.status(), absl::StrCat("migration ", r.id, ": find by tag"));
    for (const Job& j : *found) {
      if (j.state != JobState::kCancelled && ids[i].empty()) ids[i] = j.id;
    }
    if (ids[i].empty()) refused_notes.push_back(why);
  }
  // Every job refused: nothing to commit; the source keeps them all.
  if (refused_notes.size() == r.jobs.size()) return RefuseIn(r, first_refusal);
  CrashPoint(kCrashInAfterSubmit);
  const std::string note = refused_notes.empty()
                               ? ""
                               : absl::StrCat("refused by this site's scheduler: ", absl::StrJoin(refused_notes, "; "));
  if (absl::Status s = journal_->Update(Direction::kIn, r.id, MigrationState::kCommitted, note, clock_->Now(), &ids);
      !s.ok()) {
    return s;
  }
  CrashPoint(kCrashInAfterCommitted);
  return ids;
}

absl::Status Migrator::RefuseIn(const MigrationRecord& r, const absl::Status& why) {
  // What was submitted of this migration (found by tag, the refused job's
  // too, so neither a crash nor a wrong answer hides one) is cancelled before the record
  // says ABORTED: the source then releases its copies, the only ones left.
  std::vector<std::string> submitted;
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    absl::StatusOr<std::vector<Job>> found = adapter_->FindByTag(Tag(r.id, i));
    if (!found.ok()) return Annotate(found.status(), absl::StrCat("migration ", r.id, ": find by tag"));
    for (const Job& j : *found)
      if (j.state != JobState::kCancelled) submitted.push_back(j.id);
  }
  std::vector<absl::Status> st = adapter_->CancelMany(submitted);
  for (size_t i = 0; i < submitted.size(); ++i) {
    const absl::Status s = i < st.size() ? st[i] : absl::InternalError("no answer from CancelMany");
    if (!s.ok() && s.code() != absl::StatusCode::kNotFound)
      return absl::UnavailableError(absl::StrCat("migration ", r.id, ": this site's scheduler refused a job (",
                                                 why.message(), ") and job ", submitted[i],
                                                 ", submitted before it, could not be cancelled: ", s.message(),
                                                 "; the migration stays PREPARED for an operator"));
  }
  if (absl::Status s =
          journal_->Update(Direction::kIn, r.id, MigrationState::kAborted,
                           absl::StrCat("refused by this site's scheduler: ", why.message()), clock_->Now());
      !s.ok()) {
    return s;
  }
  return absl::FailedPreconditionError(
      absl::StrCat("migration ", r.id, " aborted: this site's scheduler refused it: ", why.message()));
}

absl::StatusOr<TransferReply> Migrator::HandleTransfer(const TransferRequest& request) {
  // Every job is the source's, whatever its spec says: the adapter maps
  // its owner by (source site, owner) (issue 34, finding 2). The caller
  // checked source_site against the certificate.
  TransferRequest req = request;
  for (scheduler::JobSpec& s : req.jobs) s.source_site = req.source_site;
  if (absl::Status s = Validate(req); !s.ok()) return s;
  Acquire(InKey(req.migration_id));
  BusyGuard guard([this, key = InKey(req.migration_id)] { ReleaseBusy(key); });
  absl::StatusOr<std::optional<MigrationRecord>> got = journal_->Get(Direction::kIn, req.migration_id);
  if (!got.ok()) return got.status();
  MigrationRecord r;
  if (got->has_value()) {
    r = **std::move(got);
    if (r.peer != req.source_site) {
      return absl::InvalidArgumentError(
          absl::StrCat("Transfer: migration ", r.id, " came from ", r.peer, ", not ", req.source_site));
    }
    if (r.state == MigrationState::kAborted) {
      return absl::AbortedError(absl::StrCat("Transfer: migration ", r.id, " was aborted"));
    }
    bool same = r.jobs.size() == req.jobs.size();
    for (size_t i = 0; same && i < req.jobs.size(); ++i) same = r.jobs[i].key == req.jobs[i].key;
    if (!same) {
      return absl::InvalidArgumentError(absl::StrCat("Transfer: migration ", r.id, " repeated with different jobs"));
    }
    if (r.state == MigrationState::kCommitted) {
      TransferReply reply;
      FillReply(r.jobs, DestIds(r.jobs), &reply);
      return reply;
    }
  } else {
    // An id this source aborted before its Transfer came, whose record was
    // dropped for newer ones (HandleAbort): refused as the record would.
    absl::StatusOr<int64_t> floor = journal_->EarlyAbortFloor(req.source_site);
    if (!floor.ok()) return floor.status();
    if (SequenceOf(req.migration_id, req.source_site) <= *floor) {
      return absl::AbortedError(absl::StrCat("Transfer: migration ", req.migration_id, " was aborted (",
                                             req.source_site, "'s ids up to ", *floor, " are)"));
    }
    // Checked before anything is journaled: a spec this site refuses fails
    // alone (its submit is refused again, CompleteIn); when every one is
    // refused the transfer is, and nothing is journaled (issue 34,
    // finding 5).
    size_t refused = 0;
    absl::Status first = absl::OkStatus();
    for (size_t i = 0; i < req.jobs.size(); ++i) {
      if (absl::Status c = adapter_->CheckSpec(req.jobs[i]); !c.ok()) {
        ++refused;
        if (first.ok()) {
          first = absl::InvalidArgumentError(
              absl::StrCat("Transfer: jobs[", i, "]: this site's scheduler refuses it: ", c.message()));
        }
      }
    }
    if (refused == req.jobs.size()) return first;
    if (admission_) {
      if (absl::Status a = admission_(req); !a.ok()) return Annotate(a, absl::StrCat("Transfer ", req.migration_id));
    }
    r = InRecord(req, clock_->Now());
    if (absl::Status s = journal_->Insert(r); !s.ok()) return s;
    CrashPoint(kCrashInAfterPrepared);
  }
  std::vector<JournalJob> keys;  // CompleteIn takes the record
  keys.reserve(r.jobs.size());
  for (const JournalJob& j : r.jobs) keys.push_back(JournalJob{.key = j.key});
  absl::StatusOr<std::vector<std::string>> ids = CompleteIn(std::move(r));
  if (!ids.ok()) return ids.status();
  TransferReply reply;
  FillReply(keys, *ids, &reply);
  return reply;
}

absl::StatusOr<AbortReply> Migrator::HandleAbort(const std::string& migration_id, const std::string& source_site) {
  if (!PrintableId(migration_id)) return absl::InvalidArgumentError("Abort: bad migration id");
  if (!PrintableId(source_site) || source_site == self_site_) {
    return absl::InvalidArgumentError("Abort: bad source site id");
  }
  const int64_t seq = SequenceOf(migration_id, source_site);
  if (seq == 0)
    return absl::InvalidArgumentError(absl::StrCat("Abort: migration id ", migration_id, " is not one of ", source_site,
                                                   "'s (\"", source_site, ":<n>\")"));
  Acquire(InKey(migration_id));
  BusyGuard guard([this, key = InKey(migration_id)] { ReleaseBusy(key); });
  absl::StatusOr<std::optional<MigrationRecord>> got = journal_->Get(Direction::kIn, migration_id);
  if (!got.ok()) return got.status();
  AbortReply reply;
  if (!got->has_value()) {
    // Remember the id, so a Transfer still on its way is refused: by its
    // record, or once kMaxEarlyAbortsPerSource later ones from the same
    // source have pushed that out, by the source's floor (HandleTransfer).
    // An id at or below the floor is refused already: nothing to store.
    absl::StatusOr<int64_t> floor = journal_->EarlyAbortFloor(source_site);
    if (!floor.ok()) return floor.status();
    reply.aborted = true;
    if (seq <= *floor) return reply;
    MigrationRecord r;
    r.id = migration_id;
    r.direction = Direction::kIn;
    r.peer = source_site;
    r.state = MigrationState::kAborted;
    r.created = r.updated = clock_->Now();
    r.note = "aborted before any transfer arrived";
    if (absl::Status s = journal_->RecordEarlyAbort(r, kMaxEarlyAbortsPerSource); !s.ok()) return s;
    CrashPoint(kCrashInAfterAbortRecorded);
    reply.aborted = true;
    return reply;
  }
  const MigrationRecord& r = **got;
  if (r.peer != source_site) {
    return absl::InvalidArgumentError(
        absl::StrCat("Abort: migration ", r.id, " came from ", r.peer, ", not ", source_site));
  }
  switch (r.state) {
    case MigrationState::kAborted:
      reply.aborted = true;
      return reply;
    case MigrationState::kCommitted:
      FillReply(r.jobs, DestIds(r.jobs), &reply);
      return reply;
    default:
      break;
  }
  // PREPARED: if anything was submitted it may already run here, so the only
  // safe answer is to finish and hand the ids back.
  bool any_submitted = false;
  for (size_t i = 0; i < r.jobs.size() && !any_submitted; ++i) {
    absl::StatusOr<std::vector<Job>> found = adapter_->FindByTag(Tag(r.id, i));
    if (!found.ok()) return Annotate(found.status(), absl::StrCat("Abort: migration ", r.id, ": find by tag"));
    any_submitted = !found->empty();
  }
  if (any_submitted) {
    absl::StatusOr<std::vector<std::string>> ids = CompleteIn(r);
    if (!ids.ok() && ids.status().code() == absl::StatusCode::kFailedPrecondition) {
      reply.aborted = true;  // the scheduler refused it: RefuseIn aborted the record
      return reply;
    }
    if (!ids.ok()) return ids.status();
    FillReply(r.jobs, *ids, &reply);
    return reply;
  }
  if (absl::Status s = journal_->Update(Direction::kIn, r.id, MigrationState::kAborted,
                                        "aborted by the source before any submit", clock_->Now());
      !s.ok()) {
    return s;
  }
  CrashPoint(kCrashInAfterAbortRecorded);
  reply.aborted = true;
  return reply;
}

// ------------------------------------------------------------- recovery

absl::Status Migrator::Recover() {
  absl::Status first = absl::OkStatus();
  auto note = [&first](const absl::Status& s) {
    if (first.ok() && !s.ok()) first = s;
  };
  absl::StatusOr<std::vector<MigrationRecord>> out = journal_->ListActive(Direction::kOut);
  note(out.status());
  if (out.ok()) {
    for (const MigrationRecord& r : *out) {
      if (!TryAcquire(OutKey(r.id))) continue;  // being driven by another thread
      BusyGuard guard([this, key = OutKey(r.id)] { ReleaseBusy(key); });
      note(DriveOut(r.id));
    }
  }
  absl::StatusOr<std::vector<MigrationRecord>> in = journal_->ListActive(Direction::kIn);
  note(in.status());
  if (in.ok()) {
    for (const MigrationRecord& listed : *in) {
      if (!TryAcquire(InKey(listed.id))) continue;
      BusyGuard guard([this, key = InKey(listed.id)] { ReleaseBusy(key); });
      absl::StatusOr<std::optional<MigrationRecord>> got = journal_->Get(Direction::kIn, listed.id);
      if (!got.ok()) {
        note(got.status());
        continue;
      }
      if (!got->has_value() || (*got)->state != MigrationState::kPrepared) continue;
      note(CompleteIn(**got).status());
    }
  }
  return first;
}

absl::StatusOr<std::vector<MigrationRecord>> Migrator::List(int limit) const { return journal_->ListRecent(limit); }

absl::StatusOr<std::map<std::string, int64_t>> Migrator::CommittedOut(const std::string& round_id) const {
  auto recs = journal_->OfRound(Direction::kOut, round_id);
  if (!recs.ok()) return recs.status();
  std::map<std::string, int64_t> out;
  for (const MigrationRecord& r : *recs)
    if (r.state == MigrationState::kCommitted) {
      // A job the destination refused stayed here.
      for (const JournalJob& j : r.jobs) out[r.peer] += !j.dest_id.empty();
    }
  return out;
}

absl::StatusOr<std::vector<MigrationRecord>> Migrator::HistoryOfJob(const std::string& job_key) const {
  return journal_->HistoryOfJob(job_key);
}

}  // namespace hyperfed::migration
