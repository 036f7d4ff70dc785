#include "tests/integration/netns.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "absl/strings/str_cat.h"

namespace hyperfed::testing {

absl::StatusOr<std::unique_ptr<NetnsPair>> NetnsPair::Create() {
  if (geteuid() != 0) return absl::FailedPreconditionError("network namespaces need root");
  std::unique_ptr<NetnsPair> n(new NetnsPair);
  const int pid = static_cast<int>(getpid());
  // Names and addresses unique per process, so a run never meets another's
  // leftovers; interface names stay within the kernel's 15 characters.
  n->prefix_ = absl::StrCat("hf", pid);
  n->ns_a_ = absl::StrCat("hyperfed-test-", pid, "-a");
  n->ns_b_ = absl::StrCat("hyperfed-test-", pid, "-b");
  const std::string net = absl::StrCat("10.213.", pid % 250, ".");
  n->host_a_ = net + "2";
  n->host_b_ = net + "6";
  n->ab_a_ = net + "9";
  n->ab_b_ = net + "10";
  const std::string& p = n->prefix_;
  const std::string& a = n->ns_a_;
  const std::string& b = n->ns_b_;

  if (auto s = n->Ip("netns add " + a); !s.ok()) return absl::FailedPreconditionError(s.message());
  n->made_a_ = true;
  if (auto s = n->Ip("netns add " + b); !s.ok()) return absl::FailedPreconditionError(s.message());
  n->made_b_ = true;
  std::vector<std::string> steps;
  // The test's namespace to one side: its end gets `root_addr`, the side's
  // end `side_addr`.
  auto link_to = [&](const std::string& ns, const std::string& tag, const std::string& root_addr,
                     const std::string& side_addr) {
    const std::string root_if = absl::StrCat(p, "r", tag), side_if = absl::StrCat(p, tag, "0");
    for (std::string s :
         {absl::StrCat("link add ", root_if, " type veth peer name ", side_if),
          absl::StrCat("link set ", side_if, " netns ", ns), absl::StrCat("addr add ", root_addr, "/30 dev ", root_if),
          absl::StrCat("link set ", root_if, " up"),
          absl::StrCat("-n ", ns, " addr add ", side_addr, "/30 dev ", side_if),
          absl::StrCat("-n ", ns, " link set ", side_if, " up"), absl::StrCat("-n ", ns, " link set lo up")})
      steps.push_back(std::move(s));
  };
  link_to(a, "a", net + "1", n->host_a_);
  link_to(b, "b", net + "5", n->host_b_);
  // a <-> b, the only path between the sides.
  for (std::string s :
       {absl::StrCat("link add ", p, "ab type veth peer name ", p, "ba"), absl::StrCat("link set ", p, "ab netns ", a),
        absl::StrCat("link set ", p, "ba netns ", b),
        absl::StrCat("-n ", a, " addr add ", n->ab_a_, "/30 dev ", p, "ab"),
        absl::StrCat("-n ", b, " addr add ", n->ab_b_, "/30 dev ", p, "ba"),
        absl::StrCat("-n ", a, " link set ", p, "ab up"), absl::StrCat("-n ", b, " link set ", p, "ba up")})
    steps.push_back(std::move(s));
  for (const std::string& s : steps)
    if (auto st = n->Ip(s); !st.ok()) return absl::FailedPreconditionError(st.message());
  if (auto st = n->Routes(); !st.ok()) return absl::FailedPreconditionError(st.message());
  return n;
}

NetnsPair::~NetnsPair() {
  // Deleting a namespace removes its interfaces and their veth peers.
  if (made_a_) (void)Ip("netns del " + ns_a_);
  if (made_b_) (void)Ip("netns del " + ns_b_);
}

absl::Status NetnsPair::Ip(const std::string& args) {
  const std::string cmd = absl::StrCat("ip ", args, " 2>&1");
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return absl::InternalError(absl::StrCat("cannot run: ", cmd));
  std::string out;
  char buf[256];
  while (size_t k = fread(buf, 1, sizeof buf, f)) out.append(buf, k);
  const int rc = pclose(f);
  if (rc != 0)
    return absl::InternalError(
        absl::StrCat("`ip ", args, "` exited ", WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ": ", out));
  return absl::OkStatus();
}

// Each side reaches the other's site address only over the a-b link.
absl::Status NetnsPair::Routes() {
  if (auto s = Ip(absl::StrCat("-n ", ns_a_, " route replace ", host_b_, "/32 via ", ab_b_, " dev ", prefix_, "ab"));
      !s.ok())
    return s;
  return Ip(absl::StrCat("-n ", ns_b_, " route replace ", host_a_, "/32 via ", ab_a_, " dev ", prefix_, "ba"));
}

absl::Status NetnsPair::Cut() { return Ip(absl::StrCat("-n ", ns_a_, " link set ", prefix_, "ab down")); }

absl::Status NetnsPair::Heal() {
  if (auto s = Ip(absl::StrCat("-n ", ns_a_, " link set ", prefix_, "ab up")); !s.ok()) return s;
  // Taking the link down dropped the routes over it.
  return Routes();
}

}  // namespace hyperfed::testing
