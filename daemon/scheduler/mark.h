#pragma once

// The mark that tells a job hyperfed submitted from one a local user made
// to look like it: HMAC-SHA256 under a secret of this site's
// (docs/adapters.md, "The migration mark"). A scheduler's queue is readable
// by its users, and a comment or job name is theirs to write, so a tag
// alone can be forged (issue 12, row 2: a local user's job carrying a
// migration's tag was taken for the moved job, which was then never
// submitted). A mark cannot be made without the key, which never leaves the
// state folder.
//
// Thread-safety: a MarkKey is immutable after Load; any thread may use it.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hyperfed::scheduler {

class MarkKey {
 public:
  static constexpr size_t kKeyBytes = 32;

  // Reads the key at `path`, or makes one (32 random bytes, mode 0600;
  // a missing folder is made 0700) when there is none. FailedPrecondition
  // naming the file when it is not a regular file owned by this process's
  // user, when group or others may read or write it, or when it does not
  // hold exactly 32 bytes; the error of the file system otherwise.
  static absl::StatusOr<MarkKey> LoadOrCreate(const std::string& path);

  // A key from the bytes given, for tests.
  static MarkKey FromBytesForTesting(std::string bytes) { return MarkKey(std::move(bytes)); }

  // The mark of `message`: 64 lowercase hex digits.
  std::string Sign(absl::string_view message) const;
  // Whether `mark` is Sign(message), compared in constant time.
  bool Verify(absl::string_view message, absl::string_view mark) const;

 private:
  explicit MarkKey(std::string key) : key_(std::move(key)) {}
  std::string key_;
};

}  // namespace hyperfed::scheduler
