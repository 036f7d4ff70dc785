#pragma once

// The signed roster (docs/operations.md, "Join and leave"; docs/security.md,
// "Roster"): encoding a roster as a RosterBody, signing it with the
// operators' Ed25519 key, and checking a received one: its signature, then
// every rule a YAML roster must keep (config::RosterProblems). hyperfedctl
// signs; every site verifies. No gRPC, no files.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "config/config.h"
#include "hyperfed/v1/hyperfed.pb.h"

namespace hyperfed::roster {

// What a signature covers: this prefix, then the body's bytes. The prefix
// keeps the key's signatures of other things from passing as rosters.
inline constexpr std::string_view kSignedPrefix = "hyperfed roster v1\n";
// The largest body a site reads: a gRPC message holds no more
// (daemon/server/peer_client.h, kMaxMessageBytes), some 80,000 sites.
inline constexpr size_t kMaxBodyBytes = size_t{8} << 20;

void ToProto(const config::Roster& r, v1::RosterBody* out);
// Decodes and checks the rules; errors name the field ("sites[2].label",
// "allowed_modes[0]": a name balance::CheckRoundMode knows, each once).
absl::StatusOr<config::Roster> FromProto(const v1::RosterBody& body);

// Signs `r` with an Ed25519 private key in PEM.
absl::StatusOr<v1::SignedRoster> Sign(const config::Roster& r, std::string_view private_key_pem);
// The roster in `doc` when its signature is the key's (public key in PEM),
// its version >= 1 and its sites keep the rules; else InvalidArgument
// saying which.
absl::StatusOr<config::Roster> Verify(const v1::SignedRoster& doc, std::string_view public_key_pem);

// ---- The operators' edits (hyperfedctl roster): each returns the next
// version, or InvalidArgument (NotFound for an unknown site) saying why not.

// Adds `id` at `endpoint`: at `label`, or (nullopt) the lowest free label;
// the cube grows by a dimension when the labels outgrow it. `max_capacity`
// nullopt keeps the default ceiling.
absl::StatusOr<config::Roster> WithSite(const config::Roster& r, const std::string& id, const std::string& endpoint,
                                        std::optional<int> label, std::optional<double> max_capacity);
// Marks `id` drained (capacity 0: its jobs leave at the next round).
absl::StatusOr<config::Roster> Drained(const config::Roster& r, const std::string& id);
// Takes `id` out (into `departed`, for the migrations still in flight).
absl::StatusOr<config::Roster> WithoutSite(const config::Roster& r, const std::string& id);
// Gives every site the label `labels` holds for it (one per site, in the
// roster's order).
absl::StatusOr<config::Roster> Relabelled(const config::Roster& r, const std::vector<int>& labels);

// Whether a site of `federation` takes the signed roster `r` at `now`
// (docs/design.md §6.9; issue 34): it names that federation and has not
// expired. InvalidArgument saying why not, and what the operators do: a
// roster signed before rosters named a federation names none, and is
// refused like one of another federation (`hyperfedctl roster renew` signs
// the roster in force again, with the federation and an expiry).
absl::Status CheckForSite(const config::Roster& r, std::string_view federation, absl::Time now);

// The next version of `r`, the same sites (`hyperfedctl roster renew`):
// with `allowed_modes` when given (empty: every mode). The caller sets its
// expiry.
absl::StatusOr<config::Roster> Renewed(const config::Roster& r,
                                       const std::optional<std::vector<std::string>>& allowed_modes);

// Checks that `pem` holds an Ed25519 public key (for `hyperfedd --check`).
absl::Status CheckPublicKey(std::string_view public_key_pem);

}  // namespace hyperfed::roster
