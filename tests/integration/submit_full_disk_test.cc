// A submit that fails part-way (issue 33: with the state directory's disk
// full, `hyperfedctl submit --count 5000` took 215 jobs and printed only
// "database or disk is full"): the daemon answers how many it took, and
// hyperfedctl prints "took N of M" and lists them.

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <regex>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hyperfed/v1/hyperfed.grpc.pb.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

// A tmpfs of `size` mounted at a new folder `path` for the test's life.
class SmallDisk {
 public:
  SmallDisk(const std::string& path, const std::string& size) : path_(path) {
    if (mkdir(path.c_str(), 0700) != 0) {
      why_ = absl::StrCat("mkdir ", path, ": ", strerror(errno));
    } else if (mount("tmpfs", path.c_str(), "tmpfs", 0, ("mode=0700,size=" + size).c_str()) != 0) {
      why_ = absl::StrCat("cannot mount a tmpfs at ", path, " (needs root or CAP_SYS_ADMIN): ", strerror(errno));
    } else {
      mounted_ = true;
    }
  }
  ~SmallDisk() {
    if (mounted_) umount2(path_.c_str(), MNT_DETACH);
  }
  // "" when mounted, else why not.
  const std::string& why_not() const { return why_; }

 private:
  std::string path_;
  std::string why_;
  bool mounted_ = false;
};

TEST(SubmitFullDiskTest, PartialSubmitSaysHowManyItTookAndExactlyThoseExist) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string state = dir.path() + "/state";
  SmallDisk disk(state, "1m");  // the sim queue and the journal: full before 5000 jobs
  if (!disk.why_not().empty()) GTEST_SKIP() << disk.why_not();
  const int port = Listener().port();
  DaemonProcess d(SiteConfig(dir.path(), port, state), dir.path() + "/log");
  ASSERT_TRUE(d.WaitLog("serving on port")) << d.Log();
  const std::string ctl = absl::StrCat(HyperfedctlPath(), " --endpoint 127.0.0.1:", port, " --insecure");
  const Out o = Shell(absl::StrCat(ctl, " submit --count 5000 --duration 1h"));
  EXPECT_EQ(o.code, 1) << o.text;
  std::cout << "hyperfedctl said: " << LastLine(o.text) << "\n";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.text, m, std::regex(": took ([0-9]+) of 5000 jobs\n"))) << o.text;
  int taken = 0;
  ASSERT_TRUE(absl::SimpleAtoi(m[1].str(), &taken));
  EXPECT_GT(taken, 0) << o.text;
  EXPECT_LT(taken, 5000) << o.text;
  EXPECT_NE(o.text.find(absl::StrCat("submitted ", taken, " jobs\n")), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("full"), std::string::npos) << o.text;
  // Exactly those exist.
  auto admin =
      v1::Admin::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  v1::JobsReply jobs;
  ASSERT_TRUE(admin->Jobs(&ctx, v1::JobsRequest(), &jobs).ok());
  EXPECT_EQ(jobs.jobs_size(), taken) << d.Log();
  EXPECT_EQ(d.Stop(), 0) << d.Log();
}

}  // namespace
}  // namespace hyperfed::testing
