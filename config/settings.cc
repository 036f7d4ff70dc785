#include "config/settings.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "config/rules.h"
#include "daemon/balance/choice.h"
#include "daemon/balance/modes.h"
#include "yaml-cpp/yaml.h"

namespace hyperfed::config {
namespace {

// A row's parts from a member pointer: the builders below give each kind of
// value its reading, spelling and rule.
template <typename S, typename T>
Setting<S> Row(absl::string_view name, T S::*m, absl::string_view type, Change change, absl::string_view doc,
               absl::string_view example) {
  Setting<S> s;
  s.name = name;
  s.type = type;
  s.change = change;
  s.doc = doc;
  s.example = example;
  s.member = [m](const S& x) -> const void* { return &(x.*m); };
  s.check = [](const S&) { return std::string(); };
  return s;
}

template <typename S>
Setting<S> String(absl::string_view name, std::string S::*m, Change change, absl::string_view doc,
                  absl::string_view example, std::function<std::string(const std::string&)> rule = nullptr) {
  Setting<S> s = Row(name, m, "a string", change, doc, example);
  s.parse = [m](std::string_view text, S* x) {
    x->*m = std::string(text);
    return std::string();
  };
  s.format = [m](const S& x) { return x.*m; };
  if (rule) s.check = [m, rule](const S& x) { return rule(x.*m); };
  return s;
}

// An integer in [lo, hi].
template <typename S, typename Int>
Setting<S> Integer(absl::string_view name, Int S::*m, int64_t lo, int64_t hi, Change change, absl::string_view doc,
                   absl::string_view example) {
  Setting<S> s = Row(name, m, "an integer", change, doc, example);
  s.parse = [m](std::string_view text, S* x) {
    Int v;
    if (!absl::SimpleAtoi(std::string(text), &v))
      return absl::StrCat("expected an integer, got ", Quote(std::string(text)));
    x->*m = v;
    return std::string();
  };
  s.format = [m](const S& x) { return absl::StrCat(x.*m); };
  s.check = [m, lo, hi](const S& x) {
    const int64_t v = x.*m;
    if (v >= lo && v <= hi) return std::string();
    if (hi == std::numeric_limits<int64_t>::max()) return absl::StrCat("must be >= ", lo, ", got ", v);
    return absl::StrCat("must be in ", lo, "..", hi, ", got ", v);
  };
  return s;
}

// A finite number.
template <typename S>
Setting<S> Number(absl::string_view name, double S::*m, Change change, absl::string_view doc,
                  absl::string_view example) {
  Setting<S> s = Row(name, m, "a number", change, doc, example);
  s.parse = [m](std::string_view text, S* x) {
    double v;
    if (!absl::SimpleAtod(std::string(text), &v) || !std::isfinite(v))
      return absl::StrCat("expected a number, got ", Quote(std::string(text)));
    x->*m = v;
    return std::string();
  };
  s.format = [m](const S& x) {
    const double v = x.*m;
    // Whole numbers as written ("1000000", not "1e+06").
    if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrCat(static_cast<int64_t>(v));
    return absl::StrCat(v);
  };
  return s;
}

// A finite number > 0.
template <typename S>
Setting<S> Positive(absl::string_view name, double S::*m, Change change, absl::string_view doc,
                    absl::string_view example) {
  Setting<S> s = Number(name, m, change, doc, example);
  s.check = [m](const S& x) {
    if (x.*m > 0 && std::isfinite(x.*m)) return std::string();
    return absl::StrCat("must be a finite number > 0, got ", x.*m);
  };
  return s;
}

template <typename S>
Setting<S> Bool(absl::string_view name, bool S::*m, Change change, absl::string_view doc, absl::string_view example) {
  Setting<S> s = Row(name, m, "true or false", change, doc, example);
  s.parse = [m](std::string_view text, S* x) {
    bool v;
    if (!YAML::convert<bool>::decode(YAML::Node(std::string(text)), v))
      return absl::StrCat("expected true or false, got ", Quote(std::string(text)));
    x->*m = v;
    return std::string();
  };
  s.format = [m](const S& x) { return std::string(x.*m ? "true" : "false"); };
  return s;
}

enum class Bound {
  kZeroOrMore,
  kPositive,
  kMillisecond,  // at least 1ms
};

template <typename S>
Setting<S> Duration(absl::string_view name, absl::Duration S::*m, Bound bound, Change change, absl::string_view doc,
                    absl::string_view example) {
  Setting<S> s = Row(name, m, "a duration", change, doc, example);
  s.parse = [m](std::string_view text, S* x) {
    absl::Duration v;
    if (!absl::ParseDuration(std::string(text), &v))
      return absl::StrCat("expected a duration like \"30s\", \"500ms\" or \"2m\", got ", Quote(std::string(text)));
    x->*m = v;
    return std::string();
  };
  s.format = [m](const S& x) { return absl::FormatDuration(x.*m); };
  s.check = [m, bound](const S& x) {
    const absl::Duration d = x.*m;
    if (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) return std::string("must be finite");
    const bool positive = bound != Bound::kZeroOrMore;
    if (positive ? d <= absl::ZeroDuration() : d < absl::ZeroDuration())
      return absl::StrCat("must be ", positive ? "> 0" : ">= 0", ", got ", absl::FormatDuration(d));
    if (bound == Bound::kMillisecond && d < absl::Milliseconds(1)) return std::string("must be at least 1ms");
    return std::string();
  };
  return s;
}

// One of a fixed set of names, read by `parse` (whose error lists them) and
// spelled by `spell`.
template <typename S, typename T>
Setting<S> Named(absl::string_view name, T S::*m, absl::string_view names, absl::StatusOr<T> (*parse)(std::string_view),
                 std::string (*spell)(const T&), Change change, absl::string_view doc, absl::string_view example) {
  Setting<S> s = Row(name, m, names, change, doc, example);
  s.parse = [m, parse](std::string_view text, S* x) {
    absl::StatusOr<T> v = parse(text);
    if (!v.ok()) return std::string(v.status().message());
    x->*m = *v;
    return std::string();
  };
  s.format = [m, spell](const S& x) { return spell(x.*m); };
  return s;
}

template <typename S>
Setting<S> WithCheck(Setting<S> s, std::function<std::string(const S&)> check) {
  s.check = std::move(check);
  return s;
}

template <typename S>
Setting<S> Required(Setting<S> s) {
  s.required = true;
  return s;
}

absl::StatusOr<const balance::RoundMode*> ParseMode(std::string_view name) {
  if (auto st = balance::CheckRoundMode(name); !st.ok()) return st;
  return balance::FindRoundMode(name);
}
std::string ModeName(const balance::RoundMode* const& m) { return m ? std::string(m->name()) : std::string(); }
std::string ChoiceName(const balance::JobChoice& c) { return std::string(balance::JobChoiceName(c)); }
std::string WebName(const WebAccess& w) { return std::string(WebAccessName(w)); }
std::string LevelName(const LogLevel& l) { return std::string(LogLevelName(l)); }
std::string FormatName(const LogFormat& f) { return std::string(LogFormatName(f)); }

constexpr int64_t kMaxBatch = 100000;
constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

}  // namespace

absl::StatusOr<WebAccess> ParseWebAccess(std::string_view name) {
  if (name == "loopback") return WebAccess::kLoopback;
  if (name == "on") return WebAccess::kOn;
  if (name == "off") return WebAccess::kOff;
  return absl::InvalidArgumentError(absl::StrCat(Quote(std::string(name)), ": expected loopback, on or off"));
}

std::string_view WebAccessName(WebAccess w) {
  switch (w) {
    case WebAccess::kOn:
      return "on";
    case WebAccess::kOff:
      return "off";
    case WebAccess::kLoopback:
      break;
  }
  return "loopback";
}

// Comma-separated host names (site.web_hosts): "" or why not.
std::string HostNamesProblem(const std::string& list) {
  for (absl::string_view h : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    h = absl::StripAsciiWhitespace(h);
    const bool ok = !h.empty() && h.size() <= 253 && std::all_of(h.begin(), h.end(), [](char ch) {
      return absl::ascii_isalnum(ch) || ch == '.' || ch == '-';
    });
    if (!ok) return absl::StrCat(Quote(h), ": expected host names separated by commas");
  }
  return "";
}

std::string BindProblem(const std::string& s) { return CheckHostPort(s, true); }
std::string EndpointProblem(const std::string& s) { return CheckHostPort(s, false); }
std::string OptionalBindProblem(const std::string& s) { return s.empty() ? "" : CheckHostPort(s, true); }

const std::vector<Setting<SiteConfig>>& SiteSettings() {
  using S = SiteConfig;
  static const auto* t = new std::vector<Setting<S>>{
      Required(String<S>("id", &S::id, Change::kRestart, "unique in the roster, [A-Za-z0-9._-], at most 64 characters",
                         "site-z", IdProblem)),
      Integer<S>("label", &S::label, 0, kMaxLabel - 1, Change::kRestart,
                 "hypercube label: sites near each other share small subcubes", "1"),
      Required(String<S>("listen", &S::listen, Change::kRestart, "host:port the gRPC server binds", "127.0.0.1:7999",
                         BindProblem)),
      String<S>("advertise", &S::advertise, Change::kRestart, "host:port peers dial (default: listen)",
                "127.0.0.1:7998", EndpointProblem),
      String<S>("metrics_listen", &S::metrics_listen, Change::kRestart,
                "host:port of the Prometheus endpoint and the web view (\"\" = off)", "127.0.0.1:9998",
                OptionalBindProblem),
      Named<S>("web", &S::web, "loopback, on or off", ParseWebAccess, WebName, Change::kRestart,
               "who the web view answers: clients on this machine, any client, none (\"Web view\")", "off"),
      String<S>("web_hosts", &S::web_hosts, Change::kRestart,
                "host names the web view answers to besides IP addresses and localhost, comma-separated",
                "hyperfed.example", HostNamesProblem),
  };
  return *t;
}

const std::vector<Setting<CapacityConfig>>& CapacitySettings() {
  using S = CapacityConfig;
  static const auto* t = new std::vector<Setting<S>>{
      Required(Integer<S>("units", &S::units, 1, kNoLimit, Change::kRestart,
                          "cores (or other units) of this site; capacity = units x speed", "64")),
      Positive<S>("speed", &S::speed, Change::kRestart, "speed factor of a unit (default 1)", "1.5"),
  };
  return *t;
}

const std::vector<Setting<BalancerConfig>>& BalancerSettings() {
  using S = BalancerConfig;
  static const auto* t = new std::vector<Setting<S>>{
      WithCheck<S>(Named<S>("algorithm", &S::algorithm, "exact, improved-dem or mcwa", ParseMode, ModeName,
                            Change::kLive, "the round mode (docs/design.md §5)", "improved-dem"),
                   [](const S& x) { return std::string(x.algorithm ? "" : "must name a round mode"); }),
      Duration<S>("interval", &S::interval, Bound::kZeroOrMore, Change::kLive,
                  "timer rounds, when the max share error >= min_imbalance; 0 = off", "1m"),
      Integer<S>("underload_threshold", &S::underload_threshold, 0, kNoLimit, Change::kLive,
                 "a site with fewer pending jobs asks for a round; 0 = off", "5"),
      Integer<S>("min_imbalance", &S::min_imbalance, 0, kNoLimit, Change::kLive,
                 "a timer round is skipped while the max share error is below this", "3"),
      Duration<S>("heartbeat_interval", &S::heartbeat_interval, Bound::kPositive, Change::kLive,
                  "how often a site tells every peer its load, capacity and start profile", "2s"),
      Duration<S>("peer_timeout", &S::peer_timeout, Bound::kPositive, Change::kLive,
                  "no heartbeat for this long: the peer is down", "7s"),
      Duration<S>("step_timeout", &S::step_timeout, Bound::kPositive, Change::kLive,
                  "a round step waits this long for a peer", "20s"),
      Integer<S>("max_batch", &S::max_batch, 1, kMaxBatch, Change::kRestart,
                 "jobs per Transfer call (and the most a peer may send)", "500"),
      Named<S>("job_choice", &S::job_choice, "gain or newest", balance::ParseJobChoice, ChoiceName, Change::kRestart,
               "which jobs a round moves: those that gain most, or the most recently queued", "newest"),
      Duration<S>("hysteresis", &S::hysteresis, Bound::kZeroOrMore, Change::kRestart,
                  "a job that arrived by a move this recently moves again only to start placement_margin sooner", "5m"),
      Bool<S>("placement", &S::placement, Change::kLive,
              "place each new job where it starts first; false: place nothing and take no placed job", "false"),
      Duration<S>("placement_margin", &S::placement_margin, Bound::kMillisecond, Change::kRestart,
                  "a job moves only to start at least this much sooner", "2m"),
  };
  return *t;
}

const std::vector<Setting<SecurityConfig>>& SecuritySettings() {
  using S = SecurityConfig;
  static const auto* t = new std::vector<Setting<S>>{
      Bool<S>("insecure", &S::insecure, Change::kRestart,
              "plain text, no authentication: local demos only, on loopback addresses only", ""),
      String<S>("cert", &S::cert, Change::kRestart, "PEM: this site's certificate (names its site id)", ""),
      String<S>("key", &S::key, Change::kRestart, "PEM: its private key (mode 0600)", ""),
      String<S>("ca", &S::ca, Change::kRestart, "PEM: the federation's CA", ""),
      String<S>("admin_token_file", &S::admin_token_file, Change::kRestart,
                "file holding the operators' bearer token (mode 0600)", ""),
      Bool<S>("reflection", &S::reflection, Change::kRestart, "serve gRPC reflection", "true"),
      String<S>("roster_key", &S::roster_key, Change::kRestart,
                "PEM: the operators' public key; rosters they sign replace the YAML's", ""),
      Integer<S>("max_calls_per_peer", &S::max_calls_per_peer, 1, 10000, Change::kRestart,
                 "Peer calls in flight per calling site; beyond: RESOURCE_EXHAUSTED", "32"),
      Integer<S>("max_threads", &S::max_threads, 8, 10000, Change::kRestart, "gRPC handler threads", "128"),
  };
  return *t;
}

const std::vector<Setting<LogOptions>>& LogSettings() {
  using S = LogOptions;
  static const auto* t = new std::vector<Setting<S>>{
      Named<S>("level", &S::level, "debug, info, warning or error", ParseLogLevel, LevelName, Change::kRestart,
               "that level and above", "debug"),
      Named<S>("format", &S::format, "text or json", ParseLogFormat, FormatName, Change::kRestart,
               "json: one JSON object per line (\"Logs\")", "json"),
  };
  return *t;
}

const std::vector<Setting<RosterEntry>>& RosterEntrySettings() {
  using S = RosterEntry;
  static const auto* t = new std::vector<Setting<S>>{
      Required(String<S>("id", &S::id, Change::kRestart, "the site's id", "")),
      Required(Integer<S>("label", &S::label, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(),
                          Change::kRestart, "its hypercube label", "")),
      Required(String<S>("endpoint", &S::endpoint, Change::kRestart, "host:port its peers dial", "")),
      Integer<S>("cost", &S::cost, std::numeric_limits<int64_t>::min(), kNoLimit, Change::kRestart,
                 "reserved: checked (>= 0), not used yet", ""),
      Number<S>("max_capacity", &S::max_capacity, Change::kRestart,
                "the most capacity it may report; peers refuse more (docs/security.md)", ""),
      Bool<S>("drained", &S::drained, Change::kRestart, "capacity 0: its pending jobs leave", ""),
  };
  return *t;
}

const std::vector<Setting<Seed>>& SeedSettings() {
  using S = Seed;
  static const auto* t = new std::vector<Setting<S>>{
      Required(String<S>("id", &S::id, Change::kRestart, "a site of the federation (its certificate names it)", "",
                         IdProblem)),
      Required(
          String<S>("endpoint", &S::endpoint, Change::kRestart, "host:port where it answers", "", EndpointProblem)),
  };
  return *t;
}

namespace {

// `on_sighup`: what the column says for every row ("" = each row's Change).
template <typename S>
void AppendRows(std::string* out, absl::string_view section, const std::vector<Setting<S>>& table,
                absl::string_view on_sighup = "") {
  static const S defaults{};
  for (const Setting<S>& s : table) {
    std::string def = s.required ? std::string("(required)") : s.format(defaults);
    if (def.empty()) def = "\"\"";
    const absl::string_view change = !on_sighup.empty() ? on_sighup : s.change == Change::kLive ? "at once" : "restart";
    absl::StrAppend(out, "| `", section, ".", s.name, "` | ", s.type, " | `", def, "` | ", change, " | ", s.doc,
                    " |\n");
  }
}

template <typename S>
void Diff(std::vector<SettingChange>* out, absl::string_view section, const std::vector<Setting<S>>& table,
          const S& before, const S& after) {
  for (const Setting<S>& s : table) {
    std::string from = s.format(before), to = s.format(after);
    if (from != to) out->push_back({absl::StrCat(section, ".", s.name), std::move(from), std::move(to), s.change});
  }
}

}  // namespace

std::string SettingsReference() {
  std::string out =
      "| key | value | default | on SIGHUP | what it sets |\n"
      "| --- | --- | --- | --- | --- |\n";
  AppendRows(&out, "site", SiteSettings());
  AppendRows(&out, "capacity", CapacitySettings());
  AppendRows(&out, "balancer", BalancerSettings());
  AppendRows(&out, "security", SecuritySettings());
  AppendRows(&out, "log", LogSettings());
  AppendRows(&out, "roster[]", RosterEntrySettings(), "restart; a running federation: `hyperfedctl roster`");
  AppendRows(&out, "seeds[]", SeedSettings());
  return out;
}

std::vector<SettingChange> ChangedSettings(const Config& before, const Config& after) {
  std::vector<SettingChange> out;
  Diff(&out, "site", SiteSettings(), before.site, after.site);
  if (before.capacity.from_adapter != after.capacity.from_adapter)
    out.push_back({"capacity", before.capacity.from_adapter ? "from_adapter" : "units",
                   after.capacity.from_adapter ? "from_adapter" : "units", Change::kRestart});
  Diff(&out, "capacity", CapacitySettings(), before.capacity, after.capacity);
  Diff(&out, "balancer", BalancerSettings(), before.balancer, after.balancer);
  Diff(&out, "security", SecuritySettings(), before.security, after.security);
  Diff(&out, "log", LogSettings(), before.log, after.log);
  return out;
}

}  // namespace hyperfed::config
