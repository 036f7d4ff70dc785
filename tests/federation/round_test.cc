// One round's site parts run in one process, talking through in-process
// mailboxes: the transfers they decide are exactly the simulator's plan.

#include "daemon/federation/round.h"

#include <future>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "daemon/balance/dem.h"
#include "daemon/balance/exact.h"
#include "daemon/balance/mcwa.h"
#include "daemon/balance/quota.h"
#include "daemon/balance/topology.h"
#include "daemon/federation/coordinator.h"
#include "gtest/gtest.h"

namespace hyperfed::federation {
namespace {

std::string Site(int label) { return absl::StrCat("site-", label); }
int Label(const std::string& site) { return std::stoi(site.substr(5)); }

// Carries Exchange calls to the callee's mailbox in-process (a stand-in for
// gRPC, which the integration tests exercise); rounds are started directly.
class InProcessPeers : public PeerClient {
 public:
  explicit InProcessPeers(std::map<int, Mailbox*> boxes) : boxes_(std::move(boxes)) {}
  absl::StatusOr<balance::LoadTable> Exchange(const std::string& site, const ExchangeMessage& m,
                                              absl::Duration timeout) override {
    auto it = boxes_.find(Label(site));
    if (it == boxes_.end()) return absl::UnavailableError("no such site");
    return it->second->Deliver(m, timeout);
  }
  absl::StatusOr<LookupAnswer> Lookup(const std::string& site, const ExchangeMessage& m,
                                      absl::Duration timeout) override {
    auto it = boxes_.find(Label(site));
    if (it == boxes_.end()) return absl::UnavailableError("no such site");
    auto a = it->second->Lookup(m, timeout);
    if (a.ok() && lie_) lie_(&*a);
    return a;
  }
  // Changes every answer to a lookup (a lying callee).
  std::function<void(LookupAnswer*)> lie_;
  std::vector<StartAnswer> StartRound(const std::vector<std::string>& sites, const RoundSpec&,
                                      absl::Duration) override {
    return std::vector<StartAnswer>(sites.size(), {false, "not used"});
  }
  absl::Status ReportRound(const std::string&, const RoundReport&, absl::Duration) override {
    return absl::UnimplementedError("not used");
  }
  absl::StatusOr<std::string> RequestBalance(const std::string&, const std::string&, const std::string&,
                                             absl::Duration) override {
    return absl::UnimplementedError("not used");
  }
  std::vector<absl::StatusOr<ProbeAck>> Heartbeats(const std::vector<std::string>& sites, const HeartbeatInfo&,
                                                   const std::vector<Gossip>&, absl::Duration) override {
    return std::vector<absl::StatusOr<ProbeAck>>(sites.size(), absl::UnimplementedError("not used"));
  }

