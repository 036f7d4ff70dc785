#include "sim/replay.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace hyperfed::sim {
namespace {

// One SWF data line (18 fields).
std::string Line(int64_t id, int64_t submit, int64_t run, int64_t procs, int64_t user = -1, int64_t req_procs = -1,
                 int64_t req_time = -1) {
  return absl::StrCat(id, " ", submit, " -1 ", run, " ", procs, " -1 -1 ", req_procs, " ", req_time, " -1 1 ", user,
                      " -1 -1 0 -1 -1 -1\n");
}

// A random trace: `n` jobs, widths up to `widest`, runs up to `max_run`.
std::string RandomTrace(int n, int64_t widest, int64_t max_run, uint64_t seed, int users = 0) {
  std::mt19937_64 rng(seed);
  std::string text = "; synthetic\n";
  int64_t t = 0;
  for (int i = 1; i <= n; ++i) {
    t += static_cast<int64_t>(rng() % 40);
    const int64_t procs = 1 + static_cast<int64_t>(rng() % widest);
    const int64_t run = static_cast<int64_t>(rng() % max_run);
    text += Line(i, t, run, procs, users ? static_cast<int64_t>(rng() % users) : -1);
  }
  return text;
}

Workload MakeOrDie(const std::string& text, const std::vector<int64_t>& sites, const WorkloadOptions& o) {
  auto t = ParseSwf(text, "t.swf");
  EXPECT_TRUE(t.ok()) << t.status();
  auto w = MakeWorkload(*t, sites, o);
  EXPECT_TRUE(w.ok()) << w.status();
  return *w;
}

TEST(SwfTest, ReadsFieldsSkipsHeadersAndUnusableLines) {
  const std::string text = "; Version: 2\n\n" + Line(1, 10, 100, 4, 7) + Line(2, 20, -1, 4) + Line(3, 30, 5, 0) +
                           Line(4, 40, 50, 2, -1, 8, 600) + "; trailing comment\n";
  auto t = ParseSwf(text, "x.swf");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->skipped, 2);
  EXPECT_EQ(t->jobs[0].submit, 10);
  EXPECT_EQ(t->jobs[0].run, 100);
  EXPECT_EQ(t->jobs[0].cores, 4);
  EXPECT_EQ(t->jobs[0].limit, 100) << "no requested time: the run time is the limit";
  EXPECT_EQ(t->jobs[0].user, 7);
  EXPECT_EQ(t->jobs[0].line, 3);
  EXPECT_EQ(t->jobs[1].cores, 8) << "requested processors win over allocated";
  EXPECT_EQ(t->jobs[1].limit, 600);
}

TEST(SwfTest, BadDataLineNamesFileAndLine) {
  const std::string text = "; h\n" + Line(1, 10, 100, 4) + "2 20 -1 30 4 -1\n";
  auto t = ParseSwf(text, "bad.swf");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("bad.swf:3"), std::string::npos) << t.status();
  EXPECT_NE(t.status().message().find("18 fields"), std::string::npos) << t.status();
  auto u = ParseSwf(Line(1, 10, 100, 4) + "2 20 -1 3x 4 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n", "u.swf");
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.status().message().find("u.swf:2: field 4 '3x'"), std::string::npos) << u.status();
}

TEST(LoadTest, CompressionGivesTheAskedOfferedLoad) {
  auto t = ParseSwf(RandomTrace(500, 16, 3000, 3), "t");
  ASSERT_TRUE(t.ok());
  for (double load : {0.3, 0.7, 0.85, 1.5}) {
    std::vector<SwfJob> jobs = t->jobs;
    CompressToLoad(&jobs, 64, load);
    EXPECT_NEAR(OfferedLoad(jobs, 64), load, 0.01 * load) << load;
    EXPECT_EQ(jobs.front().submit, t->jobs.front().submit) << "the first submit time stays";
  }
  // sum(cores * run) / (cores * span): 2 jobs, 10*4 + 10*4 over 8 cores and 10 s.
  std::vector<SwfJob> two = {{1, 0, 10, 4, 10, -1, 1}, {2, 10, 10, 4, 10, -1, 2}};
  EXPECT_DOUBLE_EQ(OfferedLoad(two, 8), 1.0);
}

