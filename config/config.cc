#include "config/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "daemon/balance/modes.h"
#include "yaml-cpp/yaml.h"

namespace hyperfed::config {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxLabel = 1 << 20;                     // labels are < 2^20
constexpr char kAdminCommonName[] = "hyperfed-admin";  // scripts/gen-certs' admin.pem
constexpr int64_t kMaxBatch = 100000;
constexpr size_t kMaxIdLength = 64;
constexpr size_t kMaxErrors = 20;                  // more would bury the first one
constexpr std::uintmax_t kMaxFileBytes = 1 << 20;  // a site config is a few hundred bytes

const char* const kTopKeys[] = {"site",     "roster",    "seeds",     "federation", "capacity",
                                "balancer", "scheduler", "state_dir", "security",   "log"};
const char* const kSiteKeys[] = {"id", "label", "listen", "advertise", "metrics_listen", "web", "web_hosts"};
const char* const kRosterKeys[] = {"id", "label", "endpoint", "cost", "max_capacity", "drained"};
const char* const kSeedKeys[] = {"id", "endpoint"};
const char* const kCapacityKeys[] = {"units", "speed"};
const char* const kBalancerKeys[] = {"algorithm",          "interval",     "underload_threshold", "min_imbalance",
                                     "heartbeat_interval", "peer_timeout", "step_timeout",        "max_batch",
                                     "job_choice",         "hysteresis",   "placement",           "placement_margin"};
const char* const kSchedulerKeys[] = {"adapter", "options"};
const char* const kSecurityKeys[] = {"insecure",         "cert",       "key",        "ca",
                                     "admin_token_file", "reflection", "roster_key", "max_calls_per_peer",
                                     "max_threads"};
const char* const kLogKeys[] = {"level", "format"};

// A broken rule: the key path it concerns ("roster[2].endpoint") and why.
struct Issue {
  std::string key;
  std::string message;
};

std::string Quote(const std::string& s) { return absl::StrCat("\"", absl::CEscape(s), "\""); }

std::string Join(const char* const* begin, const char* const* end) { return absl::StrJoin(begin, end, ", "); }

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t subst = prev[j - 1] + (absl::ascii_tolower(a[i - 1]) == absl::ascii_tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
      // A swap of neighbours ("kye") is one typo, not two.
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    prev2 = prev;
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// The allowed key nearest to `key`, or "" when none is close enough to be a
// likely typo (a third of the key's length, at least 1, at most 3 edits).
std::string Nearest(const std::string& key, const char* const* begin, const char* const* end) {
  size_t limit = std::clamp<size_t>(key.size() / 3, 1, 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (auto it = begin; it != end; ++it) {
    size_t d = EditDistance(key, *it);
    if (d < best_distance) {
      best_distance = d;
      best = *it;
    }
  }
  return best;
}

bool ValidId(const std::string& id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  return std::all_of(id.begin(), id.end(),
                     [](char ch) { return absl::ascii_isalnum(ch) || ch == '.' || ch == '_' || ch == '-'; });
}

// Checks "host:port" (IPv6 hosts in brackets). A bind address may use port 0
// (the kernel picks one, which tests use); a dialled endpoint may not.
// Returns "" when fine, else the reason.
std::string CheckHostPort(const std::string& s, bool allow_port_zero) {
  std::string expected = absl::StrCat("expected host:port, got ", Quote(s));
  std::string host, port;
  if (!s.empty() && s[0] == '[') {
    size_t close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      return expected;
    }
    host = s.substr(1, close - 1);
    port = s.substr(close + 2);
  } else {
    size_t colon = s.rfind(':');
    if (colon == std::string::npos) return expected;
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
    // An unbracketed IPv6 address is ambiguous ("::1:7001").
    if (host.find(':') != std::string::npos) return expected;
  }
  if (host.empty() || port.empty()) return expected;
  bool host_ok = std::all_of(host.begin(), host.end(), [](char ch) {
    return absl::ascii_isalnum(ch) || ch == '.' || ch == '-' || ch == '_' || ch == ':' || ch == '%';
  });
  if (!host_ok) return absl::StrCat("bad host in ", Quote(s));
  bool digits = std::all_of(port.begin(), port.end(), [](char ch) { return absl::ascii_isdigit(ch); });
  int value = 0;
  if (!digits || port.size() > 5 || !absl::SimpleAtoi(port, &value)) {
    return absl::StrCat("port must be a number, got ", Quote(s));
  }
  int low = allow_port_zero ? 0 : 1;
  if (value < low || value > 65535) {
    return absl::StrCat("port ", value, " is out of range ", low, "..65535 in ", Quote(s));
  }
  return "";
}

// "" when `path` is a regular file this process can read, else the reason.
std::string CheckReadableFile(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return absl::StrCat(Quote(path), " does not exist");
  if (!fs::is_regular_file(st)) return absl::StrCat(Quote(path), " is not a regular file");
  if (::access(path.c_str(), R_OK) != 0) {
    return absl::StrCat(Quote(path), " is not readable: ", std::strerror(errno));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::StrCat(Quote(path), " cannot be opened");
  return "";
}

// The host of "host:port" or "[v6]:port", without brackets.
std::string HostOf(const std::string& s) {
  if (!s.empty() && s[0] == '[') {
    size_t close = s.find(']');
    return close == std::string::npos ? "" : s.substr(1, close - 1);
  }
  size_t colon = s.rfind(':');
  return colon == std::string::npos ? s : s.substr(0, colon);
}

// "" when `id` may name a site, else why not.
std::string IdProblem(const std::string& id) {
  if (!ValidId(id))
    return absl::StrCat("site id must be 1 to ", kMaxIdLength, " characters of [A-Za-z0-9._-], got ", Quote(id));
  // The operator certificate's CN: a site of that name could pass as the
  // operator, or the operator's certificate as the site.
  if (id == kAdminCommonName) return absl::StrCat(Quote(id), " is reserved for the operator's certificate");
  return "";
}

std::string LabelProblem(int label) {
  if (label < 0 || label >= kMaxLabel) return absl::StrCat("label must be in 0..", kMaxLabel - 1, ", got ", label);
  return "";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> RosterProblems(const std::vector<RosterEntry>& sites,
                                                                const std::string& prefix) {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](std::string key, std::string message) { out.emplace_back(std::move(key), std::move(message)); };
  std::map<std::string, size_t> by_id, by_endpoint;
  std::map<int, size_t> by_label;
  for (size_t i = 0; i < sites.size(); ++i) {
    const RosterEntry& e = sites[i];
    std::string k = absl::StrCat(prefix, "[", i, "]");
    if (std::string m = IdProblem(e.id); !m.empty()) add(k + ".id", m);
    if (std::string m = LabelProblem(e.label); !m.empty()) add(k + ".label", m);
    if (std::string m = CheckHostPort(e.endpoint, false); !m.empty()) add(k + ".endpoint", m);
    if (e.cost < 0) add(k + ".cost", absl::StrCat("cost must be >= 0, got ", e.cost));
    if (!(e.max_capacity > 0) || !std::isfinite(e.max_capacity))
      add(k + ".max_capacity", absl::StrCat("max_capacity must be finite and > 0, got ", e.max_capacity));
    if (auto [it, fresh] = by_id.emplace(e.id, i); !fresh)
      add(k + ".id", absl::StrCat("duplicate site id ", Quote(e.id), " (also ", prefix, "[", it->second, "])"));
    if (auto [it, fresh] = by_label.emplace(e.label, i); !fresh)
      add(k + ".label", absl::StrCat("duplicate label ", e.label, " (also ", prefix, "[", it->second, "], ",
                                     Quote(sites[it->second].id), ")"));
    if (auto [it, fresh] = by_endpoint.emplace(e.endpoint, i); !fresh)
      add(k + ".endpoint",
          absl::StrCat("duplicate endpoint ", Quote(e.endpoint), " (also ", prefix, "[", it->second, "])"));
  }
  return out;
}

namespace {

std::vector<Issue> CheckRules(const Config& c) {
  std::vector<Issue> issues;
  auto add = [&](std::string key, std::string message) { issues.push_back({std::move(key), std::move(message)}); };
  auto check_label = [&](const std::string& key, int label) {
    if (std::string m = LabelProblem(label); !m.empty()) add(key, m);
  };
  auto check_id = [&](const std::string& key, const std::string& id) {
    if (std::string m = IdProblem(id); !m.empty()) add(key, m);
  };

  // site
  check_id("site.id", c.site.id);
  check_label("site.label", c.site.label);
  if (std::string e = CheckHostPort(c.site.listen, true); !e.empty()) add("site.listen", e);
  if (std::string e = CheckHostPort(c.site.advertise, false); !e.empty()) {
    add("site.advertise", e);
  }
  if (!c.site.metrics_listen.empty()) {
    if (std::string e = CheckHostPort(c.site.metrics_listen, true); !e.empty()) {
      add("site.metrics_listen", e);
    }
  }
  if (c.site.web != "loopback" && c.site.web != "on" && c.site.web != "off")
    add("site.web", absl::StrCat(Quote(c.site.web), ": expected loopback, on or off"));
  for (absl::string_view h : absl::StrSplit(c.site.web_hosts, ',', absl::SkipWhitespace()))
    if (h = absl::StripAsciiWhitespace(h); h.empty() || h.size() > 253 || !std::all_of(h.begin(), h.end(), [](char ch) {
                                             return absl::ascii_isalnum(ch) || ch == '.' || ch == '-';
                                           }))
      add("site.web_hosts", absl::StrCat(Quote(std::string(h)), ": expected host names separated by commas"));

  if (!ValidId(c.federation))
    add("federation",
        absl::StrCat("must be 1 to ", kMaxIdLength, " characters of [A-Za-z0-9._-], got ", Quote(c.federation)));

  // roster
  if (c.roster.sites.empty() && c.seeds.empty())
    add("roster", "must list every site, this one included (or give seeds to fetch it from)");
  for (auto& [key, why] : RosterProblems(c.roster.sites, "roster")) add(key, why);
  for (size_t i = 0; i < c.seeds.size(); ++i) {
    std::string k = absl::StrCat("seeds[", i, "]");
    check_id(k + ".id", c.seeds[i].id);
    if (std::string m = CheckHostPort(c.seeds[i].endpoint, false); !m.empty()) add(k + ".endpoint", m);
  }
  std::map<std::string, size_t> by_id;
  for (size_t i = 0; i < c.roster.sites.size(); ++i) by_id.emplace(c.roster.sites[i].id, i);
  if (!c.roster.sites.empty() && !c.site.id.empty()) {
    auto it = by_id.find(c.site.id);
    if (it == by_id.end()) {
      add("roster", absl::StrCat("this site ", Quote(c.site.id), " (site.id) is not in the roster"));
    } else {
      const RosterEntry& self = c.roster.sites[it->second];
      std::string k = absl::StrCat("roster[", it->second, "]");
      if (self.label != c.site.label) {
        add(k + ".label",
            absl::StrCat("this site has label ", self.label, " in the roster but site.label is ", c.site.label));
      }
      if (self.endpoint != c.site.advertise && self.endpoint != c.site.listen) {
        add(k + ".endpoint",
            absl::StrCat("this site's roster endpoint ", Quote(self.endpoint), " must equal site.advertise (",
                         Quote(c.site.advertise), ") or site.listen (", Quote(c.site.listen), ")"));
      }
    }
  }

  // capacity
  if (!c.capacity.from_adapter && c.capacity.units <= 0) {
    add("capacity.units", absl::StrCat("units must be > 0, got ", c.capacity.units));
  }
  if (!(c.capacity.speed > 0) || !std::isfinite(c.capacity.speed)) {
    add("capacity.speed", absl::StrCat("speed must be a finite number > 0, got ", c.capacity.speed));
  }

  // balancer
  const BalancerConfig& b = c.balancer;
  if (auto st = balance::CheckRoundMode(b.algorithm); !st.ok()) add("balancer.algorithm", std::string(st.message()));
  auto check_duration = [&](const std::string& key, absl::Duration d, bool positive) {
    if (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) {
      add(key, "must be finite");
    } else if (positive ? d <= absl::ZeroDuration() : d < absl::ZeroDuration()) {
      add(key, absl::StrCat("must be ", positive ? "> 0" : ">= 0", ", got ", absl::FormatDuration(d)));
    }
  };
  check_duration("balancer.interval", b.interval, false);
  check_duration("balancer.heartbeat_interval", b.heartbeat_interval, true);
  check_duration("balancer.peer_timeout", b.peer_timeout, true);
  // A zero step timeout would fail every round at its first step.
  check_duration("balancer.step_timeout", b.step_timeout, true);
  if (b.peer_timeout <= b.heartbeat_interval) {
    add("balancer.peer_timeout",
        absl::StrCat("must be longer than heartbeat_interval (", absl::FormatDuration(b.heartbeat_interval), "), got ",
                     absl::FormatDuration(b.peer_timeout)));
  }
  if (b.underload_threshold < 0) {
    add("balancer.underload_threshold", absl::StrCat("must be >= 0, got ", b.underload_threshold));
  }
  if (b.min_imbalance < 0) {
    add("balancer.min_imbalance", absl::StrCat("must be >= 0, got ", b.min_imbalance));
  }
  if (auto choice = balance::ParseJobChoice(b.job_choice); !choice.ok()) {
    add("balancer.job_choice", std::string(choice.status().message()));
  }
  check_duration("balancer.hysteresis", b.hysteresis, false);
  check_duration("balancer.placement_margin", b.placement_margin, true);
  if (b.placement_margin < absl::Milliseconds(1) && b.placement_margin > absl::ZeroDuration())
    add("balancer.placement_margin", "must be at least 1ms");
  if (b.max_batch < 1 || b.max_batch > kMaxBatch) {
    add("balancer.max_batch", absl::StrCat("must be in 1..", kMaxBatch, ", got ", b.max_batch));
  }

  // scheduler, state
  if (c.scheduler.adapter.empty()) add("scheduler.adapter", "must name an adapter");
  if (c.state_dir.empty()) add("state_dir", "is required");

  // security
  const SecurityConfig& s = c.security;
  if (!s.insecure) {
    for (auto [key, value] : {std::pair<const char*, const std::string*>{"security.cert", &s.cert},
                              {"security.key", &s.key},
                              {"security.ca", &s.ca}}) {
      if (value->empty()) {
        add(key, "is required unless security.insecure is true");
      } else if (std::string e = CheckReadableFile(*value); !e.empty()) {
        add(key, e);
      } else if (std::string m = value == &s.key ? CheckSecretFileMode(*value) : ""; !m.empty()) {
        add(key, m);  // the certificate and the CA are public; the key is not
      } else if (std::string t = CheckTrustedPath(*value); !t.empty()) {
        add(key, t);
      }
    }
  } else {
    // Plain text means no authentication: whoever reaches the port is a peer
    // and, without a token, an admin. Only this machine may reach it.
    if (!IsLoopback(c.site.listen)) {
      add("security.insecure",
          absl::StrCat("insecure: true needs site.listen on a loopback address (127.0.0.0/8, ::1, localhost), got ",
                       Quote(c.site.listen)));
    }
    if (!c.site.metrics_listen.empty() && !IsLoopback(c.site.metrics_listen)) {
      add("security.insecure",
          absl::StrCat("insecure: true needs site.metrics_listen on a loopback address (127.0.0.0/8, ::1, "
                       "localhost), got ",
                       Quote(c.site.metrics_listen)));
    }
  }
  if (!s.roster_key.empty())
    if (std::string e = CheckReadableFile(s.roster_key); !e.empty()) {
      add("security.roster_key", e);
    } else if (std::string t = CheckTrustedPath(s.roster_key); !t.empty()) {
      add("security.roster_key", t);
    }
  if (s.max_calls_per_peer < 1 || s.max_calls_per_peer > 10000) {
    add("security.max_calls_per_peer", absl::StrCat("must be in 1..10000, got ", s.max_calls_per_peer));
  }
  if (s.max_threads < 8 || s.max_threads > 10000) {
    add("security.max_threads", absl::StrCat("must be in 8..10000, got ", s.max_threads));
  }
  if (!s.admin_token_file.empty()) {
    if (std::string e = CheckReadableFile(s.admin_token_file); !e.empty()) {
      add("security.admin_token_file", e);
    } else if (std::string m = CheckSecretFileMode(s.admin_token_file); !m.empty()) {
      add("security.admin_token_file", m);
    } else if (std::string t = CheckTrustedPath(s.admin_token_file); !t.empty()) {
      add("security.admin_token_file", t);
    } else {
      std::ifstream in(s.admin_token_file, std::ios::binary);
      std::stringstream token;
      token << in.rdbuf();
      if (absl::StripAsciiWhitespace(token.str()).empty()) {
        add("security.admin_token_file", absl::StrCat(Quote(s.admin_token_file), " is empty"));
      }
    }
  }
  return issues;
}

std::string DisplayPath(const std::string& path) { return path.empty() ? "<config>" : path; }

// One message per line, in the file's order (line 0, "unknown", last).
absl::Status JoinErrors(std::vector<std::pair<int, std::string>> numbered) {
  std::stable_sort(numbered.begin(), numbered.end(), [](const auto& a, const auto& b) {
    return (a.first == 0 ? INT_MAX : a.first) < (b.first == 0 ? INT_MAX : b.first);
  });
  std::vector<std::string> errors;
  for (auto& [line, message] : numbered) errors.push_back(std::move(message));
  if (errors.size() > kMaxErrors) {
    size_t more = errors.size() - kMaxErrors;
    errors.resize(kMaxErrors);
    errors.push_back(absl::StrCat("... and ", more, " more errors"));
  }
  return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
}

// Reads the YAML tree into a Config, collecting every error with its line.
// Only scalar text is converted here; rules that span fields are CheckRules'.
class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  const std::vector<std::pair<int, std::string>>& errors() const { return errors_; }

  void Error(int line, const std::string& key, const std::string& message) {
    if (line > 0) {
      errors_.emplace_back(line, absl::StrCat(DisplayPath(path_), ":", line, ": ", key, ": ", message));
    } else {
      errors_.emplace_back(0, absl::StrCat(DisplayPath(path_), ": ", key, ": ", message));
    }
  }

  // The line of `key`, or of its nearest recorded parent ("roster[2].label"
  // -> "roster[2]" -> "roster"), or of the document.
  int LineOf(std::string key) const {
    while (true) {
      if (auto it = lines_.find(key); it != lines_.end()) return it->second;
      size_t cut = key.find_last_of(".[");
      if (cut == std::string::npos || cut == 0) return root_line_;
      key.resize(cut);
    }
  }

  void Parse(const YAML::Node& root, Config* c) {
    root_line_ = std::max(1, Line(root.Mark()));
    if (!root.IsMap()) {
      errors_.emplace_back(
          root_line_,
          absl::StrCat(DisplayPath(path_), ":", root_line_, ": expected a mapping with the keys ",
                       Join(std::begin(kTopKeys), std::end(kTopKeys)), root.IsNull() ? "; the document is empty" : ""));
      return;
    }
    Fields top;
    Map(root, "", root_line_, std::begin(kTopKeys), std::end(kTopKeys), &top);
    if (Require(top, "", "site")) ParseSite(top["site"], c);
    if (top.count("federation")) String(top["federation"], "federation", &c->federation);
    if (top.count("roster")) ParseRoster(top["roster"], c);
    if (top.count("seeds")) ParseSeeds(top["seeds"], c);
    if (top.count("capacity")) ParseCapacity(top["capacity"], c);
    if (top.count("balancer")) ParseBalancer(top["balancer"], c);
    if (top.count("scheduler")) ParseScheduler(top["scheduler"], c);
    if (Require(top, "", "state_dir")) String(top["state_dir"], "state_dir", &c->state_dir);
    if (top.count("security")) ParseSecurity(top["security"], c);
    if (top.count("log")) ParseLog(top["log"], c);
  }

 private:
  using Fields = std::map<std::string, YAML::Node>;

  static int Line(const YAML::Mark& m) { return m.is_null() ? 0 : m.line + 1; }

  static std::string Child(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : absl::StrCat(parent, ".", key);
  }

  // The line to blame for a value: its own if known, else its key's.
  int ValueLine(const YAML::Node& n, const std::string& key) const {
    int line = Line(n.Mark());
    return line > 0 ? line : LineOf(key);
  }

  // The entries of a mapping with known keys; unknown and repeated keys are
  // errors (yaml-cpp keeps repeats, and silently using one hides a mistake).
  // False (after saying so) when `n` is no mapping.
  bool Map(const YAML::Node& n, const std::string& key, int line, const char* const* begin, const char* const* end,
           Fields* out, bool check_keys = true) {
    Fields& fields = *out;
    if (!n.IsMap()) {
      Error(line, key.empty() ? "<document>" : key,
            absl::StrCat("expected a mapping", begin != end ? " with the keys " : "", Join(begin, end)));
      return false;
    }
    for (auto it = n.begin(); it != n.end(); ++it) {
      int key_line = Line(it->first.Mark());
      if (!it->first.IsScalar()) {
        Error(key_line, key.empty() ? "<document>" : key, "keys must be plain names");
        continue;
      }
      std::string name = it->first.Scalar();
      std::string path = Child(key, name);
      if (check_keys && std::find_if(begin, end, [&](const char* k) { return name == k; }) == end) {
        std::string hint = Nearest(name, begin, end);
        Error(key_line, path,
              absl::StrCat("unknown key", hint.empty() ? "" : absl::StrCat("; did you mean \"", hint, "\"?"),
                           " (expected one of ", Join(begin, end), ")"));
        continue;
      }
      if (fields.count(name)) {
        Error(key_line, path, absl::StrCat("duplicate key (first on line ", LineOf(path), ")"));
        continue;
      }
      lines_[path] = key_line > 0 ? key_line : line;
      fields[name] = it->second;
    }
    return true;
  }

  bool Require(const Fields& f, const std::string& parent, const std::string& name) {
    if (f.count(name)) return true;
    Error(LineOf(parent), Child(parent, name), "required key is missing");
    return false;
  }

  bool Scalar(const YAML::Node& n, const std::string& key, const char* what, std::string* out) {
    if (!n.IsScalar()) {
      Error(ValueLine(n, key), key,
            absl::StrCat("expected ", what, ", got ",
                         n.IsNull()  ? "nothing"
                         : n.IsMap() ? "a mapping"
                                     : "a list"));
      return false;
    }
    *out = n.Scalar();
    return true;
  }

  void String(const YAML::Node& n, const std::string& key, std::string* out) { Scalar(n, key, "a string", out); }

  template <typename Int>
  void Integer(const YAML::Node& n, const std::string& key, Int* out) {
    std::string text;
    if (!Scalar(n, key, "an integer", &text)) return;
    Int value;
    if (!absl::SimpleAtoi(text, &value)) {
      Error(ValueLine(n, key), key, absl::StrCat("expected an integer, got ", Quote(text)));
      return;
    }
    *out = value;
  }

  void Double(const YAML::Node& n, const std::string& key, double* out) {
    std::string text;
    if (!Scalar(n, key, "a number", &text)) return;
    double value;
    if (!absl::SimpleAtod(text, &value) || !std::isfinite(value)) {
      Error(ValueLine(n, key), key, absl::StrCat("expected a number, got ", Quote(text)));
      return;
    }
    *out = value;
  }

  void Bool(const YAML::Node& n, const std::string& key, bool* out) {
    std::string text;
    if (!Scalar(n, key, "true or false", &text)) return;
    bool value;
    if (!YAML::convert<bool>::decode(n, value)) {
      Error(ValueLine(n, key), key, absl::StrCat("expected true or false, got ", Quote(text)));
      return;
    }
    *out = value;
  }

  void Duration(const YAML::Node& n, const std::string& key, absl::Duration* out) {
    std::string text;
    if (!Scalar(n, key, "a duration", &text)) return;
    absl::Duration value;
    if (!absl::ParseDuration(text, &value)) {
      Error(ValueLine(n, key), key,
            absl::StrCat("expected a duration like \"30s\", \"500ms\" or \"2m\", got ", Quote(text)));
      return;
    }
    *out = value;
  }

  // A value from a fixed set of names, read by `parse`, whose error names them.
  template <typename T>
  void Named(const YAML::Node& n, const std::string& key, absl::StatusOr<T> (*parse)(std::string_view), T* out) {
    std::string text;
    if (!Scalar(n, key, "a name", &text)) return;
    absl::StatusOr<T> value = parse(text);
    if (!value.ok()) {
      Error(ValueLine(n, key), key, std::string(value.status().message()));
      return;
    }
    *out = *value;
  }

  void ParseSite(const YAML::Node& n, Config* c) {
    Fields f;
    if (!Map(n, "site", LineOf("site"), std::begin(kSiteKeys), std::end(kSiteKeys), &f)) return;
    if (Require(f, "site", "id")) String(f["id"], "site.id", &c->site.id);
    if (f.count("label")) Integer(f["label"], "site.label", &c->site.label);
    if (Require(f, "site", "listen")) String(f["listen"], "site.listen", &c->site.listen);
    if (f.count("advertise")) {
      String(f["advertise"], "site.advertise", &c->site.advertise);
    } else {
      c->site.advertise = c->site.listen;
    }
    if (f.count("metrics_listen")) {
      String(f["metrics_listen"], "site.metrics_listen", &c->site.metrics_listen);
    }
    if (f.count("web")) String(f["web"], "site.web", &c->site.web);
    if (f.count("web_hosts")) String(f["web_hosts"], "site.web_hosts", &c->site.web_hosts);
  }

  // A list of mappings under `key`, each with `keys`: `fill` reads item i's
  // fields (key path "key[i]").
  template <typename Fill>
  void ParseList(const YAML::Node& n, const std::string& key, const char* expected, const char* const* keys_begin,
                 const char* const* keys_end, Fill fill) {
    if (!n.IsSequence()) {
      Error(ValueLine(n, key), key, expected);
      return;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      const YAML::Node item = n[i];
      std::string k = absl::StrCat(key, "[", i, "]");
      lines_[k] = ValueLine(item, key);
      Fields f;
      const bool is_map = Map(item, k, lines_[k], keys_begin, keys_end, &f);
      fill(is_map, f, k);
    }
  }

  void ParseRoster(const YAML::Node& n, Config* c) {
    ParseList(n, "roster", "expected a list of {id, label, endpoint}", std::begin(kRosterKeys), std::end(kRosterKeys),
              [&](bool is_map, Fields& f, const std::string& k) {
                RosterEntry e;
                if (is_map) {
                  if (Require(f, k, "id")) String(f["id"], k + ".id", &e.id);
                  if (Require(f, k, "label")) Integer(f["label"], k + ".label", &e.label);
                  if (Require(f, k, "endpoint")) String(f["endpoint"], k + ".endpoint", &e.endpoint);
                  if (f.count("cost")) Integer(f["cost"], k + ".cost", &e.cost);
                  if (f.count("max_capacity")) Double(f["max_capacity"], k + ".max_capacity", &e.max_capacity);
                  if (f.count("drained")) Bool(f["drained"], k + ".drained", &e.drained);
                }
                c->roster.sites.push_back(std::move(e));
              });
  }

  void ParseSeeds(const YAML::Node& n, Config* c) {
    ParseList(n, "seeds", "expected a list of {id, endpoint}", std::begin(kSeedKeys), std::end(kSeedKeys),
              [&](bool is_map, Fields& f, const std::string& k) {
                Seed seed;
                if (is_map) {
                  if (Require(f, k, "id")) String(f["id"], k + ".id", &seed.id);
                  if (Require(f, k, "endpoint")) String(f["endpoint"], k + ".endpoint", &seed.endpoint);
                }
                c->seeds.push_back(std::move(seed));
              });
  }

  void ParseCapacity(const YAML::Node& n, Config* c) {
    if (!n.IsMap()) {
      std::string text;
      if (Scalar(n, "capacity", "\"from_adapter\" or {units: N, speed: X}", &text) && text != "from_adapter") {
        Error(ValueLine(n, "capacity"), "capacity",
              absl::StrCat("expected \"from_adapter\" or {units: N, speed: X}, got ", Quote(text)));
      }
      return;
    }
    Fields f;
    Map(n, "capacity", LineOf("capacity"), std::begin(kCapacityKeys), std::end(kCapacityKeys), &f);
    c->capacity.from_adapter = false;
    if (Require(f, "capacity", "units")) Integer(f["units"], "capacity.units", &c->capacity.units);
    if (f.count("speed")) Double(f["speed"], "capacity.speed", &c->capacity.speed);
  }

  void ParseBalancer(const YAML::Node& n, Config* c) {
    BalancerConfig& b = c->balancer;
    Fields f;
    if (!Map(n, "balancer", LineOf("balancer"), std::begin(kBalancerKeys), std::end(kBalancerKeys), &f)) {
      return;
    }
    if (f.count("algorithm")) String(f["algorithm"], "balancer.algorithm", &b.algorithm);
    if (f.count("interval")) Duration(f["interval"], "balancer.interval", &b.interval);
    if (f.count("underload_threshold")) {
      Integer(f["underload_threshold"], "balancer.underload_threshold", &b.underload_threshold);
    }
    if (f.count("min_imbalance")) {
      Integer(f["min_imbalance"], "balancer.min_imbalance", &b.min_imbalance);
    }
    if (f.count("heartbeat_interval")) {
      Duration(f["heartbeat_interval"], "balancer.heartbeat_interval", &b.heartbeat_interval);
    }
    if (f.count("peer_timeout")) Duration(f["peer_timeout"], "balancer.peer_timeout", &b.peer_timeout);
    if (f.count("step_timeout")) Duration(f["step_timeout"], "balancer.step_timeout", &b.step_timeout);
    if (f.count("max_batch")) Integer(f["max_batch"], "balancer.max_batch", &b.max_batch);
    if (f.count("job_choice")) String(f["job_choice"], "balancer.job_choice", &b.job_choice);
    if (f.count("hysteresis")) Duration(f["hysteresis"], "balancer.hysteresis", &b.hysteresis);
    if (f.count("placement")) Bool(f["placement"], "balancer.placement", &b.placement);
    if (f.count("placement_margin")) {
      Duration(f["placement_margin"], "balancer.placement_margin", &b.placement_margin);
    }
  }

  void ParseScheduler(const YAML::Node& n, Config* c) {
    Fields f;
    if (!Map(n, "scheduler", LineOf("scheduler"), std::begin(kSchedulerKeys), std::end(kSchedulerKeys), &f)) {
      return;
    }
    if (f.count("adapter")) String(f["adapter"], "scheduler.adapter", &c->scheduler.adapter);
    if (!f.count("options")) return;
    const YAML::Node& options = f["options"];
    if (options.IsNull()) return;  // "options:" with nothing: none
    // Adapter options are free-form: the adapter checks its own keys.
    Fields o;
    Map(options, "scheduler.options", LineOf("scheduler.options"), nullptr, nullptr, &o,
        /*check_keys=*/false);
    for (const auto& [name, value] : o) {
      std::string text;
      if (Scalar(value, Child("scheduler.options", name), "a scalar value", &text)) {
        c->scheduler.options[name] = text;
        c->scheduler.option_lines[name] = ValueLine(value, Child("scheduler.options", name));
      }
    }
  }

  void ParseSecurity(const YAML::Node& n, Config* c) {
    SecurityConfig& s = c->security;
    Fields f;
    if (!Map(n, "security", LineOf("security"), std::begin(kSecurityKeys), std::end(kSecurityKeys), &f)) {
      return;
    }
    if (f.count("insecure")) Bool(f["insecure"], "security.insecure", &s.insecure);
    if (f.count("cert")) String(f["cert"], "security.cert", &s.cert);
    if (f.count("key")) String(f["key"], "security.key", &s.key);
    if (f.count("ca")) String(f["ca"], "security.ca", &s.ca);
    if (f.count("admin_token_file")) {
      String(f["admin_token_file"], "security.admin_token_file", &s.admin_token_file);
    }
    if (f.count("reflection")) Bool(f["reflection"], "security.reflection", &s.reflection);
    if (f.count("roster_key")) String(f["roster_key"], "security.roster_key", &s.roster_key);
    if (f.count("max_calls_per_peer")) {
      Integer(f["max_calls_per_peer"], "security.max_calls_per_peer", &s.max_calls_per_peer);
    }
    if (f.count("max_threads")) Integer(f["max_threads"], "security.max_threads", &s.max_threads);
  }

  void ParseLog(const YAML::Node& n, Config* c) {
    Fields f;
    if (!Map(n, "log", LineOf("log"), std::begin(kLogKeys), std::end(kLogKeys), &f)) return;
    if (f.count("level")) Named(f["level"], "log.level", ParseLogLevel, &c->log.level);
    if (f.count("format")) Named(f["format"], "log.format", ParseLogFormat, &c->log.format);
  }

  std::string path_;
  std::vector<std::pair<int, std::string>> errors_;  // (line, message)
  std::map<std::string, int> lines_;                 // key path -> 1-based line of its key
  int root_line_ = 1;
};

// Relative paths in the file mean "next to the file", not "next to wherever
// the daemon was started".
void ResolvePaths(const std::string& config_path, Config* c) {
  fs::path base = fs::path(config_path).parent_path();
  if (base.empty()) return;
  for (std::string* p : {&c->state_dir, &c->security.cert, &c->security.key, &c->security.ca,
                         &c->security.admin_token_file, &c->security.roster_key}) {
    if (!p->empty() && fs::path(*p).is_relative()) *p = (base / *p).lexically_normal().string();
  }
}

}  // namespace

bool IsLoopback(const std::string& host_port) {
  const std::string host = absl::AsciiStrToLower(HostOf(host_port));
  if (host == "localhost" || host == "::1") return true;
  // 127.0.0.0/8, written as a dotted quad.
  std::vector<std::string> parts = absl::StrSplit(host, '.');
  if (parts.size() != 4 || parts[0] != "127") return false;
  for (const std::string& p : parts) {
    int v = 0;
    if (p.empty() || p.size() > 3 || !absl::SimpleAtoi(p, &v) || v < 0 || v > 255) return false;
  }
  return true;
}

std::string CheckSecretFileMode(const std::string& path) {
  std::error_code ec;
  fs::perms p = fs::status(path, ec).permissions();
  if (ec) return "";  // CheckReadableFile says why
  const fs::perms others = fs::perms::group_all | fs::perms::others_all;
  if ((p & others) == fs::perms::none) return "";
  return absl::StrCat(Quote(path), " has mode ", absl::StrFormat("%04o", static_cast<unsigned>(p & fs::perms::mask)),
                      ": group and others must have no access to a secret (chmod 600, owned by the daemon's user)");
}

int Roster::Dimension() const {
  int max_label = 0;
  for (const RosterEntry& e : sites) max_label = std::max(max_label, e.label);
  int n = 0;
  while (n < 31 && (int64_t{1} << n) <= max_label) ++n;
  return n;
}

const RosterEntry* Roster::FindSite(const std::string& id) const {
  for (const RosterEntry& e : sites) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

bool Roster::AllowsMode(const std::string& mode) const {
  return allowed_modes.empty() || std::find(allowed_modes.begin(), allowed_modes.end(), mode) != allowed_modes.end();
}

const RosterEntry* Roster::FindDeparted(const std::string& id) const {
  for (const RosterEntry& e : departed) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

const RosterEntry* Roster::FindLabel(int label) const {
  for (const RosterEntry& e : sites) {
    if (e.label == label) return &e;
  }
  return nullptr;
}

absl::StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& path) {
  Config c;
  c.path = path;
  Parser parser(path);
  try {
    YAML::Node root = YAML::Load(yaml_text);
    parser.Parse(root, &c);
  } catch (const YAML::Exception& e) {
    std::string where = DisplayPath(path);
    if (!e.mark.is_null()) {
      where = absl::StrCat(where, ":", e.mark.line + 1);
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": YAML syntax error: ", e.msg, " (column ", e.mark.column + 1, ")"));
    }
    return absl::InvalidArgumentError(absl::StrCat(where, ": YAML error: ", e.msg));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(DisplayPath(path), ": ", e.what()));
  }
  // Cross-field rules on half-read fields would only add noise.
  if (!parser.errors().empty()) return JoinErrors(parser.errors());

