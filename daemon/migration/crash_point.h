#pragma once

// Fault injection for the exactly-once tests (docs/design.md §7: the
// invariants must hold under a crash of either side at any point).
//
// CrashPoint(name) kills the process with SIGKILL when the environment
// variable HYPERFED_CRASH_AT equals `name`, or equals "name:N" and this is
// the N-th time (1-based) this process reaches `name`. SIGKILL, not abort():
// no destructor, atexit handler or buffered write runs, as after a power cut
// of the process (SQLite's WAL keeps committed transactions: they are in the
// file, not in the process).
//
// The "_one" points fire after each adapter batch call of the Migrator,
// which covers a chunk of up to Migrator's adapter_chunk jobs (1,000 by
// default), so ":N" counts chunks, not jobs: "out_after_hold_one:2" is after
// the second chunk of holds, with the first chunk's jobs held.
//
// The points, in protocol order. "out_" points run on the source, "in_"
// points on the destination.

#include <functional>
#include <string_view>

namespace hyperfed::migration {

// Source, MigrateOut.
// OUT PREPARING journaled (jobs chosen and reserved), nothing held yet.
inline constexpr std::string_view kCrashOutAfterIntent = "out_after_intent";
// After each chunk of holds (HoldMany; "out_after_hold_one:N": the N-th chunk).
inline constexpr std::string_view kCrashOutAfterHoldOne = "out_after_hold_one";
// Every job of the batch held, OUT PREPARED not yet journaled.
inline constexpr std::string_view kCrashOutAfterHold = "out_after_hold";
// OUT PREPARED journaled (specs stored), Transfer not yet sent.
inline constexpr std::string_view kCrashOutAfterPrepared = "out_after_prepared";
// Transfer answered with the new ids; no held copy cancelled yet.
inline constexpr std::string_view kCrashOutAfterReply = "out_after_reply";
// The jobs the destination refused released (they stay here); no held copy
// cancelled yet (issue 34, finding 5).
inline constexpr std::string_view kCrashOutAfterReleaseRefused = "out_after_release_refused";
// After each chunk of cancelled held copies (CancelMany).
inline constexpr std::string_view kCrashOutAfterCancelOne = "out_after_cancel_one";
// Every held copy cancelled; COMMITTED not yet journaled.
inline constexpr std::string_view kCrashOutAfterCancel = "out_after_cancel";
// OUT COMMITTED journaled.
inline constexpr std::string_view kCrashOutAfterCommitted = "out_after_committed";

// Source, giving up (GiveUp, or Recover finding an ABORTING record).
// ABORTING journaled, Abort not yet sent.
inline constexpr std::string_view kCrashOutAfterAborting = "out_after_aborting";
// Abort answered (either way), nothing acted on yet.
inline constexpr std::string_view kCrashOutAfterAbortReply = "out_after_abort_reply";
// Abort answered "aborted": holds released, ABORTED not yet journaled.
inline constexpr std::string_view kCrashOutAfterRelease = "out_after_release";
// OUT ABORTED journaled.
inline constexpr std::string_view kCrashOutAfterAborted = "out_after_aborted";

// Destination, HandleTransfer (and the completion of an IN PREPARED record
// by Recover or HandleAbort).
// IN PREPARED journaled (specs stored), nothing submitted.
inline constexpr std::string_view kCrashInAfterPrepared = "in_after_prepared";
// After each chunk of submits (SubmitMany).
inline constexpr std::string_view kCrashInAfterSubmitOne = "in_after_submit_one";
// Every job submitted; COMMITTED not yet journaled.
inline constexpr std::string_view kCrashInAfterSubmit = "in_after_submit";
// IN COMMITTED journaled, reply not yet sent.
inline constexpr std::string_view kCrashInAfterCommitted = "in_after_committed";

// Destination, HandleAbort.
// The id journaled as aborted, reply not yet sent.
inline constexpr std::string_view kCrashInAfterAbortRecorded = "in_after_abort_recorded";

// Every point above, for tests that visit them all.
inline constexpr std::string_view kAllCrashPoints[] = {
    kCrashOutAfterIntent,       kCrashOutAfterHoldOne,        kCrashOutAfterHold,    kCrashOutAfterPrepared,
    kCrashOutAfterReply,        kCrashOutAfterCancelOne,      kCrashOutAfterCancel,  kCrashOutAfterCommitted,
    kCrashOutAfterAborting,     kCrashOutAfterAbortReply,     kCrashOutAfterRelease, kCrashOutAfterAborted,
    kCrashInAfterPrepared,      kCrashInAfterSubmitOne,       kCrashInAfterSubmit,   kCrashInAfterCommitted,
    kCrashInAfterAbortRecorded, kCrashOutAfterReleaseRefused,
};

inline constexpr char kCrashEnvVar[] = "HYPERFED_CRASH_AT";
// "STOP": the process stops itself there (SIGSTOP) instead of dying, as a
// site that stopped answering (FailedSiteTest.ARoundEndsSoonAfterASiteFreezesInIt).
inline constexpr char kCrashSignalEnvVar[] = "HYPERFED_CRASH_SIGNAL";

// See the top of this file. Costs one getenv when the variable is unset.
void CrashPoint(std::string_view name);

// Calls `hook` at every crash point instead (the federation simulation
// crashes the simulated site whose task reached it, when its seed says so:
// docs/design.md §10). Set before any thread runs; empty: the variable again.
void SetCrashPointHook(std::function<void(std::string_view)> hook);

}  // namespace hyperfed::migration
