#include "client/flags.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace hyperfed::client {
namespace {

struct FlagSpec {
  const char* name;
  const char* value;  // the value's placeholder; nullptr for a switch
  const char* help;
};

struct CommandSpec {
  const char* name;
  const char* positional;  // placeholder of the one positional argument, or nullptr
  std::vector<FlagSpec> flags;
  const char* summary;
};

const std::vector<FlagSpec>& GlobalFlags() {
  static const auto* flags = new std::vector<FlagSpec>{
      {"endpoint", "HOST:PORT", "the daemon to ask (env HYPERFED_ENDPOINT, else 127.0.0.1:7101)"},
      {"token", "T", "admin token, sent as 'authorization: Bearer T' (env HYPERFED_TOKEN)"},
      {"token-file", "FILE", "read the admin token from FILE (env HYPERFED_TOKEN_FILE)"},
      {"ca", "FILE", "CA certificate (PEM) that signed the daemon's certificate (env HYPERFED_CA)"},
      {"cert", "FILE", "client certificate (PEM), optional; needs --key"},
      {"key", "FILE", "client private key (PEM), optional; needs --cert"},
      {"server-name", "NAME", "expect this name (a site id) in the daemon's certificate (env HYPERFED_SERVER_NAME)"},
      {"insecure", nullptr, "plain text, no TLS (daemons with insecure: true only)"},
      {"timeout", "D", "give up after D (default 10s; balance --wait: 10m)"},
      {"json", nullptr, "machine-readable output (JSON; balance --wait: JSON Lines)"},
      {"help", nullptr, "print usage"},
  };
  return *flags;
}

const std::vector<CommandSpec>& Commands() {
  static const auto* commands = new std::vector<CommandSpec>{
      {"status", nullptr, {}, "every site's label, state, load and capacity, and the last round"},
      {"topology",
       nullptr,
       {{"dot", nullptr, "print the cube as a Graphviz graph"}},
       "the hypercube: labels, sites, states, the fault set and the next round's mode"},
      {"jobs",
       nullptr,
       {{"site", "SITE", "list this site's jobs (default: the site answering)"}},
       "the jobs queued or running at a site"},
      {"migrations",
       nullptr,
       {{"limit", "N", "show at most N migrations (default: the daemon's, 50)"}},
       "the migrations this site's journal holds, newest first"},
      {"balance",
       nullptr,
       {{"dry-run", nullptr, "plan the round, move nothing"},
        {"wait", nullptr, "follow the round to its end and print the before/after table"},
        {"mode", "M", "run this round in mode M (exact, improved-dem, mcwa; default: the configured one)"}},
       "run (or plan) a balancing round"},
      {"drain", "SITE", {}, "give SITE zero capacity: its pending jobs leave at the next round"},
      {"undrain", "SITE", {}, "give SITE its configured capacity back"},
      {"submit",
       nullptr,
       {{"count", "N", "how many jobs (required)"},
        {"duration", "D", "how long each runs, like 30s, 500ms, 2m (required)"},
        {"site", "SITE", "submit at this site (default: the site answering)"},
        {"name", "NAME", "job name"},
        {"cores", "C", "cores per job"}},
       "submit test jobs"},
      {"explain", "JOB", {}, "where a job (key or local id) is and why it did or did not move"},
      {"force-release",
       "MIGRATION_ID",
       {},
       "release a migration's held jobs without the destination's answer (may run them twice)"},
      {"health", nullptr, {}, "the standard gRPC health check for the daemon and its two services"},
  };
  return *commands;
}

const CommandSpec* FindCommand(const std::string& name) {
  for (const CommandSpec& c : Commands())
    if (name == c.name) return &c;
  return nullptr;
}

const FlagSpec* FindFlag(const std::vector<FlagSpec>& flags, const std::string& name) {
  for (const FlagSpec& f : flags)
    if (name == f.name) return &f;
  return nullptr;
}

// Every flag has the same arity for every command, so argv can be split into
// flags and positionals before the command is known.
const FlagSpec* FindAnyFlag(const std::string& name) {
  if (const FlagSpec* f = FindFlag(GlobalFlags(), name)) return f;
  for (const CommandSpec& c : Commands())
    if (const FlagSpec* f = FindFlag(c.flags, name)) return f;
  return nullptr;
}

absl::Status Usage(const std::string& msg) { return absl::InvalidArgumentError(msg); }

absl::Status ParseInt(const std::string& flag, const std::string& value, int lo, int hi, int* out) {
  int v = 0;
  if (!absl::SimpleAtoi(value, &v)) return Usage(absl::StrCat("--", flag, ": '", value, "' is not a whole number"));
  if (v < lo || v > hi) return Usage(absl::StrCat("--", flag, ": ", v, " is outside ", lo, "..", hi));
  *out = v;
  return absl::OkStatus();
}

absl::Status ParseDurationFlag(const std::string& flag, const std::string& value, bool allow_zero,
                               absl::Duration* out) {
  absl::Duration d;
  if (!absl::ParseDuration(value, &d) || d == absl::InfiniteDuration())
    return Usage(absl::StrCat("--", flag, ": '", value, "' is not a duration (like 30s, 500ms, 2m)"));
  if (d < absl::ZeroDuration() || (!allow_zero && d == absl::ZeroDuration()))
    return Usage(absl::StrCat("--", flag, ": ", value, " must be ", allow_zero ? "zero or more" : "more than zero"));
  *out = d;
  return absl::OkStatus();
}

// HOST:PORT, [V6]:PORT, or a gRPC target with a scheme (unix:/path, dns:...).
absl::Status CheckEndpoint(const std::string& e) {
  auto bad = [&](const std::string& why) {
    return Usage(absl::StrCat("--endpoint: '", e, "' ", why, " (want HOST:PORT)"));
  };
  if (e.empty()) return bad("is empty");
  for (char c : e)
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) || !absl::ascii_isprint(static_cast<unsigned char>(c)))
      return bad("contains a space or control character");
  if (absl::StartsWith(e, "unix:") || absl::StartsWith(e, "dns:") || absl::StartsWith(e, "ipv4:") ||
      absl::StartsWith(e, "ipv6:"))
    return absl::OkStatus();
  size_t colon = e.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad("has no host and port");
  std::string host = e.substr(0, colon);
  if (host.find(':') != std::string::npos && !(host.front() == '[' && host.back() == ']'))
    return bad("needs brackets around an IPv6 address");
  int port = 0;
  if (!absl::SimpleAtoi(e.substr(colon + 1), &port) || port < 1 || port > 65535) return bad("has no valid port");
  return absl::OkStatus();
}

