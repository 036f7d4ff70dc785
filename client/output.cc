#include "client/output.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "daemon/common/text.h"
#include "daemon/protojson/proto_json.h"

namespace hyperfed::client {
namespace {

// Display width: code points, not bytes.
size_t Width(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

// A table cell on one line: control characters show as escapes, so a name
// with a newline cannot break the table.
std::string Cell(const std::string& s) { return TerminalSafe(s); }

// Remote text on one line, safe for a terminal.
std::string OneLine(std::string s) {
  s = absl::StrReplaceAll(s, {{"\r\n", "; "}, {"\n", "; "}, {"\r", "; "}});
  return TerminalSafe(absl::StripAsciiWhitespace(s));
}

std::string Or(const std::string& s, const char* dflt) { return s.empty() ? dflt : s; }

int DimensionOf(const google::protobuf::RepeatedPtrField<v1::SiteStatus>& sites) {
  int max = 0;
  for (const auto& s : sites) max = std::max(max, s.label());
  int n = 0;
  while ((1 << n) <= max && n < 30) ++n;
  return n;
}

std::string Bits(int label, int dimension) {
  std::string b;
  for (int i = dimension - 1; i >= 0; --i) b += ((label >> i) & 1) ? '1' : '0';
  return b;
}

// Positions beyond this are not drawn one by one: a roster that large is a
// mistake the daemon reports elsewhere.
constexpr int kMaxDrawnDimension = 16;

struct Position {
  int label;
  const v1::SiteStatus* site;  // nullptr: empty position
  bool fault;
};

std::vector<Position> Positions(const v1::TopologyReply& r) {
  std::set<int> faults(r.fault_labels().begin(), r.fault_labels().end());
  std::map<int, const v1::SiteStatus*> by_label;
  for (const auto& s : r.sites()) by_label[s.label()] = &s;
  std::vector<Position> out;
  if (r.dimension() >= 0 && r.dimension() <= kMaxDrawnDimension) {
    for (int l = 0; l < (1 << r.dimension()); ++l) {
      auto it = by_label.find(l);
      out.push_back({l, it == by_label.end() ? nullptr : it->second, faults.count(l) > 0});
    }
  }
  // Sites outside the cube (a roster/dimension mismatch) still show.
  for (const auto& [l, s] : by_label)
    if (l < 0 || r.dimension() < 0 || r.dimension() > kMaxDrawnDimension || l >= (1 << r.dimension()))
      out.push_back({l, s, faults.count(l) > 0});
  return out;
}

bool Dashed(const Position& p) { return p.fault || !p.site || p.site->state() == "down"; }

std::string DotQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : TerminalSafeLines(s)) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

// ------------------------------------------------------------------ terminal

std::string TerminalSafe(absl::string_view text) {
  return hyperfed::TerminalSafe(std::string_view(text.data(), text.size()));
}

std::string TerminalSafeLines(absl::string_view s) {
  std::vector<std::string> lines;
  for (absl::string_view l : absl::StrSplit(s, '\n')) lines.push_back(TerminalSafe(l));
  return absl::StrJoin(lines, "\n");
}

// ------------------------------------------------------------------ text

Table::Table(std::vector<std::string> header, std::vector<bool> right_aligned)
    : header_(std::move(header)), right_(std::move(right_aligned)) {
  right_.resize(header_.size(), false);
}

void Table::AddRow(std::vector<std::string> row) {
  row.resize(header_.size());
  for (std::string& c : row) c = Cell(c);
  rows_.push_back(std::move(row));
}

std::string Table::Render() const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) {
    width[c] = Width(header_[c]);
    for (const auto& r : rows_) width[c] = std::max(width[c], Width(r[c]));
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) l += "  ";
      std::string pad(width[c] - Width(cells[c]), ' ');
      l += right_[c] ? pad + cells[c] : cells[c] + (c + 1 < cells.size() ? pad : "");
    }
    out += l + "\n";
  };
  line(header_);
  for (const auto& r : rows_) line(r);
  return out;
}

