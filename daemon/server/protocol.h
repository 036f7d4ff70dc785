#pragma once

// The version of the protocol between sites (docs/operations.md, "Upgrade"):
// "MAJOR.MINOR", sent with every heartbeat. Sites one or more minor
// versions apart take part in the same rounds (a minor version only adds
// fields, which older builds ignore); a major mismatch is refused.

#include <string>

#include "absl/status/status.h"

namespace hyperfed::server {

inline constexpr char kProtocolVersion[] = "1.9";

// This build's version: kProtocolVersion, unless the environment variable
// HYPERFED_TEST_PROTOCOL says another (tests act as another build with it).
const std::string& ProtocolVersion();

// OK when a peer speaking `theirs` may take part here; else
// FailedPrecondition naming both versions. "" is a build from before
// versions were sent: 1.0.
absl::Status CheckProtocol(const std::string& theirs);

}  // namespace hyperfed::server