TEST(OriginTest, UsersKeepOneOriginSeededAndFitting) {
  const std::vector<int64_t> sites = {16, 8, 4, 2};
  auto t = ParseSwf(RandomTrace(800, 16, 100, 5, 40), "t");
  ASSERT_TRUE(t.ok());
  for (const char* name : {"proportional", "uniform", "hot", "hot:2"}) {
    auto spec = ParseOrigin(name, sites);
    ASSERT_TRUE(spec.ok()) << name;
    const std::vector<int> a = AssignOrigins(t->jobs, sites, *spec, 11);
    EXPECT_EQ(a, AssignOrigins(t->jobs, sites, *spec, 11)) << name << ": same seed, same origins";
    std::map<int64_t, int> of_user;
    std::map<int64_t, int64_t> widest;
    for (size_t i = 0; i < a.size(); ++i) {
      widest[t->jobs[i].user] = std::max(widest[t->jobs[i].user], t->jobs[i].cores);
      auto [it, fresh] = of_user.try_emplace(t->jobs[i].user, a[i]);
      EXPECT_EQ(it->second, a[i]) << name << ": user " << t->jobs[i].user << " at two origins";
    }
    for (auto [user, site] : of_user) EXPECT_GE(sites[site], widest[user]) << name << ": user " << user;
  }
  // Different seeds differ for per-job users.
  auto p = ParseSwf(RandomTrace(300, 2, 100, 6), "p");
  auto spec = ParseOrigin("uniform", sites);
  EXPECT_NE(AssignOrigins(p->jobs, sites, *spec, 1), AssignOrigins(p->jobs, sites, *spec, 2));
}

TEST(OriginTest, HotPutsHalfTheJobsAtTheLargestSite) {
  const std::vector<int64_t> sites = {8, 32, 8, 8};
  auto t = ParseSwf(RandomTrace(1000, 8, 100, 7), "t");
  auto spec = ParseOrigin("hot", sites);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->hot_site, 1);
  const std::vector<int> a = AssignOrigins(t->jobs, sites, *spec, 3);
  EXPECT_EQ(std::count(a.begin(), a.end(), 1), 500);
  EXPECT_FALSE(ParseOrigin("hot:4", sites).ok());
  EXPECT_FALSE(ParseOrigin("warm", sites).ok());
}

// Every job starts once, after its submission, ends its run time later, at a
// site it fits, and no site ever runs more than its cores.
void ExpectConserved(const Workload& w, const PolicyResult& r, const std::vector<int64_t>& site_cores) {
  ASSERT_EQ(r.records.size(), w.jobs.size()) << r.policy;
  std::map<int, std::map<int64_t, int64_t>> delta;  // site -> time -> cores
  for (size_t j = 0; j < w.jobs.size(); ++j) {
    const JobRecord& rec = r.records[j];
    ASSERT_GE(rec.site, 0) << r.policy;
    ASSERT_LT(rec.site, static_cast<int>(site_cores.size())) << r.policy;
    EXPECT_GE(rec.start, w.jobs[j].submit) << r.policy << " job " << j;
    EXPECT_EQ(rec.end, rec.start + w.jobs[j].run) << r.policy << " job " << j;
    EXPECT_LE(w.jobs[j].cores, site_cores[rec.site]) << r.policy << " job " << j;
    EXPECT_EQ(rec.moves, static_cast<int>(rec.move_times.size())) << r.policy;
    if (w.jobs[j].run > 0) {
      delta[rec.site][rec.start] += w.jobs[j].cores;
      delta[rec.site][rec.end] -= w.jobs[j].cores;
    }
  }
  for (auto& [site, d] : delta) {
    int64_t used = 0;
    for (auto& [time, c] : d) {
      used += c;
      ASSERT_LE(used, site_cores[site]) << r.policy << ": site " << site << " over its cores at " << time;
    }
  }
}

TEST(ReplayTest, EveryPolicyConservesJobsAndCores) {
  const std::vector<int64_t> sites = {16, 12, 8, 4, 4};
  for (const char* origin : {"proportional", "hot"}) {
    WorkloadOptions o;
    o.origin = *ParseOrigin(origin, sites);
    o.load = 0.9;
    const Workload w = MakeOrDie(RandomTrace(400, 16, 2000, 21), sites, o);
    ReplayOptions ro;
    ro.keep_records = true;
    for (const std::string& p : ReplayPolicyNames()) {
      auto r = ReplayPolicy(w, p, ro);
      ASSERT_TRUE(r.ok()) << p << ": " << r.status();
      int64_t total = 0;
      for (int64_t c : sites) total += c;
      ExpectConserved(w, *r, p == "pooled" ? std::vector<int64_t>{total} : sites);
      EXPECT_EQ(r->jobs, 400);
      if (p == "none" || p == "pooled") {
        EXPECT_EQ(r->jobs_moved, 0) << p;
      } else if (std::string(origin) == "hot") {
        EXPECT_GT(r->jobs_moved, 0) << p;
      }
    }
  }
}

