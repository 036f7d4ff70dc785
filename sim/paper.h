#pragma once

// Paper reproductions for `hyperfed-sim paper NAME`.
//
// Each reproduction regenerates one paper's results (docs/papers.md) and
// prints our figures beside the paper's own. Reproductions are deterministic
// for a given seed.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hyperfed::sim {

struct PaperOptions {
  uint64_t seed = 1;
  // Multiplies the default trial counts (1.0 = the paper's or the default).
  double scale = 1.0;
  // When not empty, write one PNG per reproduced figure into this folder.
  std::string plot_dir;
  // Called with a short line of progress; may be empty.
  std::function<void(const std::string&)> progress;
};

struct PaperReport {
  std::string text;                // tables, ours beside the paper's
  std::vector<std::string> plots;  // PNG files written
};

using PaperFn = std::function<absl::StatusOr<PaperReport>(const PaperOptions&)>;

struct PaperEntry {
  std::string name;     // e.g. "chau-fu"
  std::string seed;     // e.g. "003"
  std::string summary;  // one line
  PaperFn run;
};

// Every reproduction, in the order `hyperfed-sim paper all` runs them.
const std::vector<PaperEntry>& Papers();

// One series of (x, y) points for a plot.
struct Series {
  std::string title;
  std::vector<double> x, y;
};

// Writes DIR/NAME.png with gnuplot (lines and points, one line per series).
// Returns the path written, or an error when gnuplot is missing or fails.
absl::StatusOr<std::string> WritePlot(const std::string& dir, const std::string& name, const std::string& title,
                                      const std::string& xlabel, const std::string& ylabel,
                                      const std::vector<Series>& series, bool log_y = false);

}  // namespace hyperfed::sim
