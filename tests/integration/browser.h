#pragma once

// A real browser for tests: headless Chromium (Debian's `chromium`), driven
// over the DevTools protocol on a pipe (--remote-debugging-pipe: commands on
// its fd 3, answers on fd 4, each a JSON text ending in a NUL byte). The
// process is a child of the test, in its own process group, stopped by that
// group's id.

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace hyperfed::testing {

class Browser {
 public:
  // The Chromium binary, or "" when none is installed.
  static std::string Find();
  // Starts Chromium with a window of width x height and opens one page.
  static absl::StatusOr<std::unique_ptr<Browser>> Start(const std::string& work_dir, int width = 1200,
                                                        int height = 1400);
  ~Browser();

  absl::Status Navigate(const std::string& url);
  // The value of a JavaScript expression in the page (a string, number,
  // boolean or JSON-able object), or the exception it threw.
  absl::StatusOr<nlohmann::json> Eval(const std::string& expression);
  // Polls `expression` until it is true; how long that took.
  absl::StatusOr<absl::Duration> WaitFor(const std::string& expression, absl::Duration timeout);
  // Saves a PNG of the whole page.
  absl::Status Screenshot(const std::string& path);

 private:
  Browser() = default;
  absl::StatusOr<nlohmann::json> Call(const std::string& method, nlohmann::json params, bool in_page = true);

  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  int next_id_ = 1;
  std::string session_;
  std::string buffer_;  // bytes read past the last message
};

}  // namespace hyperfed::testing
