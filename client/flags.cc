#include "client/flags.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "client/completion.h"

namespace hyperfed::client {
namespace {

absl::Status Usage(const std::string& msg) { return absl::InvalidArgumentError(msg); }

// Validators say what is wrong with a value; CLI11 puts the flag's name in
// front ("--limit: 'ten' is not a whole number"). Their descriptions stay
// empty: CLI11 would append them to the placeholder.
CLI::Validator WholeNumber(int lo, int hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        int n = 0;
        if (!absl::SimpleAtoi(v, &n)) return absl::StrCat("'", v, "' is not a whole number");
        if (n < lo || n > hi) return absl::StrCat(n, " is outside ", lo, "..", hi);
        return "";
      },
      "");
}

absl::StatusOr<absl::Duration> ParseDurationValue(const std::string& v, bool allow_zero) {
  absl::Duration d;
  if (!absl::ParseDuration(v, &d) || d == absl::InfiniteDuration())
    return Usage(absl::StrCat("'", v, "' is not a duration (like 30s, 500ms, 2m)"));
  if (d < absl::ZeroDuration() || (!allow_zero && d == absl::ZeroDuration()))
    return Usage(absl::StrCat(v, " must be ", allow_zero ? "zero or more" : "more than zero"));
  return d;
}

CLI::Validator DurationValidator(bool allow_zero) {
  return CLI::Validator(
      [allow_zero](std::string& v) -> std::string {
        auto d = ParseDurationValue(v, allow_zero);
        return d.ok() ? "" : std::string(d.status().message());
      },
      "");
}

CLI::Validator NotEmpty() {
  return CLI::Validator([](std::string& v) -> std::string { return v.empty() ? "must not be empty" : ""; }, "");
}

CLI::Validator MaxLength(size_t n) {
  return CLI::Validator(
      [n](std::string& v) -> std::string { return v.size() > n ? absl::StrCat("over ", n, " characters") : ""; }, "");
}

// Why a token cannot go into gRPC metadata, or "". gRPC sends metadata values
// as they are; only visible ASCII is safe there.
std::string TokenProblem(const std::string& t) {
  if (t.empty()) return "the token is empty";
  for (char c : t)
    if (c <= 0x20 || c >= 0x7f) return "the token may hold only visible ASCII characters";
  return "";
}

