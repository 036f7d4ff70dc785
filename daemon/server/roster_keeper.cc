#include "daemon/server/roster_keeper.h"

#include <fcntl.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/common/log.h"
#include "daemon/roster/roster_doc.h"
#include "daemon/server/peer_client.h"

namespace hyperfed::server {
namespace {

std::string Sha256(const std::string& bytes) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), d);
  return std::string(reinterpret_cast<const char*>(d), sizeof d);
}

// Writes `bytes` to `path` so that a crash leaves the old file or the new
// one whole: a temporary file, fsync, rename, fsync of the folder.
absl::Status WriteDurably(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp";
  auto fail = [&](const char* what) {
    return absl::InternalError(absl::StrCat(what, " ", tmp, ": ", std::strerror(errno)));
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return fail("cannot create");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return fail("cannot write");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    return fail("cannot sync");
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename");
  const std::string dir = path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return absl::OkStatus();
}

std::string Ids(const std::set<std::string>& s) { return s.empty() ? "none" : absl::StrJoin(s, ", "); }

}  // namespace

absl::StatusOr<std::unique_ptr<RosterKeeper>> RosterKeeper::Open(const config::Config& config,
                                                                 federation::LiveConfig* live, const Env* env) {
  std::string key;
  if (!config.security.roster_key.empty()) {
    auto pem = ReadWholeFile(config.security.roster_key, "security.roster_key");
    if (!pem.ok()) return pem.status();
    if (auto st = roster::CheckPublicKey(*pem); !st.ok())
      return absl::FailedPreconditionError(
          absl::StrCat("security.roster_key ", config.security.roster_key, ": ", st.message()));
    key = *std::move(pem);
  }
  std::unique_ptr<RosterKeeper> k(new RosterKeeper(config.state_dir + "/roster.signed", std::move(key),
                                                   config.federation, live, env ? env : RealEnv::Get()));
  std::error_code ec;
  if (!std::filesystem::exists(k->path_, ec)) return k;  // none yet
  auto stored = ReadWholeFile(k->path_, "the stored roster");
  if (!stored.ok()) return stored.status();
  v1::SignedRoster doc;
  if (!doc.ParseFromString(*stored))
    return absl::FailedPreconditionError(absl::StrCat(k->path_, " does not decode: remove it to start from the "
                                                      "YAML roster and the peers' newest"));
  if (k->public_key_.empty())
    return absl::FailedPreconditionError(
        absl::StrCat(k->path_, " holds a signed roster but security.roster_key is not set: set it, or remove the file"));
  std::lock_guard<std::mutex> l(k->mu_);
  // The stored roster was in force when the daemon stopped: only its
  // signature and rules are checked again, and its federation. One that has
  // expired since stays in force (ExpiryWarning); one signed before rosters
  // named a federation is taken as this site's, the way from older
  // versions (docs/design.md §6.9), until the operators renew it.
  auto r = roster::Verify(doc, k->public_key_);
  if (!r.ok()) return absl::FailedPreconditionError(absl::StrCat(k->path_, ": ", r.status().message()));
  if (!r->federation.empty() && r->federation != k->federation_)
    return absl::FailedPreconditionError(
        absl::StrCat(k->path_, ": roster version ", r->version, " is of federation '", r->federation,
                     "', and this site is of federation '", k->federation_,
                     "' (`federation` in its config): correct `federation`, or remove the file to start from the "
                     "YAML roster and the peers' newest"));
  if (r->federation.empty()) r->federation = k->federation_;
  auto next = std::make_shared<const config::Roster>(*std::move(r));
  if (live->SetRoster(next)) k->SetDocLocked(doc);
  k->WarnIfExpiredLocked();
  return k;
}

std::optional<v1::SignedRoster> RosterKeeper::Current() const {
  std::lock_guard<std::mutex> l(mu_);
  return doc_;
}

std::string RosterKeeper::Digest() const {
  std::lock_guard<std::mutex> l(mu_);
  return digest_;
}

void RosterKeeper::SetDocLocked(const v1::SignedRoster& doc) {
  doc_ = doc;
  digest_ = Sha256(doc.body());  // once here, not per heartbeat
}

bool RosterKeeper::PeerLacks(int64_t version, const std::string& digest) const {
  const int64_t mine = live_->roster()->version;
  return mine > 0 && (version < mine || (version == mine && digest != Digest()));
}

absl::StatusOr<config::Roster> RosterKeeper::VerifyLocked(const v1::SignedRoster& doc) const {
  if (public_key_.empty())
    return absl::FailedPreconditionError(
        "this site has no security.roster_key, so it keeps the roster in its YAML and takes no signed one");
  auto r = roster::Verify(doc, public_key_);
  if (!r.ok()) return r;
  // Only this federation's, and only before it expires: a new site (version
  // 0) takes no old roster a seed shows it (issue 34, finding 6).
  if (auto st = roster::CheckForSite(*r, federation_, env_->Now()); !st.ok()) return st;
  return r;
}