TEST(ReplayTest, NoJobMovesTwiceWithinTheHysteresisTime) {
  const std::vector<int64_t> sites = {16, 12, 8, 4, 4};
  WorkloadOptions o;
  o.origin = *ParseOrigin("hot", sites);
  o.load = 0.95;
  const Workload w = MakeOrDie(RandomTrace(600, 12, 3000, 22), sites, o);
  for (int64_t hyst : {0, 300, 1200}) {
    ReplayOptions ro;
    ro.keep_records = true;
    ro.interval = 60;
    ro.hysteresis = hyst;
    ro.margin = int64_t{1} << 40;  // a recent job would need to gain this much: never
    for (const std::string& p : ReplayPolicyNames()) {
      if (p.find('/') == std::string::npos) continue;
      auto r = ReplayPolicy(w, p, ro);
      ASSERT_TRUE(r.ok()) << p << ": " << r.status();
      for (const JobRecord& rec : r->records)
        for (size_t k = 1; k < rec.move_times.size(); ++k) {
          // A relay inside one pairwise round is one journey; rounds apart,
          // moves are at least the hysteresis time apart.
          if (rec.move_times[k] == rec.move_times[k - 1]) continue;
          EXPECT_GE(rec.move_times[k] - rec.move_times[k - 1], hyst) << p << " hysteresis " << hyst;
        }
    }
  }
}

// Within the hysteresis time a job moves again only when it gains the
// margin: with a margin of 1 s some do, with a margin beyond any wait none.
TEST(ReplayTest, WithinTheHysteresisAJobMovesOnlyForTheMargin) {
  const std::vector<int64_t> sites = {16, 12, 8, 4, 4};
  WorkloadOptions o;
  o.origin = *ParseOrigin("hot", sites);
  o.load = 0.95;
  const Workload w = MakeOrDie(RandomTrace(600, 12, 3000, 22), sites, o);
  auto within = [&](int64_t margin) {
    ReplayOptions ro;
    ro.keep_records = true;
    ro.hysteresis = 1200;
    ro.margin = margin;
    auto r = ReplayPolicy(w, "improved-dem/gain", ro);
    EXPECT_TRUE(r.ok()) << r.status();
    int n = 0;
    for (const JobRecord& rec : r->records)
      for (size_t k = 1; k < rec.move_times.size(); ++k)
        n += rec.move_times[k] != rec.move_times[k - 1] && rec.move_times[k] - rec.move_times[k - 1] < 1200;
    return n;
  };
  EXPECT_GT(within(1), 0);
  EXPECT_EQ(within(int64_t{1} << 40), 0);
}

// Two 4-core sites, every job submitted at site 0. Job 1 (4 cores, 100 s)
// has a copy at both; both would start it at 0: the origin runs it and the
// other copy is withdrawn. Job 2 (4 cores) arrives at 10: site 1 is idle and
// starts its copy at once; site 0's copy goes. Job 3 (1 core, 30 s) arrives
// at 20: site 0 is full until 100, site 1 until 110: it waits for 100.
TEST(ReplayTest, SiblingsRunEachJobOnceWhereAFirstCopyStarts) {
  const std::string text = Line(1, 0, 100, 4) + Line(2, 10, 100, 4) + Line(3, 20, 30, 1);
  Workload w = MakeOrDie(text, {4, 4}, {});
  w.origin.assign(w.jobs.size(), 0);
  ReplayOptions ro;
  ro.keep_records = true;
  auto r = ReplayPolicy(w, "siblings", ro);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->records[0].site, 0);
  EXPECT_EQ(r->records[0].start, 0);
  EXPECT_EQ(r->records[0].moves, 0);
  EXPECT_EQ(r->records[1].site, 1);
  EXPECT_EQ(r->records[1].start, 10);
  EXPECT_EQ(r->records[1].moves, 1);
  EXPECT_EQ(r->records[2].site, 0);
  EXPECT_EQ(r->records[2].start, 100);
  EXPECT_EQ(r->jobs_moved, 1);
  EXPECT_EQ(r->queue_entries, 6);  // two copies of each job
  // Job 1's second copy is withdrawn at 0, job 2's at 10: never more than
  // job 3's two copies queued at once.
  EXPECT_EQ(r->peak_queued, 2);
}

