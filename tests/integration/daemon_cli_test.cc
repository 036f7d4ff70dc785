// hyperfedd's command line (daemon/main.cc): `--config FILE [--check]`,
// usage errors as "hyperfedd: ..." plus the usage line, exit status 2.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

constexpr char kUsageLine[] = "usage: hyperfedd --config FILE [--check]\n";

TEST(DaemonCliTest, UsageErrorsNameTheProblemAndExitTwo) {
  const std::string cases[][2] = {
      {"", "hyperfedd: --config FILE is required\n"},
      {"--check", "hyperfedd: --config FILE is required\n"},
      {"--frobnicate", "hyperfedd: unknown argument '--frobnicate'\n"},
      {"--config /nonexistent/site.yaml extra", "hyperfedd: unknown argument 'extra'\n"},
      {"--config", "hyperfedd: --config"},
  };
  for (const auto& c : cases) {
    Out o = Shell(absl::StrCat(HyperfeddPath(), " ", c[0]));
    EXPECT_EQ(o.code, 2) << c[0] << ": " << o.text;
    EXPECT_EQ(o.text.rfind(c[1], 0), 0u) << c[0] << ": " << o.text;
    EXPECT_NE(o.text.find(kUsageLine), std::string::npos) << c[0] << ": " << o.text;
    EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 2) << c[0] << ": " << o.text;
  }
}

TEST(DaemonCliTest, HelpPrintsTheUsageAndExitsZero) {
  for (const char* flag : {"--help", "-h"}) {
    Out o = Shell(absl::StrCat(HyperfeddPath(), " ", flag));
    EXPECT_EQ(o.code, 0) << o.text;
    EXPECT_EQ(o.text, kUsageLine);
  }
}

TEST(DaemonCliTest, CheckTakesConfigInEitherSpelling) {
  char dir[] = "/tmp/hyperfedd-cli-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/site.yaml";
  std::ofstream(path) << "site: {id: site-a, label: 0, listen: \"127.0.0.1:7001\"}\n"
                      << "roster:\n"
                      << "  - {id: site-a, label: 0, endpoint: \"127.0.0.1:7001\"}\n"
                      << "state_dir: state\n"
                      << "security: {insecure: true}\n";
  for (const std::string& args : {absl::StrCat("--config ", path, " --check"), absl::StrCat("--check --config=", path)}) {
    Out o = Shell(absl::StrCat(HyperfeddPath(), " ", args));
    EXPECT_EQ(o.code, 0) << args << ": " << o.text;
    EXPECT_NE(o.text.find(path + ": OK (site site-a"), std::string::npos) << args << ": " << o.text;
  }
  std::remove(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace hyperfed::testing
