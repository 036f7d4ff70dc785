#include "daemon/roster/roster_doc.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/balance/modes.h"

namespace hyperfed::roster {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Ctx = std::unique_ptr<EVP_MD_CTX, CtxFree>;

absl::StatusOr<Key> ReadKey(std::string_view pem, bool is_private) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  if (!bio) return absl::InternalError("out of memory reading a key");
  Key key(is_private ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                     : PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  const char* what = is_private ? "private" : "public";
  if (!key) return absl::InvalidArgumentError(absl::StrCat("no PEM ", what, " key"));
  if (EVP_PKEY_id(key.get()) != EVP_PKEY_ED25519)
    return absl::InvalidArgumentError(absl::StrCat("the ", what, " key is not an Ed25519 key"));
  return key;
}

std::string Signed(const std::string& body) { return std::string(kSignedPrefix) + body; }

}  // namespace

void ToProto(const config::Roster& r, v1::RosterBody* out) {
  out->set_version(r.version);
  auto put = [](const config::RosterEntry& e, v1::RosterSite* s) {
    s->set_id(e.id);
    s->set_label(e.label);
    s->set_endpoint(e.endpoint);
    s->set_max_capacity(e.max_capacity);
    s->set_drained(e.drained);
    s->set_cost(e.cost);
  };
  for (const config::RosterEntry& e : r.sites) put(e, out->add_sites());
  for (const config::RosterEntry& e : r.departed) put(e, out->add_departed());
  out->set_federation(r.federation);
  out->set_expires_unix_ms(r.expires_unix_ms);
  for (const std::string& m : r.allowed_modes) out->add_allowed_modes(m);
}

absl::StatusOr<config::Roster> FromProto(const v1::RosterBody& body) {
  config::Roster r;
  r.version = body.version();
  auto get = [](const v1::RosterSite& s) {
    return config::RosterEntry{.id = s.id(),
                               .label = s.label(),
                               .endpoint = s.endpoint(),
                               .cost = s.cost(),
                               .max_capacity = s.max_capacity(),
                               .drained = s.drained()};
  };
  for (const v1::RosterSite& s : body.sites()) r.sites.push_back(get(s));
  for (const v1::RosterSite& s : body.departed()) r.departed.push_back(get(s));
  r.federation = body.federation();
  r.expires_unix_ms = body.expires_unix_ms();
  r.allowed_modes.assign(body.allowed_modes().begin(), body.allowed_modes().end());
  if (r.version < 0) return absl::InvalidArgumentError(absl::StrCat("roster version ", r.version, " is negative"));
  if (r.sites.empty()) return absl::InvalidArgumentError("the roster lists no site");
  std::vector<std::string> problems;
  for (const auto& [key, why] : config::RosterProblems(r.sites, "sites")) problems.push_back(key + ": " + why);
  // A departed site: an id and an endpoint, and no longer a site. Only those
  // are read, so only those are checked (the same rules, labels aside).
  std::vector<config::RosterEntry> departed = r.departed;
  for (size_t i = 0; i < departed.size(); ++i) {
    departed[i].label = static_cast<int>(i);
    if (r.FindSite(departed[i].id))
      problems.push_back(absl::StrCat("departed[", i, "].id: ", departed[i].id, " is also a site"));
  }
  for (const auto& [key, why] : config::RosterProblems(departed, "departed"))
    if (key.find(".label") == std::string::npos) problems.push_back(key + ": " + why);
  // Modes a coordinator can run, so that no roster allows a name none has.
  for (size_t i = 0; i < r.allowed_modes.size(); ++i) {
    if (auto st = balance::CheckRoundMode(r.allowed_modes[i]); !st.ok())
      problems.push_back(absl::StrCat("allowed_modes[", i, "]: ", st.message()));
    else if (std::find(r.allowed_modes.begin(), r.allowed_modes.begin() + i, r.allowed_modes[i]) !=
             r.allowed_modes.begin() + i)
      problems.push_back(absl::StrCat("allowed_modes[", i, "]: ", r.allowed_modes[i], " listed twice"));
  }
  if (!problems.empty())
    return absl::InvalidArgumentError(absl::StrCat("roster version ", r.version, ": ", absl::StrJoin(problems, "; ")));
  return r;
}

absl::StatusOr<v1::SignedRoster> Sign(const config::Roster& r, std::string_view private_key_pem) {
  auto key = ReadKey(private_key_pem, /*is_private=*/true);
  if (!key.ok()) return key.status();
  v1::RosterBody body;
  ToProto(r, &body);
  v1::SignedRoster doc;
  if (!body.SerializeToString(doc.mutable_body())) return absl::InternalError("cannot encode the roster");
  const std::string message = Signed(doc.body());
  Ctx ctx(EVP_MD_CTX_new());
  size_t length = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key->get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &length, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1)
    return absl::InternalError("cannot sign the roster");
  std::string sig(length, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &length,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1)
    return absl::InternalError("cannot sign the roster");
  sig.resize(length);
  doc.set_signature(std::move(sig));
  return doc;
}