 private:
  std::map<int, Mailbox*> boxes_;
};

// Moves nothing real: records what it was asked and says it all moved.
class RecordingMover : public JobMover {
 public:
  absl::StatusOr<Result> MoveJobs(const std::string& dest, int64_t count, const std::string&) override {
    std::lock_guard<std::mutex> l(mu_);
    asked_[dest] += count;
    return Result{count, 0};
  }
  std::map<std::string, int64_t> asked_;
  std::mutex mu_;
};

struct Outcome {
  std::map<int, RoundReport> reports;
  std::vector<balance::Load> final_loads;
};

// Runs the parts of every live site; `absent` sites never start.
Outcome RunAll(int n, const std::vector<int>& faults, const std::vector<balance::Load>& loads,
               const std::vector<double>& caps, const std::string& algorithm, const std::vector<int>& absent = {},
               absl::Duration step_timeout = absl::Seconds(5), bool prefix_scan = false,
               std::function<void(LookupAnswer*)> lie = nullptr) {
  // Real time: the parts wait for each other with real timeouts.
  const Env* env = RealEnv::Get();
  std::map<int, std::unique_ptr<Mailbox>> boxes;
  std::map<int, Mailbox*> raw;
  std::vector<int> live;
  for (int u = 0; u < (1 << n); ++u) {
    if (std::find(faults.begin(), faults.end(), u) != faults.end()) continue;
    live.push_back(u);
    boxes[u] = std::make_unique<Mailbox>(env, u, n);
    raw[u] = boxes[u].get();
  }
  InProcessPeers peers(raw);
  peers.lie_ = std::move(lie);
  std::map<int, RecordingMover> movers;
  RoundSpec spec{"r1", 1, env->Now() + absl::Minutes(1), Site(0), faults, n, algorithm};
  spec.prefix_scan = prefix_scan;
  for (auto& [u, box] : boxes) box->Open(spec.round_id, spec.epoch);
  std::map<int, std::future<RoundReport>> parts;
  std::map<int, RoundContext> ctxs;
  for (int u : live) {
    if (std::find(absent.begin(), absent.end(), u) != absent.end()) continue;
    RoundContext& c = ctxs[u];
    c.self_site = Site(u);
    c.self_label = u;
    c.site_of_label = Site;
    c.peers = &peers;
    c.mailbox = raw[u];
    c.mover = &movers[u];
    c.env = env;
    c.timeouts = {step_timeout, absl::Minutes(1), step_timeout};
  }
  for (auto& [u, c] : ctxs)
    parts[u] = std::async(std::launch::async, [&, u] { return RunRound(ctxs[u], spec, loads[u], caps[u]); });
  Outcome o;
  o.final_loads = loads;
  for (auto& [u, f] : parts) {
    o.reports[u] = f.get();
    for (const auto& [dest, count] : movers[u].asked_) {
      o.final_loads[u] -= count;
      o.final_loads[Label(dest)] += count;
    }
  }
  return o;
}

// Loads in [0, 300) and capacities in [1, 16] for `size` sites.
std::pair<std::vector<balance::Load>, std::vector<double>> RandomLoads(std::mt19937_64& rng, int size) {
  std::vector<balance::Load> w(size);
  std::vector<double> p(size);
  for (int u = 0; u < size; ++u) {
    w[u] = rng() % 300;
    p[u] = 1 + rng() % 16;
  }
  return {w, p};
}

TEST(RoundTest, ExactRoundOnAFullCubeIsTheSimulatorsPlan) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 5; ++trial) {
    const int n = 3;
    auto [w, p] = RandomLoads(rng, 8);
    Outcome o = RunAll(n, {}, w, p, "exact");
    auto plan = balance::ExactPlan(*balance::Topology::Hypercube(n), w, p);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(o.final_loads, plan->final_loads);
    for (const auto& [u, r] : o.reports) {
      EXPECT_TRUE(r.ok) << r.error;
      EXPECT_EQ(r.steps, n + 1);
    }
  }
}

TEST(RoundTest, ExactRoundAroundFaultsUsesTheMcwaTopology) {
  // nam Example 2's fault set in a 4-cube.
  const std::vector<int> faults{0b0101, 0b0110, 0b1000, 0b1010};
  std::vector<balance::Load> w(16, 0);
  std::vector<double> p(16, 1);
  std::mt19937_64 rng(9);
  for (int u = 0; u < 16; ++u) {
    if (std::find(faults.begin(), faults.end(), u) != faults.end()) continue;
    w[u] = rng() % 100;
    p[u] = 1 + rng() % 8;
  }
  Outcome o = RunAll(4, faults, w, p, "exact");
  std::vector<balance::NodeId> f(faults.begin(), faults.end());
  auto plan = balance::ExactPlan(*balance::Topology::Hypercube(4, f), w, p);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(o.final_loads, plan->final_loads);
  for (const auto& [u, r] : o.reports) {
    EXPECT_TRUE(r.ok) << Site(u) << ": " << r.error;
    EXPECT_EQ(r.steps, plan->metrics.steps) << "2T + k + 1";
  }
}

TEST(RoundTest, McwaRoundOnAFullCubeIsTheLibrarysPlan) {
  std::mt19937_64 rng(21);
  for (int trial = 0; trial < 3; ++trial) {
    const int n = 3;
    auto [w, p] = RandomLoads(rng, 8);
    Outcome o = RunAll(n, {}, w, p, "mcwa");
    auto plan = balance::McwaPlan(*balance::Topology::Hypercube(n), w, p);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(o.final_loads, plan->final_loads);
    for (const auto& [u, r] : o.reports) {
      EXPECT_TRUE(r.ok) << Site(u) << ": " << r.error;
      EXPECT_EQ(r.steps, 3 * n) << "CWA's 3 log N on a full cube";
      EXPECT_EQ(r.quota, plan->final_loads[u]);
    }
  }
}

