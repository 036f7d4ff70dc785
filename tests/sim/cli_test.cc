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