absl::Status CheckToken(const std::string& source, const std::string& t) {
  std::string problem = TokenProblem(t);
  return problem.empty() ? absl::OkStatus() : Usage(absl::StrCat(source, ": ", problem));
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

constexpr char kShells[] = "bash";

// hyperfedctl's command line: the global flags on the App, a subcommand per
// command. Subcommands fall through to the App, so global flags go before or
// after the command; words nobody takes are left over for LeftoverError.
// Parsed values land in `o`, the --token flag in `token` (checked against the
// environment afterwards).
struct CommandLine {
  Options o;
  std::string token;
  CLI::App app{"hyperfedctl asks a hyperfedd daemon about its federation and tells it what to do.", "hyperfedctl"};

  CommandLine() {
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->disable_flag_override();
    app.allow_extras()->fallthrough()->require_subcommand(0, 1);
    app.set_help_flag();  // added last, below, to list last

    app.add_option("--endpoint", o.endpoint, "the daemon to ask (env HYPERFED_ENDPOINT, else 127.0.0.1:7101)")
        ->type_name("HOST:PORT");
    app.add_option("--token", token, "admin token, sent as 'authorization: Bearer T' (env HYPERFED_TOKEN)")
        ->type_name("T")
        ->check(CLI::Validator([](std::string& t) { return TokenProblem(t); }, ""));
    app.add_option("--token-file", o.token_file, "read the admin token from FILE (env HYPERFED_TOKEN_FILE)")
        ->type_name("FILE");
    app.add_option("--ca", o.ca_file, "CA certificate (PEM) that signed the daemon's certificate (env HYPERFED_CA)")
        ->type_name("FILE");
    app.add_option("--cert", o.cert_file, "client certificate (PEM), optional; needs --key")->type_name("FILE");
    app.add_option("--key", o.key_file, "client private key (PEM), optional; needs --cert")->type_name("FILE");
    app.add_option("--server-name", o.server_name,
                   "expect this name (a site id) in the daemon's certificate (env HYPERFED_SERVER_NAME)")
        ->type_name("NAME");
    app.add_flag("--insecure", o.insecure, "plain text, no TLS (daemons with insecure: true only)");
    Duration(&app, "--timeout", &o.timeout, false, "give up after D (default 10s; balance --wait: 10m)");
    app.add_flag("--json", o.json, "machine-readable output (JSON; balance --wait: JSON Lines)");
    app.set_help_flag("-h,--help", "print usage");

    Command("status", "every site's label, state, load and capacity, and the last round");
    Command("topology", "the hypercube: labels, sites, states, the fault set and the next round's mode")
        ->add_flag("--dot", o.dot, "print the cube as a Graphviz graph");
    Command("jobs", "the jobs queued or running at a site")
        ->add_option("--site", o.site, "list this site's jobs (default: the site answering)")
        ->type_name("SITE")
        ->check(NotEmpty());
    Command("migrations", "the migrations this site's journal holds, newest first")
        ->add_option("--limit", o.limit, "show at most N migrations (default: the daemon's, 50)")
        ->type_name("N")
        ->check(WholeNumber(1, 100000));
    CLI::App* rounds = Command("rounds", "the last rounds, newest first, as the coordinator recorded them");
    rounds->add_option("--limit", o.limit, "show at most N rounds (default: every one kept, the last 32)")
        ->type_name("N")
        ->check(WholeNumber(1, 1000));
    rounds->add_option("--site", o.site, "the rounds this site coordinated (default: the coordinator)")
        ->type_name("SITE")
        ->check(NotEmpty());
    rounds->add_flag("--dry-runs", o.dry_runs, "list dry runs too");
    Command("waits",
            "how long the answering site's jobs waited before they started, per hour of the last 6, and where its "
            "arriving jobs were placed");
    CLI::App* balance = Command("balance", "run (or plan) a balancing round");
    balance->add_flag("--dry-run", o.dry_run, "plan the round, move nothing");
    balance->add_flag("--wait", o.wait, "follow the round to its end and print the before/after table");
    balance
        ->add_option("--mode", o.mode,
                     "run this round in mode M (exact, improved-dem, mcwa; default: the configured one)")
        ->type_name("M");
    Positional(Command("drain", "give SITE zero capacity: its pending jobs leave at the next round"), "SITE", &o.site);
    Positional(Command("undrain", "give SITE its configured capacity back"), "SITE", &o.site);
    CLI::App* submit = Command("submit", "submit test jobs");
    submit->add_option("--count", o.count, "how many jobs (required)")
        ->type_name("N")
        ->required()
        ->check(WholeNumber(1, 100000));
    Duration(submit, "--duration", &o.duration, true, "how long each runs, like 30s, 500ms, 2m (required)")
        ->required();
    Duration(submit, "--time-limit", &o.time_limit, true, "each job's time limit, at least --duration (default: none)");
    submit->add_option("--site", o.site, "submit at this site (default: the site answering)")
        ->type_name("SITE")
        ->check(NotEmpty());
    submit->add_option("--name", o.name, "job name")->type_name("NAME")->check(MaxLength(200));
    submit->add_option("--cores", o.cores, "cores per job")->type_name("C")->check(WholeNumber(1, 1 << 20));
    Positional(Command("explain", "where a job (key or local id) is and why it did or did not move"), "JOB", &o.job);
    Positional(Command("force-release",
                       "release a migration's held jobs without the destination's answer (may run them twice)"),
               "MIGRATION_ID", &o.migration_id);
    Command("health", "the standard gRPC health check for the daemon and its two services");
    CLI::App* roster = Command("roster",
                               "show the roster, add a site, drain and remove one, or suggest labels that follow the "
                               "links (changes signed with --roster-key)");
    roster->add_option("ACTION", o.roster_action, "show, add, remove, suggest or renew")
        ->required()
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
              return v == "show" || v == "add" || v == "remove" || v == "suggest" || v == "renew"
                         ? ""
                         : absl::StrCat("'", v, "' is not show, add, remove, suggest or renew");
            },
            ""));
    roster->add_option("SITE", o.site, "the site to add or remove")->check(NotEmpty());
    roster->add_option("--endpoint", o.site_endpoint, "add: where peers reach the new site (not the daemon asked)")
        ->type_name("HOST:PORT")
        ->check(NotEmpty());
    roster->add_option("--label", o.label, "add: its hypercube label (default: the lowest free one)")
        ->type_name("L")
        ->check(WholeNumber(0, (1 << 20) - 1));
    roster->add_option("--capacity-max", o.capacity_max, "add: the most capacity it may report (default 1e6)")
        ->type_name("C")
        ->check(CLI::PositiveNumber);
    roster->add_option("--roster-key", o.roster_key_file,
                       "add, remove, suggest --apply: the operators' Ed25519 private key (env HYPERFED_ROSTER_KEY)")
        ->type_name("FILE");
    roster->add_option("--costs", o.costs_file, "suggest: the link costs, a line 'SITE SITE COST' per pair")
        ->type_name("FILE");
    roster->add_flag("--apply", o.apply, "suggest: sign and set the suggested labels");
    Duration(roster, "--valid-for", &o.valid_for, false,
             "add, remove, renew, suggest --apply: how long sites take the signed roster (default 2160h, 90 days)");
    roster
        ->add_option("--modes", o.modes,
                     "renew: the round modes coordinators may run, comma-separated, or 'all' (default: keep)")
        ->type_name("LIST")
        ->check(NotEmpty());
    Positional(Command("completion", absl::StrCat("print a shell completion script (", kShells, ")")), "SHELL",
               &o.shell)
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
              return v == kShells ? "" : absl::StrCat("no completion for '", v, "' (", kShells, ")");
            },
            ""));
    Command("help", "print usage")->add_option("COMMAND", o.help_topic, "the command whose usage to print");
  }

  CLI::App* Command(const std::string& name, const std::string& summary) {
    CLI::App* c = app.add_subcommand(name, summary);
    c->set_help_flag();  // `COMMAND --help` falls through to the App's
    return c;
  }

  static CLI::Option* Positional(CLI::App* command, const std::string& name, std::string* out) {
    return command->add_option(name, *out)->required()->check(NotEmpty());
  }

  static CLI::Option* Duration(CLI::App* app, const std::string& flag, absl::Duration* out, bool allow_zero,
                               const std::string& help) {
    return app
        ->add_option_function<std::string>(
            flag, [out, allow_zero](const std::string& v) { *out = *ParseDurationValue(v, allow_zero); }, help)
        ->type_name("D")
        ->check(DurationValidator(allow_zero));
  }

  std::vector<const CLI::App*> Commands() const {
    return app.get_subcommands([](const CLI::App*) { return true; });
  }

  const CLI::App* Find(const std::string& name) const {
    for (const CLI::App* c : Commands())
      if (c->get_name() == name) return c;
    return nullptr;
  }

  // The command parsed, if any.
  const CLI::App* Parsed() const {
    auto parsed = app.get_subcommands();
    return parsed.empty() ? nullptr : parsed.front();
  }

  bool Given(const std::string& flag) const { return app.get_option(flag)->count() > 0; }
};