TEST(RoundTest, DrainedSitesEndEmptyInEveryMode) {
  // Site 2 is drained (capacity 0): its pending jobs leave and it takes none.
  std::vector<balance::Load> w{10, 0, 90, 20, 0, 5, 0, 35};
  std::vector<double> p{2, 2, 0, 2, 2, 2, 2, 2};
  for (const char* mode : {"exact", "mcwa"}) {
    Outcome o = RunAll(3, {}, w, p, mode);
    EXPECT_EQ(o.final_loads[2], 0) << mode;
    balance::Load total = 0;
    for (balance::Load x : o.final_loads) total += x;
    EXPECT_EQ(total, 160) << mode;
    std::vector<double> live_caps = p;
    EXPECT_LT(balance::MaxShareError(o.final_loads, live_caps), 1.0) << mode;
    for (const auto& [u, r] : o.reports) EXPECT_TRUE(r.ok) << mode << " " << Site(u) << ": " << r.error;
  }
}

TEST(RoundTest, McwaRoundAroundFaultsRelaysThroughTheTrees) {
  // nam Example 2's fault set in a 4-cube; loads piled on tree nodes so
  // that jobs pass through relays.
  const std::vector<int> faults{0b0101, 0b0110, 0b1000, 0b1010};
  std::vector<balance::Load> w(16, 0);
  std::vector<double> p(16, 1);
  std::mt19937_64 rng(17);
  for (int u = 0; u < 16; ++u) {
    if (std::find(faults.begin(), faults.end(), u) != faults.end()) continue;
    w[u] = rng() % 100;
    p[u] = 1 + rng() % 8;
  }
  std::vector<balance::NodeId> f(faults.begin(), faults.end());
  auto topo = balance::Topology::Hypercube(4, f);
  ASSERT_TRUE(topo.ok());
  std::vector<balance::BalancingSubcube> chosen;
  auto probe = balance::McwaPlan(*topo, w, p, &chosen);
  ASSERT_TRUE(probe.ok());
  ASSERT_EQ(chosen.size(), 1u);
  for (int u = 0; u < 16; ++u)
    if (chosen[0].Member(u) && chosen[0].level[u] == chosen[0].tree_depth) w[u] += 400;  // deepest leaves
  auto plan = balance::McwaPlan(*topo, w, p);
  ASSERT_TRUE(plan.ok());
  bool relayed = false;  // some site both receives and sends on
  for (const auto& a : plan->transfers)
    for (const auto& b : plan->transfers) relayed = relayed || (a.to == b.from && a.step < b.step);
  EXPECT_TRUE(relayed);

  Outcome o = RunAll(4, faults, w, p, "mcwa");
  EXPECT_EQ(o.final_loads, plan->final_loads);
  EXPECT_LT(balance::MaxShareError(o.final_loads, p, topo->alive_mask()), 1.0);
  for (const auto& [u, r] : o.reports) {
    EXPECT_TRUE(r.ok) << Site(u) << ": " << r.error;
    EXPECT_EQ(r.steps, plan->metrics.steps) << "3k + 4T";
    EXPECT_EQ(r.steps, 3 * chosen[0].dim + 4 * chosen[0].tree_depth);
  }
}

TEST(RoundTest, ImprovedDemRoundIsThePapersSweep) {
  std::vector<balance::Load> w{7, 120, 31, 0, 55, 2, 90, 13};
  std::vector<double> p{2, 4, 2, 4, 1, 8, 3, 5};
  Outcome o = RunAll(3, {}, w, p, "improved-dem");
  auto plan = balance::ImprovedDemPlan(*balance::Topology::Hypercube(3), w, p);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(o.final_loads, plan->final_loads);
  for (const auto& [u, r] : o.reports) EXPECT_EQ(r.quota, plan->final_loads[u]);
}

TEST(RoundTest, AMissingPeerEndsTheRoundAtThatStepAndNothingMoves) {
  std::vector<balance::Load> w{40, 0, 0, 0};
  std::vector<double> p{1, 1, 1, 1};
  // Site 3 is live in the fault set but never takes part.
  Outcome o = RunAll(2, {}, w, p, "exact", {3}, absl::Milliseconds(300));
  EXPECT_EQ(o.final_loads, w) << "no site can finish the gather, so no job moves";
  EXPECT_FALSE(o.reports[1].ok);
  EXPECT_NE(o.reports[1].error.find("site-3"), std::string::npos) << o.reports[1].error;
  EXPECT_FALSE(o.reports[0].ok);
}

