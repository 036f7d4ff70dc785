#pragma once

// The storage limit of a migration between two sim sites (issue 31, item 5;
// docs/benchmarks.md, "Migration against the storage limit"): the SQLite
// work of `hyperfed_daemon_bench --throughput`'s round replayed on fresh
// files, in one thread, without RPC, protobuf, TLS or the round around it.
// It goes through the journal's and the sim adapter's own calls, so the
// schema, PRAGMAs (WAL, synchronous=FULL), statements and transactions are
// theirs, not a copy.
//
// The round moves `jobs` of the 2 x `jobs` pending jobs of site 0 to site 1
// (one core each, busy with an hour-long job, as the bench's) in batches of
// `max_batch`, and writes, in the order of daemon/migration/migrator.h:
//   source journal       one NextSequence and every batch PREPARING in one
//                        transaction; per batch PREPARED with the specs
//                        (the reserved rows rewritten in place) and
//                        COMMITTED with the destination ids
//   source queue         per batch HoldMany and CancelMany
//   destination journal  per batch IN PREPARED with the specs, COMMITTED
//                        with the new ids
//   destination queue    per batch SubmitMany, tagged
// That is 2 + 7 x batches write transactions, each fsynced, as the round's.
// The specs the writes need are read before the clock starts.
//
// With `with_reads`, the reads the migrator makes as well, each where the
// round makes it (the chosen jobs by id, and per batch the source's
// ExportMany and the still-held check's GetJobs; the destination's look-up
// of the id and the early-abort floor), so that their cost shows apart.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace hyperfed::bench {

struct StorageLimitOptions {
  std::string dir;  // an empty folder: site-0/ and site-1/ are made in it
  int jobs = 10000;
  int max_batch = 1000;
  bool with_reads = false;
};

struct StorageLimitResult {
  int64_t jobs = 0;        // moved (checked against both queues afterwards)
  double seconds = 0;      // from the first write to the last commit
  double cpu_seconds = 0;  // of the one thread that ran it, in that time
  int64_t commits = 0;     // write transactions (journal and queue calls that write)
  // Seconds per call, in the order first made ("source journal PREPARED").
  std::vector<std::pair<std::string, double>> steps;
};

absl::StatusOr<StorageLimitResult> ReplayMigrationStorage(const StorageLimitOptions& options);

}  // namespace hyperfed::bench
