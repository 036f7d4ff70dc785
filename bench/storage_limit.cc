#include "bench/storage_limit.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/migration/journal.h"
#include "daemon/migration/migrator.h"
#include "daemon/scheduler/sim_adapter.h"

namespace hyperfed::bench {
namespace {

using migration::Direction;
using migration::Journal;
using migration::JournalJob;
using migration::MigrationRecord;
using migration::MigrationState;
using scheduler::JobSpec;
using scheduler::SimAdapter;

constexpr char kSource[] = "site-0";
constexpr char kDestination[] = "site-1";
constexpr int64_t kHourMs = 3'600'000;

// A job as the bench's operator Submit makes it (federation::Site::Submit):
// one core, an hour, its key "<site>-<16 hex digits>".
JobSpec BenchJob(const std::string& site, uint64_t n) {
  JobSpec spec;
  spec.name = "job";
  spec.cores = 1;
  spec.duration_ms = kHourMs;
  spec.script = absl::StrCat("#!/bin/sh\nsleep ", kHourMs / 1000.0, "\n");
  spec.key = absl::StrFormat("%s-%016x", site, (n + 1) * 0x9e3779b97f4a7c15ULL);
  return spec;
}

absl::Status StatusOf(const absl::Status& s) { return s; }
template <typename T>
absl::Status StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}
// The first failure of a batch call's items, or OK.
template <typename T>
absl::Status FirstError(const std::vector<T>& items) {
  for (const T& item : items)
    if (!StatusOf(item).ok()) return StatusOf(item);
  return absl::OkStatus();
}

struct Site {
  std::unique_ptr<SimAdapter> queue;
  std::unique_ptr<Journal> journal;
};

// A site's queue and journal in `dir`, as site_stack.cc opens them.
absl::StatusOr<Site> OpenSite(const std::string& dir) {
  Site s;
  auto queue = SimAdapter::Open(scheduler::SimOptions{.cores = 1}, {.state_dir = dir});
  if (!queue.ok()) return queue.status();
  s.queue = *std::move(queue);
  auto journal = Journal::Open(dir + "/journal.db");
  if (!journal.ok()) return journal.status();
  s.journal = *std::move(journal);
  return s;
}

// Submits `n` bench jobs of `site`, numbered from `first`, tagged as an
// operator's submit; their ids.
absl::StatusOr<std::vector<std::string>> SubmitJobs(SimAdapter& queue, const std::string& site, uint64_t first, int n) {
  std::vector<std::string> ids;
  for (int done = 0; done < n;) {
    std::vector<std::pair<JobSpec, std::string>> batch;
    for (; done < n && batch.size() < 1000; ++done) {
      JobSpec spec = BenchJob(site, first + done);
      std::string tag = "submit:" + spec.key;
      batch.emplace_back(std::move(spec), std::move(tag));
    }
    for (absl::StatusOr<std::string>& id : queue.SubmitMany(batch)) {
      if (!id.ok()) return id.status();
      ids.push_back(*std::move(id));
    }
  }
  return ids;
}

// This thread's CPU time (user and system), in seconds.
double ThreadCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Times each call and adds it to its step.
class Steps {
 public:
  explicit Steps(StorageLimitResult* out) : out_(out) {}
  template <typename F>
  auto operator()(const std::string& name, F fn) {
    const absl::Time t = absl::Now();
    auto r = fn();
    const double s = absl::ToDoubleSeconds(absl::Now() - t);
    auto it = std::find_if(out_->steps.begin(), out_->steps.end(), [&](const auto& p) { return p.first == name; });
    if (it == out_->steps.end()) {
      out_->steps.emplace_back(name, s);
    } else {
      it->second += s;
    }
    return r;
  }