// The exact round by prefix sums (RunScanned) and the gather (RunGathered)
// on the same random tables, with and without faults (those whose live
// sites MCWA's topology keeps in one component: the gather balances each
// component apart, the scan all live sites together): the same quotas,
// Apportion's over the live sites, and the same transfers, so the same jobs
// moved, the minimum.
TEST(RoundTest, ExactRoundByPrefixSumsIsTheGatheredRound) {
  std::mt19937_64 rng(31);
  int compared = 0, with_faults = 0;
  for (int trial = 0; trial < 16; ++trial) {
    const int n = 2 + trial % 4;
    const int size = 1 << n;
    std::vector<int> faults;
    if (trial % 4 != 0)
      for (int u = 0; u < size; ++u)
        if (rng() % 4 == 0) faults.push_back(u);
    std::vector<balance::NodeId> f(faults.begin(), faults.end());
    auto topo = balance::Topology::Hypercube(n, f);
    if (!topo.ok() || static_cast<int>(faults.size()) >= size - 1) continue;
    if (!faults.empty()) {
      auto components = balance::SelectBalancingSubcubes(*topo);
      if (!components.ok() || components->size() != 1) continue;
    }
    auto [w, p] = RandomLoads(rng, size);
    if (trial % 3 == 1) std::fill(p.begin(), p.end(), 2.0);  // equal capacities: the papers' rule by rank
    if (trial % 5 == 2) p[rng() % size] = 0;                 // a drained site
    std::vector<bool> alive(size, true);
    for (int x : faults) {
      alive[x] = false;
      w[x] = 0;
    }
    balance::Load total = 0;
    for (int u = 0; u < size; ++u) total += alive[u] ? w[u] : 0;
    const std::vector<balance::Load> quotas = balance::Apportion(total, p, alive);
    Outcome gathered = RunAll(n, faults, w, p, "exact");
    Outcome scanned = RunAll(n, faults, w, p, "exact", {}, absl::Seconds(5), /*prefix_scan=*/true);
    EXPECT_EQ(scanned.final_loads, gathered.final_loads) << "trial " << trial;
    auto transfers = [](const RoundReport& r) {
      std::set<std::tuple<int, int, int64_t>> out;
      for (const balance::Transfer& t : r.transfers) out.insert({t.from, t.to, t.count});
      return out;
    };
    for (const auto& [u, r] : scanned.reports) {
      EXPECT_TRUE(r.ok) << "trial " << trial << " " << Site(u) << ": " << r.error;
      EXPECT_EQ(r.quota, gathered.reports[u].quota) << "trial " << trial << " " << Site(u);
      EXPECT_EQ(r.quota, quotas[u]) << "trial " << trial << " " << Site(u);
      EXPECT_EQ(transfers(r), transfers(gathered.reports[u])) << "trial " << trial << " " << Site(u);
      EXPECT_LE(r.steps, 2 * n + 2) << "n scan steps, at most n lookup calls, the moves";
    }
    ++compared;
    if (!faults.empty()) ++with_faults;
  }
  EXPECT_GE(compared, 10);
  EXPECT_GE(with_faults, 5);
}

TEST(MailboxTest, ExchangeWaitsForTheCalleeToReachTheStep) {
  FakeEnv env;
  Mailbox box(&env, 6, 3);  // label 4 is its partner across dimension 1
  box.Open("r", 5);
  ExchangeMessage m{"r", 5, MessageKind::kExchange, 1, 0, 4, {{4, 10, 1}}};
  // Nobody advances the fake time: a zero timeout ends at once.
  auto early = box.Deliver(m, absl::ZeroDuration());
  EXPECT_EQ(early.status().code(), absl::StatusCode::kDeadlineExceeded);
  box.Publish("r", MessageKind::kExchange, 1, {{5, 3, 2}});
  auto reply = box.Deliver(m, absl::Seconds(1));
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(*reply, (balance::LoadTable{{5, 3, 2}}));
  auto got = box.Await("r", MessageKind::kExchange, 1, 0, 4, env.Now() + absl::Seconds(1));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, (balance::LoadTable{{4, 10, 1}}));
  box.Close("r");
  EXPECT_EQ(box.Await("r", MessageKind::kUp, 0, 0, 4, env.Now()).status().code(), absl::StatusCode::kDeadlineExceeded);
}

