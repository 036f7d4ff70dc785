#include "sim/federation/federation.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "config/config.h"
#include "daemon/balance/modes.h"
#include "daemon/common/log.h"
#include "daemon/federation/coordinator.h"
#include "daemon/migration/crash_point.h"
#include "daemon/scheduler/sim_adapter.h"
#include "daemon/server/peer_handlers.h"
#include "daemon/server/site_stack.h"
#include "sim/federation/network.h"
#include "sim/federation/peers.h"
#include "sim/federation/world.h"

namespace hyperfed::fedsim {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

struct Profile {
  bool crash = false;    // crashes and restarts, pauses, drains, jobs during rounds, empty and failed positions
  bool network = false;  // loss, duplication, jitter, partitions, slow sites, clock offsets and drift
};

std::optional<Profile> FindProfile(const std::string& name) {
  if (name == "none") return Profile{};
  if (name == "crash") return Profile{true, false};
  if (name == "network") return Profile{false, true};
  if (name == "all") return Profile{true, true};
  return std::nullopt;
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Spells of a fault at a site, [from, to] in world time (to: the infinite
// future while it lasts).
using Spells = std::vector<std::pair<absl::Time, absl::Time>>;

bool Meets(const Spells& spells, absl::Time from, absl::Time to) {
  for (const auto& [a, b] : spells)
    if (a <= to && b >= from) return true;
  return false;
}

void EndSpell(Spells& spells, absl::Time at) {
  for (auto& [a, b] : spells)
    if (b == absl::InfiniteFuture()) b = at;
}

// One run of a site's daemon: never freed (a crash abandons it where it is).
struct Incarnation {
  int node = -1;
  std::unique_ptr<SimEnv> env;
  std::unique_ptr<federation::LiveConfig> live;
  std::unique_ptr<SimPeers> peers;
  server::SiteStack stack;
  std::unique_ptr<server::PeerHandlers> handlers;
  bool serving = false;  // its startup recovery is over and its loops run
  absl::Time serving_since = absl::InfiniteFuture();  // world time
  // What its Heartbeater last said of each peer (Heartbeater::SetObserver).
  std::map<std::string, bool> sees_up;
  scheduler::SimAdapter* scheduler() const {
    return dynamic_cast<scheduler::SimAdapter*>(stack.adapter->Current().get());
  }
};

struct SimSite {
  config::Config config;
  int label = 0;
  int64_t cores = 0;
  absl::Duration offset;
  double drift = 0;
  bool failed = false;  // down for the whole run
  bool drained = false;
  int incarnations = 0;
  Incarnation* inc = nullptr;  // running; nullptr while down
  Incarnation* last = nullptr;  // the latest, running or not (its journal and queue stay on disk)
  // When it was down (from a crash until a new incarnation serves), paused
  // or drained, world time (an open spell ends in the infinite future): the
  // faults that explain a peer seeing it down.
  Spells down_spells, pause_spells, drain_spells;
  const std::string& id() const { return config.site.id; }
};

// What the operator knows of a round while it runs, for the checks.
struct Watch {
  std::string id;
  std::string coordinator;
  Incarnation* coordinator_inc = nullptr;
  std::map<std::string, Incarnation*> incarnation_at_start;
  std::map<std::string, absl::Time> crash_or_restart;  // last one during the round, world time
  std::map<std::string, int64_t> committed_at_crash;   // jobs a crashed incarnation had committed in the round
  // When each site was first seen out of the round after it was seen in it,
  // world time. A site the start reaches late is out of the round before its
  // part begins: that is no end (seed 5013 of 64 sites read it as one).
  std::set<std::string> part_began;
  std::map<std::string, absl::Time> part_ended;
  // Messages were lost, links cut or a site paused during the round: a
  // crash is then seen late for reasons of the network, and only the
  // deadline bounds the round.
  bool disturbed = false;
};

// A site back from an outage: a restarted incarnation once it serves, or a
// site a partition cut off once it heals. One peer timeout later every
// peer that served throughout sees it up and it sees them (CheckReturns).
struct Return {
  std::string site;
  Incarnation* inc = nullptr;
  absl::Time at;    // world time
  std::string how;  // "restart", "cut healed"
};

class Federation {
 public:
  explicit Federation(const FederationOptions& o) : o_(o), world_(o.seed, kStart), net_(&world_) {
    (void)adapters_.Register(std::make_unique<scheduler::SimAdapterFactory>());
  }

  SeedResult Run(const std::function<void(const SeedResult&)>& stopped);
  SeedResult Result(double cpu0);

 private:
  // ---- sites
  void Build();
  void Start(SimSite& s);
  void Crash(SimSite& s, const std::string& why);
  std::vector<SimSite*> UpSites();
  SimSite* Find(const std::string& id);
  double Capacity(const SimSite& s) const { return s.drained ? 0 : static_cast<double>(s.cores); }
  // Every capacity a site has had, from when (drains, restarts).
  void LogCapacity(const SimSite& s) { capacity_log_[s.id()].push_back({world_.now(), Capacity(s)}); }
  // The capacities a site had at some time in [from, to].
  std::set<double> CapacitiesDuring(const std::string& site, absl::Time from, absl::Time to);
  void SetDrained(SimSite& s, bool drained);
  void SubmitJobs(SimSite& s, int count, bool short_jobs);

  // ---- faults
  void ScheduleFaults(absl::Time from, absl::Time until);
  void Heal();

  // ---- rounds and checks
  RoundStats DoRound(int number, bool clean);
  void CheckRound(const federation::RoundView& v, const Watch& w, RoundStats* st);
  void CheckParts();
  // Empty once quiet; otherwise what was still not quiet at `limit`.
  std::string WaitQuiet(absl::Duration limit);
  std::optional<absl::Time> RoundDeadline(const std::string& id);
  // How long past its round's deadline a part may take to unwind.
  absl::Duration PartSlack() const { return balancer_.step_timeout + absl::Seconds(1); }
  void Census(bool final);
  int64_t Committed(Incarnation* inc, const std::string& round_id);
  void Violation(const std::string& what);
  // Runs the world for `d`, stopping at each return's check time to check it.
  void RunFor(absl::Duration d);
  void CheckReturns();
  // A pause or a cut from `from` to `to` (world time; a cut lasts until it
  // heals): a return whose check window meets one is not checked.
  void Disturbed(absl::Time from, absl::Time to) { disturbances_.push_back({from, to}); }
  bool DisturbedDuring(absl::Time from, absl::Time to) const;
  // Partition k heals: its sites are back.
  void EndCut(size_t k);

  // ---- what the membership costs and how it detects (SeedResult)
  // A site's Heartbeater said how it sees peer `p` (Heartbeater::Observer).
  void Observed(SimSite& seer, Incarnation* inc, const federation::PeerInfo& p, bool first);
  // Whether a fault explains `seer` seeing `peer` down now: within a peer
  // timeout and two heartbeats before, the peer was down, paused or
  // drained, either was paused, or a cut lay between them.
  bool Explained(const SimSite& seer, const std::string& peer);
  // Within how long every live site knows a crash or sees a site back up
  // (Membership::KnownEverywhereWithin, for this cube).
  absl::Duration Known() const { return federation::Membership::KnownEverywhereWithin(dimension_, balancer_); }
  // Ends the wait for each crash that every live site now sees (CrashSeen).
  // `about`: only the crashes of that site (a site's view of it changed).
  void CheckKnown(const std::string* about = nullptr);
  // The number of sites whose loops run changes by `delta` now.
  void CountServing(int delta);

  const FederationOptions o_;
  Profile profile_;
  World world_;
  SimNet net_;
  // The simulation's adapters: the sim scheduler alone (the daemon's main
  // registers its built-in ones).
  scheduler::AdapterRegistry adapters_;
  std::vector<std::unique_ptr<SimSite>> sites_;
  std::map<std::string, SimSite*> by_id_;
  std::map<std::string, std::vector<std::pair<absl::Time, double>>> capacity_log_;
  int dimension_ = 0;
  int operator_node_ = -1;
  config::BalancerConfig balancer_;
  bool faults_on_ = false;
  int partitions_active_ = 0;
  int crashes_this_round_ = 0;
  std::optional<Watch> watch_;
  std::map<std::string, std::string> keys_;  // every job key the run submitted -> where
  int64_t next_job_ = 0;
  std::vector<std::pair<std::string, absl::Time>> round_deadlines_;  // round id, deadline in world time
  // The returns not checked yet, and each site's latest one that was.
  std::vector<Return> returns_;
  std::map<std::string, Return> back_;
  std::vector<std::pair<absl::Time, absl::Time>> disturbances_;  // Disturbed()
  // The partitions: the sites each cut off and its disturbance; healed ones
  // are done.
  struct Cut {
    std::vector<std::string> far;
    std::vector<std::string> far_sorted;  // for Explained's lookups
    size_t disturbance = 0;
    bool healed = false;
  };
  std::vector<Cut> cuts_;
  // Crashes not yet seen down by every serving site that was not paused
  // since (SeedResult::known_after).
  struct CrashSeen {
    std::string site;
    absl::Time at;
    bool neighbours_know = false;  // every live cube neighbour has it down (SeedResult::neighbours_after)
  };
  std::vector<CrashSeen> unknown_crashes_;
  int serving_ = 0;  // sites whose loops run
  absl::Time serving_changed_ = kStart;
  SeedResult r_;
};

// ------------------------------------------------------------------ sites

void Federation::Build() {
  const int positions = std::max(2, o_.sites);
  dimension_ = 0;
  while ((1 << dimension_) < positions) ++dimension_;
  r_.positions = positions;
  r_.dimension = dimension_;
  // Empty positions and failed sites: the cube MCWA balances around.
  std::set<int> empty;
  if (profile_.crash) {
    const int n = static_cast<int>(world_.UniformInt(0, positions / 20));
    while (static_cast<int>(empty.size()) < n) empty.insert(static_cast<int>(world_.UniformInt(1, positions - 1)));
  }
  std::vector<config::RosterEntry> roster;
  const int width = static_cast<int>(std::to_string(positions - 1).size());
  for (int label = 0; label < positions; ++label) {
    if (empty.count(label)) continue;
    config::RosterEntry e;
    e.id = absl::StrFormat("s%0*d", width, label);
    e.label = label;
    e.endpoint = absl::StrCat("sim-", label, ":7100");
    roster.push_back(e);
  }
  balancer_.algorithm = balance::FindRoundMode(o_.algorithm);
  // The caller checks --algorithm; a mode it let through is a bug here.
  if (!balancer_.algorithm) World::Fatal(std::string(balance::CheckRoundMode(o_.algorithm).message()));
  balancer_.interval = absl::ZeroDuration();  // the operator starts rounds
  balancer_.job_choice = o_.job_choice;
  balancer_.hysteresis = absl::ZeroDuration();
  // Rounds only: the checks compare each round with its plan (placement at
  // arrival has its own tests, tests/integration/placement_test.cc).
  balancer_.placement = false;
  const int64_t batches[] = {10, 100, 1000};
  balancer_.max_batch = batches[world_.UniformInt(0, 2)];
  // Each site heartbeats every other each interval: N - 1 calls a site.
  balancer_.heartbeat_interval = o_.heartbeat > absl::ZeroDuration() ? o_.heartbeat : HeartbeatFor(positions);
  balancer_.peer_timeout = 5 * balancer_.heartbeat_interval;
  for (const config::RosterEntry& e : roster) {
    auto s = std::make_unique<SimSite>();
    config::Config& c = s->config;
    c.site.id = e.id;
    c.site.label = e.label;
    c.site.listen = "127.0.0.1:7100";
    c.site.advertise = e.endpoint;
    c.security.insecure = true;
    c.roster.sites = roster;
    c.state_dir = absl::StrCat(o_.state_root, "/", e.id);
    s->label = e.label;
    const int64_t cores[] = {2, 4, 8, 16, 64};
    s->cores = cores[world_.UniformInt(0, 4)];
    c.scheduler.adapter = "sim";
    c.scheduler.options["cores"] = absl::StrCat(s->cores);
    c.balancer = balancer_;
    if (profile_.network) {
      s->offset = absl::Milliseconds(world_.UniformInt(-200, 200));
      s->drift = static_cast<double>(world_.UniformInt(-100, 100)) * 1e-6;
    }
    s->failed = profile_.crash && e.label != 0 && world_.Chance(0.02);
    std::filesystem::create_directories(c.state_dir);
    if (auto st = config::Validate(c); !st.ok()) World::Fatal(absl::StrCat("config of ", e.id, ": ", st.message()));
    by_id_[e.id] = s.get();
    LogCapacity(*s);
    sites_.push_back(std::move(s));
  }
  r_.sites = static_cast<int>(sites_.size());
}

void Federation::Start(SimSite& s) {
  const size_t unknown = unknown_crashes_.size();
  std::erase_if(unknown_crashes_, [&](const CrashSeen& c) { return c.site == s.id(); });
  r_.crashes_unknown += static_cast<int64_t>(unknown - unknown_crashes_.size());
  EndSpell(s.drain_spells, world_.now());
  auto* inc = new Incarnation;
  inc->node = world_.AddNode(absl::StrCat(s.id(), "#", ++s.incarnations));
  inc->env = std::make_unique<SimEnv>(&world_, inc->node, s.offset, s.drift);
  inc->live = std::make_unique<federation::LiveConfig>(s.config);
  inc->peers = std::make_unique<SimPeers>(&net_, s.id(), inc->env.get());
  auto stack =
      server::OpenSiteStack(s.config, adapters_, inc->live.get(), inc->peers.get(), inc->peers.get(), inc->env.get());
  if (!stack.ok()) World::Fatal(absl::StrCat("site ", s.id(), " does not open: ", stack.status().message()));
  inc->stack = *std::move(stack);
  server::ServiceDeps deps;
  deps.config = &s.config;
  deps.live = inc->live.get();
  deps.site = inc->stack.site.get();
  deps.migrator = inc->stack.migrator.get();
  deps.adapter = inc->stack.adapter.get();
  deps.env = inc->env.get();
  inc->handlers = std::make_unique<server::PeerHandlers>(deps);
  SimSite* seer = &s;
  inc->stack.site->heartbeater().SetObserver(
      [this, seer, inc](const federation::PeerInfo& p, bool first) { Observed(*seer, inc, p, first); });
  s.inc = s.last = inc;
  s.drained = false;  // an operator's drain does not outlive the daemon
  LogCapacity(s);
  net_.Up(s.id(), Endpoint{inc->node, inc->handlers.get()});
  // As hyperfedd: recover what the journal left half done, then start the
  // site's loops (Site::Start: heartbeats, timer rounds, placement, and
  // the recovery loop that retries unsettled migrations).
  SimSite* site = &s;
  world_.Spawn(inc->node, "main", [this, inc, site] {
    if (auto st = inc->stack.migrator->Recover(); !st.ok()) LogError(absl::StrCat("recovery: ", st.message()));
    inc->stack.site->Start();
    // Restarted when it serves again (its startup recovery may take long).
    inc->serving = true;
    inc->serving_since = world_.now();
    EndSpell(site->down_spells, world_.now());
    CountServing(1);
    if (watch_ && watch_->incarnation_at_start.count(site->id()) && site->incarnations > 1)
      watch_->crash_or_restart[site->id()] = world_.now();
    if (site->incarnations > 1) returns_.push_back({site->id(), inc, world_.now(), "restart"});
  });
}

void Federation::Crash(SimSite& s, const std::string& why) {
  Incarnation* inc = s.inc;
  if (!inc) return;
  world_.Trace(inc->node, absl::StrCat("CRASH (", why, ")"));
  if (watch_ && watch_->incarnation_at_start.count(s.id())) {
    watch_->crash_or_restart[s.id()] = world_.now();
    watch_->committed_at_crash[s.id()] = Committed(inc, watch_->id);
  }
  world_.Kill(inc->node);
  net_.Down(s.id());
  s.inc = nullptr;
  ++r_.crashes;
  if (inc->serving) CountServing(-1);
  if (s.down_spells.empty() || s.down_spells.back().second != absl::InfiniteFuture())
    s.down_spells.push_back({world_.now(), absl::InfiniteFuture()});
  unknown_crashes_.push_back({s.id(), world_.now()});
  CheckKnown();  // a site that had not seen an earlier crash is gone
}

std::vector<SimSite*> Federation::UpSites() {
  std::vector<SimSite*> out;
  for (auto& s : sites_)
    if (s->inc) out.push_back(s.get());
  return out;
}

SimSite* Federation::Find(const std::string& id) {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

void Federation::SetDrained(SimSite& s, bool drained) {
  if (!s.inc || s.drained == drained) return;
  s.drained = drained;
  if (drained) {
    s.drain_spells.push_back({world_.now(), absl::InfiniteFuture()});
  } else {
    EndSpell(s.drain_spells, world_.now());
  }
  s.inc->stack.site->SetDrained(drained);  // what Admin.Drain does
  world_.Trace(s.inc->node, drained ? "DRAIN" : "UNDRAIN");
  ++r_.drains;
  LogCapacity(s);
}

void Federation::SubmitJobs(SimSite& s, int count, bool short_jobs) {
  if (!s.inc || count <= 0) return;
  std::vector<std::pair<scheduler::JobSpec, std::string>> jobs;
  for (int i = 0; i < count; ++i) {
    scheduler::JobSpec spec;
    spec.key = absl::StrCat("job-", next_job_++);
    spec.name = spec.key;
    spec.cores = 1;
    // Long jobs keep the queues; short ones finish during rounds.
    spec.duration_ms = short_jobs ? world_.UniformInt(200, 5000) : 3'600'000;
    spec.script = "#!/bin/sh\ntrue\n";
    keys_[spec.key] = s.id();
    jobs.push_back({spec, "submit:" + spec.key});
  }
  for (const auto& st : s.inc->stack.adapter->SubmitMany(jobs))
    if (!st.ok()) Violation(absl::StrCat("submit at ", s.id(), " failed: ", st.status().message()));
  r_.jobs += count;
}

// ------------------------------------------------------------------ faults

void Federation::ScheduleFaults(absl::Time from, absl::Time until) {
  const absl::Duration span = until - from;
  auto at = [&](absl::Duration lo, absl::Duration hi) {
    return from + lo + absl::Nanoseconds(world_.UniformInt(0, absl::ToInt64Nanoseconds(hi - lo)));
  };
  auto pick = [&]() -> SimSite* {
    return sites_[static_cast<size_t>(world_.UniformInt(0, static_cast<int64_t>(sites_.size()) - 1))].get();
  };
  const int n = static_cast<int>(sites_.size());
  if (profile_.crash) {
    // Kills 0-300 ms into the round (as the operator's test did) and later;
    // half the restarts come before peers can notice (peer_timeout).
    const int kills = static_cast<int>(world_.UniformInt(1, std::clamp(n / 16, 1, 4)));
    for (int i = 0; i < kills; ++i) {
      SimSite* s = pick();
      const absl::Time t = i == 0 ? at(absl::ZeroDuration(), absl::Milliseconds(300)) : at(absl::ZeroDuration(), span);
      const absl::Duration down = balancer_.peer_timeout * (world_.Chance(0.5)
                                                                ? static_cast<double>(world_.UniformInt(2, 60)) / 100
                                                                : static_cast<double>(world_.UniformInt(100, 300)) / 100);
      world_.At(t, operator_node_, [this, s, down] {
        if (!faults_on_ || !s->inc) return;
        Crash(*s, "kill -9");
        world_.At(world_.now() + down, operator_node_, [this, s] {
          if (s->inc || s->failed) return;
          Start(*s);
          world_.Trace(s->inc->node, "RESTART");
          ++r_.restarts;
        });
      });
    }
    // SIGSTOP for a few seconds.
    if (world_.Chance(0.5)) {
      SimSite* s = pick();
      const absl::Duration d = absl::Milliseconds(world_.UniformInt(500, 4000));
      world_.At(at(absl::ZeroDuration(), span), operator_node_, [this, s, d] {
        if (!faults_on_ || !s->inc) return;
        world_.Trace(s->inc->node, absl::StrCat("PAUSE ", absl::FormatDuration(d)));
        world_.Pause(s->inc->node, world_.now() + d);
        s->pause_spells.push_back({world_.now(), world_.now() + d});
        CheckKnown();  // a paused site is not waited for
        Disturbed(world_.now(), world_.now() + d);
        ++r_.pauses;
        if (watch_) watch_->disturbed = true;
      });
    }
    // Drains and undrains, some just before the round starts.
    for (int i = 0, k = static_cast<int>(world_.UniformInt(0, 2)); i < k; ++i) {
      SimSite* s = pick();
      world_.At(at(-absl::Seconds(1), span), operator_node_, [this, s] {
        if (faults_on_) SetDrained(*s, !s->drained);
      });
    }
    // Jobs arriving during the round, some short enough to finish in it.
    for (int i = 0, k = static_cast<int>(world_.UniformInt(1, 4)); i < k; ++i) {
      SimSite* s = pick();
      const int count = static_cast<int>(world_.UniformInt(1, 20));
      const bool short_jobs = world_.Chance(0.5);
      world_.At(at(absl::ZeroDuration(), span), operator_node_, [this, s, count, short_jobs] {
        if (!faults_on_) return;
        SubmitJobs(*s, count, short_jobs);
        r_.submitted += count;
      });
    }
  }
  if (profile_.network) {
    // A partition: one site cut off, or the cube split in two.
    if (world_.Chance(0.7)) {
      const absl::Time t = at(absl::ZeroDuration(), span);
      const absl::Duration d = absl::Milliseconds(world_.UniformInt(1000, 8000));
      // The sites on the far side: one, or about half.
      std::vector<std::string> far;
      if (world_.Chance(0.5)) {
        far.push_back(pick()->id());
      } else {
        for (auto& s : sites_)
          if (world_.Chance(0.5)) far.push_back(s->id());
      }
      world_.At(t, operator_node_, [this, far, d] {
        if (!faults_on_) return;
        world_.Trace(-1, absl::StrCat("PARTITION: ", far.size() == 1 ? far[0] : absl::StrCat(far.size(), " sites"),
                                      " cut off for ", absl::FormatDuration(d)));
        ++r_.partitions;
        ++partitions_active_;
        if (watch_) watch_->disturbed = true;
        for (const std::string& s : far) net_.SetGroup(s, 1);
        const size_t cut = cuts_.size();
        std::vector<std::string> sorted = far;
        std::sort(sorted.begin(), sorted.end());
        cuts_.push_back({far, std::move(sorted), disturbances_.size()});
        Disturbed(world_.now(), absl::InfiniteFuture());
        world_.At(world_.now() + d, operator_node_, [this, far, cut] {
          world_.Trace(-1, "PARTITION healed");
          --partitions_active_;
          for (const std::string& s : far) net_.SetGroup(s, 0);
          EndCut(cut);
        });
      });
    }
    if (world_.Chance(0.5)) {
      SimSite* s = pick();
      const absl::Duration extra = absl::Milliseconds(world_.UniformInt(50, 500));
      world_.At(at(absl::ZeroDuration(), span), operator_node_, [this, s, extra] {
        if (!faults_on_) return;
        world_.Trace(-1, absl::StrCat("SLOW ", s->id(), " +", absl::FormatDuration(extra)));
        net_.SetSlow(s->id(), extra);
      });
    }
  }
}

void Federation::Heal() {
  faults_on_ = false;
  SimNet::Faults clean;
  clean.latency = o_.latency;
  net_.SetFaults(clean);
  net_.HealAll();
  net_.ClearSlow();
  partitions_active_ = 0;
  for (size_t k = 0; k < cuts_.size(); ++k) EndCut(k);
  world_.Trace(-1, "HEAL: faults stop");
  for (auto& s : sites_) {
    if (!s->inc && !s->failed) {
      Start(*s);
      world_.Trace(s->inc->node, "RESTART (heal)");
      ++r_.restarts;
    }
    SetDrained(*s, false);
  }
}

// ------------------------------------------------------------------ checks

void Federation::Violation(const std::string& what) {
  world_.Trace(-1, absl::StrCat("VIOLATION: ", what));
  r_.violations.push_back(absl::StrFormat("t=%.3f %s", absl::ToDoubleSeconds(world_.now() - kStart), what));
}

void Federation::EndCut(size_t k) {
  Cut& c = cuts_[k];
  if (c.healed) return;
  c.healed = true;
  disturbances_[c.disturbance].second = world_.now();
  for (const std::string& id : c.far)
    if (SimSite* s = Find(id); s && s->inc && s->inc->serving)
      returns_.push_back({id, s->inc, world_.now(), "cut healed"});
}

bool Federation::DisturbedDuring(absl::Time from, absl::Time to) const {
  for (const auto& [a, b] : disturbances_)
    if (a < to && b > from) return true;
  return false;
}

void Federation::RunFor(absl::Duration d) {
  const absl::Time end = world_.now() + d;
  while (true) {
    absl::Time until = end;
    for (const Return& r : returns_) until = std::min(until, r.at + Known());
    world_.Run(std::max(until, world_.now()), [] { return false; });
    CheckReturns();
    if (world_.now() >= end) return;
  }
}

// A site back from an outage of any length takes part again within the
// membership's bound (Known(): peer_timeout and log2 N intervals) of its
// return: by then every site that served throughout sees it up, so the
// next round a coordinator starts includes it, and it sees them. Not
// checked across a pause or a cut, nor for peers that crashed meanwhile.
// Lost messages are no excuse: its neighbours probe it every interval and
// news goes out on three intervals' probes, all of which would have to be
// lost.
void Federation::CheckReturns() {
  const absl::Duration timeout = Known();
  for (auto it = returns_.begin(); it != returns_.end();) {
    const Return r = *it;
    const absl::Time check = r.at + timeout;
    if (world_.now() < check) {
      ++it;
      continue;
    }
    it = returns_.erase(it);
    SimSite* back = Find(r.site);
    if (back->inc != r.inc || DisturbedDuring(r.at, check)) continue;
    back_[r.site] = r;
    const federation::Membership& mine = r.inc->stack.site->membership();
    std::vector<std::string> blind, unseen;
    int checked = 0;
    for (SimSite* p : UpSites()) {
      if (p == back || !p->inc->serving || p->inc->serving_since > r.at) continue;
      ++checked;
      auto theirs = p->inc->stack.site->membership().Find(r.site);
      if (!theirs || !theirs->up) blind.push_back(p->id());
      auto seen = mine.Find(p->id());
      if (!seen || !seen->up) unseen.push_back(p->id());
    }
    const std::string when = absl::StrFormat("back (%s) at t=%.3f", r.how, absl::ToDoubleSeconds(r.at - kStart));
    world_.Trace(r.inc->node, absl::StrCat("BACK checked: ", when, "; ", checked, " sites that served throughout, ",
                                           blind.size(), " not seeing it up, ", unseen.size(), " not seen up"));
    if (!blind.empty())
      Violation(absl::StrCat(r.site, ", ", when, ", is not seen up one peer timeout later by ", blind.size(),
                             " sites that served throughout (", absl::StrJoin(blind, ", "), ")"));
    if (!unseen.empty())
      Violation(absl::StrCat(r.site, ", ", when, ", does not see ", unseen.size(),
                             " sites that served throughout up one peer timeout later (", absl::StrJoin(unseen, ", "),
                             ")"));
  }
}

// The membership's own transitions, as its Heartbeater logs them ("peer ...
// is down"): the simulation keeps no rule of its own for when a peer is down.
void Federation::Observed(SimSite& seer, Incarnation* inc, const federation::PeerInfo& p, bool first) {
  inc->sees_up[p.site] = p.up;
  if (p.up) return;
  if (!first) {
    ++r_.downs;
    if (!Explained(seer, p.site)) {
      ++r_.false_downs;
      world_.Trace(inc->node, absl::StrCat("FALSE DOWN: ", p.site, " is seen down, and no fault explains it"));
    }
  }
  CheckKnown(&p.site);
}

bool Federation::Explained(const SimSite& seer, const std::string& peer) {
  const SimSite* p = Find(peer);
  if (!p) return true;  // not a site of the simulation's roster
  // A failed position never started: down all along (its peers presumed it
  // alive until their probes found it, docs/design.md §6.11).
  if (p->incarnations == 0) return true;
  const absl::Time to = world_.now();
  const absl::Time from = to - Known() - 2 * balancer_.heartbeat_interval;
  if (Meets(p->down_spells, from, to) || Meets(p->pause_spells, from, to) || Meets(p->drain_spells, from, to) ||
      Meets(seer.pause_spells, from, to))
    return true;
  for (const Cut& c : cuts_) {
    const auto& [a, b] = disturbances_[c.disturbance];
    if (a > to || b < from) continue;
    const bool seer_far = std::binary_search(c.far_sorted.begin(), c.far_sorted.end(), seer.id());
    const bool peer_far = std::binary_search(c.far_sorted.begin(), c.far_sorted.end(), peer);
    if (seer_far != peer_far) return true;
  }
  return false;
}

// A crash is known everywhere once every site whose loops run, but for one
// paused since (a stopped daemon learns nothing), says the crashed site is
// down. Sites that crash meanwhile are not waited for; a site that restarts
// is, from when it serves (its first tick says how it sees each peer).
void Federation::CheckKnown(const std::string* about) {
  if (unknown_crashes_.empty()) return;
  // (Called at every down a site sees, with the site seen: no list of the
  // up sites is made, and only that site's crashes are looked at.)
  std::erase_if(unknown_crashes_, [&](CrashSeen& c) {
    if (about && c.site != *about) return false;
    // Whether `s` has it down, or is not waited for.
    auto knows = [&](const SimSite* s) {
      if (!s->inc || s->id() == c.site || !s->inc->serving || Meets(s->pause_spells, c.at, world_.now())) return true;
      auto it = s->inc->sees_up.find(c.site);
      return it != s->inc->sees_up.end() && !it->second;
    };
    const SimSite* crashed = Find(c.site);
    if (crashed && !c.neighbours_know) {
      // Its cube neighbours: labels one bit from the crashed site's.
      bool neighbours = true;
      for (int k = 0; k < dimension_ && neighbours; ++k)
        if (const config::RosterEntry* e = crashed->config.roster.FindLabel(crashed->label ^ (1 << k)))
          if (const SimSite* n = Find(e->id)) neighbours = knows(n);
      if (neighbours) {
        c.neighbours_know = true;
        r_.neighbours_after.push_back(absl::ToDoubleSeconds(world_.now() - c.at));
      }
    }
    for (const auto& site : sites_)
      if (!knows(site.get())) return false;
    r_.known_after.push_back(absl::ToDoubleSeconds(world_.now() - c.at));
    return true;
  });
}

void Federation::CountServing(int delta) {
  r_.serving_seconds += serving_ * absl::ToDoubleSeconds(world_.now() - serving_changed_);
  serving_changed_ = world_.now();
  serving_ += delta;
}

int64_t Federation::Committed(Incarnation* inc, const std::string& round_id) {
  auto recs = inc->stack.journal->ListRecent(1 << 20);
  if (!recs.ok()) return 0;
  int64_t n = 0;
  for (const migration::MigrationRecord& m : *recs)
    if (m.direction == migration::Direction::kOut && m.round_id == round_id &&
        m.state == migration::MigrationState::kCommitted)
      n += static_cast<int64_t>(m.jobs.size());
  return n;
}

// A round's deadline in world time, from the operator's watch or else its
// coordinator's history (a round the operator's request started though its
// answer was lost, or one a site's timer started); then CheckParts watches
// it too. nullopt when neither knows it (its coordinator crashed first).
std::optional<absl::Time> Federation::RoundDeadline(const std::string& id) {
  for (const auto& [known, deadline] : round_deadlines_)
    if (known == id) return deadline;
  SimSite* c = Find(federation::RoundCoordinator(id).value_or(""));
  if (!c || !c->inc) return std::nullopt;
  auto view = c->inc->stack.site->FindRound(id);
  if (!view) return std::nullopt;
  const absl::Time deadline = c->inc->env->ToWorld(view->spec.deadline);
  round_deadlines_.push_back({id, deadline});
  return deadline;
}

// Parts of rounds end by their deadline (every wait of a part does).
void Federation::CheckParts() {
  const absl::Duration slack = PartSlack();
  for (auto it = round_deadlines_.begin(); it != round_deadlines_.end();) {
    const auto& [id, deadline] = *it;
    if (world_.now() < deadline + slack) {
      ++it;
      continue;
    }
    for (SimSite* s : UpSites())
      if (s->inc->stack.site->CurrentRound() == id)
        Violation(absl::StrCat("the part of round ", id, " at ", s->id(), " still runs past the round's deadline"));
    it = round_deadlines_.erase(it);
  }
}

void Federation::CheckRound(const federation::RoundView& v, const Watch& w, RoundStats* st) {
  SimSite* c = Find(w.coordinator);
  const SimEnv* cenv = w.coordinator_inc->env.get();
  const absl::Time finished = cenv->ToWorld(v.finished);
  const federation::RoundTimeouts t = federation::ComputeRoundTimeouts(balancer_, v.spec.shape());
  // Every round ends within its deadline...
  const absl::Time give_up = cenv->ToWorld(v.spec.deadline + t.report) + balancer_.heartbeat_interval;
  if (finished > give_up)
    Violation(absl::StrCat("round ", v.id, " ended ", absl::FormatDuration(finished - give_up),
                           " after its deadline and report time"));
  // ... and within one heartbeat timeout of the last crash or restart of a
  // site it was started at (one that reported may have been asked for its
  // report after its restart).
  const std::set<std::string> reported(v.reported.begin(), v.reported.end());
  absl::Time last_fault = absl::InfinitePast();
  bool waited_for_crashed = false;
  std::set<std::string> started_at;
  for (const balance::LoadRow& row : v.before)
    if (const config::RosterEntry* e = c->config.roster.FindLabel(row.label)) started_at.insert(e->id);
  for (const auto& [site, when] : w.crash_or_restart)
    if (started_at.count(site)) {
      waited_for_crashed = true;
      last_fault = std::max(last_fault, when);
    }
  if (waited_for_crashed && !w.disturbed && net_.stats().lost == 0) {
    // The sites that did not crash may still be running their parts (until
    // a step timeout): the round waits for them as long.
    absl::Time others = absl::InfinitePast();
    for (const auto& [site, when] : w.part_ended)
      if (!w.crash_or_restart.count(site)) others = std::max(others, when);
    const absl::Time bound =
        std::max(last_fault + Known() + 2 * balancer_.heartbeat_interval, others + balancer_.heartbeat_interval);
    if (finished > bound)
      Violation(absl::StrCat(
          "round ", v.id, " ended ", absl::FormatDuration(finished - last_fault),
          " after the last crash or restart of a site it waited for and ", absl::FormatDuration(finished - others),
          " after the other sites' parts ended (bound: ", "the membership's bound + 2 heartbeats, and one heartbeat)"));
  }
  // A site back from an outage one peer timeout before the round began,
  // and not down, paused or cut off since, is in it (CheckReturns).
  const absl::Time began = cenv->ToWorld(v.started);
  for (const auto& [site, r] : back_) {
    auto at_start = w.incarnation_at_start.find(site);
    if (r.at + Known() > began || at_start == w.incarnation_at_start.end() || at_start->second != r.inc ||
        w.coordinator_inc->serving_since > r.at || DisturbedDuring(r.at, began))
      continue;
    if (!started_at.count(site))
      Violation(absl::StrFormat("round %s began %.3f s after %s was back (%s) and left it out", v.id,
                                absl::ToDoubleSeconds(began - r.at), site, r.how));
  }
  // The report counts what the sites committed: never more than a site's
  // journal holds, and at least what a crashed incarnation had committed.
  std::map<int, int64_t> sent;
  for (const balance::Transfer& tr : v.transfers) sent[tr.from] += tr.count;
  for (const auto& [site, inc] : w.incarnation_at_start) {
    SimSite* s = Find(site);
    const int64_t counted = sent[s->label];
    const int64_t committed = Committed(s->last, v.id);
    int64_t at_crash = 0;
    if (auto it = w.committed_at_crash.find(site); it != w.committed_at_crash.end()) at_crash = it->second;
    // (The journal outlives a crash: `committed` includes `at_crash`.)
    if (counted > committed)
      Violation(absl::StrCat("round ", v.id, " counts ", counted, " jobs sent by ", site, ", which committed ",
                             committed));
    // A site the coordinator sees down (crashed, or cut off) when the round
    // ends cannot be asked: its commits are missing from the count.
    auto seen = w.coordinator_inc->stack.site->membership().Find(site);
    // And one serving for less than two heartbeats may not have been
    // looked at yet.
    const bool askable = s->inc && s->inc->serving &&
                         s->inc->serving_since + 2 * balancer_.heartbeat_interval <= finished && seen && seen->up;
    if (askable && at_crash > counted)
      Violation(absl::StrCat("round ", v.id, " counts ", counted, " jobs sent by ", site, ", whose incarnation that ",
                             "crashed during the round had committed ", at_crash));
  }
  // The table holds the capacities the sites balanced with.
  for (const balance::LoadRow& row : v.before) {
    const config::RosterEntry* e = c->config.roster.FindLabel(row.label);
    if (!e || !reported.count(e->id)) continue;
    // A site that crashed or restarted in the round answers from its
    // journal, which knows no capacity: its row stays the coordinator's
    // view's, its own probe's or relayed (Membership::RowAgeBound before
    // the round began, and a latency).
    absl::Time from = cenv->ToWorld(v.started);
    if (w.crash_or_restart.count(e->id))
      from -= federation::Membership::RowAgeBound(static_cast<int>(sites_.size()), dimension_, balancer_) +
              absl::Seconds(1);
    const std::set<double> had = CapacitiesDuring(e->id, from, finished);
    if (!had.count(row.capacity))
      Violation(absl::StrCat("round ", v.id, " shows capacity ", row.capacity, " for ", e->id,
                             ", which it did not have during the round (it had ", absl::StrJoin(had, " or "), ")"));
  }
  // No round's transfers exceed its plan (from the table it balanced with),
  // when every site that started it reported.
  const balance::RoundMode* mode = balance::FindRoundMode(v.spec.mode);
  if (mode && v.ok) {
    balance::RoundShape shape = v.spec.shape();
    auto plan = balance::PlanRound(*mode, shape, v.before);
    if (!plan.ok()) {
      Violation(absl::StrCat("round ", v.id, ": its table does not plan: ", plan.status().message()));
    } else {
      std::map<std::pair<int, int>, int64_t> planned, done;
      for (const auto& tr : plan->transfers) planned[{tr.from, tr.to}] += tr.count;
      for (const auto& tr : v.transfers) done[{tr.from, tr.to}] += tr.count;
      for (const auto& [link, n] : done)
        if (n > planned[link])
          Violation(absl::StrCat("round ", v.id, " moved ", n, " jobs from label ", link.first, " to ", link.second,
                                 "; its plan: ", planned[link]));
    }
  }
  st->moved = v.moved;
  st->share_error_before = v.share_error_before;
  st->share_error_after = v.share_error_after;
  st->live_sites = static_cast<int>(v.before.size());
  st->seconds = absl::ToDoubleSeconds(v.finished - v.started);
  st->deadline_seconds = absl::ToDoubleSeconds(v.spec.deadline - v.started);
}

std::set<double> Federation::CapacitiesDuring(const std::string& site, absl::Time from, absl::Time to) {
  std::set<double> out;
  const auto& log = capacity_log_[site];
  for (size_t i = 0; i < log.size(); ++i) {
    const absl::Time until = i + 1 < log.size() ? log[i + 1].first : absl::InfiniteFuture();
    if (log[i].first <= to && until >= from) out.insert(log[i].second);
  }
  return out;
}

// Every job is at exactly one site or has finished; none runs twice; once
// the federation is whole and quiet (`final`), none is held.
void Federation::Census(bool final) {
  struct Copies {
    int live = 0;  // pending, running or done
    int held = 0;
    int ran = 0;  // running or done
  };
  std::map<std::string, Copies> seen;
  for (auto& s : sites_) {
    if (!s->last) continue;
    auto jobs = s->last->scheduler()->ListAllJobs();
    if (!jobs.ok()) {
      Violation(absl::StrCat("the queue of ", s->id(), " cannot be read: ", jobs.status().message()));
      continue;
    }
    for (const scheduler::Job& j : *jobs) {
      Copies& c = seen[j.spec.key];
      switch (j.state) {
        case scheduler::JobState::kPending: ++c.live; break;
        case scheduler::JobState::kHeld: ++c.held; break;
        case scheduler::JobState::kRunning:
        case scheduler::JobState::kDone: ++c.live; ++c.ran; break;
        case scheduler::JobState::kCancelled: break;
      }
    }
  }
  int lost = 0, twice = 0, doubled = 0, held = 0;
  std::string example;
  for (const auto& [key, where] : keys_) {
    const Copies& c = seen[key];
    if (c.live + c.held == 0) ++lost, example = key;
    if (c.ran > 1) ++twice, example = key;
    if (final && c.live > 1) ++doubled, example = key;
    if (final && c.held > 0) ++held, example = key;
  }
  if (lost) Violation(absl::StrCat(lost, " jobs lost (e.g. ", example, ")"));
  if (twice) Violation(absl::StrCat(twice, " jobs ran at two sites (e.g. ", example, ")"));
  if (doubled) Violation(absl::StrCat(doubled, " jobs queued at two sites once quiet (e.g. ", example, ")"));
  if (held) Violation(absl::StrCat(held, " jobs still held once the federation is whole and quiet (e.g. ", example, ")"));
}

// Runs until every migration has settled, every live site sees every other
// and no round runs. Returns "" once quiet, otherwise what was still not
// quiet at `limit`.
std::string Federation::WaitQuiet(absl::Duration limit) {
  absl::Time until = world_.now() + limit;
  std::string why;
  while (world_.now() < until) {
    RunFor(absl::Milliseconds(500));
    CheckParts();
    why.clear();
    const std::vector<SimSite*> up = UpSites();
    for (SimSite* s : up) {
      auto out = s->inc->stack.journal->Unsettled(migration::Direction::kOut);
      auto in = s->inc->stack.journal->Unsettled(migration::Direction::kIn);
      if (!out.ok() || !in.ok()) {
        why = absl::StrCat(s->id(), "'s journal cannot be read");
      } else if (out->migrations > 0 || in->migrations > 0) {
        why = absl::StrCat(s->id(), " has ", out->migrations, " migrations out and ", in->migrations,
                           " in unsettled");
      } else if (s->inc->stack.site->InRound()) {
        // A part whose coordinator crashed before the round got going ends
        // by its own timeouts, within the round's deadline (CheckParts): a
        // newer round replaces it, so quiet waits for that bound too.
        const std::string round = s->inc->stack.site->CurrentRound();
        why = absl::StrCat(s->id(), " is still in round ", round.empty() ? "(reporting)" : round);
        if (auto deadline = RoundDeadline(round)) until = std::max(until, *deadline + PartSlack());
      }
      if (!why.empty()) break;
    }
    // Every live site sees every live site up and every other down.
    for (size_t i = 0; why.empty() && i < up.size(); ++i)
      for (const federation::PeerInfo& p : up[i]->inc->stack.site->membership().View()) {
        SimSite* s = Find(p.site);
        if (s && !p.self && (s->inc != nullptr) != p.up) {
          why = absl::StrCat(up[i]->id(), " sees ", p.site, p.up ? " up, which is down" : " down, which is up");
          break;
        }
      }
    if (why.empty()) return why;
  }
  return why.empty() ? "no time to look" : why;
}

RoundStats Federation::DoRound(int number, bool clean) {
  RoundStats st;
  st.number = number;
  st.clean = clean;
  net_.ResetStats();
  crashes_this_round_ = 0;
  std::vector<SimSite*> up = UpSites();
  if (up.empty()) {
    st.end = "not started: no site is up";
    return st;
  }
  // The operator asks any site (one that is not the coordinator forwards).
  SimSite* asked = up[static_cast<size_t>(world_.UniformInt(0, static_cast<int64_t>(up.size()) - 1))];
  Watch w;
  for (SimSite* s : up) {
    w.incarnation_at_start[s->id()] = s->inc;
  }
  w.disturbed = partitions_active_ > 0;
  watch_ = w;
  // Asked again, as an operator would, while the sites still take a dead
  // coordinator for theirs (up to a peer timeout and a few heartbeats).
  auto answer = std::make_shared<std::optional<absl::StatusOr<std::string>>>();
  const absl::Time ask_until = world_.now() + Known() + 3 * balancer_.heartbeat_interval;
  while (true) {
    answer->reset();
    Incarnation* inc = asked->inc;
    world_.Spawn(inc->node, "operator: balance", [inc, answer, number] {
      *answer = inc->stack.site->Balance(false, absl::StrCat("sim round ", number));
    });
    while (!answer->has_value() && world_.now() < ask_until && asked->inc == inc) RunFor(absl::Milliseconds(50));
    if ((answer->has_value() && answer->value().ok()) || world_.now() >= ask_until) break;
    RunFor(balancer_.heartbeat_interval);
    up = UpSites();
    if (up.empty()) break;
    asked = up[static_cast<size_t>(world_.UniformInt(0, static_cast<int64_t>(up.size()) - 1))];
  }
  if (!answer->has_value() || !answer->value().ok()) {
    st.end = absl::StrCat("not started: ", !answer->has_value() ? "no answer" : answer->value().status().message());
    if (clean) Violation(absl::StrCat("the clean round was ", st.end));
    watch_.reset();
    return st;
  }
  st.id = answer->value().value();
  watch_->id = st.id;
  watch_->coordinator = federation::RoundCoordinator(st.id).value_or("");
  SimSite* c = Find(watch_->coordinator);
  if (!c || !c->inc) {
    st.end = "lost with its coordinator";
    watch_.reset();
    return st;
  }
  watch_->coordinator_inc = c->inc;
  bool deadline_known = false;
  const absl::Time started = world_.now();
  std::optional<federation::RoundView> view;
  while (true) {
    RunFor(absl::Milliseconds(50));
    CheckParts();
    if (c->inc != watch_->coordinator_inc) {
      st.end = "lost with its coordinator";
      break;
    }
    for (const auto& [site, inc] : watch_->incarnation_at_start) {
      SimSite* s = Find(site);
      if (s->inc != inc || watch_->part_ended.count(site)) continue;
      if (inc->stack.site->CurrentRound() == st.id) {
        watch_->part_began.insert(site);
      } else if (watch_->part_began.count(site)) {
        watch_->part_ended[site] = world_.now();
      }
    }
    view = c->inc->stack.site->FindRound(st.id);
    if (!view) {
      Violation(absl::StrCat("round ", st.id, " is not in its coordinator's history"));
      break;
    }
    if (!deadline_known) {
      round_deadlines_.push_back({st.id, c->inc->env->ToWorld(view->spec.deadline)});
      deadline_known = true;
    }
    if (view->done) {
      st.end = view->ok ? "finished" : "ended early: " + view->events.back();
      break;
    }
    const federation::RoundTimeouts t = federation::ComputeRoundTimeouts(balancer_, view->spec.shape());
    if (world_.now() > c->inc->env->ToWorld(view->spec.deadline + t.report) + absl::Seconds(30)) {
      Violation(absl::StrCat("round ", st.id, " never ended"));
      break;
    }
  }
  if (view && view->done) CheckRound(*view, *watch_, &st);
  if (clean) {
    if (st.end != "finished") Violation(absl::StrCat("the clean round ", st.id, " did not finish: ", st.end));
    // Jobs the job choice kept (they moved in within the hysteresis time,
    // or would not start sooner) stay where they are by the daemon's rule;
    // the round's record says how many.
    int64_t kept = 0;
    if (view)
      for (const std::string& e : view->events)
        if (auto at = e.find(" kept: "); at != std::string::npos) {
          const size_t open = e.rfind('(', at);
          int64_t n = 0;
          if (open != std::string::npos && absl::SimpleAtoi(e.substr(open + 1, at - open - 1), &n)) kept += n;
        }
    if (st.share_error_after >= 1 && kept == 0)
      Violation(absl::StrFormat("the clean round %s left max share error %.2f (not below 1)", st.id,
                                st.share_error_after));
  }
  if (st.seconds == 0) st.seconds = absl::ToDoubleSeconds(world_.now() - started);
  const SimNet::Stats& n = net_.stats();
  st.messages = n.round_messages;
  st.bytes = n.round_bytes;
  st.largest = n.largest;
  st.heartbeats = n.heartbeats;
  st.heartbeat_bytes = n.heartbeat_bytes;
  // Per site: every site that sent or received in the round (a site down
  // throughout did neither).
  size_t active = 0;
  for (const SimNet::SiteTraffic& t : n.sites) {
    if (!t.active) continue;
    ++active;
    st.site_round_bytes += static_cast<double>(t.round_bytes);
    st.site_heartbeat_bytes += static_cast<double>(t.heartbeat_bytes);
    st.max_site_round_bytes = std::max(st.max_site_round_bytes, t.round_bytes);
    st.max_site_heartbeat_bytes = std::max(st.max_site_heartbeat_bytes, t.heartbeat_bytes);
  }
  if (active > 0) {
    st.site_round_bytes /= static_cast<double>(active);
    st.site_heartbeat_bytes /= static_cast<double>(active);
  }
  watch_.reset();
  return st;
}

SeedResult Federation::Run(const std::function<void(const SeedResult&)>& stopped) {
  const double cpu0 = CpuSeconds();
  if (stopped)
    World::SetFatalHook([this, cpu0, stopped](const std::string& why) {
      Violation(absl::StrCat("the simulation stopped: ", why));
      stopped(Result(cpu0));
    });
  r_.seed = o_.seed;
  auto profile = FindProfile(o_.faults);
  if (!profile) World::Fatal(absl::StrCat("unknown fault profile ", o_.faults));
  profile_ = *profile;
  if (!o_.full_trace) world_.SetTraceLimit(o_.trace_lines);
  SetLogHook([this](LogLevel level, std::string_view msg) {
    std::string lv(LogLevelName(level));
    lv += ' ';
    world_.Trace(world_.current_node(), lv, msg);
  });
  // A crash point a site's task reaches may be where the seed crashes it.
  migration::SetCrashPointHook([this](std::string_view point) {
    if (!faults_on_ || !profile_.crash || crashes_this_round_ >= 2 || !world_.Chance(0.002)) return;
    const int node = world_.current_node();
    for (auto& s : sites_)
      if (s->inc && s->inc->node == node) {
        ++crashes_this_round_;
        Crash(*s, absl::StrCat("at crash point ", std::string(point)));
        const absl::Duration down = absl::Milliseconds(world_.UniformInt(100, 8000));
        SimSite* site = s.get();
        world_.At(world_.now() + down, operator_node_, [this, site] {
          if (site->inc || site->failed) return;
          Start(*site);
          world_.Trace(site->inc->node, "RESTART");
          ++r_.restarts;
        });
        world_.Vanish();  // the task dies here, as the process would
      }
  });
  operator_node_ = world_.AddNode("operator");
  Build();
  SimNet::Faults f;
  f.latency = o_.latency;
  if (profile_.network) {
    f.jitter = o_.latency * 4;
    f.loss = static_cast<double>(world_.UniformInt(5, 30)) / 1000;
    f.duplicate = static_cast<double>(world_.UniformInt(5, 30)) / 1000;
  }
  for (auto& s : sites_) {
    const int count = static_cast<int>(world_.UniformInt(0, 2 * o_.jobs_per_site));
    if (!s->failed) Start(*s);
    SubmitJobs(*s, count, false);
  }
  // Heartbeats settle before the first round.
  RunFor(balancer_.heartbeat_interval * 3);
  for (int k = 1; k <= o_.rounds; ++k) {
    const bool clean = k == o_.rounds;
    if (clean && (profile_.crash || profile_.network)) {
      Heal();
      const std::string why = WaitQuiet(absl::Seconds(120));
      if (!why.empty()) Violation(absl::StrCat("the federation did not become quiet after the faults stopped: ", why));
    } else if (profile_.crash || profile_.network) {
      faults_on_ = true;
      net_.SetFaults(f);
      ScheduleFaults(world_.now(), world_.now() + absl::Seconds(3));
    }
    r_.rounds.push_back(DoRound(k, clean));
    RunFor(absl::Seconds(1));
    Census(/*final=*/false);
  }
  Heal();
  const std::string why = WaitQuiet(absl::Seconds(120));
  if (!why.empty()) Violation(absl::StrCat("the federation did not become quiet at the end: ", why));
  CheckParts();
  Census(/*final=*/true);
  r_.crashes_unknown += static_cast<int64_t>(unknown_crashes_.size());  // none: the heal restarted every site
  unknown_crashes_.clear();
  migration::SetCrashPointHook(nullptr);
  SetLogHook(nullptr);
  World::SetFatalHook(nullptr);
  return Result(cpu0);
}

SeedResult Federation::Result(double cpu0) {
  r_.trace_hash = world_.trace_hash();
  r_.trace = world_.trace();
  r_.steps = static_cast<int64_t>(world_.steps());
  r_.tasks = static_cast<int64_t>(world_.tasks_started());
  r_.simulated_seconds = absl::ToDoubleSeconds(world_.now() - kStart);
  r_.cpu_seconds = CpuSeconds() - cpu0;
  CountServing(0);
  r_.heartbeats_sent = net_.heartbeats_sent();
  return r_;
}

}  // namespace

std::vector<std::string> FaultProfiles() { return {"none", "crash", "network", "all"}; }

absl::Duration HeartbeatFor(int sites) { return absl::Seconds(1); }

SeedResult RunFederation(const FederationOptions& options,
                         const std::function<void(const SeedResult&)>& stopped) {
  Federation f(options);
  return f.Run(stopped);
}

namespace {

// A seed's result through the pipe from its process: one record per line,
// fields separated by tabs.
std::string Encode(const SeedResult& r, bool full_trace) {
  std::string out = absl::StrCat("seed\t", r.seed, "\t", r.positions, "\t", r.sites, "\t", r.dimension, "\t", r.jobs,
                                 "\t", r.crashes, "\t", r.restarts, "\t", r.pauses, "\t", r.partitions, "\t", r.drains,
                                 "\t", r.submitted, "\t", r.trace_hash, "\t", r.cpu_seconds, "\t", r.simulated_seconds,
                                 "\t", r.steps, "\t", r.tasks, "\n");
  for (const RoundStats& x : r.rounds)
    absl::StrAppend(&out, "round\t", x.number, "\t", x.id, "\t", x.end, "\t", x.clean ? 1 : 0, "\t", x.live_sites, "\t",
                    x.moved, "\t", x.share_error_before, "\t", x.share_error_after, "\t", x.messages, "\t", x.bytes,
                    "\t", x.largest, "\t", x.heartbeats, "\t", x.heartbeat_bytes, "\t", x.seconds, "\t",
                    x.deadline_seconds, "\t", x.site_round_bytes, "\t", x.site_heartbeat_bytes, "\t",
                    x.max_site_round_bytes, "\t", x.max_site_heartbeat_bytes, "\n");
  absl::StrAppend(&out, "membership\t", r.heartbeats_sent, "\t", r.serving_seconds, "\t", r.crashes_unknown, "\t",
                  r.downs, "\t", r.false_downs, "\t", absl::StrJoin(r.known_after, ","), "\t",
                  absl::StrJoin(r.neighbours_after, ","), "\n");
  for (const std::string& v : r.violations) absl::StrAppend(&out, "violation\t", v, "\n");
  if (!r.violations.empty() || full_trace)
    for (const std::string& t : r.trace) absl::StrAppend(&out, "trace\t", t, "\n");
  return out;
}

template <class T>
void Num(const std::string& s, T* out) {
  if constexpr (std::is_floating_point_v<T>) {
    (void)absl::SimpleAtod(s, out);
  } else {
    (void)absl::SimpleAtoi(s, out);
  }
}

SeedResult Decode(const std::string& text) {
  SeedResult r;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits('\t', 24));
    if (f[0] == "seed" && f.size() >= 17) {
      Num(f[1], &r.seed), Num(f[2], &r.positions), Num(f[3], &r.sites), Num(f[4], &r.dimension), Num(f[5], &r.jobs);
      Num(f[6], &r.crashes), Num(f[7], &r.restarts), Num(f[8], &r.pauses), Num(f[9], &r.partitions);
      Num(f[10], &r.drains), Num(f[11], &r.submitted), Num(f[12], &r.trace_hash), Num(f[13], &r.cpu_seconds);
      Num(f[14], &r.simulated_seconds), Num(f[15], &r.steps), Num(f[16], &r.tasks);
    } else if (f[0] == "round" && f.size() >= 20) {
      RoundStats x;
      Num(f[1], &x.number);
      x.id = f[2];
      x.end = f[3];
      x.clean = f[4] == "1";
      Num(f[5], &x.live_sites), Num(f[6], &x.moved), Num(f[7], &x.share_error_before);
      Num(f[8], &x.share_error_after), Num(f[9], &x.messages), Num(f[10], &x.bytes), Num(f[11], &x.largest);
      Num(f[12], &x.heartbeats), Num(f[13], &x.heartbeat_bytes), Num(f[14], &x.seconds);
      Num(f[15], &x.deadline_seconds);
      Num(f[16], &x.site_round_bytes), Num(f[17], &x.site_heartbeat_bytes);
      Num(f[18], &x.max_site_round_bytes), Num(f[19], &x.max_site_heartbeat_bytes);
      r.rounds.push_back(x);
    } else if (f[0] == "membership" && f.size() >= 8) {
      Num(f[1], &r.heartbeats_sent), Num(f[2], &r.serving_seconds), Num(f[3], &r.crashes_unknown);
      Num(f[4], &r.downs), Num(f[5], &r.false_downs);
      for (auto [field, out] : {std::pair{6, &r.known_after}, std::pair{7, &r.neighbours_after}})
        for (absl::string_view k : absl::StrSplit(f[field], ',', absl::SkipEmpty())) {
          double v = 0;
          Num(std::string(k), &v);
          out->push_back(v);
        }
    } else if (f[0] == "violation") {
      r.violations.push_back(std::string(line.substr(10)));
    } else if (f[0] == "trace") {
      r.trace.push_back(std::string(line.substr(6)));
    }
  }
  return r;
}

}  // namespace

void RunSeeds(const FederationOptions& options, uint64_t first, uint64_t last,
              const std::function<void(SeedResult)>& each) {
  for (uint64_t seed = first; seed <= last; ++seed) {
    FederationOptions o = options;
    o.seed = seed;
    o.state_root = absl::StrCat(options.state_root, "/seed-", seed);
    std::filesystem::remove_all(o.state_root);
    std::filesystem::create_directories(o.state_root);
    int fds[2];
    if (pipe(fds) != 0) World::Fatal("pipe failed");
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) World::Fatal("fork failed");
    if (pid == 0) {
      close(fds[0]);
      auto send = [&](const SeedResult& r) {
        const std::string text = Encode(r, o.full_trace);
        for (size_t done = 0; done < text.size();) {
          const ssize_t n = write(fds[1], text.data() + done, text.size() - done);
          if (n <= 0) _exit(4);
          done += static_cast<size_t>(n);
        }
      };
      send(RunFederation(o, send));
      _exit(0);
    }
    close(fds[1]);
    std::string text;
    char buf[1 << 16];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    SeedResult r = Decode(text);
    r.seed = seed;
    if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) && r.violations.empty())
      r.violations.push_back(WIFSIGNALED(status) ? absl::StrCat("the run died of signal ", WTERMSIG(status))
                                                 : absl::StrCat("the run ended with status ", WEXITSTATUS(status)));
    std::filesystem::remove_all(o.state_root);
    each(std::move(r));
  }
}

}  // namespace hyperfed::fedsim
