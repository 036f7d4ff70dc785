// `hyperfedd --check` checks every built-in adapter's options with the
// adapter's own parser, and names the file, the line and the option
// (scheduler::OptionError; docs/operations.md, "Configure"). Slurm's cases
// are SlurmConfigTest's (slurm_federation_test.cc).

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <ostream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "daemon/scheduler/subprocess.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"

namespace hyperfed::testing {
namespace {

struct BadOption {
  const char* adapter;
  const char* options;  // lines 7 on, two spaces deeper than "options:"
  const char* blamed;   // "site.yaml:LINE: scheduler.options.NAME: "
  const char* says;     // part of the adapter's reason
};

void PrintTo(const BadOption& b, std::ostream* os) { *os << b.adapter << ": " << b.blamed; }

class AdapterOptionsTest : public ::testing::TestWithParam<BadOption> {};

TEST_P(AdapterOptionsTest, CheckNamesFileLineAndOption) {
  const BadOption& b = GetParam();
  std::string dir = (std::filesystem::temp_directory_path() / "hyperfed-options-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/site.yaml";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs(absl::StrCat("site: {id: s, label: 0, listen: \"127.0.0.1:7001\"}\n",
                     "roster:\n  - {id: s, label: 0, endpoint: \"127.0.0.1:7001\"}\n", "scheduler:\n  adapter: ",
                     b.adapter, "\n  options:\n", b.options, "state_dir: state\nsecurity: {insecure: true}\n")
            .c_str(),
        f);
  fclose(f);
  auto r = scheduler::RunCommand({.argv = {HyperfeddPath(), "--config", path, "--check"}});
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string text = r->err + r->out;
  EXPECT_EQ(r->exit_code, 2) << text;
  EXPECT_TRUE(absl::StrContains(text, b.blamed)) << text;
  EXPECT_TRUE(absl::StrContains(text, b.says)) << text;
  EXPECT_FALSE(std::filesystem::exists(dir + "/state")) << "--check made the state folder";
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    EveryAdapter, AdapterOptionsTest,
    ::testing::Values(BadOption{"sim", "    cores: 4\n    speed: fast\n",
                                "site.yaml:8: scheduler.options.speed: ", "want a finite number > 0"},
                      BadOption{"sim", "    cores: 4\n    colours: 3\n",
                                "site.yaml:8: scheduler.options.colours: ", "unknown"},
                      BadOption{"exec", "    command: /bin/true\n    timeout_ms: ten\n",
                                "site.yaml:8: scheduler.options.timeout_ms: ", "want an integer"},
                      BadOption{"exec", "    command: /bin/true\n    extra_operations: \"launch\"\n",
                                "site.yaml:8: scheduler.options.extra_operations: ", "launch"},
                      BadOption{"gridengine", "    sge_root: /var/lib/gridengine\n    qmaster_port: six\n",
                                "site.yaml:8: scheduler.options.qmaster_port: ", "want a port"},
                      BadOption{"gridengine", "    sge_root: /var/lib/gridengine\n    qeue: all.q\n",
                                "site.yaml:8: scheduler.options.qeue: ", "unknown"}),
    [](const ::testing::TestParamInfo<BadOption>& i) { return absl::StrCat(i.param.adapter, "_", i.index); });

}  // namespace
}  // namespace hyperfed::testing