std::string UnknownCommand(const std::string& name) {
  return absl::StrCat("unknown command '", name, "' (try 'hyperfedctl --help')");
}

// The first word no command or flag took, as a usage error; OK if none.
absl::Status LeftoverError(const CommandLine& cl) {
  const CLI::App* command = cl.Parsed();
  for (const std::string& w : cl.app.remaining(true)) {
    if (w == "--") continue;
    if (absl::StartsWith(w, "--")) {
      const std::string flag = w.substr(0, w.find('='));
      auto has = [&flag](const CLI::App* c) { return c->get_option_no_throw(flag) != nullptr; };
      if (command && has(command))
        return Usage(absl::StrCat(flag, " goes after the command (hyperfedctl ", command->get_name(), " ", flag,
                                  ")"));
      auto commands = cl.Commands();
      if (std::none_of(commands.begin(), commands.end(), has)) return Usage(absl::StrCat("unknown flag ", flag));
      if (!command) return Usage(absl::StrCat(flag, " goes after its command (try 'hyperfedctl --help')"));
      return Usage(absl::StrCat(flag, " does not apply to '", command->get_name(), "' (try 'hyperfedctl help ",
                                command->get_name(), "')"));
    }
    if (w.size() > 1 && w[0] == '-') return Usage(absl::StrCat("unknown flag '", w, "' (flags are spelled --name)"));
    if (!command) return Usage(UnknownCommand(w));
    return Usage(absl::StrCat(command->get_name(), ": unexpected argument '", w, "'"));
  }
  return absl::OkStatus();
}

