#pragma once

// Two network namespaces, "a" and "b", made by the test for a partition over
// real links (iproute2's `ip netns` and veth pairs; needs root):
//
//   test's namespace --veth-- a      (the test reaches a's sites)
//   test's namespace --veth-- b      (the test reaches b's sites)
//                        a --veth-- b   (the only path between the sides)
//
// Sites of side a listen on host_a(), those of side b on host_b(). Cut()
// takes the a-b link down, so traffic between the sides is lost while the
// test still reaches both; Heal() brings it back. Nothing is routed through
// the test's namespace (the sides have no route to each other but the a-b
// link), and the destructor deletes both namespaces, which removes every
// interface made here.

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace hyperfed::testing {

class NetnsPair {
 public:
  // FailedPrecondition (with the reason) when namespaces cannot be made
  // here: not root, no `ip`, or the kernel refuses.
  static absl::StatusOr<std::unique_ptr<NetnsPair>> Create();
  ~NetnsPair();

  const std::string& ns_a() const { return ns_a_; }
  const std::string& ns_b() const { return ns_b_; }
  const std::string& host_a() const { return host_a_; }
  const std::string& host_b() const { return host_b_; }

  absl::Status Cut();
  absl::Status Heal();

 private:
  NetnsPair() = default;
  // Runs `ip` with these arguments; the error names the command and its
  // output.
  absl::Status Ip(const std::string& args);
  absl::Status Routes();

  std::string ns_a_, ns_b_;
  std::string prefix_;  // interface name prefix, unique per process
  std::string host_a_, host_b_;
  std::string ab_a_, ab_b_;  // the a-b link's addresses
  bool made_a_ = false, made_b_ = false;
};

}  // namespace hyperfed::testing