 private:
  StorageLimitResult* out_;
};

// The measured part: every write of the round (and with `with_reads` every
// read) in its order.
absl::Status MigrateReplayed(const StorageLimitOptions& o, Site& src, Site& dst, const std::vector<std::string>& chosen,
                             const std::vector<JobSpec>& specs, std::vector<std::string> keys,
                             const std::string& round_id, StorageLimitResult* res) {
  Steps step(res);
  Journal& out_journal = *src.journal;
  Journal& in_journal = *dst.journal;
  SimAdapter& out_queue = *src.queue;
  SimAdapter& in_queue = *dst.queue;
  if (o.with_reads) {
    std::vector<absl::StatusOr<scheduler::Job>> got =
        step("source queue: the chosen jobs (GetJobs, read)", [&] { return out_queue.GetJobs(chosen); });
    if (auto s = FirstError(got); !s.ok()) return s;
    for (absl::StatusOr<scheduler::Job>& job : got) keys.push_back(std::move(job->spec.key));
    auto active = step("source journal: ActiveOutJobIds (read)", [&] { return out_journal.ActiveOutJobIds(); });
    if (!active.ok()) return active.status();
  }
  const int64_t n_batches = (o.jobs + o.max_batch - 1) / o.max_batch;
  auto seq = step("source journal: NextSequence", [&] { return out_journal.NextSequence(n_batches); });
  if (!seq.ok()) return seq.status();
  std::vector<JournalJob> moving(o.jobs);
  for (int64_t i = 0; i < o.jobs; ++i) {
    moving[i].key = keys[i];
    moving[i].source_id = chosen[i];
  }
  const std::vector<MigrationRecord> batches = migration::Migrator::OutBatches(
      kSource, kDestination, round_id, *seq, o.max_batch, std::move(moving), absl::Now());
  if (auto s = step("source journal: PREPARING (every batch)", [&] { return out_journal.InsertAll(batches); });
      !s.ok()) {
    return s;
  }
  res->commits = 2;
  for (int64_t b = 0; b < n_batches; ++b) {
    const MigrationRecord& r = batches[b];
    const int64_t first = b * o.max_batch;
    std::vector<std::string> ids;
    for (const JournalJob& j : r.jobs) ids.push_back(j.source_id);
    if (auto s = FirstError(step("source queue: HoldMany", [&] { return out_queue.HoldMany(ids); })); !s.ok()) return s;
    std::vector<JournalJob> jobs = r.jobs;
    if (o.with_reads) {
      std::vector<absl::StatusOr<JobSpec>> got =
          step("source queue: ExportMany (read)", [&] { return out_queue.ExportMany(ids); });
      if (auto s = FirstError(got); !s.ok()) return s;
      for (size_t i = 0; i < jobs.size(); ++i) jobs[i].spec = *std::move(got[i]);
    } else {
      for (size_t i = 0; i < jobs.size(); ++i) jobs[i].spec = specs[first + i];
    }
    for (JournalJob& j : jobs) j.spec.key = j.key;
    if (auto s = step("source journal: PREPARED with specs",
                      [&] {
                        return out_journal.UpdateWithJobs(Direction::kOut, r.id, MigrationState::kPrepared, "",
                                                          absl::Now(), jobs);
                      });
        !s.ok()) {
      return s;
    }
    if (o.with_reads) {
      std::vector<absl::StatusOr<scheduler::Job>> got =
          step("source queue: still held? (GetJobs, read)", [&] { return out_queue.GetJobs(ids); });
      if (auto s = FirstError(got); !s.ok()) return s;
      auto known = step("destination journal: Get, EarlyAbortFloor (read)", [&] {
        auto g = in_journal.Get(Direction::kIn, r.id);
        return g.ok() ? in_journal.EarlyAbortFloor(kSource).status() : g.status();
      });
      if (!known.ok()) return known;
    }
    migration::TransferRequest req{.migration_id = r.id, .source_site = kSource, .round_id = round_id};
    std::vector<std::pair<JobSpec, std::string>> submit;
    for (size_t i = 0; i < jobs.size(); ++i) {
      req.jobs.push_back(jobs[i].spec);
      submit.emplace_back(jobs[i].spec, migration::Migrator::Tag(r.id, i));
      submit.back().first.source_site = kSource;
    }
    const MigrationRecord in = migration::Migrator::InRecord(req, absl::Now());
    if (auto s = step("destination journal: IN PREPARED with specs", [&] { return in_journal.Insert(in); }); !s.ok())
      return s;
    std::vector<absl::StatusOr<std::string>> made =
        step("destination queue: SubmitMany", [&] { return in_queue.SubmitMany(submit); });
    if (auto s = FirstError(made); !s.ok()) return s;
    std::vector<std::string> new_ids;
    for (absl::StatusOr<std::string>& id : made) new_ids.push_back(*std::move(id));
    if (auto s = step("destination journal: COMMITTED with ids",
                      [&] {
                        return in_journal.Update(Direction::kIn, r.id, MigrationState::kCommitted, "", absl::Now(),
                                                 &new_ids);
                      });
        !s.ok()) {
      return s;
    }
    if (auto s = FirstError(step("source queue: CancelMany", [&] { return out_queue.CancelMany(ids); })); !s.ok())
      return s;
    if (auto s = step("source journal: COMMITTED with ids",
                      [&] {
                        return out_journal.Update(Direction::kOut, r.id, MigrationState::kCommitted, "", absl::Now(),
                                                  &new_ids);
                      });
        !s.ok()) {
      return s;
    }
    res->commits += 7;
  }
  return absl::OkStatus();
}

// MigrateReplayed under a name of its own, not inlined, so that callgrind
// can count it alone (--toggle-collect='*TimedReplay*': the lambdas inside
// MigrateReplayed carry its name, and would toggle the count off again).
[[gnu::noinline]] absl::Status TimedReplay(const StorageLimitOptions& o, Site& src, Site& dst,
                                           const std::vector<std::string>& chosen, const std::vector<JobSpec>& specs,
                                           std::vector<std::string> keys, const std::string& round_id,
                                           StorageLimitResult* res) {
  return MigrateReplayed(o, src, dst, chosen, specs, std::move(keys), round_id, res);
}

}  // namespace