  ResolvePaths(path, &c);
  std::vector<std::pair<int, std::string>> errors;
  for (const Issue& issue : CheckRules(c)) {
    int line = parser.LineOf(issue.key);
    errors.emplace_back(line, absl::StrCat(DisplayPath(path), ":", line, ": ", issue.key, ": ", issue.message));
  }
  if (!errors.empty()) return JoinErrors(std::move(errors));
  return c;
}

absl::StatusOr<Config> LoadConfig(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    return absl::NotFoundError(absl::StrCat(path, ": config file does not exist"));
  }
  if (!fs::is_regular_file(st)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": config is not a regular file"));
  }
  if (std::string why = CheckTrustedPath(path); !why.empty())
    return absl::InvalidArgumentError(absl::StrCat(path, ": config not trusted: ", why));
  std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > kMaxFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": config file is ", size, " bytes; the limit is ", kMaxFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot read config file: ", std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::InternalError(absl::StrCat(path, ": error reading config file"));
  }
  return ParseConfig(text.str(), path);
}

absl::Status Validate(const Config& c) {
  std::vector<std::pair<int, std::string>> errors;
  for (const Issue& issue : CheckRules(c)) {
    errors.emplace_back(0, c.path.empty() ? absl::StrCat(issue.key, ": ", issue.message)
                                          : absl::StrCat(c.path, ": ", issue.key, ": ", issue.message));
  }
  if (errors.empty()) return absl::OkStatus();
  return JoinErrors(std::move(errors));
}

}  // namespace hyperfed::config