// Siblings on a random trace: every job starts once, at one site it fits,
// no site over its cores (ExpectConserved), and a copy per fitting site.
TEST(ReplayTest, SiblingsQueueACopyAtEverySiteWideEnough) {
  const std::vector<int64_t> sites = {16, 12, 8, 4, 4};
  WorkloadOptions o;
  o.origin = *ParseOrigin("proportional", sites);
  o.load = 0.9;
  const Workload w = MakeOrDie(RandomTrace(400, 16, 2000, 24), sites, o);
  ReplayOptions ro;
  ro.keep_records = true;
  auto r = ReplayPolicy(w, "siblings", ro);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectConserved(w, *r, sites);
  int64_t copies = 0;
  for (const SwfJob& j : w.jobs)
    for (int64_t c : sites) copies += j.cores <= c;
  EXPECT_EQ(r->queue_entries, copies);
}

// Two 4-core sites, every job at site 0, heartbeats every 5 s. Job 1 fills
// site 0 until 100. Job 2 arrives at 10 and would wait 90 at home; site 1
// published an empty queue at 0, so with a 60 s margin the job goes there
// and starts at once; with a 100 s margin it stays and starts at 100.
TEST(ReplayTest, ArrivalPlacesAJobWhereItStartsSoonerByTheMargin) {
  const std::string text = Line(1, 0, 100, 4) + Line(2, 10, 100, 4);
  Workload w = MakeOrDie(text, {4, 4}, {});
  w.origin.assign(w.jobs.size(), 0);
  ReplayOptions ro;
  ro.keep_records = true;
  ro.heartbeat = 5;
  ro.margin = 60;
  auto r = ReplayPolicy(w, "arrival", ro);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->records[1].site, 1);
  EXPECT_EQ(r->records[1].start, 10);
  EXPECT_EQ(r->records[1].move_times, std::vector<int64_t>{10});
  ro.margin = 100;
  r = ReplayPolicy(w, "arrival", ro);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->records[1].site, 0);
  EXPECT_EQ(r->records[1].start, 100);
}

// Three jobs of 4 cores arrive at site 0 within one heartbeat, while its
// only peer (4 cores) published an empty queue at 0. Job 1 starts at home;
// job 2 goes to the peer; job 3 would follow it on the stale profile, but
// the ledger books job 2 there, so it stays (998 at home, 999 there).
TEST(ReplayTest, ArrivalBooksWhatItSentSinceThePeerSpoke) {
  const std::string text = Line(1, 0, 1000, 4) + Line(2, 1, 1000, 4) + Line(3, 2, 1000, 4);
  Workload w = MakeOrDie(text, {4, 4}, {});
  w.origin.assign(w.jobs.size(), 0);
  ReplayOptions ro;
  ro.keep_records = true;
  ro.heartbeat = 600;
  auto r = ReplayPolicy(w, "arrival", ro);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->records[0].site, 0);
  EXPECT_EQ(r->records[1].site, 1);
  EXPECT_EQ(r->records[1].start, 1);
  EXPECT_EQ(r->records[2].site, 0);
  EXPECT_EQ(r->jobs_moved, 1);
}

// Two 4-core sites, each running a job of 4 cores from 0; site 1's (A)
// has a limit of 1000 but ends at 52. C (4 cores) arrives at site 0 at 6,
// after both published busy until 1000: it stays (a tie). Heartbeats every
// 5 s: site 1 publishes at 55 and C moves there and starts then. Published
// the moment A ends (publish_on_end) or always fresh (heartbeat 0), C moves
// and starts at 52.
TEST(ReplayTest, WaitingJobsArePlacedAgainWhenAPeerPublishes) {
  const std::string text = Line(1, 0, 52, 4, -1, 4, 1000) + Line(2, 0, 1000, 4, -1, 4, 1000) + Line(3, 6, 10, 4, -1, 4, 100);
  Workload w = MakeOrDie(text, {4, 4}, {});
  w.origin = {1, 0, 0};
  ReplayOptions ro;
  ro.keep_records = true;
  ro.heartbeat = 5;
  auto r = ReplayPolicy(w, "arrival+queue", ro);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->records[2].site, 1);
  EXPECT_EQ(r->records[2].start, 55);
  EXPECT_EQ(r->records[2].move_times, std::vector<int64_t>{55});
  ro.publish_on_end = true;
  r = ReplayPolicy(w, "arrival+queue", ro);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->records[2].site, 1);
  EXPECT_EQ(r->records[2].start, 52);
  EXPECT_EQ(r->records[2].move_times, std::vector<int64_t>{52});
  ro.publish_on_end = false;
  ro.heartbeat = 0;
  r = ReplayPolicy(w, "arrival+queue", ro);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->records[2].site, 1);
  EXPECT_EQ(r->records[2].start, 52);
  // Without placing waiting jobs again, C waits at home for job 2.
  r = ReplayPolicy(w, "arrival", ro);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->records[2].site, 0);
  EXPECT_EQ(r->records[2].start, 1000);
}