std::string FormatReal(double v) {
  if (!std::isfinite(v)) return absl::StrCat(v);
  std::string s = absl::StrFormat("%.3f", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

std::string FormatUnixMillis(int64_t ms) {
  if (ms == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%SZ", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

std::string FormatLabel(int label, int dimension) {
  if (dimension <= 0 || dimension > 30) return absl::StrCat(label);
  return absl::StrCat(label, " (", Bits(label, dimension), ")");
}

std::string RpcErrorLine(grpc::StatusCode code, const std::string& message, const std::string& endpoint,
                         absl::Duration timeout) {
  const std::string msg = OneLine(message);
  const std::string lower = absl::AsciiStrToLower(msg);
  switch (code) {
    case grpc::StatusCode::UNAVAILABLE: {
      if (absl::StrContains(lower, "connection refused"))
        return absl::StrCat("cannot reach ", endpoint, ": connection refused (is hyperfedd running?)");
      if (absl::StrContains(lower, "handshake") || absl::StrContains(lower, "ssl") || absl::StrContains(lower, "tls"))
        return absl::StrCat("cannot reach ", endpoint,
                            ": TLS handshake failed (check --ca and --server-name; --insecure for a plain-text "
                            "daemon)");
      if (absl::StrContains(lower, "dns") || absl::StrContains(lower, "resolve"))
        return absl::StrCat("cannot reach ", endpoint, ": cannot resolve the host name");
      if (absl::StrContains(lower, "failed to connect") || absl::StrContains(lower, "socket closed") ||
          absl::StrContains(lower, "connection reset") || absl::StrContains(lower, "connect"))
        return absl::StrCat("cannot reach ", endpoint, ": ", msg.empty() ? "unavailable" : msg);
      return absl::StrCat(endpoint, " is unavailable: ", msg.empty() ? "no reason given" : msg);
    }
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::StrCat("no answer from ", endpoint, " within ", absl::FormatDuration(timeout),
                          " (is hyperfedd running? --timeout gives it longer)");
    case grpc::StatusCode::UNIMPLEMENTED:
      return absl::StrCat(endpoint, " does not serve this call (is it hyperfedd, and the same version?)",
                          msg.empty() ? "" : absl::StrCat(": ", msg));
    case grpc::StatusCode::CANCELLED:
      return absl::StrCat("the call was cancelled", msg.empty() ? "" : absl::StrCat(": ", msg));
    default:
      break;
  }
  if (!msg.empty()) return msg;
  static const char* const kNames[] = {
      "ok",        "cancelled",      "unknown error",     "invalid argument",   "deadline exceeded",
      "not found", "already exists", "permission denied", "resource exhausted", "failed precondition",
      "aborted",   "out of range",   "unimplemented",     "internal error",     "unavailable",
      "data loss", "unauthenticated"};
  int c = static_cast<int>(code);
  return absl::StrCat(endpoint, " refused: ", c >= 0 && c <= 16 ? kNames[c] : absl::StrCat("code ", c).c_str());
}

// ------------------------------------------------------------------ status

std::string StatusText(const v1::StatusReply& r) {
  const int n = DimensionOf(r.sites());
  Table t({"SITE", "LABEL", "STATE", "LOAD", "CAPACITY", "LOAD/CAP", "LAST ROUND"},
          {false, true, false, true, true, true, false});
  for (const auto& s : r.sites())
    t.AddRow({s.site(), FormatLabel(s.label(), n), s.state(), absl::StrCat(s.load()), FormatReal(s.capacity()),
              s.capacity() > 0 ? absl::StrFormat("%.3f", s.load_per_capacity()) : "-", Or(s.last_round(), "-")});
  std::string out = absl::StrCat("answered by ", Or(TerminalSafe(r.site()), "?"), "\n", t.Render(),
                                 "\nalgorithm: ", Or(TerminalSafe(r.algorithm()), "-"), "\n");
  if (r.insecure())
    absl::StrAppend(&out, "WARNING: ", TerminalSafe(r.site()),
                    " runs insecure: true (plain text, peers and operators not authenticated)\n");
  if (r.last_round().empty()) {
    out += "last round: none yet\n";
  } else {
    absl::StrAppend(&out, "last round: ", TerminalSafe(r.last_round()), "\n");
    if (!r.last_round_mode().empty()) absl::StrAppend(&out, "  ran: ", OneLine(r.last_round_mode()), "\n");
    if (!r.last_round_summary().empty()) absl::StrAppend(&out, "  ", OneLine(r.last_round_summary()), "\n");
  }
  return out;
}

std::string StatusJson(const v1::StatusReply& r) { return protojson::Encode(r); }

// ------------------------------------------------------------------ topology

// "X0X1": X for a free dimension, else the base's bit (highest dimension first).
std::string SubcubePattern(const v1::BalancingSubcube& b, int n) {
  std::string p;
  for (int d = n - 1; d >= 0; --d) p += ((b.mask() >> d) & 1) ? 'X' : (((b.base() >> d) & 1) ? '1' : '0');
  return p;
}

std::string TopologyText(const v1::TopologyReply& r) {
  const int n = r.dimension();
  std::vector<std::string> faults;
  for (int f : r.fault_labels()) faults.push_back(FormatLabel(f, n));
  std::string out = absl::StrCat(n, "-cube (", n >= 0 && n <= 30 ? absl::StrCat(1LL << n) : "?", " positions)\n");
  Table t({"LABEL", "SITE", "STATE", "LOAD", "CAPACITY", "FAULT"}, {true, false, false, true, true, false});
  for (const Position& p : Positions(r)) {
    if (p.site)
      t.AddRow({FormatLabel(p.label, n), p.site->site(), p.site->state(), absl::StrCat(p.site->load()),
                FormatReal(p.site->capacity()), p.fault ? "yes" : ""});
    else
      t.AddRow({FormatLabel(p.label, n), "-", "empty", "-", "-", p.fault ? "yes" : ""});
  }
  absl::StrAppend(&out, t.Render(), "\nfault set: ", faults.empty() ? "none" : absl::StrJoin(faults, ", "),
                  "\nmode: ", Or(OneLine(r.mode()), "-"), "\n");
  for (const auto& b : r.subcubes()) {
    absl::StrAppend(&out, "balancing subcube ", SubcubePattern(b, n), " (dimension ", b.dim(), "), tree depth ",
                    b.tree_depth(), "\n");
    for (const auto& e : b.edges())
      absl::StrAppend(&out, "  tree: ", FormatLabel(e.child(), n), " -> ", FormatLabel(e.parent(), n), "\n");
  }
  return out;
}

std::string TopologyDot(const v1::TopologyReply& r) {
  const int n = r.dimension();
  std::vector<Position> pos = Positions(r);
  std::map<int, const Position*> at;
  for (const Position& p : pos) at[p.label] = &p;
  std::string out = "graph hyperfed {\n  node [shape=box];\n";
  for (const Position& p : pos) {
    std::string label = n > 0 && n <= 30 ? Bits(p.label, n) : absl::StrCat(p.label);
    label += p.site ? absl::StrCat("\n", p.site->site(), "\n", p.site->state()) : "\n(empty)";
    if (p.fault) label += "\nfault";
    absl::StrAppend(&out, "  n", p.label, " [label=", DotQuote(label), Dashed(p) ? ", style=dashed" : "", "];\n");
  }
  // Tree edges of the MCWA topology (child -> parent), drawn bold.
  std::set<std::pair<int, int>> tree;
  for (const auto& b : r.subcubes())
    for (const auto& e : b.edges()) tree.insert({std::min(e.child(), e.parent()), std::max(e.child(), e.parent())});
  for (const Position& p : pos) {
    for (int d = 0; d < n && n <= kMaxDrawnDimension; ++d) {
      int q = p.label ^ (1 << d);
      if (q < p.label || !at.count(q)) continue;
      const char* style = Dashed(p) || Dashed(*at[q]) ? " [style=dashed]"
                          : tree.count({p.label, q})  ? " [style=bold, color=blue]"
                                                      : "";
      absl::StrAppend(&out, "  n", p.label, " -- n", q, style, ";\n");
    }
  }
  return out + "}\n";
}

std::string TopologyJson(const v1::TopologyReply& r) { return protojson::Encode(r); }

// ------------------------------------------------------------------ jobs

std::string JobsText(const v1::JobsReply& r) {
  if (r.jobs().empty()) return "no jobs\n";
  Table t({"ID", "KEY", "SITE", "STATE", "NAME", "CORES", "PINNED", "QUEUED"},
          {false, false, false, false, false, true, false, false});
  for (const auto& j : r.jobs())
    t.AddRow({j.id(), Or(j.spec().key(), "-"), j.site(), j.state(), Or(j.spec().name(), "-"),
              absl::StrCat(j.spec().cores()), j.pinned() ? "yes" : "", FormatUnixMillis(j.queued_at_ms())});
  return absl::StrCat(t.Render(), r.jobs_size(), r.jobs_size() == 1 ? " job\n" : " jobs\n");
}

std::string JobsJson(const v1::JobsReply& r) { return protojson::Encode(r); }

// ------------------------------------------------------------------ migrations

std::string MigrationsText(const v1::MigrationsReply& r) {
  if (r.migrations().empty()) return "no migrations\n";
  Table t({"ID", "DIRECTION", "PEER", "STATE", "JOBS", "ROUND", "UPDATED"},
          {false, false, false, false, true, false, false});
  for (const auto& m : r.migrations())
    t.AddRow({m.id(), m.direction(), m.peer(), m.state(), absl::StrCat(m.jobs()), Or(m.round_id(), "-"),
              FormatUnixMillis(m.updated_ms())});
  return t.Render();
}

std::string MigrationsJson(const v1::MigrationsReply& r) { return protojson::Encode(r); }

// ------------------------------------------------------------------ rounds

namespace {

std::string SiteOf(const std::map<int, std::string>& sites, int label) {
  auto it = sites.find(label);
  return it == sites.end() ? absl::StrCat("label ", label) : it->second;
}

const char* RoundResult(const v1::Round& x) { return !x.done() ? "running" : x.ok() ? "finished" : "ended early"; }

}  // namespace

std::string RoundsText(const v1::RoundsReply& r, const std::map<int, std::string>& sites) {
  if (r.rounds().empty()) return absl::StrCat("no rounds recorded at ", r.site(), "\n");
  Table t({"ROUND", "STARTED", "RESULT", "STEPS", "MOVED", "SHARE ERROR", "TRANSFERS"},
          {false, false, false, true, true, false, false});
  for (const v1::Round& x : r.rounds()) {
    std::vector<std::string> moves;
    for (const v1::Transfer& m : x.transfers())
      moves.push_back(absl::StrCat(SiteOf(sites, m.from()), "->", SiteOf(sites, m.to()), " ", m.count()));
    t.AddRow({absl::StrCat(x.round_id(), x.dry_run() ? " (dry run)" : ""), FormatUnixMillis(x.started_ms()),
              RoundResult(x), absl::StrCat(x.steps()), absl::StrCat(x.moved()),
              absl::StrCat(FormatReal(x.max_share_error_before()), " -> ", FormatReal(x.max_share_error_after())),
              moves.empty() ? "none" : absl::StrJoin(moves, ", ")});
  }
  return absl::StrCat("rounds recorded at ", r.site(), ", newest first:\n", t.Render());
}

std::string RoundsJson(const v1::RoundsReply& r) { return protojson::Encode(r); }

// ------------------------------------------------------------------ balance

namespace {

struct BalanceRow {
  std::string site;
  int label;
  double capacity;
  int64_t before, after;
  bool has_before, has_after;
};

std::vector<BalanceRow> BalanceRows(const v1::RoundEvent& e, const std::map<int, std::string>& sites) {
  std::map<int, BalanceRow> rows;
  auto row = [&](int label) -> BalanceRow& {
    auto it = rows.find(label);
    if (it != rows.end()) return it->second;
    auto s = sites.find(label);
    return rows[label] = BalanceRow{s == sites.end() ? "-" : s->second, label, 0, 0, 0, false, false};
  };
  for (const auto& b : e.before()) {
    BalanceRow& r = row(b.label());
    r.capacity = b.capacity();
    r.before = b.load();
    r.has_before = true;
  }
  for (const auto& a : e.after()) {
    BalanceRow& r = row(a.label());
    if (!r.has_before) r.capacity = a.capacity();
    r.after = a.load();
    r.has_after = true;
  }
  std::vector<BalanceRow> out;
  for (auto& [l, r] : rows) out.push_back(r);
  return out;
}

}  // namespace

std::string BalanceEventText(const v1::RoundEvent& e) {
  std::string out;
  for (absl::string_view l : absl::StrSplit(e.message(), '\n', absl::SkipWhitespace()))
    absl::StrAppend(&out, TerminalSafe(l), "\n");
  return out;
}

std::string BalanceResultText(const v1::RoundEvent& e, const std::map<int, std::string>& sites) {
  std::string out = absl::StrCat("\nround ", TerminalSafe(e.round_id()), e.ok() ? " finished" : " ended early", "\n");
  Table t({"SITE", "LABEL", "CAPACITY", "LOAD BEFORE", "LOAD AFTER"}, {false, true, true, true, true});
  for (const BalanceRow& r : BalanceRows(e, sites))
    t.AddRow({r.site, absl::StrCat(r.label), FormatReal(r.capacity), r.has_before ? absl::StrCat(r.before) : "-",
              r.has_after ? absl::StrCat(r.after) : "-"});
  absl::StrAppend(&out, t.Render(), "\nmoved ", e.moved(), e.moved() == 1 ? " job" : " jobs", " in ", e.steps(),
                  e.steps() == 1 ? " step" : " steps", ", ", e.messages(), e.messages() == 1 ? " message" : " messages",
                  "\nmax share error: ", FormatReal(e.max_share_error_before()), " -> ",
                  FormatReal(e.max_share_error_after()), "\n");
  if (!e.transfers().empty()) {
    out += "transfers:\n";
    for (const auto& x : e.transfers())
      absl::StrAppend(&out, "  step ", x.step(), ": ", x.from(), " -> ", x.to(), ": ", x.count(),
                      x.count() == 1 ? " job\n" : " jobs\n");
  }
  return out;
}

std::string BalanceEventJson(const v1::RoundEvent& e, const std::map<int, std::string>& sites) {
  protojson::Json j = protojson::ToJson(e);
  if (e.final()) {
    // RoundEvent has the loads by label, before and after apart; people and
    // scripts want them side by side, with each site's name.
    protojson::Json table = protojson::Json::array();
    for (const BalanceRow& r : BalanceRows(e, sites)) {
      table.push_back({{"site", r.site},
                       {"label", r.label},
                       {"capacity", r.capacity},
                       {"load_before", r.has_before ? protojson::Json(r.before) : protojson::Json()},
                       {"load_after", r.has_after ? protojson::Json(r.after) : protojson::Json()}});
    }
    j["table"] = std::move(table);
  }
  return protojson::Dump(j) + "\n";
}

// ------------------------------------------------------------------ waits

std::string FormatWait(int64_t ms) {
  if (ms < 1000) return absl::StrCat(std::max<int64_t>(ms, 0), "ms");
  return absl::FormatDuration(absl::Seconds((ms + 500) / 1000));
}

std::string WaitsText(const v1::WaitsReply& r) {
  std::string out =
      absl::StrCat("jobs started at ", TerminalSafe(r.site()), " in the last ", r.hours_size(), " hours: ");
  if (r.started() == 0)
    absl::StrAppend(&out, "none\n");
  else
    absl::StrAppend(&out, r.started(), ", waited p50 ", FormatWait(r.p50_ms()), ", p95 ", FormatWait(r.p95_ms()), "\n");
  Table t({"HOUR", "STARTED", "P50", "P95"}, {false, true, true, true});
  for (const v1::WaitHour& h : r.hours())
    t.AddRow({FormatUnixMillis(h.start_ms()), absl::StrCat(h.started()), h.started() ? FormatWait(h.p50_ms()) : "-",
              h.started() ? FormatWait(h.p95_ms()) : "-"});
  absl::StrAppend(&out, t.Render());
  const v1::PlacementRecord& p = r.placement();
  absl::StrAppend(&out, "placement at arrival: ", p.enabled() ? "on" : "off", "; since start ", p.placed(),
                  " jobs placed at peers, ", p.kept(), " kept here, ", p.failed(), " not moved (", p.passes(),
                  " passes)\n");
  if (p.to_size() > 0) {
    Table to({"PLACED AT", "JOBS"}, {false, true});
    for (const v1::PlacedAt& a : p.to()) to.AddRow({a.site(), absl::StrCat(a.jobs())});
    absl::StrAppend(&out, to.Render());
  }
  return out;
}

std::string WaitsJson(const v1::WaitsReply& r) { return protojson::Encode(r); }

// ------------------------------------------------------------------ submit, health

std::string SubmitText(const v1::SubmitReply& r) {
  constexpr int kListed = 20;  // beyond this, the ids are summarised (--json lists them all)
  Table t({"ID", "KEY"});
  for (int i = 0; i < r.ids_size() && i < kListed; ++i) t.AddRow({r.ids(i), i < r.keys_size() ? r.keys(i) : "-"});
  std::string more;
  if (r.ids_size() > kListed)
    more = absl::StrCat("... and ", r.ids_size() - kListed, " more (ids up to ", TerminalSafe(r.ids(r.ids_size() - 1)),
                        "; --json lists every id and key)\n");
  return absl::StrCat("submitted ", r.ids_size(), r.ids_size() == 1 ? " job\n" : " jobs\n", t.Render(), more);
}

std::string SubmitJson(const v1::SubmitReply& r) { return protojson::Encode(r); }

std::string ExplainJson(const v1::ExplainJobReply& r) { return protojson::Encode(r); }

std::string DrainJson(const std::string& site, bool drained) {
  return protojson::Dump({{"site", site}, {"drained", drained}}) + "\n";
}

std::string ForceReleaseJson(const std::string& migration_id, const v1::ForceReleaseReply& r) {
  protojson::Json j = {{"migration_id", migration_id}};
  j.update(protojson::ToJson(r));
  return protojson::Dump(j) + "\n";
}

std::string HealthText(const std::string& endpoint, const std::vector<HealthRow>& rows) {
  Table t({"SERVICE", "STATUS"});
  for (const HealthRow& r : rows) t.AddRow({r.service.empty() ? "(server)" : r.service, r.status});
  return absl::StrCat(endpoint, "\n", t.Render());
}

std::string HealthJson(const std::string& endpoint, const std::vector<HealthRow>& rows) {
  bool serving = !rows.empty();
  protojson::Json services = protojson::Json::array();
  for (const HealthRow& r : rows) {
    services.push_back({{"service", r.service}, {"status", r.status}});
    serving = serving && r.status == "SERVING";
  }
  return protojson::Dump({{"endpoint", endpoint}, {"services", std::move(services)}, {"serving", serving}}) + "\n";
}

}  // namespace hyperfed::client
