#include "daemon/scheduler/mark.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hyperfed::scheduler {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::FailedPreconditionError(absl::StrCat(what, " ", path, ": ", strerror(errno)));
}

absl::StatusOr<std::string> ReadKey(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Errno("mark key: cannot open", path);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const absl::Status s = Errno("mark key: cannot stat", path);
    close(fd);
    return s;
  }
  auto refuse = [&](const std::string& why) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat("mark key ", path, ": ", why));
  };
  if (!S_ISREG(st.st_mode)) return refuse("not a regular file");
  if (st.st_uid != geteuid()) return refuse(absl::StrCat("owned by uid ", st.st_uid, ", not by this daemon's user"));
  if ((st.st_mode & 077) != 0) {
    return refuse(
        absl::StrFormat("mode %04o lets group or others at it; want 0600 (chmod 600 %s)", st.st_mode & 07777, path));
  }
  std::string key(MarkKey::kKeyBytes + 1, '\0');
  const ssize_t n = read(fd, key.data(), key.size());
  close(fd);
  if (n != static_cast<ssize_t>(MarkKey::kKeyBytes))
    return absl::FailedPreconditionError(
        absl::StrCat("mark key ", path, ": want exactly ", MarkKey::kKeyBytes, " bytes, got ", n < 0 ? 0 : n));
  key.resize(MarkKey::kKeyBytes);
  return key;
}

}  // namespace

absl::StatusOr<MarkKey> MarkKey::LoadOrCreate(const std::string& path) {
  const std::filesystem::path p(path);
  if (p.has_parent_path() && !std::filesystem::exists(p.parent_path())) {
    std::error_code ec;
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec)
      return absl::FailedPreconditionError(
          absl::StrCat("mark key folder ", p.parent_path().string(), ": ", ec.message()));
    chmod(p.parent_path().c_str(), 0700);
  }
  if (access(path.c_str(), F_OK) == 0) {
    auto key = ReadKey(path);
    if (!key.ok()) return key.status();
    return MarkKey(*std::move(key));
  }
  std::string key(kKeyBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1)
    return absl::InternalError("mark key: no random bytes from OpenSSL");
  // Written under another name and renamed: a crash never leaves a short key.
  const std::string tmp = path + ".new";
  unlink(tmp.c_str());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Errno("mark key: cannot create", tmp);
  const bool written = write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()) && fsync(fd) == 0;
  close(fd);
  // link, not rename: a key another process made meanwhile is never replaced
  // (jobs already carry its marks); the key is whatever the file then holds.
  if (!written || (link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST)) {
    const absl::Status s = Errno("mark key: cannot write", path);
    unlink(tmp.c_str());
    return s;
  }
  unlink(tmp.c_str());
  auto back = ReadKey(path);
  if (!back.ok()) return back.status();
  return MarkKey(*std::move(back));
}

std::string MarkKey::Sign(absl::string_view message) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), mac, &len);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(mac), len));
}

bool MarkKey::Verify(absl::string_view message, absl::string_view mark) const {
  const std::string want = Sign(message);
  return mark.size() == want.size() && CRYPTO_memcmp(want.data(), mark.data(), want.size()) == 0;
}

}  // namespace hyperfed::scheduler
