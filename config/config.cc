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

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "config/rules.h"
#include "config/settings.h"
#include "daemon/balance/modes.h"
#include "yaml-cpp/yaml.h"

namespace hyperfed::config {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxErrors = 20;                  // more would bury the first one
constexpr std::uintmax_t kMaxFileBytes = 1 << 20;  // a site config is a few hundred bytes

using Keys = std::vector<std::string>;
const Keys kTopKeys = {"site",     "roster",    "seeds",     "federation", "capacity",
                       "balancer", "scheduler", "state_dir", "security",   "log"};
const Keys kSchedulerKeys = {"adapter", "options"};

// A broken rule: the key path it concerns ("roster[2].endpoint") and why.
struct Issue {
  std::string key;
  std::string message;
};

std::string Join(const Keys& keys) { return absl::StrJoin(keys, ", "); }

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
std::string Nearest(const std::string& key, const Keys& keys) {
  size_t limit = std::clamp<size_t>(key.size() / 3, 1, 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& k : keys) {
    size_t d = EditDistance(key, k);
    if (d < best_distance) {
      best_distance = d;
      best = k;
    }
  }
  return best;
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

// Every row's own rule of one mapping (`section`: its key path).
template <typename S>
void CheckTable(std::vector<Issue>* issues, const std::string& section, const std::vector<Setting<S>>& table,
                const S& x) {
  for (const Setting<S>& row : table)
    if (std::string m = row.check(x); !m.empty()) issues->push_back({absl::StrCat(section, ".", row.name), m});
}

// "section.key" of member `m` (a rule across fields names its keys so).
template <typename S, typename T>
std::string Key(absl::string_view section, const std::vector<Setting<S>>& table, T S::*m) {
  return absl::StrCat(section, ".", KeyOf(table, m));
}

std::vector<Issue> CheckRules(const Config& c) {
  std::vector<Issue> issues;
  auto add = [&](std::string key, std::string message) { issues.push_back({std::move(key), std::move(message)}); };

  CheckTable(&issues, "site", SiteSettings(), c.site);
  if (!ValidId(c.federation))
    add("federation",
        absl::StrCat("must be 1 to ", kMaxIdLength, " characters of [A-Za-z0-9._-], got ", Quote(c.federation)));

  // roster
  if (c.roster.sites.empty() && c.seeds.empty())
    add("roster", "must list every site, this one included (or give seeds to fetch it from)");
  for (auto& [key, why] : RosterProblems(c.roster.sites, "roster")) add(key, why);
  for (size_t i = 0; i < c.seeds.size(); ++i)
    CheckTable(&issues, absl::StrCat("seeds[", i, "]"), SeedSettings(), c.seeds[i]);
  std::map<std::string, size_t> by_id;
  for (size_t i = 0; i < c.roster.sites.size(); ++i) by_id.emplace(c.roster.sites[i].id, i);
  const auto& site = SiteSettings();
  const auto& entry = RosterEntrySettings();
  if (!c.roster.sites.empty() && !c.site.id.empty()) {
    auto it = by_id.find(c.site.id);
    if (it == by_id.end()) {
      add("roster", absl::StrCat("this site ", Quote(c.site.id), " (", Key("site", site, &SiteConfig::id),
                                 ") is not in the roster"));
    } else {
      const RosterEntry& self = c.roster.sites[it->second];
      std::string k = absl::StrCat("roster[", it->second, "]");
      if (self.label != c.site.label) {
        add(Key(k, entry, &RosterEntry::label),
            absl::StrCat("this site has label ", self.label, " in the roster but ",
                         Key("site", site, &SiteConfig::label), " is ", c.site.label));
      }
      if (self.endpoint != c.site.advertise && self.endpoint != c.site.listen) {
        add(Key(k, entry, &RosterEntry::endpoint),
            absl::StrCat("this site's roster endpoint ", Quote(self.endpoint), " must equal ",
                         Key("site", site, &SiteConfig::advertise), " (", Quote(c.site.advertise), ") or ",
                         Key("site", site, &SiteConfig::listen), " (", Quote(c.site.listen), ")"));
      }
    }
  }

  // capacity: a mapping's rows; "from_adapter" gives no units
  for (const Setting<CapacityConfig>& row : CapacitySettings())
    if (!(c.capacity.from_adapter && row.required))
      if (std::string m = row.check(c.capacity); !m.empty()) add(absl::StrCat("capacity.", row.name), m);

  // balancer
  const BalancerConfig& b = c.balancer;
  const auto& bal = BalancerSettings();
  CheckTable(&issues, "balancer", bal, b);
  if (b.peer_timeout <= b.heartbeat_interval) {
    add(Key("balancer", bal, &BalancerConfig::peer_timeout),
        absl::StrCat("must be longer than ", KeyOf(bal, &BalancerConfig::heartbeat_interval), " (",
                     absl::FormatDuration(b.heartbeat_interval), "), got ", absl::FormatDuration(b.peer_timeout)));
  }

  // scheduler, state
  if (c.scheduler.adapter.empty()) add("scheduler.adapter", "must name an adapter");
  if (c.state_dir.empty()) add("state_dir", "is required");

  // security
  const SecurityConfig& s = c.security;
  const auto& sec = SecuritySettings();
  CheckTable(&issues, "security", sec, s);
  const std::string insecure = Key("security", sec, &SecurityConfig::insecure);
  if (!s.insecure) {
    for (const std::string SecurityConfig::*m : {&SecurityConfig::cert, &SecurityConfig::key, &SecurityConfig::ca}) {
      const std::string key = Key("security", sec, m);
      const std::string& value = s.*m;
      if (value.empty()) {
        add(key, absl::StrCat("is required unless ", insecure, " is true"));
      } else if (std::string e = CheckReadableFile(value); !e.empty()) {
        add(key, e);
      } else if (std::string k = m == &SecurityConfig::key ? CheckSecretFileMode(value) : ""; !k.empty()) {
        add(key, k);  // the certificate and the CA are public; the key is not
      } else if (std::string t = CheckTrustedPath(value); !t.empty()) {
        add(key, t);
      }
    }
  } else {
    // Plain text means no authentication: whoever reaches the port is a peer
    // and, without a token, an admin. Only this machine may reach it.
    for (const std::string SiteConfig::*m : {&SiteConfig::listen, &SiteConfig::metrics_listen})
      if (!(c.site.*m).empty() && !IsLoopback(c.site.*m))
        add(insecure, absl::StrCat("insecure: true needs ", Key("site", site, m),
                                   " on a loopback address (127.0.0.0/8, ::1, localhost), got ", Quote(c.site.*m)));
  }
  if (!s.roster_key.empty()) {
    const std::string key = Key("security", sec, &SecurityConfig::roster_key);
    if (std::string e = CheckReadableFile(s.roster_key); !e.empty()) {
      add(key, e);
    } else if (std::string t = CheckTrustedPath(s.roster_key); !t.empty()) {
      add(key, t);
    }
  }
  if (!s.admin_token_file.empty()) {
    const std::string key = Key("security", sec, &SecurityConfig::admin_token_file);
    if (std::string e = CheckReadableFile(s.admin_token_file); !e.empty()) {
      add(key, e);
    } else if (std::string m = CheckSecretFileMode(s.admin_token_file); !m.empty()) {
      add(key, m);
    } else if (std::string t = CheckTrustedPath(s.admin_token_file); !t.empty()) {
      add(key, t);
    } else {
      std::ifstream in(s.admin_token_file, std::ios::binary);
      std::stringstream token;
      token << in.rdbuf();
      if (absl::StripAsciiWhitespace(token.str()).empty())
        add(key, absl::StrCat(Quote(s.admin_token_file), " is empty"));
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
      errors_.emplace_back(root_line_,
                           absl::StrCat(DisplayPath(path_), ":", root_line_, ": expected a mapping with the keys ",
                                        Join(kTopKeys), root.IsNull() ? "; the document is empty" : ""));
      return;
    }
    Fields top;
    Map(root, "", root_line_, kTopKeys, &top);
    if (Require(top, "", "site")) ParseSite(top["site"], c);
    if (top.count("federation")) String(top["federation"], "federation", &c->federation);
    if (top.count("roster")) ParseRoster(top["roster"], c);
    if (top.count("seeds")) ParseSeeds(top["seeds"], c);
    if (top.count("capacity")) ParseCapacity(top["capacity"], c);
    if (top.count("balancer")) Section(top["balancer"], "balancer", BalancerSettings(), &c->balancer);
    if (top.count("scheduler")) ParseScheduler(top["scheduler"], c);
    if (Require(top, "", "state_dir")) String(top["state_dir"], "state_dir", &c->state_dir);
    if (top.count("security")) Section(top["security"], "security", SecuritySettings(), &c->security);
    if (top.count("log")) Section(top["log"], "log", LogSettings(), &c->log);
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
  bool Map(const YAML::Node& n, const std::string& key, int line, const Keys& keys, Fields* out,
           bool check_keys = true) {
    Fields& fields = *out;
    if (!n.IsMap()) {
      Error(line, key.empty() ? "<document>" : key,
            absl::StrCat("expected a mapping", keys.empty() ? "" : " with the keys ", Join(keys)));
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
      if (check_keys && std::find(keys.begin(), keys.end(), name) == keys.end()) {
        std::string hint = Nearest(name, keys);
        Error(key_line, path,
              absl::StrCat("unknown key", hint.empty() ? "" : absl::StrCat("; did you mean \"", hint, "\"?"),
                           " (expected one of ", Join(keys), ")"));
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

  // The keys of `table` present in `f` (a mapping under `key`) into `out`:
  // each value read by its row; a required one missing is an error.
  template <typename S>
  void ReadFields(Fields& f, const std::string& key, const std::vector<Setting<S>>& table, S* out) {
    for (const Setting<S>& row : table) {
      const std::string name(row.name);
      if (!f.count(name)) {
        if (row.required) Require(f, key, name);
        continue;
      }
      const std::string k = Child(key, name);
      std::string text;
      if (!Scalar(f[name], k, std::string(row.type).c_str(), &text)) continue;
      if (std::string why = row.parse(text, out); !why.empty()) Error(ValueLine(f[name], k), k, why);
    }
  }

  // A mapping under `key` read by `table`; false (after saying so) when
  // `n` is no mapping.
  template <typename S>
  bool Section(const YAML::Node& n, const std::string& key, const std::vector<Setting<S>>& table, S* out,
               Fields* present = nullptr) {
    Fields f;
    if (!Map(n, key, LineOf(key), KeyNames(table), &f)) return false;
    ReadFields(f, key, table, out);
    if (present) *present = std::move(f);
    return true;
  }

  void ParseSite(const YAML::Node& n, Config* c) {
    Fields f;
    if (!Section(n, "site", SiteSettings(), &c->site, &f)) return;
    if (!f.count(std::string(KeyOf(SiteSettings(), &SiteConfig::advertise)))) c->site.advertise = c->site.listen;
  }

  // A list of mappings under `key`, each read by `table` into a new item of
  // `out` (key path "key[i]").
  template <typename S>
  void ParseList(const YAML::Node& n, const std::string& key, const std::vector<Setting<S>>& table,
                 std::vector<S>* out) {
    if (!n.IsSequence()) {
      Error(ValueLine(n, key), key, absl::StrCat("expected a list of {", Join(KeyNames(table)), "}"));
      return;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      const YAML::Node item = n[i];
      std::string k = absl::StrCat(key, "[", i, "]");
      lines_[k] = ValueLine(item, key);
      Fields f;
      S x;
      if (Map(item, k, lines_[k], KeyNames(table), &f)) ReadFields(f, k, table, &x);
      out->push_back(std::move(x));
    }
  }

  void ParseRoster(const YAML::Node& n, Config* c) { ParseList(n, "roster", RosterEntrySettings(), &c->roster.sites); }
  void ParseSeeds(const YAML::Node& n, Config* c) { ParseList(n, "seeds", SeedSettings(), &c->seeds); }

  void ParseCapacity(const YAML::Node& n, Config* c) {
    if (!n.IsMap()) {
      std::string text;
      if (Scalar(n, "capacity", "\"from_adapter\" or {units: N, speed: X}", &text) && text != "from_adapter") {
        Error(ValueLine(n, "capacity"), "capacity",
              absl::StrCat("expected \"from_adapter\" or {units: N, speed: X}, got ", Quote(text)));
      }
      return;
    }
    c->capacity.from_adapter = false;
    Section(n, "capacity", CapacitySettings(), &c->capacity);
  }

  void ParseScheduler(const YAML::Node& n, Config* c) {
    Fields f;
    if (!Map(n, "scheduler", LineOf("scheduler"), kSchedulerKeys, &f)) return;
    if (f.count("adapter")) String(f["adapter"], "scheduler.adapter", &c->scheduler.adapter);
    if (!f.count("options")) return;
    const YAML::Node& options = f["options"];
    if (options.IsNull()) return;  // "options:" with nothing: none
    // Adapter options are free-form: the adapter checks its own keys.
    Fields o;
    Map(options, "scheduler.options", LineOf("scheduler.options"), {}, &o, /*check_keys=*/false);
    for (const auto& [name, value] : o) {
      std::string text;
      if (Scalar(value, Child("scheduler.options", name), "a scalar value", &text)) {
        c->scheduler.options[name] = text;
        c->scheduler.option_lines[name] = ValueLine(value, Child("scheduler.options", name));
      }
    }
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

struct RosterLookup {
  size_t size = 0;
  absl::flat_hash_map<std::string, size_t> by_id;
  absl::flat_hash_map<int, size_t> by_label;
};

RosterIndex& RosterIndex::operator=(const RosterIndex&) {
  delete table_.exchange(nullptr);
  return *this;
}

RosterIndex::~RosterIndex() { delete table_.load(); }

const RosterLookup* RosterIndex::Get(const std::vector<RosterEntry>& sites) const {
  const RosterLookup* t = table_.load(std::memory_order_acquire);
  if (!t) {
    auto made = std::make_unique<RosterLookup>();
    made->size = sites.size();
    for (size_t i = 0; i < sites.size(); ++i) {
      made->by_id.emplace(sites[i].id, i);
      made->by_label.emplace(sites[i].label, i);
    }
    const RosterLookup* expected = nullptr;
    if (table_.compare_exchange_strong(expected, made.get(), std::memory_order_acq_rel)) {
      t = made.release();
    } else {
      t = expected;  // another thread's
    }
  }
  return t->size == sites.size() ? t : nullptr;
}

// A small roster is scanned; a large one looked up, and a miss or an entry
// that no longer matches (the vector was changed in place) scanned too.
constexpr size_t kScanUpTo = 16;

const RosterEntry* Roster::FindSite(const std::string& id) const {
  if (sites.size() > kScanUpTo)
    if (const RosterLookup* t = index_.Get(sites)) {
      auto it = t->by_id.find(id);
      if (it != t->by_id.end() && it->second < sites.size() && sites[it->second].id == id) return &sites[it->second];
    }
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
  if (sites.size() > kScanUpTo)
    if (const RosterLookup* t = index_.Get(sites)) {
      auto it = t->by_label.find(label);
      if (it != t->by_label.end() && it->second < sites.size() && sites[it->second].label == label)
        return &sites[it->second];
    }
  for (const RosterEntry& e : sites) {
    if (e.label == label) return &e;
  }
  return nullptr;
}

namespace {

// Has the adapter named by scheduler.adapter read scheduler.options
// (c->scheduler.parsed); an error names the file, the line and the key: the
// option an adapter's OptionError names, else scheduler.adapter.
absl::Status ResolveAdapter(const Parser& parser, const scheduler::AdapterRegistry& adapters, Config* c) {
  const std::string where = DisplayPath(c->path);
  auto parsed = adapters.ParseOptions(c->scheduler.adapter, c->scheduler.options);
  if (parsed.ok()) {
    c->scheduler.parsed = *std::move(parsed);
    return absl::OkStatus();
  }
  const absl::Status& st = parsed.status();
  if (absl::IsNotFound(st)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ":", parser.LineOf("scheduler.adapter"), ": scheduler.adapter: ", st.message()));
  }
  const std::string option = scheduler::OptionOf(st);
  if (auto it = c->scheduler.option_lines.find(option); !option.empty() && it != c->scheduler.option_lines.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ":", it->second, ": scheduler.options.", option, ": ", st.message()));
  }
  // A missing option: the section names it.
  return absl::InvalidArgumentError(
      absl::StrCat(where, ":", parser.LineOf("scheduler.options"), ": scheduler.options: ", st.message()));
}

}  // namespace

absl::StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& path,
                                   const scheduler::AdapterRegistry* adapters) {
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
  if (adapters != nullptr) {
    if (auto st = ResolveAdapter(parser, *adapters, &c); !st.ok()) return st;
  }
  return c;
}

absl::StatusOr<Config> LoadConfig(const std::string& path, const scheduler::AdapterRegistry* adapters) {
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
  return ParseConfig(text.str(), path, adapters);
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