absl::Time RosterKeeper::Expires() const {
  std::lock_guard<std::mutex> l(mu_);
  return ExpiresLocked();
}

absl::Time RosterKeeper::ExpiresLocked() const {
  if (!doc_) return absl::InfiniteFuture();  // the YAML's
  const int64_t ms = live_->roster()->expires_unix_ms;
  return ms == 0 ? absl::InfinitePast() : absl::FromUnixMillis(ms);
}

std::string RosterKeeper::ExpiryWarning() const {
  std::lock_guard<std::mutex> l(mu_);
  return ExpiryWarningLocked();
}

std::string RosterKeeper::ExpiryWarningLocked() const {
  const absl::Time expires = ExpiresLocked();
  if (expires > env_->Now()) return "";
  const int64_t version = live_->roster()->version;
  return absl::StrCat(
      "roster version ", version,
      expires == absl::InfinitePast() ? " was signed before rosters named their federation and expired"
                                      : absl::StrCat(" expired at ", absl::FormatTime(expires)),
      ": it stays in force here, but no site that does not have it yet takes it (a new or restored site does not "
      "join): the operators sign a new version (`hyperfedctl roster renew`)");
}

void RosterKeeper::WarnIfExpired() {
  std::lock_guard<std::mutex> l(mu_);
  WarnIfExpiredLocked();
}

void RosterKeeper::WarnIfExpiredLocked() {
  const absl::Time now = env_->Now();
  if (now - warned_ < absl::Hours(1)) return;
  if (std::string why = ExpiryWarningLocked(); !why.empty()) {
    warned_ = now;
    LogWarning(why);
  }
}

absl::Status RosterKeeper::AdoptLocked(const v1::SignedRoster& doc, config::Roster r, const std::string& from) {
  if (auto st = WriteDurably(path_, doc.SerializeAsString()); !st.ok()) return st;
  const std::shared_ptr<const config::Roster> old = live_->roster();
  auto next = std::make_shared<const config::Roster>(std::move(r));
  if (!live_->SetRoster(next)) return absl::OkStatus();  // only this keeper sets rosters, under mu_
  SetDocLocked(doc);
  std::set<std::string> added, removed;
  for (const auto& e : next->sites)
    if (!old->FindSite(e.id)) added.insert(e.id);
  for (const auto& e : old->sites)
    if (!next->FindSite(e.id)) removed.insert(e.id);
  const config::RosterEntry* self = next->FindSite(live_->self());
  LogInfo(absl::StrCat("roster version ", next->version, " (from ", from, "): ", next->sites.size(), " sites in a ",
                       next->Dimension(), "-cube; added ", Ids(added), "; removed ", Ids(removed), "; this site ",
                       self ? absl::StrCat("has label ", self->label, self->drained ? " and is drained" : "")
                            : std::string("is not in it")));
  return absl::OkStatus();
}

absl::StatusOr<bool> RosterKeeper::Offer(const v1::SignedRoster& doc, const std::string& from) {
  std::lock_guard<std::mutex> l(mu_);
  auto r = VerifyLocked(doc);
  if (!r.ok()) return r.status();
  const int64_t now = live_->roster()->version;
  // Two signed rosters of one version (operators' changes through two
  // coordinators during a failover): every site keeps the one whose body
  // sorts first, so all end with the same.
  const bool tie_won = r->version == now && doc_ && doc.body() < doc_->body();
  if (r->version < now || (r->version == now && !tie_won)) return false;
  if (auto st = AdoptLocked(doc, *std::move(r), from); !st.ok()) return st;
  return true;
}

absl::StatusOr<int64_t> RosterKeeper::Replace(const v1::SignedRoster& doc, int64_t expected_version,
                                              const std::function<absl::Status(const config::Roster&)>& check) {
  std::lock_guard<std::mutex> l(mu_);
  auto r = VerifyLocked(doc);
  if (!r.ok()) return r.status();
  const int64_t now = live_->roster()->version;
  if (expected_version != now)
    return absl::AbortedError(absl::StrCat("the roster changed: version ", now, " is in force, not ", expected_version,
                                           "; run the command again"));
  if (r->version <= now)
    return absl::InvalidArgumentError(
        absl::StrCat("roster version ", r->version, " is not newer than version ", now, " in force"));
  if (auto st = check(*r); !st.ok()) return st;
  const int64_t version = r->version;
  if (auto st = AdoptLocked(doc, *std::move(r), "an operator"); !st.ok()) return st;
  return version;
}

}  // namespace hyperfed::server