absl::StatusOr<config::Roster> Verify(const v1::SignedRoster& doc, std::string_view public_key_pem) {
  auto key = ReadKey(public_key_pem, /*is_private=*/false);
  if (!key.ok()) return key.status();
  if (doc.body().size() > kMaxBodyBytes)
    return absl::InvalidArgumentError(absl::StrCat("roster of ", doc.body().size(), " bytes; the limit is ",
                                                   kMaxBodyBytes));
  const std::string message = Signed(doc.body());
  Ctx ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key->get()) != 1)
    return absl::InternalError("cannot verify the roster");
  if (EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(doc.signature().data()),
                       doc.signature().size(), reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) != 1)
    return absl::InvalidArgumentError("the roster's signature is not the operators' (security.roster_key)");
  v1::RosterBody body;
  if (!body.ParseFromString(doc.body())) return absl::InvalidArgumentError("the signed roster does not decode");
  auto r = FromProto(body);
  if (!r.ok()) return r.status();
  if (r->version < 1) return absl::InvalidArgumentError("a signed roster's version is at least 1");
  return r;
}

namespace {

// The next version of `r` with `sites`, checked as any roster is.
absl::StatusOr<config::Roster> Next(const config::Roster& r, std::vector<config::RosterEntry> sites) {
  config::Roster next = r;  // the federation, expiry and modes stay
  next.version = r.version + 1;
  next.sites = std::move(sites);
  // A site that comes back is no longer departed; one that leaves is.
  std::erase_if(next.departed, [&](const config::RosterEntry& d) { return next.FindSite(d.id) != nullptr; });
  for (const config::RosterEntry& e : r.sites)
    if (!next.FindSite(e.id) && !next.FindDeparted(e.id)) next.departed.push_back(e);
  v1::RosterBody body;
  ToProto(next, &body);
  return FromProto(body);
}

}  // namespace

absl::StatusOr<config::Roster> WithSite(const config::Roster& r, const std::string& id, const std::string& endpoint,
                                        std::optional<int> label, std::optional<double> max_capacity) {
  if (r.FindSite(id)) return absl::InvalidArgumentError(absl::StrCat("site ", id, " is already in the roster"));
  if (label && r.FindLabel(*label))
    return absl::InvalidArgumentError(
        absl::StrCat("label ", *label, " is taken by ", r.FindLabel(*label)->id, " (leave --label out for a free one)"));
  int free = 0;
  while (r.FindLabel(free)) ++free;
  config::RosterEntry e{.id = id, .label = label.value_or(free), .endpoint = endpoint};
  if (max_capacity) e.max_capacity = *max_capacity;
  std::vector<config::RosterEntry> sites = r.sites;
  sites.push_back(std::move(e));
  return Next(r, std::move(sites));
}

absl::StatusOr<config::Roster> Drained(const config::Roster& r, const std::string& id) {
  if (!r.FindSite(id)) return absl::NotFoundError(absl::StrCat("site ", id, " is not in the roster"));
  std::vector<config::RosterEntry> sites = r.sites;
  for (config::RosterEntry& e : sites)
    if (e.id == id) e.drained = true;
  return Next(r, std::move(sites));
}

absl::StatusOr<config::Roster> WithoutSite(const config::Roster& r, const std::string& id) {
  if (!r.FindSite(id)) return absl::NotFoundError(absl::StrCat("site ", id, " is not in the roster"));
  std::vector<config::RosterEntry> sites = r.sites;
  std::erase_if(sites, [&](const config::RosterEntry& e) { return e.id == id; });
  if (sites.empty()) return absl::InvalidArgumentError("the last site cannot leave the roster");
  return Next(r, std::move(sites));
}

absl::StatusOr<config::Roster> Relabelled(const config::Roster& r, const std::vector<int>& labels) {
  if (labels.size() != r.sites.size())
    return absl::InvalidArgumentError(absl::StrCat(labels.size(), " labels for ", r.sites.size(), " sites"));
  std::vector<config::RosterEntry> sites = r.sites;
  for (size_t i = 0; i < sites.size(); ++i) sites[i].label = labels[i];
  return Next(r, std::move(sites));  // distinct and in range, or refused
}

absl::Status CheckForSite(const config::Roster& r, std::string_view federation, absl::Time now) {
  if (r.federation.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        "roster version ", r.version,
        " names no federation: it was signed before rosters named theirs (and expired); the operators sign the "
        "roster in force again with `hyperfedctl roster renew`"));
  if (r.federation != federation)
    return absl::InvalidArgumentError(absl::StrCat("roster version ", r.version, " is of federation '", r.federation,
                                                   "', and this site is of federation '", std::string(federation),
                                                   "' (its config's `federation`)"));
  if (absl::FromUnixMillis(r.expires_unix_ms) <= now)
    return absl::InvalidArgumentError(absl::StrCat("roster version ", r.version, " expired at ",
                                                   absl::FormatTime(absl::FromUnixMillis(r.expires_unix_ms)),
                                                   ": the operators sign a newer one (`hyperfedctl roster renew`)"));
  return absl::OkStatus();
}

absl::StatusOr<config::Roster> Renewed(const config::Roster& r,
                                       const std::optional<std::vector<std::string>>& allowed_modes) {
  config::Roster same = r;
  if (allowed_modes) same.allowed_modes = *allowed_modes;
  return Next(same, same.sites);
}

absl::Status CheckPublicKey(std::string_view public_key_pem) {
  return ReadKey(public_key_pem, /*is_private=*/false).status();
}

}  // namespace hyperfed::roster