// CLI11's errors, worded as docs/hyperfedctl.md words them.
std::string Reword(const CLI::ParseError& e, const CommandLine& cl) {
  const CLI::App* command = cl.Parsed();
  if (dynamic_cast<const CLI::RequiredError*>(&e) && command) {
    // The first required option or positional the command did not get.
    for (const CLI::Option* o : command->get_options())
      if (o->get_required() && o->count() == 0)
        return o->get_positional() ? absl::StrCat(command->get_name(), " needs a ", o->get_name())
                                   : absl::StrCat(command->get_name(), " needs ", o->get_name(), " ",
                                                  o->get_type_name());
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
    // Its message starts with the flag: a valued flag was the last word, or a
    // switch got a =VALUE.
    const std::string what = e.what();
    std::string flag(absl::StripSuffix(what.substr(0, what.find(' ')), ":"));
    if (!absl::StartsWith(flag, "-")) flag = "--" + flag;
    const CLI::Option* o = cl.app.get_option_no_throw(flag);
    if (!o && command) o = command->get_option_no_throw(flag);
    if (o && o->get_expected_max() == 0) return absl::StrCat(flag, " takes no value");
    if (o) return absl::StrCat(flag, " needs a value (", o->get_type_name(), ")");
  }
  return e.what();
}

std::string FlagLine(const CLI::Option& f) {
  std::string lhs = absl::StrCat("--", f.get_lnames().front(),
                                 f.get_type_name().empty() ? "" : absl::StrCat(" ", f.get_type_name()));
  return absl::StrFormat("  %-22s %s\n", lhs, f.get_description());
}

// A command's name and positionals, as the usage shows them.
std::string Synopsis(const CLI::App& c) {
  std::string out = c.get_name();
  for (const CLI::Option* o : c.get_options())
    if (o->get_positional())
      absl::StrAppend(&out, " ", o->get_required() ? o->get_name() : absl::StrCat("[", o->get_name(), "]"));
  return out;
}

std::vector<const CLI::Option*> FlagsOf(const CLI::App& c) {
  std::vector<const CLI::Option*> out;
  for (const CLI::Option* o : c.get_options())
    if (!o->get_positional()) out.push_back(o);
  return out;
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
  CommandLine cl;
  std::vector<std::string> names;
  for (const CLI::App* c : cl.Commands()) names.push_back(c->get_name());
  return names;
}

absl::StatusOr<std::string> UsageText(const std::string& topic) {
  CommandLine cl;
  std::string out;
  if (topic.empty()) {
    absl::StrAppend(&out, "usage: hyperfedctl COMMAND [ARGS] [FLAGS]\n\n", cl.app.get_description(),
                    "\n\ncommands:\n");
    for (const CLI::App* c : cl.Commands())
      absl::StrAppendFormat(&out, "  %-28s %s\n", Synopsis(*c), c->get_description());
    out += "\nglobal flags (every command):\n";
    for (const CLI::Option* f : FlagsOf(cl.app)) out += FlagLine(*f);
    out +=
        "\nWithout --insecure the connection uses TLS (--ca, else the system's roots).\n"
        "Exit status: 0 done, 1 the daemon could not be reached or refused, 2 usage error.\n";
    return out;
  }
  const CLI::App* c = cl.Find(topic);
  if (!c) return absl::NotFoundError(absl::StrCat("unknown command '", topic, "'"));
  const auto flags = FlagsOf(*c);
  absl::StrAppend(&out, "usage: hyperfedctl ", Synopsis(*c), flags.empty() ? "" : " [FLAGS]", " [GLOBAL FLAGS]\n\n",
                  c->get_description(), "\n");
  if (!flags.empty()) {
    out += "\nflags:\n";
    for (const CLI::Option* f : flags) out += FlagLine(*f);
  }
  out += "\nglobal flags: see 'hyperfedctl --help'.\n";
  return out;
}

absl::StatusOr<std::string> CompletionScript(const std::string& shell) {
  if (shell != kShells) return absl::NotFoundError(absl::StrCat("no completion for '", shell, "' (", kShells, ")"));
  CommandLine cl;
  ValueCompletions values{{"FILE", {.files = true}}, {"COMMAND", {.words = CommandNames()}},
                          {"SHELL", {.words = {kShells}}}};
  return BashCompletion(cl.app, values);
}

absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args, const Environment& env) {
  CommandLine cl;
  Options& o = cl.o;
  bool help = false;
  std::string error;
  try {
    cl.app.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // CLI11 takes them last first
  } catch (const CLI::CallForHelp&) {
    help = true;
  } catch (const CLI::ParseError& e) {
    error = Reword(e, cl);
  }
  // A word nobody took is the first thing to report.
  if (auto st = LeftoverError(cl); !st.ok()) return st;
  const CLI::App* command = cl.Parsed();
  if (help) {
    o.command = "help";
    o.help_topic = command ? command->get_name() : "";
    return o;
  }
  if (!error.empty()) return Usage(error);
  if (!command) return Usage("no command given (try 'hyperfedctl --help')");
  o.command = command->get_name();
  if (o.command == "help") {
    if (!o.help_topic.empty() && !cl.Find(o.help_topic)) return Usage(UnknownCommand(o.help_topic));
    return o;
  }

  // The environment, where no flag gave a value.
  auto env_set = [](const std::optional<std::string>& v) { return v && !v->empty(); };
  if (env_set(env.endpoint) && !cl.Given("--endpoint")) o.endpoint = *env.endpoint;
  const bool token_flag = cl.Given("--token");
  if (token_flag)
    o.token = cl.token;
  else if (env_set(env.token))
    o.token = *env.token;
  if (env_set(env.token_file) && !cl.Given("--token-file") && !token_flag) o.token_file = *env.token_file;
  if (!o.insecure) {
    if (env_set(env.ca) && !cl.Given("--ca")) o.ca_file = *env.ca;
    if (env_set(env.server_name) && !cl.Given("--server-name")) o.server_name = *env.server_name;
  }
  if (o.command == "roster") {
    const std::string& a = o.roster_action;
    const bool takes_site = a == "add" || a == "remove";
    const bool signs = takes_site || a == "renew" || (a == "suggest" && o.apply);
    if (o.roster_key_file.empty() && env_set(env.roster_key)) o.roster_key_file = *env.roster_key;
    if (takes_site && o.site.empty()) return Usage(absl::StrCat("roster ", a, " needs a SITE"));
    if (!takes_site && !o.site.empty()) return Usage(absl::StrCat("roster ", a, " takes no SITE"));
    if (a == "add" && o.site_endpoint.empty()) return Usage("roster add needs --endpoint HOST:PORT");
    if (a != "add" && (!o.site_endpoint.empty() || o.label >= 0 || o.capacity_max > 0))
      return Usage("--endpoint, --label and --capacity-max go with roster add");
    if (a == "suggest" && o.costs_file.empty()) return Usage("roster suggest needs --costs FILE");
    if (a != "suggest" && (!o.costs_file.empty() || o.apply)) return Usage("--costs and --apply go with roster suggest");
    if (a != "renew" && !o.modes.empty()) return Usage("--modes goes with roster renew");
    if (signs && o.roster_key_file.empty())
      return Usage(absl::StrCat("roster ", a, a == "suggest" ? " --apply" : "",
                                " needs --roster-key FILE (or HYPERFED_ROSTER_KEY)"));
  }

  // Whole-command checks.
  if (auto st = CheckEndpoint(o.endpoint); !st.ok()) return st;
  if (token_flag && !o.token_file.empty()) return Usage("give --token or --token-file, not both");
  if (!token_flag && o.token_file.empty() && !o.token.empty())
    if (auto st = CheckToken("HYPERFED_TOKEN", o.token); !st.ok()) return st;
  if (o.insecure && (!o.ca_file.empty() || !o.cert_file.empty() || !o.key_file.empty() || !o.server_name.empty()))
    return Usage("--insecure turns TLS off: it cannot go with --ca, --cert, --key or --server-name");
  if (o.cert_file.empty() != o.key_file.empty()) return Usage("--cert and --key go together");
  if (o.command == "balance" && o.wait && !cl.Given("--timeout")) o.timeout = absl::Minutes(10);
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
  } files[] = {{"ca", o->ca_file, &o->ca},
               {"cert", o->cert_file, &o->cert},
               {"key", o->key_file, &o->key},
               {"roster-key", o->roster_key_file, &o->roster_key}};
  if (!o->costs_file.empty()) {
    auto costs = ReadFile("costs", o->costs_file);
    if (!costs.ok()) return costs.status();
    o->costs = *std::move(costs);
  }
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