// gRPC sends metadata values as they are; only visible ASCII is safe there.
absl::Status CheckToken(const std::string& source, const std::string& t) {
  if (t.empty()) return Usage(absl::StrCat(source, ": the token is empty"));
  for (char c : t)
    if (c <= 0x20 || c >= 0x7f)
      return Usage(absl::StrCat(source, ": the token may hold only visible ASCII characters"));
  return absl::OkStatus();
}

std::string FlagLine(const FlagSpec& f) {
  std::string lhs = absl::StrCat("--", f.name, f.value ? absl::StrCat(" ", f.value) : "");
  return absl::StrFormat("  %-22s %s\n", lhs, f.help);
}

absl::StatusOr<std::string> ReadFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Usage(absl::StrCat("--", flag, ": cannot read '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Usage(absl::StrCat("--", flag, ": cannot read '", path, "'"));
  return ss.str();
}

}  // namespace

std::vector<std::string> CommandNames() {
  std::vector<std::string> names;
  for (const CommandSpec& c : Commands()) names.push_back(c.name);
  return names;
}

absl::StatusOr<std::string> UsageText(const std::string& topic) {
  std::string out;
  if (topic.empty()) {
    out =
        "usage: hyperfedctl COMMAND [ARGS] [FLAGS]\n\nhyperfedctl asks a hyperfedd daemon about its federation "
        "and tells it what to do.\n\ncommands:\n";
    for (const CommandSpec& c : Commands()) {
      std::string lhs = absl::StrCat(c.name, c.positional ? absl::StrCat(" ", c.positional) : "");
      absl::StrAppendFormat(&out, "  %-28s %s\n", lhs, c.summary);
    }
    absl::StrAppendFormat(&out, "  %-28s %s\n", "help [COMMAND]", "print usage");
    out += "\nglobal flags (every command):\n";
    for (const FlagSpec& f : GlobalFlags()) out += FlagLine(f);
    out +=
        "\nWithout --insecure the connection uses TLS (--ca, else the system's roots).\n"
        "Exit status: 0 done, 1 the daemon could not be reached or refused, 2 usage error.\n";
    return out;
  }
  const CommandSpec* c = FindCommand(topic);
  if (!c) return absl::NotFoundError(absl::StrCat("unknown command '", topic, "'"));
  absl::StrAppend(&out, "usage: hyperfedctl ", c->name, c->positional ? absl::StrCat(" ", c->positional) : "",
                  c->flags.empty() ? "" : " [FLAGS]", " [GLOBAL FLAGS]\n\n", c->summary, "\n");
  if (!c->flags.empty()) {
    out += "\nflags:\n";
    for (const FlagSpec& f : c->flags) out += FlagLine(f);
  }
  out += "\nglobal flags: see 'hyperfedctl --help'.\n";
  return out;
}

absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args, const Environment& env) {
  Options o;
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> flags;  // in order; a later value wins
  bool help = false;
  bool only_positional = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_positional || a.size() < 2 || a[0] != '-') {
      positional.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positional = true;
      continue;
    }
    if (a == "-h") {
      help = true;
      continue;
    }
    if (a[1] != '-') return Usage(absl::StrCat("unknown flag '", a, "' (flags are spelled --name)"));
    std::string name = a.substr(2);
    std::optional<std::string> value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const FlagSpec* f = FindAnyFlag(name);
    if (!f) return Usage(absl::StrCat("unknown flag --", name));
    if (!f->value) {
      if (value) return Usage(absl::StrCat("--", name, " takes no value"));
      value = "";
    } else if (!value) {
      if (i + 1 >= args.size()) return Usage(absl::StrCat("--", name, " needs a value (", f->value, ")"));
      value = args[++i];
    }
    if (name == "help") {
      help = true;
      continue;
    }
    flags.emplace_back(name, *value);
  }

  // The command.
  if (positional.empty()) {
    if (help) {
      o.command = "help";
      return o;
    }
    return Usage("no command given (try 'hyperfedctl --help')");
  }
  const std::string command = positional.front();
  positional.erase(positional.begin());
  if (command == "help") {
    if (positional.size() > 1) return Usage("help takes at most one command");
    o.command = "help";
    if (!positional.empty()) {
      if (!FindCommand(positional[0]))
        return Usage(absl::StrCat("unknown command '", positional[0], "' (try 'hyperfedctl --help')"));
      o.help_topic = positional[0];
    }
    return o;
  }
  const CommandSpec* spec = FindCommand(command);
  if (!spec) return Usage(absl::StrCat("unknown command '", command, "' (try 'hyperfedctl --help')"));
  if (help) {
    o.command = "help";
    o.help_topic = command;
    return o;
  }
  o.command = command;

  // Positional arguments.
  if (spec->positional) {
    if (positional.empty()) return Usage(absl::StrCat(command, " needs a ", spec->positional));
    if (positional.size() > 1) return Usage(absl::StrCat(command, ": unexpected argument '", positional[1], "'"));
    const std::string& v = positional[0];
    if (v.empty()) return Usage(absl::StrCat(command, ": ", spec->positional, " is empty"));
    if (command == "drain" || command == "undrain") o.site = v;
    if (command == "explain") o.job = v;
    if (command == "force-release") o.migration_id = v;
  } else if (!positional.empty()) {
    return Usage(absl::StrCat(command, ": unexpected argument '", positional[0], "'"));
  }

  // Flags, each checked against the command.
  if (env.endpoint && !env.endpoint->empty()) o.endpoint = *env.endpoint;
  if (env.token && !env.token->empty()) o.token = *env.token;
  bool timeout_given = false, count_given = false, duration_given = false;
  std::string token_flag;
  bool token_flag_given = false;
  for (const auto& [name, value] : flags) {
    if (!FindFlag(GlobalFlags(), name) && !FindFlag(spec->flags, name))
      return Usage(
          absl::StrCat("--", name, " does not apply to '", command, "' (try 'hyperfedctl help ", command, "')"));
    if (name == "endpoint")
      o.endpoint = value;
    else if (name == "token")
      token_flag = value, token_flag_given = true;
    else if (name == "token-file")
      o.token_file = value;
    else if (name == "ca")
      o.ca_file = value;
    else if (name == "cert")
      o.cert_file = value;
    else if (name == "key")
      o.key_file = value;
    else if (name == "server-name")
      o.server_name = value;
    else if (name == "insecure")
      o.insecure = true;
    else if (name == "json")
      o.json = true;
    else if (name == "timeout") {
      if (auto st = ParseDurationFlag(name, value, false, &o.timeout); !st.ok()) return st;
      timeout_given = true;
    } else if (name == "dot")
      o.dot = true;
    else if (name == "site")
      o.site = value;
    else if (name == "limit") {
      if (auto st = ParseInt(name, value, 1, 100000, &o.limit); !st.ok()) return st;
    } else if (name == "dry-run")
      o.dry_run = true;
    else if (name == "mode")
      o.mode = value;
    else if (name == "wait")
      o.wait = true;
    else if (name == "count") {
      if (auto st = ParseInt(name, value, 1, 100000, &o.count); !st.ok()) return st;
      count_given = true;
    } else if (name == "duration") {
      if (auto st = ParseDurationFlag(name, value, true, &o.duration); !st.ok()) return st;
      duration_given = true;
    } else if (name == "name")
      o.name = value;
    else if (name == "cores") {
      if (auto st = ParseInt(name, value, 1, 1 << 20, &o.cores); !st.ok()) return st;
    }
  }

  // The environment's file and TLS defaults, where no flag gave one.
  auto flag_given = [&flags](const char* name) {
    return std::any_of(flags.begin(), flags.end(), [name](const auto& f) { return f.first == name; });
  };
  auto env_set = [](const std::optional<std::string>& v) { return v && !v->empty(); };
  if (env_set(env.token_file) && !flag_given("token-file") && !token_flag_given) o.token_file = *env.token_file;
  if (!o.insecure) {
    if (env_set(env.ca) && !flag_given("ca")) o.ca_file = *env.ca;
    if (env_set(env.server_name) && !flag_given("server-name")) o.server_name = *env.server_name;
  }

  // Whole-command checks.
  if (auto st = CheckEndpoint(o.endpoint); !st.ok()) return st;
  if (token_flag_given && !o.token_file.empty()) return Usage("give --token or --token-file, not both");
  if (token_flag_given) {
    if (auto st = CheckToken("--token", token_flag); !st.ok()) return st;
    o.token = token_flag;
  } else if (o.token_file.empty() && !o.token.empty()) {
    if (auto st = CheckToken("HYPERFED_TOKEN", o.token); !st.ok()) return st;
  }
  if (o.insecure && (!o.ca_file.empty() || !o.cert_file.empty() || !o.key_file.empty() || !o.server_name.empty()))
    return Usage("--insecure turns TLS off: it cannot go with --ca, --cert, --key or --server-name");
  if (o.cert_file.empty() != o.key_file.empty()) return Usage("--cert and --key go together");
  if ((command == "jobs" || command == "submit") && o.site.empty() &&
      std::any_of(flags.begin(), flags.end(), [](const auto& f) { return f.first == "site"; }))
    return Usage("--site is empty");
  if (command == "submit") {
    if (!count_given) return Usage("submit needs --count N");
    if (!duration_given) return Usage("submit needs --duration D (like 30s)");
    if (o.name.size() > 200) return Usage("--name: over 200 characters");
  }
  if (command == "balance" && o.wait && !timeout_given) o.timeout = absl::Minutes(10);
  return o;
}

absl::Status LoadFiles(Options* o) {
  if (!o->token_file.empty()) {
    auto t = ReadFile("token-file", o->token_file);
    if (!t.ok()) return t.status();
    std::string token(absl::StripAsciiWhitespace(*t));
    if (auto st = CheckToken(absl::StrCat("--token-file ", o->token_file), token); !st.ok()) return st;
    o->token = token;
  }
  struct {
    const char* flag;
    const std::string& path;
    std::string* out;
  } files[] = {{"ca", o->ca_file, &o->ca}, {"cert", o->cert_file, &o->cert}, {"key", o->key_file, &o->key}};
  for (auto& f : files) {
    if (f.path.empty()) continue;
    auto pem = ReadFile(f.flag, f.path);
    if (!pem.ok()) return pem.status();
    if (pem->find("-----BEGIN ") == std::string::npos)
      return Usage(absl::StrCat("--", f.flag, ": '", f.path, "' holds no PEM block"));
    *f.out = *pem;
  }
  return absl::OkStatus();
}

}  // namespace hyperfed::client
