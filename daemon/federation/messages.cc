#include "daemon/federation/messages.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/federation/membership.h"

namespace hyperfed::federation {

std::string MakeRoundId(const std::string& coordinator, absl::Time started, int64_t n) {
  return absl::StrCat(coordinator, "-", absl::ToUnixMillis(started), "-", n);
}

std::optional<std::string> RoundCoordinator(const std::string& round_id) {
  // The last two '-' separate the site (which may hold '-') from two numbers.
  const size_t b = round_id.rfind('-');
  if (b == std::string::npos || b == 0) return std::nullopt;
  const size_t a = round_id.rfind('-', b - 1);
  if (a == std::string::npos || a == 0) return std::nullopt;
  auto digits = [](std::string_view v) {
    return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const std::string_view id(round_id);
  if (!digits(id.substr(a + 1, b - a - 1)) || !digits(id.substr(b + 1))) return std::nullopt;
  return round_id.substr(0, a);
}

bool EpochInBounds(int64_t epoch, absl::Time now) {
  return epoch > 0 && epoch <= absl::ToUnixMillis(now + kMaxEpochAhead);
}

absl::Status CheckRoundStart(const RoundSpec& spec, absl::Time now) {
  auto invalid = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (spec.coordinator.empty()) return invalid("the round names no coordinator");
  if (auto st = balance::CheckRoundMode(spec.mode); !st.ok()) return st;
  if (!EpochInBounds(spec.epoch, now)) return invalid("epoch must be > 0 and at most a day ahead of this site's clock");
  if (spec.deadline <= absl::UnixEpoch()) return invalid("deadline_unix_ms must be > 0");
  if (spec.dimension < 0 || spec.dimension > 31) return invalid("dimension ", spec.dimension, " outside 0..31");
  std::set<int> faults;
  for (int f : spec.faults) {
    if (f < 0 || int64_t{f} >= (int64_t{1} << spec.dimension))
      return invalid("fault label ", f, " outside the ", spec.dimension, "-cube");
    if (!faults.insert(f).second) return invalid("fault label ", f, " listed twice");
  }
  if (spec.prefix_scan && spec.mode != "exact") return invalid("only mode exact runs by prefix sums, not ", spec.mode);
  return absl::OkStatus();
}

absl::Status CheckRoundRoster(const config::Roster& roster, const std::string& self, const RoundSpec& spec) {
  const int n = roster.Dimension();
  if (spec.dimension != n)
    return absl::InvalidArgumentError(
        absl::StrCat("dimension ", spec.dimension, " but this site's roster makes a ", n, "-cube"));
  const config::RosterEntry* me = roster.FindSite(self);
  if (me && std::find(spec.faults.begin(), spec.faults.end(), me->label) != spec.faults.end())
    return absl::FailedPreconditionError("this site is in the round's fault set");
  return absl::OkStatus();
}

absl::Status CheckReport(const config::Roster& roster, const RoundReport& r) {
  const config::RosterEntry* e = roster.FindSite(r.site);
  if (!e || e->label != r.label)
    return absl::InvalidArgumentError(absl::StrCat("report of ", r.site, ": label ", r.label, " is not its label"));
  if (r.moved_out < 0 || r.shortfall < 0 || r.quota < 0 || r.kept < 0 || r.messages < 0 || r.steps < 0)
    return absl::InvalidArgumentError(absl::StrCat("report of ", r.site, ": negative counts"));
  if (r.error.size() > kMaxReportError)
    return absl::InvalidArgumentError(
        absl::StrCat("report of ", r.site, ": error over ", kMaxReportError, " characters"));
  if (!r.from_journal && !r.not_begun)
    if (auto st = CheckReportedRow(roster, r.label, r.load_before, r.capacity); !st.ok()) return st;
  for (const balance::Transfer& t : r.transfers)
    if (t.count <= 0 || t.from != r.label || t.to < 0 || t.to >= (1 << roster.Dimension()))
      return absl::InvalidArgumentError(absl::StrCat("report of ", r.site, ": malformed transfer"));
  return absl::OkStatus();
}

const char* MessageKindName(MessageKind k) {
  switch (k) {
    case MessageKind::kUp:
      return "up";
    case MessageKind::kExchange:
      return "exchange";
    case MessageKind::kBarrier:
      return "barrier";
    case MessageKind::kDown:
      return "down";
    case MessageKind::kPhaseDone:
      return "phase-done";
    case MessageKind::kScan:
      return "scan";
    case MessageKind::kLookup:
      return "lookup";
  }
  return "?";
}

RoundTimeouts ComputeRoundTimeouts(const config::BalancerConfig& b, const balance::RoundShape& shape) {
  RoundTimeouts t;
  t.step = b.step_timeout;
  // The longest round: a gather of at most 3D sequential steps (T up, k
  // across, T down; D = balance::RoundDepth, n unless faults make T + k
  // deeper) and at most 3D transfer phases, each a step's wait, plus the
  // start and the report.
  t.round = b.step_timeout * (6 * balance::RoundDepth(shape) + 4);
  t.report = b.step_timeout;
  return t;
}

}  // namespace hyperfed::federation
