// hyperfedctl: the operator's command line for a hyperfed federation.

#include <grpc/support/log.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "client/commands.h"
#include "client/flags.h"

namespace {

std::optional<std::string> Env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  return std::string(v);
}

// gRPC's own log lines (a failed TLS handshake, for one) would put a second
// line under hyperfedctl's one-line error; GRPC_VERBOSITY brings them back.
void QuietGrpcLog(gpr_log_func_args*) {}

}  // namespace

int main(int argc, char** argv) {
  using namespace hyperfed::client;
  std::vector<std::string> args(argv + 1, argv + argc);
  Environment env{Env("HYPERFED_ENDPOINT"), Env("HYPERFED_TOKEN"), Env("HYPERFED_TOKEN_FILE"), Env("HYPERFED_CA"),
                  Env("HYPERFED_SERVER_NAME"), Env("HYPERFED_ROSTER_KEY")};
  auto options = ParseArgs(args, env);
  if (!options.ok()) {
    std::cerr << "hyperfedctl: " << options.status().message() << "\n";
    return kExitUsage;
  }
  if (options->command == "help") {
    std::cout << *UsageText(options->help_topic);
    return kExitOk;
  }
  if (options->command == "completion") {
    std::cout << *CompletionScript(options->shell);
    return kExitOk;
  }
  if (auto st = LoadFiles(&*options); !st.ok()) {
    std::cerr << "hyperfedctl: " << st.message() << "\n";
    return kExitUsage;
  }
  if (!std::getenv("GRPC_VERBOSITY")) gpr_set_log_function(QuietGrpcLog);
  return RunCommand(*options, MakeChannel(*options), std::cout, std::cerr);
}
