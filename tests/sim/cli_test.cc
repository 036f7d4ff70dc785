// Runs the hyperfed-sim binary the build made, as an operator would.

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace {

struct Result {
  int code;
  std::string out;
};

Result Sim(const std::string& args) {
  const char* bin = std::getenv("HYPERFED_SIM");
  std::string cmd = std::string(bin ? bin : HYPERFED_SIM_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

TEST(SimCliTest, JsonRunHasEveryField) {
  Result r = Sim("run --algorithm improved-dem --topology hypercube:4 --trials 50 --seed 9 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* key : {"\"algorithm\": \"improved-dem\"", "\"topology\": \"hypercube:4\"", "\"trials\": 50",
                          "\"seed\": 9", "\"max_diff\"", "\"histogram\"", "\"max_share_error\"", "\"tasks_moved\"",
                          "\"task_hops\"", "\"messages\"", "\"steps\""})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << " missing in " << r.out;
  EXPECT_EQ(r.out.find("\"transfers\""), std::string::npos) << "transfers only for one trial with list: loads";
}

TEST(SimCliTest, OneTrialWithListLoadsPrintsLoadsAndTransfers) {
  Result r = Sim("run --algorithm dem --topology hypercube:1 --loads list:9,1 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"initial_loads\": [9, 1]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"final_loads\": [5, 5]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{\"step\": 1, \"from\": 0, \"to\": 1, \"count\": 4}"), std::string::npos) << r.out;
}

TEST(SimCliTest, SameSeedSameResult) {
  EXPECT_EQ(Sim("run --algorithm dem --topology hypercube:5 --trials 20 --seed 4 --json").out,
            Sim("run --algorithm dem --topology hypercube:5 --trials 20 --seed 4 --json").out);
}

TEST(SimCliTest, BadInputGetsOneLineErrorAndExitTwo) {
  const char* cases[][2] = {
      {"run --algorithm nope --topology hypercube:3", "--algorithm"},
      {"run --algorithm dem --topology cube:3", "topology"},
      {"run --algorithm dem --topology hypercube:3 --loads uniform:5:1", "loads"},
      {"run --algorithm dem --topology hypercube:3 --loads list:1,2", "loads"},
      {"run --algorithm dem --topology hypercube:3 --capacities uniform:0:4", "capacities"},
      {"run --algorithm dem --topology hypercube:3 --faults list:9", "faults"},
      {"run --algorithm dem --topology hypercube:3 --trials 0", "--trials"},
      {"run --algorithm dem --topology ring:8", "hypercube"},
      {"run --algorithm dem --topology hypercube:3 --frobnicate 1", "--frobnicate"},
      {"paper nosuchpaper", "nosuchpaper"},
      {"run --algorithm dem --topology hypercube:3 extra", "unexpected argument 'extra'"},
      {"run --algorithm dem --topology hypercube:3 --seed", "--seed"},
      {"compare --trials 0", "--trials"},
      {"compare --json=yes", "json"},
      {"list everything", "'everything'"},
  };
  for (auto& c : cases) {
    Result r = Sim(c[0]);
    EXPECT_EQ(r.code, 2) << c[0] << ": " << r.out;
    EXPECT_NE(r.out.find(c[1]), std::string::npos) << c[0] << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << c[0] << ": " << r.out;
  }
}

TEST(SimCliTest, HelpAndUnknownCommands) {
  for (const char* help : {"help", "--help", "-h", "run --help"}) {
    Result r = Sim(help);
    EXPECT_EQ(r.code, 0) << help << ": " << r.out;
    EXPECT_EQ(r.out.rfind("usage:\n  hyperfed-sim run --algorithm A", 0), 0u) << help << ": " << r.out;
  }
  Result r = Sim("");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out.rfind("usage:\n", 0), 0u) << r.out;
  r = Sim("frobnicate --json");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out.rfind("hyperfed-sim: unknown command 'frobnicate'\nusage:\n", 0), 0u) << r.out;
}

// A small SWF trace in a temporary file, `bad` with a malformed line 3.
std::string TraceFile(bool bad) {
  const std::string path =
      std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + (bad ? "/cli_bad.swf" : "/cli_good.swf");
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("; Version: 2\n", f);
  for (int i = 1; i <= 60; ++i) {
    if (bad && i == 2) {
      std::fputs("2 40 -1 oops 4 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n", f);
      continue;
    }
    std::fprintf(f, "%d %d -1 %d %d -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n", i, 20 * i, 100 + 37 * (i % 11),
                 1 + (i * 7) % 16);
  }
  std::fclose(f);
  return path;
}

TEST(SimCliTest, ReplayJsonHasEveryPolicyAndKey) {
  Result r = Sim("replay " + TraceFile(false) + " --load 0.8 --origin hot --seed 3 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* key : {"\"trace\"", "\"sites\": [96, 108, 48, 144, 64, 8, 8]", "\"origin\": \"hot:3\"",
                          "\"seed\": 3", "\"jobs\": 60", "\"skipped\": 0", "\"dropped_wide\": 0", "\"load\": 0.79",
                          "\"interval\": 60", "\"hysteresis\": 600", "\"tau\": 10", "\"policy\": \"none\"",
                          "\"policy\": \"pooled\"", "\"policy\": \"earliest-start\"", "\"policy\": \"exact/gain\"",
                          "\"policy\": \"improved-dem/newest\"", "\"policy\": \"mcwa/gain\"", "\"mean_wait\"",
                          "\"median_wait\"", "\"p95_wait\"", "\"mean_bounded_slowdown\"", "\"utilisation\"",
                          "\"jobs_moved\"", "\"jobs_moved_pct\"", "\"moves\"", "\"moves_per_moved_job\""})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << " missing in " << r.out;
  EXPECT_EQ(r.out, Sim("replay " + TraceFile(false) + " --load 0.8 --origin hot --seed 3 --json").out);
}

TEST(SimCliTest, ReplayBadInputGetsOneLineErrorAndExitTwo) {
  const std::string good = TraceFile(false);
  const std::string bad = TraceFile(true);
  const std::string cases[][2] = {
      {"replay", "TRACE"},
      {"replay " + bad, "cli_bad.swf:3: field 4 'oops'"},
      {"replay " + good + " --origin warm", "--origin"},
      {"replay " + good + " --origin hot:7", "--origin"},
      {"replay " + good + " --load 0", "--load"},
      {"replay " + good + " --sites 8,x", "--sites"},
      {"replay " + good + " --interval 0", "--interval"},
      {"replay " + good + " --hysteresis -5", "--hysteresis"},
      {"replay " + good + " --jobs 0", "--jobs"},
      {"replay " + good + " --policies exact/oldest", "exact/oldest"},
      {"replay " + good + " --sites 8,0", "--sites"},
      {"replay " + good + " " + good, "one TRACE"},
      {"replay " + good + " --hysteresis=-5", "--hysteresis"},
  };
  for (auto& c : cases) {
    Result r = Sim(c[0]);
    EXPECT_EQ(r.code, 2) << c[0] << ": " << r.out;
    EXPECT_NE(r.out.find(c[1]), std::string::npos) << c[0] << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << c[0] << ": " << r.out;
  }
}

TEST(SimCliTest, QuietOnStderrWhenNotATerminal) {
  Result r = Sim("run --algorithm dem --topology hypercube:3 --trials 3000 --json");
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out.find("trial "), std::string::npos) << "progress printed to a pipe";
}

}  // namespace