// The coordinator says label 4 has left the round: a wait for it ends at
// once, with no time passing, but a message it sent before still counts.
// Once this site's part ends, a caller waiting on an exchange it will never
// reach is refused at once, and so is any later message of the round.
TEST(MailboxTest, WaitsForASiteThatLeftEndAndAnEndedPartTakesNothingMore) {
  FakeEnv env;
  Mailbox box(&env, 6, 3);  // label 4 across dimension 1, label 7 across 0
  box.Open("r", 5);
  std::thread teller([&] {
    while (env.waiters() == 0) std::this_thread::yield();
    box.Left("r", 4, "site-4 went down");
    box.Left("other", 7, "not this round");
  });
  auto r = box.Await("r", MessageKind::kExchange, 1, 0, 4, absl::InfiniteFuture());
  teller.join();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "it left the round (site-4 went down)");
  EXPECT_EQ(box.Await("r", MessageKind::kExchange, 0, 0, 7, env.Now()).status().code(),
            absl::StatusCode::kDeadlineExceeded)
      << "a telling of another round changes nothing";
  // A caller waits for this site to reach its exchange in dimension 0; the
  // part ends instead.
  ExchangeMessage m{"r", 5, MessageKind::kExchange, 0, 0, 7, {{7, 1, 1}}};
  std::thread closer([&] {
    while (env.waiters() == 0) std::this_thread::yield();
    box.Close("r");
  });
  auto waited = box.Deliver(m, absl::InfiniteDuration());
  closer.join();
  EXPECT_EQ(waited.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(waited.status().message(), "this site's part of round r has ended");
  ExchangeMessage up{"r", 5, MessageKind::kUp, 0, 0, 4, {{4, 1, 1}}};
  EXPECT_EQ(box.Deliver(up, absl::ZeroDuration()).status().code(), absl::StatusCode::kFailedPrecondition);
}

