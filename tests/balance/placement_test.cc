#include "daemon/balance/placement.h"

#include "gtest/gtest.h"

namespace hyperfed::balance {
namespace {

StartProfile Profile(int64_t widest, std::vector<std::pair<int64_t, int64_t>> free) {
  return StartProfile{widest, std::move(free)};
}

TEST(ProfileAgedTest, TheStepHoldingTheAgeStartsAtZero) {
  const StartProfile p = Profile(8, {{0, 2}, {100, 6}, {300, 8}});
  EXPECT_EQ(ProfileAged(p, 0), p);
  EXPECT_EQ(ProfileAged(p, 50), Profile(8, {{0, 2}, {50, 6}, {250, 8}}));
  EXPECT_EQ(ProfileAged(p, 100), Profile(8, {{0, 6}, {200, 8}}));
  EXPECT_EQ(ProfileAged(p, 1000), Profile(8, {{0, 8}}));
}

// Home: the job would wait 500 s. Peer 1 is full until 400; peer 2 has a
// hole of 4 cores from 100 to 200 and is full after it until 600.
TEST(PlacerTest, AShortJobGoesToAHoleAtAPeer) {
  Placer placer(60);
  placer.Publish(1, 0, Profile(8, {{0, 0}, {400, 8}}));
  placer.Publish(2, 0, Profile(8, {{0, 0}, {100, 4}, {200, 0}, {600, 8}}));
  // 4 cores for 100 s fit the hole at peer 2 (starts at 100).
  Placement p = placer.Decide(0, {.cores = 4, .limit = 100, .wait_here = 500});
  EXPECT_EQ(p.peer, 2);
  EXPECT_EQ(p.wait, 100);
  EXPECT_EQ(p.gain, 400);
  // 4 cores for 150 s do not fit it: peer 1 at 400 is the first.
  p = placer.Decide(0, {.cores = 4, .limit = 150, .wait_here = 500});
  EXPECT_EQ(p.peer, 1);
  EXPECT_EQ(p.wait, 400);
  // 5 cores never fit the hole either.
  EXPECT_EQ(placer.Decide(0, {.cores = 5, .limit = 100, .wait_here = 500}).peer, 1);
}

TEST(PlacerTest, TiesStayHomeAndGoToTheLowerPeer) {
  Placer placer(1);
  placer.Publish(3, 0, Profile(8, {{0, 0}, {200, 8}}));
  placer.Publish(1, 0, Profile(8, {{0, 0}, {200, 8}}));
  // Both peers start it at 200, as home does: it stays.
  EXPECT_EQ(placer.Decide(0, {.cores = 2, .limit = 10, .wait_here = 200}).peer, -1);
  // Both start it 1 s sooner than home: the lower label.
  EXPECT_EQ(placer.Decide(0, {.cores = 2, .limit = 10, .wait_here = 201}).peer, 1);
}

TEST(PlacerTest, AGainUnderTheMarginStaysHome) {
  Placer placer(60);
  placer.Publish(1, 0, Profile(8, {{0, 8}}));
  EXPECT_EQ(placer.Decide(0, {.cores = 1, .limit = 10, .wait_here = 59}).peer, -1);
  const Placement p = placer.Decide(0, {.cores = 1, .limit = 10, .wait_here = 60});
  EXPECT_EQ(p.peer, 1);
  EXPECT_EQ(p.gain, 60);
}

TEST(PlacerTest, AJobTooWideForEveryPeerStaysHome) {
  Placer placer(1);
  placer.Publish(1, 0, Profile(8, {{0, 8}}));
  placer.Publish(2, 0, Profile(16, {{0, 16}}));
  EXPECT_EQ(placer.Decide(0, {.cores = 17, .limit = 10, .wait_here = 10000}).peer, -1);
  // 16 fits peer 2 only, idle: it goes there.
  EXPECT_EQ(placer.Decide(0, {.cores = 16, .limit = 10, .wait_here = 10000}).peer, 2);
}

TEST(PlacerTest, APeerThatSaidNothingGetsNothing) {
  Placer placer(1);
  placer.Publish(1, 0, Profile(8, {}));  // widest only, no free cores said
  EXPECT_EQ(placer.Decide(0, {.cores = 1, .limit = 10, .wait_here = 10000}).peer, -1);
  placer.Publish(2, 0, Profile(8, {{0, 8}}));
  placer.Forget(2);
  EXPECT_EQ(placer.Decide(0, {.cores = 1, .limit = 10, .wait_here = 10000}).peer, -1);
}

// Peer 1 said at 0 that 4 cores are free for ever. This site places four
// 1-core jobs of 1000 s there at 10..13: the profile (stale since 0) still
// says 4 free, but the ledger books them, so the fifth job sees none free
// until 1010 and stays home where it waits 500.
TEST(PlacerTest, TheLedgerCorrectsAStaleProfile) {
  Placer placer(1);
  placer.Publish(1, 0, Profile(4, {{0, 4}}));
  for (int i = 0; i < 4; ++i) {
    const Placement p = placer.Place(10 + i, {.cores = 1, .limit = 1000, .wait_here = 500});
    EXPECT_EQ(p.peer, 1) << i;
    EXPECT_EQ(p.wait, 0) << i;
  }
  EXPECT_EQ(placer.Find(1)->ledger_size(), 4u);
  EXPECT_EQ(placer.Find(1)->WaitFor(20, 1, 1000), 990);  // the first ends at 1010
  EXPECT_EQ(placer.Place(20, {.cores = 1, .limit = 1000, .wait_here = 500}).peer, -1);
  // Without the ledger (a fresh copy of the stale profile) it would have gone.
  Placer stale(1);
  stale.Publish(1, 0, Profile(4, {{0, 4}}));
  EXPECT_EQ(stale.Decide(20, {.cores = 1, .limit = 1000, .wait_here = 500}).peer, 1);
  // The peer publishes at 12, having received the first two jobs: the two
  // placed at 12 and 13 stay in the ledger and are booked into the new
  // profile; the older two are in it.
  placer.Publish(1, 12, Profile(4, {{0, 2}, {998, 3}, {999, 4}}));
  EXPECT_EQ(placer.Find(1)->ledger_size(), 2u);
  EXPECT_EQ(placer.Find(1)->WaitFor(20, 1, 10), 990);
}

TEST(PlacerTest, AJobThatCannotRunHereGoesWhereverItStarts) {
  Placer placer(60);
  placer.Publish(1, 0, Profile(8, {{0, 0}, {5000, 8}}));
  const Placement p = placer.Decide(0, {.cores = 8, .limit = 10, .wait_here = kNeverStarts});
  EXPECT_EQ(p.peer, 1);
  EXPECT_EQ(p.wait, 5000);
}

}  // namespace
}  // namespace hyperfed::balance