absl::StatusOr<StorageLimitResult> ReplayMigrationStorage(const StorageLimitOptions& o) {
  if (o.jobs < 1 || o.max_batch < 1) return absl::InvalidArgumentError("storage limit: jobs and max_batch >= 1");
  auto src = OpenSite(o.dir + "/" + kSource);
  if (!src.ok()) return src.status();
  auto dst = OpenSite(o.dir + "/" + kDestination);
  if (!dst.ok()) return dst.status();
  // As the bench: one running job at each site, then 2 x jobs pending at the
  // source.
  if (auto s = SubmitJobs(*dst->queue, kDestination, 0, 1); !s.ok()) return s.status();
  if (auto s = SubmitJobs(*src->queue, kSource, 0, 1); !s.ok()) return s.status();
  auto pending = SubmitJobs(*src->queue, kSource, 1, 2 * o.jobs);
  if (!pending.ok()) return pending.status();
  // The round's choice (the newest first, kMoveOrder; the bench's jobs are
  // all alike, so which ones does not change the work).
  std::vector<std::string> chosen(pending->rbegin(), pending->rbegin() + o.jobs);
  // What the writes need (the keys, the specs), read before the clock
  // starts, unless the reads are timed too.
  std::vector<JobSpec> specs;
  if (!o.with_reads) {
    for (absl::StatusOr<JobSpec>& spec : src->queue->ExportMany(chosen)) {
      if (!spec.ok()) return spec.status();
      specs.push_back(*std::move(spec));
    }
  }
  std::vector<std::string> keys;
  for (const JobSpec& spec : specs) keys.push_back(spec.key);
  const std::string round_id = absl::StrCat(kSource, "-", absl::ToUnixMillis(absl::Now()), "-1");

  StorageLimitResult res;
  const absl::Time start = absl::Now();
  const double cpu_start = ThreadCpuSeconds();
  if (auto s = TimedReplay(o, *src, *dst, chosen, specs, std::move(keys), round_id, &res); !s.ok()) return s;
  res.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  res.cpu_seconds = ThreadCpuSeconds() - cpu_start;
  SimAdapter& out_queue = *src->queue;
  SimAdapter& in_queue = *dst->queue;
  // Every chosen job moved: cancelled at the source, pending at the
  // destination.
  auto at_src = out_queue.Stats();
  auto at_dst = in_queue.Stats();
  if (!at_src.ok()) return at_src.status();
  if (!at_dst.ok()) return at_dst.status();
  if (at_src->cancelled != o.jobs || at_dst->pending != o.jobs) {
    return absl::InternalError(absl::StrCat("storage limit: ", at_src->cancelled, " jobs cancelled at the source and ",
                                            at_dst->pending, " pending at the destination; want ", o.jobs));
  }
  res.jobs = o.jobs;
  return res;
}

}  // namespace hyperfed::bench
