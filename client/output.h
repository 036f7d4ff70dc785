#pragma once

// hyperfedctl's output: a text table, and for every command the text and
// JSON renderings of the daemon's reply. A reply's JSON is the one encoding
// the web view's API answers with too (daemon/protojson/proto_json.h), so
// `hyperfedctl X --json` and GET /api/v1/X give the same JSON for the same
// reply. Everything here is a pure function of its arguments, so tests feed
// it messages directly.

#include <grpcpp/support/status.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "hyperfed/v1/hyperfed.pb.h"

namespace hyperfed::client {

// `s` made safe to print on a terminal, for any text that comes from a
// daemon (and through it from other sites): site names, round events, job
// names, why-not reasons, migration notes, error messages. Control
// characters (C0 and DEL, so ESC too, and C1, U+0080..U+009F) and bytes that
// are not valid UTF-8 are shown as escapes ("\x1b", "\n", "\xc2\x9b"), so
// remote text can neither move the cursor, set the window title, nor break a
// line or a table. Printable text, UTF-8 included, is unchanged.
std::string TerminalSafe(absl::string_view s);
// The same for text of several lines: each line made TerminalSafe, the line
// breaks ('\n') kept.
std::string TerminalSafeLines(absl::string_view s);

// A plain text table: a header row, then rows, columns two spaces apart.
// Right-aligned columns are for numbers.
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::vector<bool> right_aligned = {});
  void AddRow(std::vector<std::string> row);
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// A capacity or other real for people: at most three decimals, no trailing
// zeros ("4", "2.5", "0.333").
std::string FormatReal(double v);
// Milliseconds since the Unix epoch as "2024-05-01 12:00:00Z" (UTC), "-" for 0.
std::string FormatUnixMillis(int64_t ms);
// A label as decimal and, for a known dimension, its bits: "5 (101)".
std::string FormatLabel(int label, int dimension);

// One line for an RPC that failed, without the program name or newline:
// "cannot reach HOST:PORT: connection refused (is hyperfedd running?)" for an
// unreachable daemon, the daemon's own message for a refusal.
std::string RpcErrorLine(grpc::StatusCode code, const std::string& message, const std::string& endpoint,
                         absl::Duration timeout);

std::string StatusText(const v1::StatusReply& r);
std::string StatusJson(const v1::StatusReply& r);

std::string TopologyText(const v1::TopologyReply& r);
std::string TopologyDot(const v1::TopologyReply& r);
std::string TopologyJson(const v1::TopologyReply& r);

std::string JobsText(const v1::JobsReply& r);
std::string JobsJson(const v1::JobsReply& r);

std::string MigrationsText(const v1::MigrationsReply& r);
std::string MigrationsJson(const v1::MigrationsReply& r);

// `sites`: label -> site, for the transfers ("label N" when unknown).
std::string RoundsText(const v1::RoundsReply& r, const std::map<int, std::string>& sites);
std::string RoundsJson(const v1::RoundsReply& r);

// Balance. `sites` maps labels to site ids for the table (missing: "-").
// The event's message lines, as they arrive.
std::string BalanceEventText(const v1::RoundEvent& e);
// The final event's before/after table and figures.
std::string BalanceResultText(const v1::RoundEvent& e, const std::map<int, std::string>& sites);
// One JSON line for an event: the event as encoded, and in a final one the
// before/after table with each site's name (not part of RoundEvent, and not
// served by the web API).
std::string BalanceEventJson(const v1::RoundEvent& e, const std::map<int, std::string>& sites);

// Waits: the answering site's hourly job waits and placement record.
// FormatWait gives a wait for people: "850ms", "45s", "12m5s", "2h3m0s".
std::string FormatWait(int64_t ms);
std::string WaitsText(const v1::WaitsReply& r);
std::string WaitsJson(const v1::WaitsReply& r);

std::string SubmitText(const v1::SubmitReply& r);
std::string SubmitJson(const v1::SubmitReply& r);

std::string ExplainJson(const v1::ExplainJobReply& r);
// Drain and force-release answer nothing or little: the JSON says what was
// asked too.
std::string DrainJson(const std::string& site, bool drained);
std::string ForceReleaseJson(const std::string& migration_id, const v1::ForceReleaseReply& r);

// Health: one row per service name ("" is the server as a whole); status is
// SERVING, NOT_SERVING, UNKNOWN or SERVICE_UNKNOWN.
struct HealthRow {
  std::string service;
  std::string status;
};
std::string HealthText(const std::string& endpoint, const std::vector<HealthRow>& rows);
std::string HealthJson(const std::string& endpoint, const std::vector<HealthRow>& rows);

}  // namespace hyperfed::client
