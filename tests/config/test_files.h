#pragma once

// Files for the config tests: a temporary folder that removes itself, and the
// source tree (for config/examples and scripts/gen-certs).

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hyperfed::config::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "hyperfed-config-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void WriteFile(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A key or token: mode 0600, as the daemon requires of secrets.
inline void WriteSecret(const std::string& path, const std::string& text) {
  WriteFile(path, text);
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::replace);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The repository root: $HYPERFED_SOURCE_DIR, else found from this file's path
// (CMake compiles with absolute source paths).
inline std::filesystem::path SourceDir() {
  if (const char* env = std::getenv("HYPERFED_SOURCE_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
}

}  // namespace hyperfed::config::testing
