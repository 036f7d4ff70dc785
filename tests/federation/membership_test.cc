#include "daemon/federation/membership.h"

#include "gtest/gtest.h"

namespace hyperfed::federation {
namespace {

HeartbeatInfo Hb(int i) {
  HeartbeatInfo hb;
  hb.site = "s" + std::to_string(i);
  hb.label = i;
  hb.load = 10;
  hb.capacity = 1;
  return hb;
}

config::Config FiveSites() {
  config::Config c;
  c.site.id = "s1";
  c.site.label = 1;
  for (int i = 0; i < 5; ++i) c.roster.push_back({"s" + std::to_string(i), i, "127.0.0.1:" + std::to_string(7000 + i)});
  c.balancer.peer_timeout = absl::Seconds(3);
  return c;
}

TEST(MembershipTest, EmptyPositionsAndSilentSitesAreFaults) {
  FakeEnv clock;
  Membership m(FiveSites(), &clock);
  EXPECT_EQ(m.dimension(), 3);  // 5 sites sit in a 3-cube
  // Nobody heard yet: only this site is up; 5..7 are empty.
  EXPECT_EQ(m.FaultLabels(), (std::vector<int>{0, 2, 3, 4, 5, 6, 7}));
  for (int i : {0, 2, 3, 4}) EXPECT_TRUE(m.Seen(Hb(i)));
  EXPECT_EQ(m.FaultLabels(), (std::vector<int>{5, 6, 7}));
  EXPECT_EQ(m.Coordinator(), "s0");
  clock.Advance(absl::Seconds(2));
  for (int i : {2, 3, 4}) m.Seen(Hb(i));
  clock.Advance(absl::Seconds(2));  // s0 silent for 4 s > 3 s timeout
  EXPECT_EQ(m.FaultLabels(), (std::vector<int>{0, 5, 6, 7}));
  EXPECT_EQ(m.Coordinator(), "s1") << "the lowest live label coordinates";
  HeartbeatInfo intruder = Hb(1);
  intruder.site = "intruder";
  EXPECT_FALSE(m.Seen(intruder));
}

}  // namespace
}  // namespace hyperfed::federation
