// `hyperfedctl completion bash`, sourced in bash as an operator's shell would
// source it, and asked what completes a line.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "client/flags.h"
#include "gtest/gtest.h"

namespace hyperfed::client {
namespace {

std::string Quote(const std::string& s) { return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'"); }

// Runs `cmd` in sh; its standard output and exit status.
std::pair<std::string, int> Shell(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int st = pclose(p);
  return {out, WIFEXITED(st) ? WEXITSTATUS(st) : -1};
}

class CompletionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Shell("command -v bash >/dev/null").second != 0) GTEST_SKIP() << "no bash on this machine";
    char t[] = "/tmp/hyperfedctl-completion-XXXXXX";
    ASSERT_NE(mkdtemp(t), nullptr);
    dir_ = t;
    const char* bin = std::getenv("HYPERFEDCTL");
    auto [script, code] = Shell(absl::StrCat(bin ? bin : HYPERFEDCTL_PATH, " completion bash"));
    ASSERT_EQ(code, 0);
    script_ = dir_ + "/hyperfedctl";
    std::ofstream(script_) << script;
    std::ofstream(dir_ + "/ca.pem") << "x";
  }
  void TearDown() override {
    std::remove(script_.c_str());
    std::remove((dir_ + "/ca.pem").c_str());
    rmdir(dir_.c_str());
  }

  // What bash offers for the line `words` (the last one is being completed),
  // through the function the script registered with `complete`.
  std::set<std::string> Complete(const std::vector<std::string>& words) {
    std::string words_q;
    for (const std::string& w : words) absl::StrAppend(&words_q, " ", Quote(w));
    const std::string bash = absl::StrCat(
        "source ", Quote(script_), " || exit 3\n",
        "fn=$(complete -p hyperfedctl | sed -n 's/.*-F \\([^ ]*\\) .*/\\1/p')\n", "[ -n \"$fn\" ] || exit 4\n",
        "COMP_WORDS=(hyperfedctl", words_q, ")\n", "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n",
        "COMPREPLY=()\n", "$fn\n", "printf '%s\\n' \"${COMPREPLY[@]}\"\n");
    auto [out, code] = Shell(absl::StrCat("bash -c ", Quote(bash)));
    EXPECT_EQ(code, 0) << out;
    std::set<std::string> got;
    for (absl::string_view w : absl::StrSplit(out, '\n', absl::SkipEmpty())) got.insert(std::string(w));
    return got;
  }

  std::string dir_, script_;
};

using Set = std::set<std::string>;

TEST_F(CompletionTest, CompletesCommandNames) {
  EXPECT_EQ(Complete({"dr"}), Set{"drain"});
  EXPECT_EQ(Complete({"he"}), (Set{"health", "help"}));
  EXPECT_EQ(Complete({"--endpoint", "h:1", "--insecure", "st"}), Set{"status"});  // a flag's value is no command
  Set all = Complete({""});
  for (const std::string& c : CommandNames()) EXPECT_TRUE(all.count(c)) << c;
  EXPECT_EQ(all.size(), CommandNames().size());
}

TEST_F(CompletionTest, CompletesEachCommandsFlagsWithTheGlobalOnes) {
  Set submit = Complete({"submit", "--"});
  for (const char* f : {"--count", "--duration", "--site", "--name", "--cores", "--endpoint", "--json", "--help"})
    EXPECT_TRUE(submit.count(f)) << f;
  EXPECT_FALSE(submit.count("--dot"));
  EXPECT_EQ(Complete({"topology", "--d"}), Set{"--dot"});
  EXPECT_EQ(Complete({"status", "--d"}), Set{});
  EXPECT_EQ(Complete({"balance", "--wait", "--d"}), Set{"--dry-run"});

  // Every flag a command's usage lists, and only those with the global ones:
  // the script and the parser come from the same App.
  Set global = Complete({"--"});
  for (const std::string& c : CommandNames()) {
    Set want = global;
    std::istringstream usage(*UsageText(c));
    for (std::string line; std::getline(usage, line);)
      if (absl::StartsWith(line, "  --")) want.insert(line.substr(2, line.find(' ', 2) - 2));
    EXPECT_EQ(Complete({c, "--"}), want) << c;
  }
}

TEST_F(CompletionTest, CompletesValues) {
  EXPECT_EQ(Complete({"--ca", dir_ + "/ca"}), Set{dir_ + "/ca.pem"});
  EXPECT_EQ(Complete({"status", "--ca", "=", dir_ + "/ca"}), Set{dir_ + "/ca.pem"});  // --ca=FILE, split at '='
  EXPECT_EQ(Complete({"--endpoint", ""}), Set{});                                    // no guess at an endpoint
  EXPECT_EQ(Complete({"help", "ba"}), Set{"balance"});
  EXPECT_EQ(Complete({"help", "balance", ""}), Set{});  // help takes one command
  EXPECT_EQ(Complete({"completion", ""}), Set{"bash"});
}

}  // namespace
}  // namespace hyperfed::client
