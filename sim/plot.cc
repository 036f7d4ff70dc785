#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/paper.h"

namespace hyperfed::sim {

absl::StatusOr<std::string> WritePlot(const std::string& dir, const std::string& name, const std::string& title,
                                      const std::string& xlabel, const std::string& ylabel,
                                      const std::vector<Series>& series, bool log_y) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  const std::string png = absl::StrCat(dir, "/", name, ".png");
  const std::string script_path = absl::StrCat(dir, "/", name, ".gp");
  std::ofstream gp(script_path);
  gp << "set terminal pngcairo size 900,600 noenhanced\n"
     << "set output '" << png << "'\n"
     << "set title '" << title << "'\n"
     << "set xlabel '" << xlabel << "'\nset ylabel '" << ylabel << "'\n"
     << "set key outside right\nset grid\n";
  if (log_y) gp << "set logscale y\n";
  gp << "plot ";
  for (size_t i = 0; i < series.size(); ++i) {
    gp << (i ? ", " : "") << "'-' using 1:2 with linespoints title '" << series[i].title << "'";
  }
  gp << "\n";
  for (const Series& s : series) {
    for (size_t j = 0; j < s.x.size(); ++j) gp << absl::StrFormat("%.6g %.6g\n", s.x[j], s.y[j]);
    gp << "e\n";
  }
  gp.close();
  const std::string cmd = absl::StrCat("gnuplot '", script_path, "' 2>&1");
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return absl::InternalError("cannot run gnuplot");
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, p)) out += buf;
  int rc = pclose(p);
  if (rc != 0) return absl::InternalError(absl::StrCat("gnuplot failed for ", png, ": ", out));
  std::filesystem::remove(script_path, ec);
  return png;
}

}  // namespace hyperfed::sim
