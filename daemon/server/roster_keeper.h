#pragma once

// Where this site's roster comes from (docs/operations.md, "Join and
// leave"): the YAML's (version 0) until the operators sign a newer one. A
// signed roster reaches a site from hyperfedctl (SetRoster, compare-and-set
// on the version), from a peer's heartbeat, or from a seed (a joining
// site); each is verified with security.roster_key, must be newer than the
// one in force and keep every roster rule, is written to
// state_dir/roster.signed (so a restart starts from it), and then replaces
// the roster in LiveConfig.
//
// Thread-safe.

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "daemon/common/env.h"
#include "daemon/federation/live_config.h"
#include "hyperfed/v1/hyperfed.pb.h"

namespace hyperfed::server {

class RosterKeeper {
 public:
  // Reads security.roster_key (when set) and state_dir/roster.signed: a
  // stored roster, verified, replaces the YAML's. One of another federation
  // than config.federation stops the start (FailedPrecondition). One that
  // has expired, or was signed before rosters named a federation and
  // expired, stays in force, with a warning (ExpiryWarning): the
  // federation goes on while the operators sign a new one (docs/design.md
  // §6.9). `env` gives the clock (nullptr: RealEnv::Get()).
  static absl::StatusOr<std::unique_ptr<RosterKeeper>> Open(const config::Config& config, federation::LiveConfig* live,
                                                            const Env* env = nullptr);

  // The signed roster in force; nullopt while it is the YAML's.
  std::optional<v1::SignedRoster> Current() const;
  int64_t version() const { return live_->roster()->version; }
  // SHA-256 of the signed roster's body; "" while it is the YAML's.
  std::string Digest() const;
  // Whether a peer that says it has (version, digest) should be sent this
  // site's signed roster: it is older, or of the same version but another.
  bool PeerLacks(int64_t version, const std::string& digest) const;

  // When the signed roster in force expires (InfiniteFuture for the YAML's;
  // InfinitePast for one signed before rosters expired).
  absl::Time Expires() const;
  // Why the roster in force needs the operators ("" while it does not): it
  // has expired. Said in the log by WarnIfExpired, at most once an hour.
  std::string ExpiryWarning() const;
  void WarnIfExpired();

  // A roster a peer sent: true when it was taken; false when it is not
  // newer; InvalidArgument when it is not the operators', breaks a rule, is
  // of another federation or has expired (roster::CheckForSite);
  // FailedPrecondition when this site has no roster_key.
  absl::StatusOr<bool> Offer(const v1::SignedRoster& doc, const std::string& from);
  // An operator's roster: taken only while the version in force is
  // `expected_version` (Aborted otherwise: retry on the new one) and when
  // `check` accepts it; returns the new version.
  absl::StatusOr<int64_t> Replace(const v1::SignedRoster& doc, int64_t expected_version,
                                  const std::function<absl::Status(const config::Roster&)>& check);

 private:
  RosterKeeper(std::string path, std::string public_key, std::string federation, federation::LiveConfig* live,
               const Env* env)
      : path_(std::move(path)),
        public_key_(std::move(public_key)),
        federation_(std::move(federation)),
        live_(live),
        env_(env) {}
  absl::StatusOr<config::Roster> VerifyLocked(const v1::SignedRoster& doc) const;
  // Stores `doc`, then puts `r` in force; logs what changed.
  absl::Status AdoptLocked(const v1::SignedRoster& doc, config::Roster r, const std::string& from);
  void SetDocLocked(const v1::SignedRoster& doc);
  absl::Time ExpiresLocked() const;
  std::string ExpiryWarningLocked() const;
  void WarnIfExpiredLocked();

  const std::string path_;        // state_dir/roster.signed
  const std::string public_key_;  // PEM; "" = no roster is accepted
  const std::string federation_;  // config.federation: the only one whose rosters this site takes
  federation::LiveConfig* live_;
  const Env* const env_;
  mutable std::mutex mu_;
  std::optional<v1::SignedRoster> doc_;  // guarded by mu_
  std::string digest_;                   // guarded by mu_; SHA-256 of doc_'s body ("" without one)
  absl::Time warned_ = absl::InfinitePast();  // guarded by mu_; the last ExpiryWarning logged
};

}  // namespace hyperfed::server