TEST(EstimatesTest, ParsesItsNamesAndRefusesOthers) {
  EXPECT_EQ(ParseEstimates("trace")->kind, EstimateSpec::kTrace);
  EXPECT_EQ(ParseEstimates("exact")->kind, EstimateSpec::kExact);
  EXPECT_EQ(ParseEstimates("model")->kind, EstimateSpec::kModel);
  EXPECT_DOUBLE_EQ(ParseEstimates("factor:3")->factor, 3);
  for (const char* bad : {"factor:0.5", "factor:x", "factor:", "Model", "", "factor:inf"}) {
    auto e = ParseEstimates(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_NE(e.status().message().find("--estimates"), std::string::npos) << e.status();
  }
  EXPECT_EQ(EstimatesName(*ParseEstimates("factor:3")), "factor:3");
}

TEST(EstimatesTest, ExactAndFactorScaleTheRunTime) {
  const std::string text = Line(1, 0, 100, 4, -1, -1, 500) + Line(2, 5, 0, 1);
  auto t = ParseSwf(text, "t.swf");
  ASSERT_TRUE(t.ok());
  WorkloadOptions o;
  EXPECT_EQ(MakeWorkload(*t, {8}, o)->jobs[0].limit, 500);  // trace: field 9
  o.estimates = *ParseEstimates("exact");
  EXPECT_EQ(MakeWorkload(*t, {8}, o)->jobs[0].limit, 100);
  EXPECT_EQ(MakeWorkload(*t, {8}, o)->jobs[1].limit, 1);  // at least 1 s
  o.estimates = *ParseEstimates("factor:2.5");
  EXPECT_EQ(MakeWorkload(*t, {8}, o)->jobs[0].limit, 250);
}

// The model: every limit at least its run time, most of them one of the
// popular round values, and far above the run time for most jobs.
TEST(EstimatesTest, ModelDrawsPopularRoundValuesAboveTheRunTime) {
  const std::vector<int64_t> head = ModelHeadValues(30 * 3600 + 5);
  EXPECT_EQ(head.back(), 31 * 3600);
  EXPECT_EQ(head.size(), 20u);
  EXPECT_EQ(head.front(), 5 * 60);
  EXPECT_EQ(ModelHeadValues(10).back(), 3600);
  WorkloadOptions o;
  o.estimates = *ParseEstimates("model");
  // Mostly short jobs, as in the archive's traces: 9 in 10 under 20 min.
  std::string text;
  std::mt19937_64 rng(25);
  for (int i = 1; i <= 2000; ++i)
    text += Line(i, i * 10, i % 10 ? static_cast<int64_t>(rng() % 1200) : static_cast<int64_t>(rng() % 20000), 1);
  const Workload w = MakeOrDie(text, {8}, o);
  int64_t longest = 0;
  for (const SwfJob& j : w.jobs) longest = std::max(longest, j.run);
  const std::vector<int64_t> popular = ModelHeadValues(longest);
  int in_head = 0, far = 0;
  for (const SwfJob& j : w.jobs) {
    ASSERT_GE(j.limit, std::max<int64_t>(j.run, 1));
    in_head += std::count(popular.begin(), popular.end(), j.limit) > 0;
    far += j.limit >= 2 * j.run;
  }
  EXPECT_GT(in_head, 2000 * 8 / 10);
  EXPECT_GT(far, 2000 / 2);
  // The same seed draws the same limits; another seed others.
  const Workload again = MakeOrDie(text, {8}, o);
  o.seed = 2;
  const Workload other = MakeOrDie(text, {8}, o);
  int same = 0, differ = 0;
  for (size_t i = 0; i < w.jobs.size(); ++i) {
    same += w.jobs[i].limit == again.jobs[i].limit;
    differ += w.jobs[i].limit != other.jobs[i].limit;
  }
  EXPECT_EQ(same, 2000);
  EXPECT_GT(differ, 0);
}

TEST(ReplayTest, TheDefaultPolicyIsMarkedInJson) {
  const Workload w = MakeOrDie(Line(1, 0, 10, 4), {8}, {});
  ReplayRun run;
  for (const std::string& p : std::vector<std::string>{"none", std::string(kDefaultReplayPolicy)}) {
    auto r = ReplayPolicy(w, p, {});
    ASSERT_TRUE(r.ok()) << r.status();
    run.results.push_back(*r);
  }
  const std::string json = ReplayJson(w, run);
  EXPECT_NE(json.find("\"policy\": \"none\""), std::string::npos);
  EXPECT_NE(json.find(absl::StrCat("\"policy\": \"", std::string(kDefaultReplayPolicy), "\"")), std::string::npos);
  const size_t def = json.find(absl::StrCat("\"policy\": \"", std::string(kDefaultReplayPolicy), "\""));
  EXPECT_NE(json.find("\"default\": true", def), std::string::npos);
  EXPECT_NE(json.find("\"default\": false"), std::string::npos);
  EXPECT_LT(json.find("\"default\": false"), def);
}

TEST(ReplayTest, EarliestStartBeatsNoneOnAHotSpot) {
  const std::vector<int64_t> sites = {8, 8, 8, 8};
  WorkloadOptions o;
  o.origin = *ParseOrigin("hot:0", sites);
  o.load = 0.6;
  const Workload w = MakeOrDie(RandomTrace(400, 8, 1000, 23), sites, o);
  auto none = ReplayPolicy(w, "none", {});
  auto es = ReplayPolicy(w, "earliest-start", {});
  auto pooled = ReplayPolicy(w, "pooled", {});
  ASSERT_TRUE(none.ok() && es.ok() && pooled.ok());
  EXPECT_LT(es->mean_bounded_slowdown, none->mean_bounded_slowdown / 2);
  EXPECT_LT(es->mean_wait, none->mean_wait);
  EXPECT_GT(es->jobs_moved, 0);
  EXPECT_LE(pooled->mean_wait, none->mean_wait);
}

TEST(ReplayTest, MetricsOfAHandMadeTrace) {
  // One 4-core site: job 1 runs 0..100, job 2 (4 cores) waits for it, job 3
  // (run 5) cannot backfill (no cores free).
  const std::string text = Line(1, 0, 100, 4) + Line(2, 0, 50, 4) + Line(3, 10, 5, 1);
  const Workload w = MakeOrDie(text, {4}, {});
  ReplayOptions ro;
  ro.keep_records = true;
  auto r = ReplayPolicy(w, "none", ro);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->records[0].start, 0);
  EXPECT_EQ(r->records[1].start, 100);
  EXPECT_EQ(r->records[2].start, 150);
  EXPECT_DOUBLE_EQ(r->mean_wait, (0 + 100 + 140) / 3.0);
  EXPECT_DOUBLE_EQ(r->median_wait, 100);
  EXPECT_DOUBLE_EQ(r->p95_wait, 140);
  // bsld: 1, (100 + 50) / 50 = 3, (140 + 5) / 10 = 14.5.
  EXPECT_DOUBLE_EQ(r->mean_bounded_slowdown, (1 + 3 + 14.5) / 3);
  // work 400 + 200 + 5 over 4 cores * 155 s.
  EXPECT_DOUBLE_EQ(r->utilisation, 605.0 / (4 * 155));
}

TEST(ReplayTest, DropsJobsWiderThanTheWidestSiteAndCountsThem) {
  const std::string text = Line(1, 0, 10, 4) + Line(2, 1, 10, 9) + Line(3, 2, 10, 8);
  const Workload w = MakeOrDie(text, {8, 4}, {});
  EXPECT_EQ(w.jobs.size(), 2u);
  EXPECT_EQ(w.dropped_wide, 1);
  WorkloadOptions first_two;
  first_two.max_jobs = 2;
  EXPECT_EQ(MakeOrDie(text, {8, 4}, first_two).jobs.size(), 1u);
}

TEST(ReplayTest, UnknownPolicyIsAnError) {
  const Workload w = MakeOrDie(Line(1, 0, 10, 4), {8}, {});
  auto r = ReplayPolicy(w, "exact/oldest", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exact/gain"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace hyperfed::sim
