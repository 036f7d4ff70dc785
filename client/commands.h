#pragma once

// hyperfedctl's commands: each makes its RPCs to the daemon and prints the
// reply through client/output.h.

#include <grpcpp/grpcpp.h>

#include <memory>
#include <ostream>

#include "client/flags.h"

namespace hyperfed::client {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRpcFailure = 1;  // unreachable, refused, or the daemon reported a failure
inline constexpr int kExitUsage = 2;

// A channel to options.endpoint with the TLS (or plain-text) settings of the
// options. LoadFiles must have run.
std::shared_ptr<grpc::Channel> MakeChannel(const Options& options);

// Runs options.command (not "help") over `channel`. Results go to `out`; a
// failure is one line "hyperfedctl: ..." on `err`. Returns the exit status.
int RunCommand(const Options& options, const std::shared_ptr<grpc::Channel>& channel, std::ostream& out,
               std::ostream& err);

}  // namespace hyperfed::client
