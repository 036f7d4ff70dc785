#pragma once

// A byte-exact text encoding of scheduler::JobSpec, for the journal (a
// PREPARED record must be able to resend or resubmit the very same specs
// after a restart) and for file-backed test adapters.
//
// Every field is written as "<decimal length>:<bytes>" so scripts and
// environment values may hold any byte, newlines included; doubles are
// written with 17 significant digits so they read back equal.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "daemon/scheduler/adapter.h"

namespace hyperfed::migration {

std::string EncodeSpec(const scheduler::JobSpec& spec);
// InvalidArgument when `text` is not an EncodeSpec output.
absl::StatusOr<scheduler::JobSpec> DecodeSpec(std::string_view text);

// The field primitives, reusable for other small records.
void AppendField(std::string* out, std::string_view field);
// Reads one field from the front of *in; false on malformed input.
bool ReadField(std::string_view* in, std::string* field);

}  // namespace hyperfed::migration
