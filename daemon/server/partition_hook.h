#pragma once

// A fault-injection hook for partition tests: when the environment variable
// HYPERFED_PARTITION_FILE names a file, the site ids listed in it (one per
// line) are cut off: calls to them fail UNAVAILABLE before leaving and calls
// from them are refused the same way, as if the network between the two
// sites were down. The file is re-read when it changes, so a test cuts and
// heals links while the daemons run. Without the variable nothing is cut.
// (Tests that can make network namespaces can cut real links instead.)

#include <string>

namespace hyperfed::server {

// True when traffic with `site` is cut at this moment. Thread-safe.
bool PartitionedFrom(const std::string& site);

}  // namespace hyperfed::server
