#pragma once

// hyperfedctl's command line: one CLI11 App (a subcommand per command), the
// parsed options, the usage text and the shell completion made from that App.
// Parsing touches nothing outside its arguments (the environment comes in as
// a struct), so tests drive it directly; LoadFiles is the one function that
// reads files.

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hyperfed::client {

inline constexpr char kDefaultEndpoint[] = "127.0.0.1:7101";

// The variables hyperfedctl reads from its environment.
struct Environment {
  std::optional<std::string> endpoint;  // HYPERFED_ENDPOINT
  std::optional<std::string> token;     // HYPERFED_TOKEN
  // Defaults for --token-file, --ca and --server-name, so that a container
  // (and its health check) can run plain `hyperfedctl status`. A flag wins;
  // --token wins over HYPERFED_TOKEN_FILE; --insecure drops the TLS ones.
  std::optional<std::string> token_file;   // HYPERFED_TOKEN_FILE
  std::optional<std::string> ca;           // HYPERFED_CA
  std::optional<std::string> server_name;  // HYPERFED_SERVER_NAME
  std::optional<std::string> roster_key;   // HYPERFED_ROSTER_KEY: default for --roster-key
};

// What one invocation asks for. Fields a command does not take stay at
// their defaults.
struct Options {
  // The command: status, topology, jobs, migrations, balance, drain,
  // undrain, submit, explain, force-release, health; "help" prints usage,
  // "completion" a shell completion script (neither asks a daemon).
  std::string command;
  // For command == "help" (from `help X` or `X --help`): the command whose
  // usage to print, "" for the overview.
  std::string help_topic;

  // Global flags.
  std::string endpoint = kDefaultEndpoint;
  std::string token;       // from --token, HYPERFED_TOKEN, or read from token_file
  std::string token_file;  // --token-file; read by LoadFiles
  std::string ca_file, cert_file, key_file;
  std::string ca, cert, key;  // PEM contents, filled in by LoadFiles
  std::string server_name;    // TLS target name override
  bool insecure = false;
  absl::Duration timeout = absl::Seconds(10);
  bool json = false;

  // Command arguments.
  bool dot = false;          // topology --dot
  std::string site;          // jobs --site, submit --site, drain/undrain SITE
  int limit = 0;             // migrations, rounds --limit (0: the daemon's default)
  bool dry_runs = false;     // rounds --dry-runs
  bool dry_run = false;      // balance
  std::string mode;          // balance: "" = the configured round mode
  bool wait = false;         // balance
  int count = 0;             // submit
  absl::Duration duration;   // submit
  std::string name;          // submit
  int cores = 0;             // submit (0: the daemon's default)
  std::string job;           // explain
  std::string migration_id;  // force-release
  std::string shell;         // completion
  // roster ACTION [SITE]: show, add, remove, suggest, renew
  // (docs/operations.md, "Join and leave").
  std::string roster_action;
  // How long sites take a roster this command signs (docs/design.md §6.9).
  absl::Duration valid_for = absl::Hours(24 * 90);
  // roster renew --modes: the round modes the roster allows ("all": every
  // mode; "" = keep the roster's).
  std::string modes;
  std::string costs_file;       // roster suggest --costs: the link costs (docs/algorithms.md)
  std::string costs;            // its text, filled in by LoadFiles
  bool apply = false;           // roster suggest --apply: sign and set the suggested labels
  std::string site_endpoint;   // roster add --endpoint: where peers dial the new site
  int label = -1;              // roster add --label (-1: the lowest free one)
  double capacity_max = 0;     // roster add --capacity-max (0: the default ceiling)
  std::string roster_key_file;  // --roster-key (env HYPERFED_ROSTER_KEY): the operators' private key
  std::string roster_key;       // its PEM, filled in by LoadFiles
};

// Parses argv[1..] (without the program name). A usage error comes back as
// InvalidArgument with a one-line message naming the bad command, flag or
// value. Global flags may come before or after the command; a command's own
// flags come after it.
absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args, const Environment& env);

// Reads --token-file, --ca, --cert and --key into the options. An unreadable
// or unusable file is a usage error naming the flag.
absl::Status LoadFiles(Options* options);

// The overview (topic "") or one command's usage; NotFound for an unknown
// command.
absl::StatusOr<std::string> UsageText(const std::string& topic);

// The names of every command, in the order the overview lists them.
std::vector<std::string> CommandNames();

// The completion script for `shell` (bash), generated from the same App that
// parses; NotFound for a shell it does not know.
absl::StatusOr<std::string> CompletionScript(const std::string& shell);

}  // namespace hyperfed::client
