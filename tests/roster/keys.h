#pragma once

// A fresh Ed25519 key pair in PEM, as scripts/gen-certs makes the
// operators' roster key (tests only).

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <string>
#include <utility>

namespace hyperfed::testing {

struct RosterKeys {
  std::string private_pem, public_pem;
};

inline RosterKeys NewRosterKeys() {
  RosterKeys k;
  EVP_PKEY* key = nullptr;
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr);
  if (ctx && EVP_PKEY_keygen_init(ctx) == 1 && EVP_PKEY_keygen(ctx, &key) == 1) {
    auto pem = [](EVP_PKEY* key, bool priv) {
      BIO* bio = BIO_new(BIO_s_mem());
      if (priv) {
        PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
      } else {
        PEM_write_bio_PUBKEY(bio, key);
      }
      char* data = nullptr;
      long n = BIO_get_mem_data(bio, &data);
      std::string out(data, static_cast<size_t>(n));
      BIO_free(bio);
      return out;
    };
    k.private_pem = pem(key, true);
    k.public_pem = pem(key, false);
  }
  EVP_PKEY_free(key);
  EVP_PKEY_CTX_free(ctx);
  return k;
}

}  // namespace hyperfed::testing
