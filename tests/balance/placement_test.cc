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

// A peer reuses its profile for a while (docs/design.md §6.10): what it
// publishes at 30 was taken at 5, before any of the four jobs placed at
// 10..13 reached it (their moves ended at 20). They are not in it, so the
// ledger keeps them and the peer, still full, gets no fifth job. Dropping
// entries by when the profile came (30) would place it on a peer that has
// no core left.
TEST(PlacerTest, AProfileTakenBeforeTheJobsLandedKeepsThemBooked) {
  Placer placer(1);
  placer.Publish(1, 0, Profile(4, {{0, 4}}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(placer.Place(10 + i, {.cores = 1, .limit = 1000, .wait_here = 500}).peer, 1) << i;
    placer.Landed(1, 10 + i, 20);
  }
  placer.Publish(1, 30, Profile(4, {{0, 4}}), /*taken=*/5);
  EXPECT_EQ(placer.Find(1)->ledger_size(), 4u);
  EXPECT_EQ(placer.Place(30, {.cores = 1, .limit = 1000, .wait_here = 500}).peer, -1);
  // Taken at 19, before the moves ended at 20: still not in it.
  placer.Publish(1, 31, Profile(4, {{0, 4}}), /*taken=*/19);
  EXPECT_EQ(placer.Find(1)->ledger_size(), 4u);
  // Taken at 25, after they landed: it holds them (here: they ended early),
  // and the ledger drops them.
  placer.Publish(1, 32, Profile(4, {{0, 4}}), /*taken=*/25);
  EXPECT_EQ(placer.Find(1)->ledger_size(), 0u);
  EXPECT_EQ(placer.Place(32, {.cores = 1, .limit = 1000, .wait_here = 500}).peer, 1);
}

TEST(PlacerTest, AJobThatCannotRunHereGoesWhereverItStarts) {
  Placer placer(60);
  placer.Publish(1, 0, Profile(8, {{0, 0}, {5000, 8}}));
  const Placement p = placer.Decide(0, {.cores = 8, .limit = 10, .wait_here = kNeverStarts});
  EXPECT_EQ(p.peer, 1);
  EXPECT_EQ(p.wait, 5000);
}

TEST(LimitAccuracyTest, RunTimesOverLimitsOfTheLastWindow) {
  LimitAccuracy a(3);
  EXPECT_EQ(a.ratio(), 0);  // nothing finished: not trusted
  a.Finished(10, 100);
  a.Finished(50, 100);
  EXPECT_DOUBLE_EQ(a.ratio(), 0.3);  // 60 / 200
  a.Finished(5, 0);                  // no limit: ignored
  a.Finished(-1, 100);               // no run time: ignored
  EXPECT_EQ(a.size(), 2u);
  a.Finished(200, 100);  // ran over its limit: counts as the limit
  EXPECT_DOUBLE_EQ(a.ratio(), 160.0 / 300);
  a.Finished(100, 100);  // the window holds 3: (10, 100) drops out
  EXPECT_DOUBLE_EQ(a.ratio(), 250.0 / 300);
}

TEST(FitRuleTest, TheSlackIsAlphaTimesTheExpectedRunTime) {
  Placer placer(60, {.alpha = 2, .home_widest = 64});
  EXPECT_EQ(placer.Slack(100), 0);  // no job finished yet
  placer.Finished(50, 100);         // accuracy 0.5
  EXPECT_EQ(placer.Slack(100), 100);
  EXPECT_EQ(placer.Slack(0), 0);  // unknown limit
  Placer squared(60, {.alpha = 2, .home_widest = 64, .exponent = 2});
  squared.Finished(50, 100);
  EXPECT_EQ(squared.Slack(100), 50);    // 2 x 0.5^2 x 100
  EXPECT_EQ(Placer(60).Slack(100), 0);  // no FitRule
}

// Home (64 cores) starts a 4-core job of 100 s at once. Peer 1 (8 cores)
// starts it at 50, peer 2 (32 cores) at once.
TEST(FitRuleTest, TheNarrowestNearTieTakesTheJob) {
  const StartProfile narrow = Profile(8, {{0, 0}, {50, 8}});
  const StartProfile middle = Profile(32, {{0, 32}});
  const ArrivingJob job{.cores = 4, .limit = 100, .wait_here = 0};
  // Exact limits (accuracy 1), alpha 1: slack 100, all three are near-ties;
  // peer 1 is the narrowest, though it starts the job 50 s later.
  Placer exact(60, {.alpha = 1, .home_widest = 64});
  exact.Finished(100, 100);
  exact.Publish(1, 0, narrow);
  exact.Publish(2, 0, middle);
  Placement p = exact.Decide(0, job);
  EXPECT_EQ(p.peer, 1);
  EXPECT_EQ(p.wait, 50);
  EXPECT_EQ(p.gain, -50);
  // Limits four times the run time: slack 25, peer 1 is no near-tie; peer
  // 2 is, and narrower than home.
  Placer loose(60, {.alpha = 1, .home_widest = 64});
  loose.Finished(25, 100);
  loose.Publish(1, 0, narrow);
  loose.Publish(2, 0, middle);
  p = loose.Decide(0, job);
  EXPECT_EQ(p.peer, 2);
  EXPECT_EQ(p.gain, 0);
  // home_first: home is a near-tie, the job stays.
  Placer home_first(60, {.alpha = 1, .home_widest = 64, .home_first = true});
  home_first.Finished(100, 100);
  home_first.Publish(1, 0, narrow);
  home_first.Publish(2, 0, middle);
  EXPECT_EQ(home_first.Decide(0, job).peer, -1);
  // A home as narrow as the narrowest peer keeps the job.
  Placer narrow_home(60, {.alpha = 1, .home_widest = 8});
  narrow_home.Finished(100, 100);
  narrow_home.Publish(1, 0, narrow);
  narrow_home.Publish(2, 0, middle);
  EXPECT_EQ(narrow_home.Decide(0, job).peer, -1);
}

TEST(FitRuleTest, AQueuedJobStaysWhileHomeIsANearTie) {
  Placer placer(60, {.alpha = 1, .home_widest = 64});
  placer.Finished(100, 100);  // slack 100 for a limit of 100
  placer.Publish(1, 0, Profile(8, {{0, 8}}));
  // Home starts it at 30, within 100 of the peer's 0: a queued job stays,
  // an arriving one goes to the narrower peer.
  EXPECT_EQ(placer.Decide(0, {.cores = 4, .limit = 100, .wait_here = 30, .queued = true}).peer, -1);
  EXPECT_EQ(placer.Decide(0, {.cores = 4, .limit = 100, .wait_here = 30}).peer, 1);
  // Home at 500 is no near-tie: the queued job goes, gaining 500.
  const Placement p = placer.Decide(0, {.cores = 4, .limit = 100, .wait_here = 500, .queued = true});
  EXPECT_EQ(p.peer, 1);
  EXPECT_EQ(p.gain, 500);
}

TEST(FitRuleTest, ASoonerStartBeyondTheSlackMustGainTheMargin) {
  Placer placer(60, {.alpha = 1, .home_widest = 64});
  placer.Finished(10, 100);  // accuracy 0.1: slack 10 for a limit of 100
  placer.Publish(1, 0, Profile(8, {{0, 8}}));
  // Home at 40 is beyond the slack, but the peer gains only 40.
  EXPECT_EQ(placer.Decide(0, {.cores = 4, .limit = 100, .wait_here = 40}).peer, -1);
  EXPECT_EQ(placer.Decide(0, {.cores = 4, .limit = 100, .wait_here = 60}).peer, 1);
}

// Limits a hundred times the run times: with exponent 8 the slack is 0 and
// the rule is earliest start with the margin, as without a FitRule.
TEST(FitRuleTest, LimitsFarAboveRunTimesFallBackToEarliestStart) {
  Placer placer(60, {.alpha = 4, .home_widest = 64, .exponent = 8});
  placer.Publish(1, 0, Profile(8, {{0, 8}}));
  placer.Publish(2, 0, Profile(32, {{0, 32}}));
  const ArrivingJob job{.cores = 4, .limit = 100, .wait_here = 0};
  EXPECT_EQ(placer.Decide(0, job).peer, -1);  // nothing finished: gains nothing, stays
  placer.Finished(100, 100);
  EXPECT_EQ(placer.Decide(0, job).peer, 1);               // exact limits: best fit
  for (int i = 0; i < 128; ++i) placer.Finished(1, 100);  // the window is all these
  EXPECT_DOUBLE_EQ(placer.accuracy().ratio(), 0.01);
  EXPECT_EQ(placer.Slack(100), 0);
  EXPECT_EQ(placer.Decide(0, job).peer, -1);
  // Earliest start: a peer 60 s sooner takes it.
  EXPECT_EQ(placer.Decide(0, {.cores = 4, .limit = 100, .wait_here = 60}).peer, 1);
}

TEST(FitRuleTest, NeverAPeerNarrowerThanTheJob) {
  Placer placer(60, {.alpha = 1, .home_widest = 64});
  placer.Finished(100, 100);
  placer.Publish(1, 0, Profile(8, {{0, 8}}));
  placer.Publish(2, 0, Profile(32, {{0, 0}, {1000, 32}}));
  // 16 cores: peer 1 is too narrow; peer 2 starts it at 1000, home at 0.
  EXPECT_EQ(placer.Decide(0, {.cores = 16, .limit = 100, .wait_here = 0}).peer, -1);
  // 40 cores fit no peer; one that cannot run here either stays.
  EXPECT_EQ(placer.Decide(0, {.cores = 40, .limit = 100, .wait_here = kNeverStarts}).peer, -1);
  // 16 cores that cannot run here go to peer 2.
  const Placement p = placer.Decide(0, {.cores = 16, .limit = 100, .wait_here = kNeverStarts});
  EXPECT_EQ(p.peer, 2);
  EXPECT_EQ(p.wait, 1000);
}

}  // namespace
}  // namespace hyperfed::balance