// In the scan every site's totals need every live site's load: a site
// gone mid-scan ends every part still waiting for totals, whoever it waits
// for, when the coordinator says so, not each after its own step timeout
// in a cascade (a 256-site round so lasted 96 s).
TEST(MailboxTest, AWaitForTotalsEndsOnceAnySiteHasLeft) {
  FakeEnv env;
  Mailbox box(&env, 6, 3);
  box.Open("r", 5);
  std::thread teller([&] {
    while (env.waiters() == 0) std::this_thread::yield();
    box.Left("r", 2, "site-2 went down");
    // (Were the wait blind to it, it would end at its deadline, not hang.)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    env.Advance(absl::Hours(2));
  });
  auto t = box.AwaitTotals("r", 1, 4, env.Now() + absl::Hours(1));  // from label 4, not the one that left
  teller.join();
  EXPECT_EQ(t.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(t.status().message(), "label 2 left the round mid-scan (site-2 went down)");
  ASSERT_TRUE(box.AnyLeft("r"));
  EXPECT_EQ(box.AnyLeft("r")->first, 2);
  EXPECT_FALSE(box.AnyLeft("other"));
  // Other waits still wait for their own sender only.
  EXPECT_EQ(box.Await("r", MessageKind::kExchange, 0, 0, 7, env.Now()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(MailboxTest, ANewerRoundFencesOffTheOlderOne) {
  FakeEnv env;
  Mailbox box(&env, 0, 2);  // labels 1 and 2 are its neighbours
  box.Open("old", 10);
  ExchangeMessage up{"new", 11, MessageKind::kUp, 0, 0, 2, {{2, 1, 1}}};
  ASSERT_TRUE(box.Deliver(up, absl::ZeroDuration()).ok()) << "a newer round's message waits for its start";
  // The old round's part waits for a child; the newer round opens and the
  // wait ends at once, without any time passing.
  std::thread opener([&] {
    while (env.waiters() == 0) std::this_thread::yield();
    box.Open("new", 11);
  });
  auto r = box.Await("old", MessageKind::kUp, 0, 0, 1, absl::InfiniteFuture());
  opener.join();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
  // Messages of the older round are refused from now on.
  ExchangeMessage stale{"old", 10, MessageKind::kUp, 0, 0, 1, {{1, 1, 1}}};
  EXPECT_EQ(box.Deliver(stale, absl::ZeroDuration()).status().code(), absl::StatusCode::kFailedPrecondition);
  // The newer round's early message is still there.
  auto got = box.Await("new", MessageKind::kUp, 0, 0, 2, env.Now());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, (balance::LoadTable{{2, 1, 1}}));
}

// A PHASE_DONE's phase is bounded by the round's depth once it is open
// here (a tree around faults can make it deeper than the cube), by the cube
// before.
TEST(MailboxTest, PhaseDoneNoticesAreBoundedByTheOpenRoundsDepth) {
  FakeEnv env;
  Mailbox box(&env, 0, 3);
  auto deliver = [&](const std::string& round, int phase, int from) {
    return box.Deliver({round, 5, MessageKind::kPhaseDone, 0, phase, from, {{from, 0, 0}}}, absl::ZeroDuration())
        .status()
        .code();
  };
  // Not open here: phases 1 .. 3n + 1 = 10.
  EXPECT_EQ(deliver("early", 10, 1), absl::StatusCode::kOk);
  EXPECT_EQ(deliver("early", 11, 1), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(deliver("early", 0, 1), absl::StatusCode::kInvalidArgument);
  // Open with depth 6: phases 1 .. 19.
  box.Open("deep", 5, 6);
  EXPECT_EQ(deliver("deep", 19, 2), absl::StatusCode::kOk);
  EXPECT_EQ(deliver("deep", 20, 2), absl::StatusCode::kInvalidArgument);
  // A depth below the cube's counts as the cube's.
  box.Open("flat", 6, 1);
  EXPECT_EQ(deliver("flat", 10, 4), absl::StatusCode::kOk);
  EXPECT_EQ(deliver("flat", 11, 4), absl::StatusCode::kInvalidArgument);
}

TEST(MailboxTest, TakesOnlyWhatTheRoundExpectsOnceEach) {
  FakeEnv env;
  Mailbox box(&env, 0, 3);  // neighbours 1, 2, 4
  box.Open("r", 5);
  auto deliver = [&](ExchangeMessage m) { return box.Deliver(m, absl::ZeroDuration()).status().code(); };
  // An exchange from a site that is not the partner across its dimension.
  EXPECT_EQ(deliver({"r", 5, MessageKind::kExchange, 1, 0, 1, {{1, 1, 1}}}), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(deliver({"r", 5, MessageKind::kBarrier, 0, 0, 2, {}}), absl::StatusCode::kPermissionDenied);
  // UP and DOWN only from a cube neighbour.
  EXPECT_EQ(deliver({"r", 5, MessageKind::kUp, 0, 0, 3, {{3, 1, 1}}}), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(deliver({"r", 5, MessageKind::kUp, 0, 0, 4, {{4, 1, 1}}}), absl::StatusCode::kOk);
  // Once each.
  EXPECT_EQ(deliver({"r", 5, MessageKind::kUp, 0, 0, 4, {{4, 9, 1}}}), absl::StatusCode::kAlreadyExists);
  auto got = box.Await("r", MessageKind::kUp, 0, 0, 4, env.Now());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, (balance::LoadTable{{4, 1, 1}})) << "the first copy is the one read";
  EXPECT_EQ(deliver({"r", 5, MessageKind::kUp, 0, 0, 4, {{4, 9, 1}}}), absl::StatusCode::kAlreadyExists)
      << "a message read is still taken";
  // At most 2^dimension rows; a phase-done notice carries the sender's row.
  balance::LoadTable nine;
  for (int i = 0; i < 9; ++i) nine.push_back({i % 8, 1, 1});
  EXPECT_EQ(deliver({"r", 5, MessageKind::kDown, 0, 0, 1, nine}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(deliver({"r", 5, MessageKind::kPhaseDone, 0, 1, 6, {{5, 1, 0}}}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(deliver({"r", 5, MessageKind::kPhaseDone, 0, 1, 6, {{6, 1, 0}}}), absl::StatusCode::kOk);
  // Messages of rounds not started here: two rounds per sender are kept, a
  // third is refused, and another sender still has room.
  EXPECT_EQ(deliver({"e1", 6, MessageKind::kUp, 0, 0, 1, {{1, 1, 1}}}), absl::StatusCode::kOk);
  EXPECT_EQ(deliver({"e2", 7, MessageKind::kUp, 0, 0, 1, {{1, 1, 1}}}), absl::StatusCode::kOk);
  EXPECT_EQ(deliver({"e2", 7, MessageKind::kDown, 0, 0, 1, {{1, 1, 1}}}), absl::StatusCode::kOk);
  EXPECT_EQ(deliver({"e3", 8, MessageKind::kUp, 0, 0, 1, {{1, 1, 1}}}), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(deliver({"e3", 8, MessageKind::kUp, 0, 0, 2, {{2, 1, 1}}}), absl::StatusCode::kOk);
  // Opening one of them makes room again.
  box.Open("e1", 6);
  EXPECT_EQ(deliver({"e3", 8, MessageKind::kUp, 0, 0, 1, {{1, 1, 1}}}), absl::StatusCode::kOk);
}

// Every site's residuals and runs on a full n-cube, from the scan steps.
std::vector<balance::MatchView> Views(int n, const std::vector<balance::Load>& w, const std::vector<double>& p) {
  std::vector<balance::ScanState> s;
  for (int u = 0; u < (1 << n); ++u) s.push_back(balance::StartScan(u, w[u], p[u]));
  for (int k = 0; k < n; ++k) {
    std::vector<balance::ScanTotals> sent;
    for (const auto& x : s) sent.push_back(balance::ScanMessage(x));
    for (int u = 0; u < (1 << n); ++u) EXPECT_TRUE(balance::ScanStep(&s[u], sent[u ^ (1 << k)]).ok());
  }
  std::vector<balance::MatchView> v;
  for (const auto& x : s) v.push_back(balance::DeriveMatch(x));
  return v;
}

// Site 0 of a 2-cube holds 12 jobs, the others none (quotas 3): its runs are
// units [0, 3) at level 0 (to site 1) and [0, 6) at level 1 (to sites 2 and
// 3, whose runs are [0, 3) and [3, 6)). A lookup is answered only when it
// fits this site's runs and no other partner's, once per run; a refused one
// records nothing. A part that has ended still answers; a newer round
// fences the older one off.
TEST(MailboxTest, LookupsAreAnsweredOnlyWhenTheyFitAndOnceEach) {
  FakeEnv env;
  const std::vector<balance::MatchView> views = Views(2, {12, 0, 0, 0}, {1, 1, 1, 1});
  ASSERT_EQ(views[0].runs, (std::vector<balance::MatchRun>{{0, 0, 3, true}, {1, 0, 6, true}}));
  ASSERT_EQ(views[3].runs, (std::vector<balance::MatchRun>{{1, 3, 6, false}}));
  Mailbox box(&env, 0, 2);
  box.Open("r", 5);
  auto lookup = [&](int from, balance::MatchRun run, int level, int64_t position) {
    ExchangeMessage m{"r", 5, MessageKind::kLookup, 0, 0, from, {}};
    m.run = run;
    m.level = level;
    m.position = position;
    return box.Lookup(m, absl::ZeroDuration());
  };
  EXPECT_EQ(lookup(2, {1, 0, 3, false}, 1, 0).status().code(), absl::StatusCode::kDeadlineExceeded)
      << "its scan is not done";
  box.PublishScan("r", {views[0], balance::LivePositions(2, {}), {}});
  // Refused, recording nothing: a requester outside the sibling subcube, a
  // unit beyond the list, a run of the same side, a level above the run's,
  // a run that overlaps another partner's.
  EXPECT_EQ(lookup(1, {1, 0, 3, false}, 1, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(lookup(3, {1, 3, 6, false}, 1, 6).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(lookup(3, {1, 3, 6, true}, 1, 3).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(lookup(1, {0, 0, 3, false}, 1, 0).status().code(), absl::StatusCode::kInvalidArgument);
  auto first = lookup(2, {1, 0, 3, false}, 1, 0);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->found);
  EXPECT_EQ(first->run, (balance::MatchRun{1, 0, 6, true}));
  EXPECT_EQ(lookup(3, {1, 2, 6, false}, 1, 2).status().code(), absl::StatusCode::kInvalidArgument)
      << "it overlaps site 2's run";
  EXPECT_EQ(lookup(2, {1, 0, 3, false}, 1, 0).status().code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(lookup(3, {1, 3, 6, false}, 1, 3).ok());
  auto all = [](const std::vector<Mailbox::Partner>&) { return true; };
  auto partners = box.AwaitPartners("r", all, env.Now());
  ASSERT_TRUE(partners.ok());
  ASSERT_EQ(partners->size(), 2u);
  EXPECT_EQ((*partners)[0].run.label, 2);
  EXPECT_EQ((*partners)[1].run.label, 3);
  // The part ends here; lookups routed through it are still answered.
  box.Close("r");
  auto late = lookup(1, {0, 0, 3, false}, 0, 0);
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_EQ(late->run, (balance::MatchRun{0, 0, 3, true}));
  box.Open("r2", 6);
  EXPECT_EQ(lookup(1, {0, 0, 3, false}, 0, 0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(box.AwaitPartners("r", all, env.Now()).status().code(), absl::StatusCode::kAborted)
      << "a newer round ends the wait for partners";
}

// A lookup for a unit the other half holds says where to ask next: site 3
// asks site 1 (its partner across dimension 1) for unit 3 of the lower
// 1-subcube's list, which holds only site 0's units: site 1 sends it on to
// site 0, level 0.
TEST(MailboxTest, ALookupForTheOtherHalfSaysWhereToAskNext) {
  FakeEnv env;
  const std::vector<balance::MatchView> views = Views(2, {12, 0, 0, 0}, {1, 1, 1, 1});
  Mailbox box(&env, 1, 2);
  box.Open("r", 5);
  box.PublishScan("r", {views[1], balance::LivePositions(2, {}), {}});
  ExchangeMessage m{"r", 5, MessageKind::kLookup, 0, 0, 3, {}};
  m.run = {1, 3, 6, false};
  m.level = 1;
  m.position = 3;
  auto a = box.Lookup(m, absl::ZeroDuration());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->found);
  EXPECT_EQ(a->next_label, 0);
  EXPECT_EQ(a->next_level, 0);
  EXPECT_EQ(a->position, 6) << "site 0's units 0..2 go to site 1 at level 0: unit 3 at level 1 is its own unit 6";
  auto all = [](const std::vector<Mailbox::Partner>&) { return true; };
  auto partners = box.AwaitPartners("r", all, env.Now());
  ASSERT_TRUE(partners.ok());
  EXPECT_EQ(partners->size(), 0u);
}

// An answer to a lookup that does not answer what was asked (a run that
// does not hold the unit, a next hop outside the sibling subcube) ends the
// requester's part before it moves anything.
TEST(RoundTest, ALyingAnswerToALookupEndsThePartBeforeAnyMove) {
  const std::vector<balance::Load> w{12, 0, 0, 0};
  const std::vector<double> p{1, 1, 1, 1};
  const std::vector<std::function<void(LookupAnswer*)>> lies{
      [](LookupAnswer* a) {
        a->run.begin += 100;
        a->run.end += 100;
      },
      [](LookupAnswer* a) {
        a->found = false;
        a->next_label = 1;  // in no sibling subcube of a run of site 0's
        a->next_level = 0;
      },
  };
  for (size_t i = 0; i < lies.size(); ++i) {
    Outcome o = RunAll(2, {}, w, p, "exact", {}, absl::Milliseconds(300), /*prefix_scan=*/true, lies[i]);
    EXPECT_EQ(o.final_loads, w) << "lie " << i << ": nothing moves";
    for (const auto& [u, r] : o.reports) {
      EXPECT_FALSE(r.ok) << "lie " << i << " " << Site(u);
      EXPECT_EQ(r.moved_out, 0);
    }
    const char* why = i == 0 ? "answered a lookup with a run that does not hold" : "sent a lookup where it cannot go";
    EXPECT_NE(o.reports[0].error.find(why), std::string::npos) << o.reports[0].error;
  }
}

// The code chooses the scan, not an operator: mode exact, 64 live sites or
// more, every live one of protocol 1.9 or newer (not heard yet: this
// build's), and one MCWA component.
TEST(UsePrefixScanTest, ExactAtSixtyFourLiveSitesAllOfProtocolOneNine) {
  auto peers = [](int n, int up) {
    std::vector<PeerInfo> v(n);
    for (int i = 0; i < n; ++i) {
      v[i].site = Site(i);
      v[i].label = i;
      v[i].up = i < up;
      v[i].protocol = "1.9";
    }
    return v;
  };
  const balance::RoundShape full{7, {}};
  EXPECT_TRUE(UsePrefixScan("exact", peers(64, 64), full));
  EXPECT_FALSE(UsePrefixScan("mcwa", peers(64, 64), full));
  EXPECT_FALSE(UsePrefixScan("exact", peers(64, 63), full)) << "63 live sites gather";
  std::vector<PeerInfo> mixed = peers(100, 100);
  mixed[70].protocol = "1.8";
  EXPECT_FALSE(UsePrefixScan("exact", mixed, full)) << "a 1.8 site would gather";
  mixed[70].up = false;
  EXPECT_TRUE(UsePrefixScan("exact", mixed, full)) << "a down 1.8 site takes no part";
  mixed[70].up = true;
  mixed[70].protocol = "";
  EXPECT_TRUE(UsePrefixScan("exact", mixed, full)) << "not heard yet: this build's";
  mixed[70].protocol = "1.10";
  EXPECT_TRUE(UsePrefixScan("exact", mixed, full));
  // 2-cube faults 1 and 2 split the rest in two components: each balances apart.
  EXPECT_FALSE(UsePrefixScan("exact", peers(64, 64), balance::RoundShape{2, {1, 2}}));
  EXPECT_TRUE(UsePrefixScan("exact", peers(64, 64), balance::RoundShape{7, {3, 100}}));
}

}  // namespace
}  // namespace hyperfed::federation
