// Runs scripts/gen-certs into a temporary folder and checks its output with
// the openssl CLI: the chain verifies, the names and usages are right, and a
// second run keeps what exists.

#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "config/config.h"
#include "gtest/gtest.h"
#include "tests/config/test_files.h"

namespace hyperfed::config {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CommandResult Shell(const std::string& command) {
  CommandResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Script() { return (testing::SourceDir() / "scripts/gen-certs").string(); }

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class GenCertsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("openssl version >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "the openssl CLI is not installed; gen-certs needs it";
    }
    ASSERT_TRUE(fs::exists(Script())) << Script();
  }

  CommandResult GenCerts(const std::string& dir, const std::string& ids) {
    return Shell(absl::StrCat("bash '", Script(), "' '", dir, "' ", ids));
  }

  std::string Certs() const { return dir_ / "certs"; }

  TempDir dir_;
};

TEST_F(GenCertsTest, SiteCertificatesChainToTheCaAndNameTheSite) {
  CommandResult r = GenCerts(Certs(), "site-a site-b");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"ca.pem", "ca-key.pem", "site-a.pem", "site-a-key.pem", "site-b.pem", "site-b-key.pem",
                        "admin.pem", "admin-key.pem", "admin-token"}) {
    EXPECT_TRUE(fs::is_regular_file(Certs() + "/" + f)) << f;
  }
  CommandResult verify = Shell(absl::StrCat("openssl verify -CAfile ", Certs(), "/ca.pem ", Certs(), "/site-a.pem ",
                                            Certs(), "/site-b.pem ", Certs(), "/admin.pem"));
  EXPECT_EQ(verify.exit_code, 0) << verify.output;

  for (const char* id : {"site-a", "site-b"}) {
    CommandResult x = Shell(absl::StrCat("openssl x509 -in ", Certs(), "/", id,
                                         ".pem -noout -subject -ext subjectAltName,extendedKeyUsage"));
    ASSERT_EQ(x.exit_code, 0) << x.output;
    EXPECT_TRUE(Contains(x.output, absl::StrCat("CN = ", id, "\n"))) << x.output;
    EXPECT_TRUE(Contains(x.output, absl::StrCat("DNS:", id, ", DNS:localhost, IP Address:127.0.0.1"))) << x.output;
    EXPECT_TRUE(Contains(x.output, "TLS Web Server Authentication")) << x.output;
    EXPECT_TRUE(Contains(x.output, "TLS Web Client Authentication")) << x.output;
    // The certificate belongs to the key written beside it.
    CommandResult pub1 = Shell(absl::StrCat("openssl x509 -in ", Certs(), "/", id, ".pem -noout -pubkey"));
    CommandResult pub2 = Shell(absl::StrCat("openssl pkey -in ", Certs(), "/", id, "-key.pem -pubout"));
    EXPECT_EQ(pub1.output, pub2.output);
    // The same certificate passes as a TLS server and as a TLS client.
    for (const char* purpose : {"sslserver", "sslclient"}) {
      CommandResult p = Shell(absl::StrCat("openssl verify -purpose ", purpose, " -CAfile ", Certs(), "/ca.pem ",
                                           Certs(), "/", id, ".pem"));
      EXPECT_EQ(p.exit_code, 0) << purpose << ": " << p.output;
    }
  }

  CommandResult key = Shell(absl::StrCat("openssl pkey -in ", Certs(), "/site-a-key.pem -noout -text"));
  EXPECT_TRUE(Contains(key.output, "prime256v1") || Contains(key.output, "P-256")) << key.output;
  struct stat st;
  ASSERT_EQ(stat((Certs() + "/site-a-key.pem").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(GenCertsTest, AdminCertificateIsClientOnlyAndTokenIsPrivate) {
  ASSERT_EQ(GenCerts(Certs(), "site-a").exit_code, 0);
  CommandResult x =
      Shell(absl::StrCat("openssl x509 -in ", Certs(), "/admin.pem -noout -subject -ext extendedKeyUsage"));
  EXPECT_TRUE(Contains(x.output, "CN = hyperfed-admin")) << x.output;
  EXPECT_TRUE(Contains(x.output, "TLS Web Client Authentication")) << x.output;
  EXPECT_FALSE(Contains(x.output, "TLS Web Server Authentication")) << x.output;
  CommandResult server =
      Shell(absl::StrCat("openssl verify -purpose sslserver -CAfile ", Certs(), "/ca.pem ", Certs(), "/admin.pem"));
  EXPECT_NE(server.exit_code, 0) << server.output;

  std::string token = ReadFile(Certs() + "/admin-token");
  EXPECT_EQ(token.size(), 65u) << token;  // 32 random bytes in hex, and a newline
  struct stat st;
  ASSERT_EQ(stat((Certs() + "/admin-token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(GenCertsTest, SecondRunKeepsCaTokenAndCertificatesAndAddsNewSites) {
  ASSERT_EQ(GenCerts(Certs(), "site-a").exit_code, 0);
  std::string ca = ReadFile(Certs() + "/ca.pem");
  std::string token = ReadFile(Certs() + "/admin-token");
  std::string site_a = ReadFile(Certs() + "/site-a.pem");
  CommandResult r = GenCerts(Certs(), "site-a site-c");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadFile(Certs() + "/ca.pem"), ca);
  EXPECT_EQ(ReadFile(Certs() + "/admin-token"), token);
  EXPECT_EQ(ReadFile(Certs() + "/site-a.pem"), site_a);
  CommandResult verify = Shell(absl::StrCat("openssl verify -CAfile ", Certs(), "/ca.pem ", Certs(), "/site-c.pem"));
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
}

TEST_F(GenCertsTest, CertificateFromAnotherCaDoesNotVerify) {
  // Proves the verify checks above can fail.
  ASSERT_EQ(GenCerts(Certs(), "site-a").exit_code, 0);
  ASSERT_EQ(GenCerts(dir_ / "other", "site-a").exit_code, 0);
  CommandResult verify =
      Shell(absl::StrCat("openssl verify -CAfile ", Certs(), "/ca.pem ", dir_.path(), "/other/site-a.pem"));
  EXPECT_NE(verify.exit_code, 0) << verify.output;
  // And a site certificate re-signed by a new CA replaces one that no longer
  // verifies, instead of being kept.
  fs::copy_file(dir_ / "other/site-a.pem", Certs() + "/site-a.pem", fs::copy_options::overwrite_existing);
  ASSERT_EQ(GenCerts(Certs(), "site-a").exit_code, 0);
  verify = Shell(absl::StrCat("openssl verify -CAfile ", Certs(), "/ca.pem ", Certs(), "/site-a.pem"));
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
}

TEST_F(GenCertsTest, BadInputFailsAndWritesNothing) {
  CommandResult r = GenCerts(Certs(), "'bad/id'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.output, "bad site id 'bad/id'")) << r.output;
  r = GenCerts(Certs(), "ca");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.output, "would clash")) << r.output;
  r = Shell(absl::StrCat("bash '", Script(), "' '", Certs(), "'"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.output, "usage:")) << r.output;
  EXPECT_FALSE(fs::exists(Certs()));
}

TEST_F(GenCertsTest, MissingOpensslIsReportedClearly) {
  CommandResult r = Shell(absl::StrCat("OPENSSL=/nonexistent/openssl bash '", Script(), "' '", Certs(), "' site-a"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.output, "openssl not found")) << r.output;
  EXPECT_FALSE(fs::exists(Certs()));
}

TEST_F(GenCertsTest, FederationExamplesLoadWithGeneratedCertificates) {
  fs::copy(testing::SourceDir() / "config/examples/federation-4", dir_ / "federation-4", fs::copy_options::recursive);
  fs::remove_all(dir_ / "federation-4/certs");  // in case someone made them in the tree
  CommandResult r = GenCerts(dir_ / "federation-4/certs", "site-a site-b site-c site-d site-e");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* id : {"site-a", "site-b", "site-c", "site-d", "site-e"}) {
    absl::StatusOr<Config> c = LoadConfig(dir_ / absl::StrCat("federation-4/", id, ".yaml"));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->security.cert, dir_ / absl::StrCat("federation-4/certs/", id, ".pem"));
    EXPECT_EQ(c->security.roster_key, dir_ / "federation-4/certs/roster-pub.pem");
  }
  // The roster key pair: an Ed25519 private key only its owner reads, and
  // its public half.
  EXPECT_EQ(fs::status(dir_ / "federation-4/certs/roster-key.pem").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  CommandResult pub = Shell(absl::StrCat("openssl pkey -pubin -in ", dir_ / "federation-4/certs/roster-pub.pem",
                                       " -noout -text"));
  EXPECT_NE(pub.output.find("ED25519"), std::string::npos) << pub.output;
}

}  // namespace
}  // namespace hyperfed::config
