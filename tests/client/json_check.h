#pragma once

// Checks JSON text with a real parser: python3's json module. Each non-empty
// line of `text` is parsed; `asserts` is Python run with `docs` (the parsed
// lines) in scope. Returns "" on success, else what went wrong; nullopt when
// python3 is missing (the caller skips and says why).

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

namespace hyperfed::client::testing {

inline bool HavePython() { return std::system("command -v python3 >/dev/null 2>&1") == 0; }

inline std::optional<std::string> CheckJsonLines(const std::string& text, const std::string& asserts) {
  if (!HavePython()) return std::nullopt;
  char dir_template[] = "/tmp/hyperfedctl-json-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) return std::string("mkdtemp failed");
  const std::string data = std::string(dir) + "/data.json", script = std::string(dir) + "/check.py";
  std::ofstream(data, std::ios::binary) << text;
  std::ofstream(script) << "import json, sys\n"
                           "docs = []\n"
                           "for line in open(sys.argv[1], encoding='utf-8'):\n"
                           "    if line.strip():\n"
                           "        docs.append(json.loads(line))\n"
                        << asserts << "\n";
  const std::string cmd = "python3 " + script + " " + data + " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int st = pclose(p);
  std::remove(data.c_str());
  std::remove(script.c_str());
  rmdir(dir);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return std::string();
  return out.empty() ? std::string("python3 failed") : out;
}

}  // namespace hyperfed::client::testing
