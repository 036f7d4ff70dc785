// hyperfedd benchmarks, measured in one run on this machine:
//   - the loopback RPC round trip (the floor): grpc.health.v1.Health/Check
//     over mutual TLS;
//   - a full round's latency (operator's Balance with wait, end to end, over
//     an open connection) for 8, 16 and 32 sites, p50 and p99, without and
//     with migrations, with the CPU time and context switches per round and
//     site (from /proc);
//   - the instructions one round costs the coordinator and a participant
//     (--cpu: two of 8 sites under callgrind);
//   - jobs per second migrated between two sites, journal and scheduler
//     state on a real disk (fsync on) and on tmpfs, with the ratio to the
//     goal (50,000 jobs/s), and (--throughput) against the same run's
//     storage limit, the same SQLite writes without RPC
//     (bench/storage_limit.h; goal at least 0.5 of it);
//   - an idle daemon's resident memory and CPU.
//   - a soak: many rounds on a local 8-site federation, with the
//     coordinator's threads, VmSize and RSS every 200 rounds (they must stay
//     flat: one bounded executor per site, docs/design.md §9).
//   - Slurm to Slurm: jobs per second migrated between two single-node
//     Slurm clusters in one round, against plain sbatch of the same scripts
//     with the same parallelism, with the ratio to the goal (0.5).
//   - Grid Engine to Grid Engine and Slurm to Grid Engine: the same against
//     plain qsub with the same parallelism (kGridEngineParallelCommands, as
//     the gridengine adapter submits).
// Run: build/hyperfed_daemon_bench [--quick | --rounds [SITES] | --cpu [ROUNDS] | --throughput [RUNS] |
//                                   --throughput-cpu [JOBS] | --storage-limit [JOBS [writes]] |
//                                   --soak [ROUNDS] | --slurm [JOBS [RUNS]] | --gridengine [JOBS [RUNS]]]
// (figures in docs/benchmarks.md)

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/storage_limit.h"
#include "daemon/common/executor.h"
#include "daemon/scheduler/gridengine_adapter.h"
#include "daemon/scheduler/slurm_adapter.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"
#include "tests/scheduler/gridengine_cluster.h"
#include "tests/scheduler/slurm_cluster.h"

using namespace hyperfed::testing;

namespace {

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

double RpcFloorMs(TestFederation& f, int calls) {
  auto stub = grpc::health::v1::Health::NewStub(f.Channel(0));
  std::vector<double> ms;
  for (int i = 0; i < calls + 50; ++i) {
    grpc::health::v1::HealthCheckRequest req;
    grpc::health::v1::HealthCheckResponse resp;
    grpc::ClientContext ctx;
    const absl::Time t = absl::Now();
    if (!stub->Check(&ctx, req, &resp).ok()) continue;
    if (i >= 50) ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t));  // after warm-up
  }
  std::printf("  loopback RPC round trip (Health/Check, mTLS): p50 %.3f ms, p99 %.3f ms over %zu calls\n",
              Percentile(ms, 0.5), Percentile(ms, 0.99), ms.size());
  return Percentile(ms, 0.5);
}

double CpuSeconds(pid_t pid) {
  std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  std::istringstream in(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Voluntary context switches of every thread of a process: each is a thread
// that blocked (a hand-off, a wait for a peer or a lock). Switches forced by
// other processes (nonvoluntary) depend on the machine's load and are left
// out.
long long ContextSwitches(pid_t pid) {
  long long n = 0;
  const std::string tasks = absl::StrCat("/proc/", pid, "/task");
  if (DIR* d = opendir(tasks.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::istringstream st(ReadFile(absl::StrCat(tasks, "/", e->d_name, "/status")));
      std::string line;
      while (std::getline(st, line))
        if (line.rfind("voluntary_ctxt_switches:", 0) == 0) n += std::stoll(line.substr(line.find(':') + 1));
    }
    closedir(d);
  }
  return n;
}

void Rounds(int sites, int rounds, bool migrations, double floor_ms) {
  auto f = TestFederation::Start({.sites = sites, .step_timeout = "20s", .peer_timeout = "5s", .heartbeat = "1s"});
  if (!f.ok()) {
    std::printf("  %d sites: could not start: %s\n", sites, std::string(f.status().message()).c_str());
    return;
  }
  // One operator connection for every round, opened by a first round that
  // is not timed: a round's figure is the round's, not a TLS handshake's.
  auto admin = (*f)->Admin(0);
  (void)RunRound(**f, *admin);
  std::vector<double> ms;
  double cpu0 = 0;
  long long cs0 = 0;
  for (int i = 0; i < sites; ++i) cpu0 += CpuSeconds((*f)->Pid(i)), cs0 += ContextSwitches((*f)->Pid(i));
  for (int r = 0; r < rounds; ++r) {
    if (migrations) {
      // 10 jobs per site at one site (rotating): the round moves 9/10 of them.
      if (!Submit(**f, r % sites, 10 * sites, 3'600'000).ok()) continue;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const absl::Time t = absl::Now();
    auto res = RunRound(**f, *admin);
    if (res.ok() && res->ok()) ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t));
  }
  double cpu1 = 0;
  long long cs1 = 0;
  for (int i = 0; i < sites; ++i) cpu1 += CpuSeconds((*f)->Pid(i)), cs1 += ContextSwitches((*f)->Pid(i));
  int n = 0;
  while ((1 << n) < sites) ++n;
  // Issue 16's goal: 5 x (dimensions + 2) x the round trip.
  const double goal_ms = 5 * (n + 2) * floor_ms;
  std::printf(
      "  %2d sites (%d dimensions), %s: round p50 %.2f ms, p99 %.2f ms over %zu rounds; "
      "p50 / (5 x (dimensions + 2) x RPC floor = %.2f ms) = %.2f; per round and site: %.2f ms CPU, %.1f voluntary "
      "context switches\n",
      sites, n, migrations ? "with migrations   " : "without migrations", Percentile(ms, 0.5), Percentile(ms, 0.99),
      ms.size(), goal_ms, Percentile(ms, 0.5) / goal_ms, 1000 * (cpu1 - cpu0) / rounds / sites,
      static_cast<double>(cs1 - cs0) / rounds / sites);
}

// The loopback round trip of a site started for it (0.2 ms when none
// starts).
double RpcFloor(int calls = 2000) {
  auto f = TestFederation::Start({.sites = 1});
  if (!f.ok()) {
    std::printf("cannot start a site: %s\n", std::string(f.status().message()).c_str());
    return 0.2;
  }
  return RpcFloorMs(**f, calls);
}

// The goal of issue 16 for a migration between two sim sites.
constexpr double kMigrationGoalJobsPerSecond = 50'000;

// The migration benchmarks' two sites: one running hour-long job at each
// (waited for up to `running_wait`), then 2 x `jobs` pending at site 0,
// submitted `chunk` at a time.
absl::Status FillForMove(TestFederation& f, int jobs, int chunk, absl::Duration running_wait) {
  for (int i = 0; i < 2; ++i) {
    (void)Submit(f, i, 1, 3'600'000);
    WaitRunning(f, i, 1, running_wait);
  }
  for (int done = 0; done < 2 * jobs; done += chunk)
    if (absl::Status st = Submit(f, 0, std::min(chunk, 2 * jobs - done), 3'600'000); !st.ok()) return st;
  return absl::OkStatus();
}

// Jobs per second of one round moving `jobs` of 2 x jobs pending jobs
// between two sites (printed), or 0 when it failed (printed why).
double Throughput(int jobs, bool tmpfs) {
  auto f = TestFederation::Start({.sites = 2, .slots = {1, 1}, .step_timeout = "60s", .tmpfs = tmpfs});
  if (!f.ok()) return 0;
  if (auto st = FillForMove(**f, jobs, 10000, absl::Seconds(10)); !st.ok()) {
    std::printf("  migration throughput: submit failed: %s\n", std::string(st.message()).c_str());
    return 0;
  }
  const double cpu0[] = {CpuSeconds((*f)->Pid(0)), CpuSeconds((*f)->Pid(1))};
  const absl::Time t = absl::Now();
  auto res = RunRound(**f, 0, false, absl::Minutes(10));
  const double s = absl::ToDoubleSeconds(absl::Now() - t);
  if (!res.ok()) {
    std::printf("  migration throughput: round failed: %s\n", std::string(res.status().message()).c_str());
    return 0;
  }
  // The daemons' CPU over the round (clock ticks: 10 ms steps).
  const double cpu[] = {CpuSeconds((*f)->Pid(0)) - cpu0[0], CpuSeconds((*f)->Pid(1)) - cpu0[1]};
  std::printf(
      "  migration between two sites, state on %s: %lld jobs in %.3f s = %.0f jobs/s = %.2f x the goal (%.0f); "
      "CPU %.2f s at the source, %.2f s at the destination\n",
      tmpfs ? "tmpfs " : "disk  ", static_cast<long long>(res->moved()), s, res->moved() / s,
      res->moved() / s / kMigrationGoalJobsPerSecond, kMigrationGoalJobsPerSecond, cpu[0], cpu[1]);
  std::fflush(stdout);
  return res->moved() / s;
}

// Issue 31's goal: a migration at least this fraction of the same run's
// storage limit (bench/storage_limit.h).
constexpr double kStorageLimitGoal = 0.5;

// The storage limit of Throughput(jobs, tmpfs)'s round: its SQLite writes
// replayed on fresh files where the harness puts a site's state (/dev/shm
// or /tmp). Jobs per second (printed; with the time of each call when
// `with_reads`, which times the migrator's reads too), or 0 on failure.
double StorageLimit(int jobs, bool tmpfs, bool with_reads) {
  std::string dir = tmpfs && std::filesystem::is_directory("/dev/shm") ? "/dev/shm/hyperfed-limit-XXXXXX"
                                                                       : "/tmp/hyperfed-limit-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) return 0;
  auto res = hyperfed::bench::ReplayMigrationStorage({.dir = dir, .jobs = jobs, .with_reads = with_reads});
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!res.ok()) {
    std::printf("  storage limit: %s\n", std::string(res.status().message()).c_str());
    return 0;
  }
  std::printf("  storage limit%s, state on %s: %lld jobs in %.3f s = %.0f jobs/s (%lld commits; CPU %.3f s)\n",
              with_reads ? " with the migrator's reads" : "", tmpfs ? "tmpfs " : "disk  ",
              static_cast<long long>(res->jobs), res->seconds, res->jobs / res->seconds,
              static_cast<long long>(res->commits), res->cpu_seconds);
  if (with_reads) {
    for (const auto& [step, s] : res->steps)
      std::printf("    %-52s %7.1f ms = %4.1f %%\n", step.c_str(), 1000 * s, 100 * s / res->seconds);
  }
  std::fflush(stdout);
  return res->jobs / res->seconds;
}

// `runs` pairs, each the storage limit and then the migration, on one
// medium: the machine is shared and its load drifts, so each migration is
// compared with the limit measured just before it, and the medians are
// reported.
void ThroughputAgainstLimit(int jobs, bool tmpfs, int runs) {
  std::vector<double> limits, moves, fractions;
  for (int run = 0; run < runs; ++run) {
    const double limit = StorageLimit(jobs, tmpfs, false);
    const double moved = Throughput(jobs, tmpfs);
    if (limit <= 0 || moved <= 0) continue;
    limits.push_back(limit);
    moves.push_back(moved);
    fractions.push_back(moved / limit);
  }
  if (fractions.empty()) return;
  std::string each;
  for (double f : fractions) absl::StrAppendFormat(&each, " %.2f", f);
  const double median = Percentile(fractions, 0.5);
  std::printf(
      "  state on %s, median of %zu pairs: migration %.0f jobs/s, storage limit %.0f jobs/s, migration / limit %.2f "
      "(each pair:%s; goal >= %.1f: %s)\n",
      tmpfs ? "tmpfs" : "disk", fractions.size(), Percentile(moves, 0.5), Percentile(limits, 0.5), median, each.c_str(),
      kStorageLimitGoal, median >= kStorageLimitGoal ? "met" : "NOT met");
  std::fflush(stdout);
}

void Idle(int sites, int seconds) {
  auto f = TestFederation::Start({.sites = sites, .heartbeat = "1s"});
  if (!f.ok()) return;
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double c0 = CpuSeconds((*f)->Pid(0));
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const double c1 = CpuSeconds((*f)->Pid(0));
  long rss_kb = 0;
  std::istringstream st(ReadFile(absl::StrCat("/proc/", (*f)->Pid(0), "/status")));
  std::string line;
  while (std::getline(st, line))
    if (line.rfind("VmRSS:", 0) == 0) rss_kb = std::stol(line.substr(6));
  std::printf("  idle daemon (one of %d sites, heartbeat 1s): %.2f%% CPU over %d s, %.1f MB resident\n", sites,
              100.0 * (c1 - c0) / seconds, seconds, rss_kb / 1024.0);
}

// Instructions (callgrind's Ir) site i has run since its counters were last
// zeroed: `callgrind_control --dump`, then the dump's "totals:" line; -1
// when that fails.
int64_t DumpedInstructions(TestFederation& f, int i, const std::string& out_file, int dump) {
  if (std::system(absl::StrCat("callgrind_control --dump ", f.Pid(i), " >/dev/null 2>&1").c_str()) != 0) return -1;
  const std::string path = absl::StrCat(out_file, ".", dump);
  for (int tries = 0; tries < 100; ++tries) {
    std::istringstream in(ReadFile(path));
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("totals:", 0) == 0) return std::stoll(line.substr(7));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return -1;
}

bool ZeroInstructions(TestFederation& f, int i) {
  return std::system(absl::StrCat("callgrind_control --zero ", f.Pid(i), " >/dev/null 2>&1").c_str()) == 0;
}

// The CPU one round without migrations costs a site, in instructions
// (callgrind counts them the same on a busy or an idle machine): the
// coordinator (site 0) and a participant (site 5) of an 8-site federation
// run under callgrind; their count over `rounds` rounds, less their count
// over the same time idle (heartbeats, gRPC's own background work), per
// round.
int CpuPerRound(int rounds) {
  const std::vector<int> measured = {0, 5};
  const std::string dir = absl::StrCat("/tmp/hyperfed-bench-callgrind-", getpid());
  std::filesystem::create_directories(dir);
  FederationOptions o{.sites = 8, .step_timeout = "120s", .peer_timeout = "60s", .heartbeat = "2s"};
  o.run_under.resize(8);
  for (int i : measured)
    o.run_under[i] = {"valgrind", "--tool=callgrind", "--quiet",
                      absl::StrCat("--callgrind-out-file=", dir, "/site-", i)};
  auto f = TestFederation::Start(o);
  if (!f.ok()) {
    std::printf("cpu: could not start 8 sites (valgrind installed?): %s\n", std::string(f.status().message()).c_str());
    return 1;
  }
  auto admin = (*f)->Admin(0);  // one operator connection for every round
  for (int r = 0; r < 3; ++r) (void)RunRound(**f, *admin, false, absl::Minutes(5));  // warm-up
  int dump = 0;
  for (int i : measured) ZeroInstructions(**f, i);
  const absl::Time t = absl::Now();
  int ok = 0;
  for (int r = 0; r < rounds; ++r) {
    auto res = RunRound(**f, *admin, false, absl::Minutes(5));
    ok += res.ok() && res->ok();
  }
  const absl::Duration took = absl::Now() - t;
  ++dump;
  std::vector<int64_t> busy;
  for (int i : measured) busy.push_back(DumpedInstructions(**f, i, absl::StrCat(dir, "/site-", i), dump));
  for (int i : measured) ZeroInstructions(**f, i);
  absl::SleepFor(took);
  ++dump;
  std::printf("CPU per round without migrations, 8 sites, %d of %d rounds done, %.1f s under callgrind:\n", ok, rounds,
              absl::ToDoubleSeconds(took));
  for (size_t k = 0; k < measured.size(); ++k) {
    const int i = measured[k];
    const int64_t idle = DumpedInstructions(**f, i, absl::StrCat(dir, "/site-", i), dump);
    if (busy[k] < 0 || idle < 0) {
      std::printf("  site-%d: callgrind_control failed\n", i);
      continue;
    }
    std::printf("  site-%d (%s): %.2f M instructions per round (%.1f M over the rounds, %.1f M idle as long)\n", i,
                i == 0 ? "coordinator" : "participant", (busy[k] - idle) / 1e6 / rounds, busy[k] / 1e6, idle / 1e6);
  }
  if (!getenv("HYPERFED_KEEP_TEST_DIR")) std::filesystem::remove_all(dir);
  return ok == rounds ? 0 : 1;
}

// Where a migration's CPU goes, in instructions (callgrind counts them the
// same on a busy or an idle machine): the --throughput round of `jobs` jobs
// with both sites under callgrind, their counts zeroed after the submits
// and dumped after the round (the files stay in the printed folder, for
// callgrind_annotate). The storage limit's count beside it:
// `valgrind --tool=callgrind --collect-atstart=no
// --toggle-collect='*TimedReplay*'
// build/hyperfed_daemon_bench --storage-limit`.
int ThroughputCpu(int jobs) {
  const std::string dir = absl::StrCat("/tmp/hyperfed-bench-callgrind-", getpid());
  std::filesystem::create_directories(dir);
  FederationOptions o{.sites = 2, .slots = {1, 1}, .step_timeout = "600s", .peer_timeout = "60s", .heartbeat = "2s"};
  o.healthy_timeout = absl::Minutes(5);
  o.run_under.resize(2);
  for (int i : {0, 1})
    o.run_under[i] = {"valgrind", "--tool=callgrind", "--quiet",
                      absl::StrCat("--callgrind-out-file=", dir, "/site-", i)};
  auto f = TestFederation::Start(o);
  if (!f.ok()) {
    std::printf("throughput-cpu: could not start 2 sites (valgrind installed?): %s\n",
                std::string(f.status().message()).c_str());
    return 1;
  }
  // 200 at a time: each Submit call must end within its 60 s under
  // callgrind.
  if (auto st = FillForMove(**f, jobs, 200, absl::Seconds(60)); !st.ok()) {
    std::printf("throughput-cpu: submit failed: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  for (int i : {0, 1}) ZeroInstructions(**f, i);
  const absl::Time t = absl::Now();
  auto res = RunRound(**f, 0, false, absl::Minutes(30));
  const double s = absl::ToDoubleSeconds(absl::Now() - t);
  if (!res.ok() || !res->ok()) {
    std::printf("throughput-cpu: the round failed\n");
    return 1;
  }
  std::printf("migration of %lld jobs between two sites under callgrind (%.1f s), state on tmpfs:\n",
              static_cast<long long>(res->moved()), s);
  for (int i : {0, 1}) {
    const int64_t n = DumpedInstructions(**f, i, absl::StrCat(dir, "/site-", i), 1);
    std::printf("  site-%d (%s): %.1f M instructions = %.0f per job (%s/site-%d.1)\n", i,
                i == 0 ? "source" : "destination", n / 1e6, static_cast<double>(n) / res->moved(), dir.c_str(), i);
  }
  return 0;
}

// Threads, VmSize and VmRSS (kB) of a process.
struct ProcessSize {
  int threads = 0;
  int own_threads = 0;  // named hyperfedd: the daemon's own, not gRPC's pools
  long vm_kb = 0, rss_kb = 0;
};
ProcessSize SizeOf(pid_t pid) {
  ProcessSize out;
  const std::string tasks = absl::StrCat("/proc/", pid, "/task");
  if (DIR* d = opendir(tasks.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.' && ReadFile(absl::StrCat(tasks, "/", e->d_name, "/comm")) == "hyperfedd\n")
        ++out.own_threads;
    closedir(d);
  }
  std::istringstream st(ReadFile(absl::StrCat("/proc/", pid, "/status")));
  std::string line;
  while (std::getline(st, line)) {
    if (line.rfind("Threads:", 0) == 0) out.threads = std::stoi(line.substr(8));
    if (line.rfind("VmSize:", 0) == 0) out.vm_kb = std::stol(line.substr(7));
    if (line.rfind("VmRSS:", 0) == 0) out.rss_kb = std::stol(line.substr(6));
  }
  return out;
}

// Drains or undrains a site (asked at the site itself).
bool SetDrained(TestFederation& f, int site, bool drain) {
  hyperfed::v1::DrainRequest req;
  req.set_site(f.SiteId(site));
  req.set_drain(drain);
  hyperfed::v1::DrainReply reply;
  auto ctx = f.Context();
  return f.Admin(site)->Drain(ctx.get(), req, &reply).ok();
}

int Soak(int rounds) {
  auto f = TestFederation::Start({.sites = 8, .step_timeout = "20s", .peer_timeout = "5s", .heartbeat = "1s"});
  if (!f.ok()) {
    std::printf("soak: could not start 8 sites: %s\n", std::string(f.status().message()).c_str());
    return 1;
  }
  // A fixed set of long jobs (4 running and 16 pending per site) that the
  // rounds move around: each odd round drains one site (its pending jobs
  // leave), the next undrains it (they come back), so every round migrates
  // and the queues never grow.
  for (int i = 0; i < 8; ++i) (void)Submit(**f, i, 20, 3'600'000);
  std::printf("soak: %d rounds on 8 local sites, each moving jobs; the coordinator (site-0):\n", rounds);
  std::printf("  %7s %8s %8s %12s %10s %10s %8s\n", "rounds", "threads", "own", "VmSize MB", "RSS MB", "moved",
              "failed");
  int failed = 0;
  int64_t moved = 0;
  auto print = [&](int done) {
    const ProcessSize s = SizeOf((*f)->Pid(0));
    std::printf("  %7d %8d %8d %12.1f %10.1f %10lld %8d\n", done, s.threads, s.own_threads, s.vm_kb / 1024.0,
                s.rss_kb / 1024.0, static_cast<long long>(moved), failed);
    std::fflush(stdout);
  };
  print(0);
  for (int r = 1; r <= rounds; ++r) {
    const int site = 1 + (r / 2) % 7;  // site 0 coordinates; it is never drained
    (void)SetDrained(**f, site, r % 2 == 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto res = RunRound(**f, 0);
    if (res.ok()) moved += res->moved();
    if (!res.ok() || !res->ok()) {
      if (++failed <= 3)
        std::printf("  round %d failed:\n%s\n", r,
                    res.ok() ? res->message().c_str() : std::string(res.status().message()).c_str());
    }
    if (r % 200 == 0) print(r);
  }
  return failed == 0 ? 0 : 1;
}

// ---- Slurm to Slurm (issue 16) ----

// The goal: a migration at least half as fast as plain sbatch of the same
// scripts at the destination, with the same parallelism.
constexpr double kSlurmGoalRatio = 0.5;

// Job n's batch script: no #SBATCH line, so the script sbatch gets is the
// same whether it comes from a user or from hyperfed (which rewrites most
// of those lines, docs/adapters.md).
std::string BenchScript(int n) {
  return absl::StrCat("#!/bin/sh\n# job ", n, " of the Slurm benchmark\necho \"job ", n,
                      " ran at $SLURM_CLUSTER_NAME\"\nsleep 600\n");
}

// A cluster whose partition is DOWN: every job stays pending, so Slurm does
// the same work for each submission (queue it, no start) whoever submits.
absl::StatusOr<std::unique_ptr<SlurmCluster>> DownCluster(const std::string& name) {
  auto c = SlurmCluster::Start(name);
  if (!c.ok()) return c.status();
  if (auto r = (*c)->Cmd({"scontrol", "update", "PartitionName=debug", "State=DOWN"}); !r.ok()) return r.status();
  return c;
}

// `jobs` jobs move-<n> (n from `first`) submitted with plain sbatch, `parallel`
// at a time, as users would; the seconds it took, or the first failure.
absl::StatusOr<double> PlainSbatch(const SlurmCluster& c, int first, int jobs, int parallel, const std::string& cwd) {
  std::vector<absl::Status> st(jobs);
  const absl::Time t = absl::Now();
  // `parallel` at a time: the executor's parallel - 1 threads and this one.
  hyperfed::Executor pool(parallel - 1);
  hyperfed::ParallelFor(&pool, jobs, [&](size_t i) {
    const int n = first + i;
    st[i] = c.Cmd({"sbatch", "--parsable", absl::StrCat("--job-name=move-", n)}, BenchScript(n), cwd).status();
  });
  const double s = absl::ToDoubleSeconds(absl::Now() - t);
  for (const absl::Status& s1 : st)
    if (!s1.ok()) return s1;
  return s;
}

// Live (pending, held, running) jobs of a cluster, by squeue.
int LiveJobs(const SlurmCluster& c) {
  auto r = c.Cmd({"squeue", "-h", "-o", "%i"});
  if (!r.ok()) return -1;
  return static_cast<int>(std::count(r->out.begin(), r->out.end(), '\n'));
}

// The slurm adapter's options for cluster `c`. With HYPERFED_BENCH_SLURM_BIN_DIR
// set, the Slurm commands are taken from that folder (bin_dir): wrappers
// there can log each command with its start and end, to see where a round's
// time goes (docs/benchmarks.md, "Slurm to Slurm").
std::map<std::string, std::string> BenchSlurmOptions(const SlurmCluster& c, const std::string& work) {
  std::map<std::string, std::string> o = {
      {"slurm_conf", c.conf()},     {"submit_dir", work},
      {"timeout", "60s"},           {"run_as", "account"},
      {"run_as_account", "nobody"}, {"mark_key", absl::StrCat(work, "/keys/", c.name(), ".key")}};
  if (const char* bin = getenv("HYPERFED_BENCH_SLURM_BIN_DIR"); bin != nullptr && *bin != '\0') o["bin_dir"] = bin;
  return o;
}

absl::StatusOr<std::unique_ptr<hyperfed::scheduler::SlurmAdapter>> BenchAdapter(const SlurmCluster& c,
                                                                                const std::string& work) {
  return hyperfed::scheduler::SlurmAdapter::Open({.state_dir = work, .options = BenchSlurmOptions(c, work)});
}

// Times the adapter's calls of one move one by one (AdapterSteps and its
// Grid Engine twin): each prints its rate; true when it handled all `jobs`.
struct StepTimer {
  int jobs;
  double total = 0;  // seconds, every call so far
  template <typename Call>
  bool operator()(const char* what, Call&& call) {
    const absl::Time t = absl::Now();
    const int ok = call();
    const double s = absl::ToDoubleSeconds(absl::Now() - t);
    total += s;
    std::printf("    %-26s %4d jobs in %6.2f s = %6.1f jobs/s\n", what, ok, s, ok / s);
    return ok == jobs;
  }
};

// The adapter calls a move of `jobs` jobs makes, timed one by one, at a
// fresh source holding 2 x jobs and a fresh destination: what the round
// below costs in Slurm's commands, without the daemons.
bool AdapterSteps(int jobs, int parallel, double plain_s, const std::string& work) {
  auto src = DownCluster("src");
  auto dst = src.ok() ? DownCluster("dst") : src.status();
  if (!dst.ok()) return false;
  if (!PlainSbatch(**src, 0, 2 * jobs, parallel, work).ok()) return false;
  auto from = BenchAdapter(**src, work);
  auto to = BenchAdapter(**dst, work);
  if (!from.ok() || !to.ok()) return false;
  StepTimer step{jobs};
  double& total = step.total;
  std::vector<std::string> ids;
  if (!step("ListJobs (source)", [&] {
        auto listed = (*from)->ListJobs();
        for (size_t i = jobs; listed.ok() && i < listed->size(); ++i) ids.push_back((*listed)[i].id);  // the newest
        return static_cast<int>(ids.size());
      })) {
    return false;
  }
  auto count = [](const auto& results) {
    return static_cast<int>(std::count_if(results.begin(), results.end(), [](const auto& r) { return r.ok(); }));
  };
  std::vector<std::pair<hyperfed::scheduler::JobSpec, std::string>> batch;
  const bool done = step("HoldMany (source)", [&] { return count((*from)->HoldMany(ids)); }) &&
                    step("ExportMany (source)",
                         [&] {
                           auto specs = (*from)->ExportMany(ids);
                           for (size_t i = 0; i < specs.size(); ++i)
                             if (specs[i].ok()) batch.push_back({*specs[i], absl::StrCat("bench:", i)});
                           return count(specs);
                         }) &&
                    step("SubmitMany (destination)", [&] { return count((*to)->SubmitMany(batch, false)); }) &&
                    step("CancelMany (source)", [&] { return count((*from)->CancelMany(ids)); });
  if (!done) return false;
  std::printf("    %-26s %4d jobs in %6.2f s = %6.1f jobs/s = %.2f x plain sbatch\n", "all five", jobs, total,
              jobs / total, (jobs / total) / (jobs / plain_s));
  return true;
}

// Plain sbatch of `jobs` scripts at a fresh cluster, `parallel` at a time:
// the seconds it took.
absl::StatusOr<double> PlainRun(int jobs, int parallel, const std::string& work) {
  auto c = DownCluster("plain");
  if (!c.ok()) return c.status();
  return PlainSbatch(**c, 0, jobs, parallel, work);
}

struct Moved {
  int64_t jobs = 0;
  double seconds = 0;
};

// One operator round between two fresh sites on Slurm, 2 x jobs pending at
// slurm-a and none at slurm-b: it moves half. Checks that every job is
// live exactly once afterwards.
absl::StatusOr<Moved> RoundRun(int jobs, int parallel, const std::string& work) {
  auto a = DownCluster("slurm-a");
  if (!a.ok()) return a.status();
  auto b = DownCluster("slurm-b");
  if (!b.ok()) return b.status();
  if (auto s = PlainSbatch(**a, 0, 2 * jobs, parallel, work); !s.ok()) return s.status();
  FederationOptions o{.sites = 2, .step_timeout = "300s", .peer_timeout = "10s", .heartbeat = "1s"};
  o.adapter = "slurm";
  for (const SlurmCluster* c : {a->get(), b->get()}) o.adapter_options.push_back(BenchSlurmOptions(*c, work));
  auto f = TestFederation::Start(o);
  if (!f.ok()) return f.status();
  const absl::Time t = absl::Now();
  auto res = RunRound(**f, 0, false, absl::Minutes(10));
  const double s = absl::ToDoubleSeconds(absl::Now() - t);
  if (!res.ok()) return res.status();
  if (!res->ok()) return absl::InternalError("the round failed: " + res->message());
  const int at_a = LiveJobs(**a), at_b = LiveJobs(**b);
  if (at_a + at_b != 2 * jobs || at_b != res->moved()) {
    return absl::InternalError(absl::StrCat("after the round: ", at_a, " jobs at slurm-a and ", at_b,
                                            " at slurm-b; want ", 2 * jobs, " in all, ", res->moved(), " at slurm-b"));
  }
  return Moved{.jobs = res->moved(), .seconds = s};
}

int SlurmMigration(int jobs, int runs) {
  if (std::string why = SlurmMissing(); !why.empty()) {
    std::printf("slurm: skipped: %s\n", why.c_str());
    return 1;
  }
  const int parallel = static_cast<int>(hyperfed::scheduler::kSlurmParallelCommands);
  std::string work = (std::filesystem::temp_directory_path() / "hyperfed-slurm-bench-XXXXXX").string();
  if (mkdtemp(work.data()) == nullptr) return 1;
  chmod(work.c_str(), 01777);  // moved jobs run as nobody (run_as_account)
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{work};
  std::printf(
      "Slurm to Slurm: %d jobs, %d commands at a time (kSlurmParallelCommands), every partition DOWN (jobs stay "
      "pending), each measurement on fresh single-node clusters\n",
      jobs, parallel);
  // Each run brackets the round with two plain runs and compares with
  // their mean: the machine's load drifts (it is shared), and both sides of
  // the ratio should see the same.
  std::vector<double> ratios;
  for (int run = 1; run <= runs; ++run) {
    auto before = PlainRun(jobs, parallel, work);
    if (!before.ok()) {
      std::printf("  plain sbatch failed: %s\n", std::string(before.status().message()).c_str());
      return 1;
    }
    if (run == 1) {
      std::printf("  the slurm adapter's calls of a move, one by one (plain sbatch just before: %.1f jobs/s):\n",
                  jobs / *before);
      if (!AdapterSteps(jobs, parallel, *before, work)) {
        std::printf("  an adapter call failed\n");
        return 1;
      }
    }
    auto moved = RoundRun(jobs, parallel, work);
    if (!moved.ok()) {
      std::printf("  the migration failed: %s\n", std::string(moved.status().message()).c_str());
      return 1;
    }
    auto after = PlainRun(jobs, parallel, work);
    if (!after.ok()) {
      std::printf("  plain sbatch failed: %s\n", std::string(after.status().message()).c_str());
      return 1;
    }
    const double a = jobs / ((*before + *after) / 2), b = moved->jobs / moved->seconds;
    ratios.push_back(b / a);
    std::printf(
        "  run %d: plain sbatch %d jobs in %.2f s and %.2f s = %.1f jobs/s; migrated slurm-a -> slurm-b in one round "
        "%lld jobs in %.2f s = %.1f jobs/s; ratio %.2f\n",
        run, jobs, *before, *after, a, static_cast<long long>(moved->jobs), moved->seconds, b, b / a);
    std::fflush(stdout);
  }
  const double median = Percentile(ratios, 0.5);
  std::printf("  migration / plain sbatch, median of %d runs = %.2f (goal >= %.1f: %s)\n", runs, median,
              kSlurmGoalRatio, median >= kSlurmGoalRatio ? "met" : "NOT met");
  return 0;
}

// ---- Grid Engine to Grid Engine, Slurm to Grid Engine (issue 32) ----

// Plain qsub's parallelism: the adapter's.
constexpr int kGridEngineParallel = static_cast<int>(hyperfed::scheduler::kGridEngineParallelCommands);

// A Grid Engine cluster whose scheduler thread is stopped: every job stays
// pending, so the qmaster does the same work for each submission.
absl::StatusOr<std::unique_ptr<GridEngineCluster>> StoppedGridEngine(const std::string& name) {
  auto c = GridEngineCluster::Start(name);
  if (!c.ok()) return c.status();
  if (auto r = (*c)->Cmd({"qconf", "-kt", "scheduler"}); !r.ok()) return r.status();
  return c;
}

// `jobs` jobs submitted with plain qsub as user nobody, `parallel` at a time
// (the gridengine adapter's SubmitMany runs kGridEngineParallelCommands
// qsubs at a time), with Debian's qsub program itself (not the /usr/bin
// wrapper, which costs a quarter second more per call); the seconds it took.
absl::StatusOr<double> PlainQsub(const GridEngineCluster& c, int first, int jobs, int parallel,
                                 const std::string& cwd) {
  std::map<std::string, std::string> env = c.Env();
  env["PATH"] = "/usr/bin:/bin";
  std::vector<absl::Status> st(jobs);
  const absl::Time t = absl::Now();
  // `parallel` at a time: the executor's parallel - 1 threads and this one.
  hyperfed::Executor pool(parallel - 1);
  hyperfed::ParallelFor(&pool, jobs, [&](size_t i) {
    const int n = first + static_cast<int>(i);
    hyperfed::scheduler::CommandSpec spec{
        .argv = {"setpriv", "--reuid=65534", "--regid=65534", "--init-groups", "/usr/lib/gridengine/qsub", "-terse",
                 "-cwd", "-N", absl::StrCat("move-", n)},
        .stdin_text = BenchScript(n),
        .env = env,
        .inherit_env = false,
        .cwd = cwd,
        .timeout = absl::Seconds(60)};
    auto r = hyperfed::scheduler::RunCommand(spec);
    st[i] = !r.ok() ? r.status()
                    : (r->exit_code != 0 ? hyperfed::scheduler::CommandFailure(spec.argv, *r) : absl::OkStatus());
  });
  const double s = absl::ToDoubleSeconds(absl::Now() - t);
  for (const absl::Status& s1 : st)
    if (!s1.ok()) return s1;
  return s;
}

int GridEngineLive(const GridEngineCluster& c) {
  auto r = c.Cmd({"qstat", "-u", "*"});
  if (!r.ok()) return -1;
  // Two header lines, then one line per job.
  const int lines = static_cast<int>(std::count(r->out.begin(), r->out.end(), '\n'));
  return lines > 2 ? lines - 2 : 0;
}

// One operator round moving half of 2 x jobs pending at the source (Slurm
// or Grid Engine) to a Grid Engine destination.
absl::StatusOr<Moved> GridEngineRound(bool from_slurm, int jobs, const std::string& work) {
  std::unique_ptr<SlurmCluster> slurm;
  std::unique_ptr<GridEngineCluster> src;
  std::map<std::string, std::string> src_options = {{"submit_dir", work},
                                                    {"timeout", "60s"},
                                                    {"run_as", "account"},
                                                    {"run_as_account", "nobody"},
                                                    {"mark_key", work + "/keys/src.key"}};
  if (from_slurm) {
    auto a = DownCluster("slurm-src");
    if (!a.ok()) return a.status();
    slurm = *std::move(a);
    if (auto s = PlainSbatch(*slurm, 0, 2 * jobs, 8, work); !s.ok()) return s.status();
    src_options["slurm_conf"] = slurm->conf();
  } else {
    auto a = StoppedGridEngine("ge-src");
    if (!a.ok()) return a.status();
    src = *std::move(a);
    if (auto s = PlainQsub(*src, 0, 2 * jobs, kGridEngineParallel, work); !s.ok()) return s.status();
    for (const auto& [k, v] : src->Options()) src_options[k] = v;
  }
  auto dst = StoppedGridEngine("ge-dst");
  if (!dst.ok()) return dst.status();
  std::map<std::string, std::string> dst_options = (*dst)->Options();
  dst_options.insert({{"submit_dir", work},
                      {"timeout", "60s"},
                      {"run_as", "account"},
                      {"run_as_account", "nobody"},
                      {"mark_key", work + "/keys/dst.key"}});
  FederationOptions o{.sites = 2, .step_timeout = "300s", .peer_timeout = "10s", .heartbeat = "1s"};
  o.site_adapters = {from_slurm ? "slurm" : "gridengine", "gridengine"};
  o.adapter_options = {src_options, dst_options};
  auto f = TestFederation::Start(o);
  if (!f.ok()) return f.status();
  const absl::Time t = absl::Now();
  auto res = RunRound(**f, 0, false, absl::Minutes(10));
  const double s = absl::ToDoubleSeconds(absl::Now() - t);
  if (!res.ok()) return res.status();
  if (!res->ok()) return absl::InternalError("the round failed: " + res->message());
  const int at_a = from_slurm ? LiveJobs(*slurm) : GridEngineLive(*src), at_b = GridEngineLive(**dst);
  if (at_a + at_b != 2 * jobs || at_b != res->moved()) {
    return absl::InternalError(absl::StrCat("after the round: ", at_a, " jobs at the source and ", at_b,
                                            " at ge-dst; want ", 2 * jobs, " in all, ", res->moved(), " at ge-dst"));
  }
  return Moved{.jobs = res->moved(), .seconds = s};
}

// The gridengine adapter's calls of a Grid Engine to Grid Engine move of
// `jobs` jobs, timed one by one without the daemons: a source holding
// 2 x jobs (plain qsub), an empty destination, each a fresh stopped cluster.
// Prints each call; false when one fails.
bool GridEngineAdapterSteps(int jobs, double plain_s, const std::string& work) {
  auto src = StoppedGridEngine("ge-steps-src");
  if (!src.ok()) return false;
  auto dst = StoppedGridEngine("ge-steps-dst");
  if (!dst.ok()) return false;
  if (!PlainQsub(**src, 0, 2 * jobs, kGridEngineParallel, work).ok()) return false;
  auto open = [&](const GridEngineCluster& c, const std::string& name) {
    std::map<std::string, std::string> options = c.Options();
    options.insert({{"submit_dir", work},
                    {"timeout", "60s"},
                    {"run_as", "account"},
                    {"run_as_account", "nobody"},
                    {"mark_key", work + "/keys/steps.key"}});
    return hyperfed::scheduler::GridEngineAdapter::Open({.state_dir = work + "/" + name, .options = options});
  };
  auto from = open(**src, "steps-src");
  auto to = open(**dst, "steps-dst");
  if (!from.ok() || !to.ok()) return false;
  StepTimer step{jobs};
  double& total = step.total;
  auto count = [](const auto& results) {
    return static_cast<int>(std::count_if(results.begin(), results.end(), [](const auto& r) { return r.ok(); }));
  };
  std::vector<std::string> ids;
  std::vector<std::pair<hyperfed::scheduler::JobSpec, std::string>> batch;
  double submit_s = 0;
  const bool done = step("ListJobs (source)",
                         [&] {
                           auto listed = (*from)->ListJobs();
                           for (size_t i = jobs; listed.ok() && i < listed->size(); ++i) ids.push_back((*listed)[i].id);
                           return static_cast<int>(ids.size());
                         }) &&
                    step("HoldMany (source)", [&] { return count((*from)->HoldMany(ids)); }) &&
                    step("ExportMany (source)",
                         [&] {
                           auto specs = (*from)->ExportMany(ids);
                           for (size_t i = 0; i < specs.size(); ++i)
                             if (specs[i].ok()) batch.push_back({*specs[i], absl::StrCat("bench:", i)});
                           return count(specs);
                         }) &&
                    step("SubmitMany (destination)",
                         [&] {
                           const absl::Time t = absl::Now();
                           const int n = count((*to)->SubmitMany(batch, /*held=*/true));
                           submit_s = absl::ToDoubleSeconds(absl::Now() - t);
                           return n;
                         }) &&
                    step("CancelMany (source)", [&] { return count((*from)->CancelMany(ids)); });
  if (!done) return false;
  std::printf("    %-26s %4d jobs in %6.2f s = %6.1f jobs/s = %.2f x plain qsub (SubmitMany alone %.2f x)\n",
              "all five", jobs, total, jobs / total, plain_s / total, plain_s / submit_s);
  return true;
}

int GridEngineMigration(int jobs, int runs) {
  if (std::string why = GridEngineMissing(); !why.empty()) {
    std::printf("gridengine: skipped: %s\n", why.c_str());
    return 1;
  }
  std::string work = (std::filesystem::temp_directory_path() / "hyperfed-ge-bench-XXXXXX").string();
  if (mkdtemp(work.data()) == nullptr) return 1;
  chmod(work.c_str(), 01777);
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{work};
  std::printf(
      "Grid Engine destination: %d jobs, %d qsubs at a time (kGridEngineParallelCommands, as the gridengine adapter "
      "submits), every scheduler stopped (jobs stay pending), fresh single-node clusters per measurement\n",
      jobs, kGridEngineParallel);
  auto fresh_plain = [&]() -> absl::StatusOr<double> {
    auto c = StoppedGridEngine("ge-plain");
    if (!c.ok()) return c.status();
    return PlainQsub(**c, 0, jobs, kGridEngineParallel, work);
  };
  // The adapter's calls of a move one by one, against plain qsub just
  // before them.
  auto plain = fresh_plain();
  if (!plain.ok()) {
    std::printf("  plain qsub failed: %s\n", std::string(plain.status().message()).c_str());
    return 1;
  }
  std::printf("  the gridengine adapter's calls of a move, one by one (plain qsub just before: %.1f jobs/s):\n",
              jobs / *plain);
  if (!GridEngineAdapterSteps(jobs, *plain, work)) {
    std::printf("  an adapter call failed\n");
    return 1;
  }
  for (const bool from_slurm : {false, true}) {
    const char* what = from_slurm ? "Slurm to Grid Engine" : "Grid Engine to Grid Engine";
    if (from_slurm && !SlurmMissing().empty()) {
      std::printf("  %s: skipped: %s\n", what, SlurmMissing().c_str());
      continue;
    }
    std::vector<double> ratios;
    for (int run = 1; run <= runs; ++run) {
      // Plain just before the round: the machine is shared and its load
      // drifts, and both sides of the ratio should see the same.
      auto plain = fresh_plain();
      auto moved = plain.ok() ? GridEngineRound(from_slurm, jobs, work) : plain.status();
      if (!moved.ok()) {
        std::printf("  %s failed: %s\n", what, std::string(moved.status().message()).c_str());
        return 1;
      }
      const double a = jobs / *plain, b = moved->jobs / moved->seconds;
      ratios.push_back(b / a);
      std::printf(
          "  %s, run %d: plain qsub %d jobs in %.2f s = %.1f jobs/s; migrated in one round %lld jobs in %.2f s = "
          "%.1f jobs/s; ratio %.2f\n",
          what, run, jobs, *plain, a, static_cast<long long>(moved->jobs), moved->seconds, b, b / a);
      std::fflush(stdout);
    }
    std::printf("  %s: migration / plain qsub, median of %d runs = %.2f\n", what, runs, Percentile(ratios, 0.5));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool quick = mode == "--quick";
  if (mode == "--soak") return Soak(argc > 2 ? std::atoi(argv[2]) : 2000);
  if (mode == "--cpu") return CpuPerRound(argc > 2 ? std::atoi(argv[2]) : 20);
  if (mode == "--throughput-cpu") return ThroughputCpu(argc > 2 ? std::atoi(argv[2]) : 10000);
  if (mode == "--storage-limit") {  // [JOBS [writes]]: the limit alone, on tmpfs, with the reads unless "writes"
    const bool reads = !(argc > 3 && std::string(argv[3]) == "writes");
    return StorageLimit(argc > 2 ? std::atoi(argv[2]) : 10000, true, reads) > 0 ? 0 : 1;
  }
  if (mode == "--rounds") {  // round latency only, at SITES (8) sites
    const double floor_ms = RpcFloor();
    const int sites = argc > 2 ? std::atoi(argv[2]) : 8;
    Rounds(sites, 300, false, floor_ms);
    Rounds(sites, 40, true, floor_ms);
    return 0;
  }
  if (mode == "--gridengine") {
    return GridEngineMigration(argc > 2 ? std::atoi(argv[2]) : 100, argc > 3 ? std::atoi(argv[3]) : 3);
  }
  if (mode == "--slurm") return SlurmMigration(argc > 2 ? std::atoi(argv[2]) : 500, argc > 3 ? std::atoi(argv[3]) : 3);
  if (mode == "--throughput") {  // [RUNS]: pairs of storage limit and migration per medium (3)
    const int runs = argc > 2 ? std::atoi(argv[2]) : 3;
    std::printf(
        "migration of 10,000 of 20,000 jobs between two sim sites against the storage limit (the same SQLite "
        "writes, in the same transactions, without RPC: bench/storage_limit.h), %d pairs per medium\n",
        runs);
    ThroughputAgainstLimit(10000, true, runs);
    ThroughputAgainstLimit(10000, false, runs);
    // Where the limit's time goes, with the migrator's reads beside it.
    StorageLimit(10000, false, true);
    return 0;
  }
  std::printf("hyperfedd benchmarks (%s)\n", quick ? "quick" : "full");
  const double floor_ms = RpcFloor(quick ? 300 : 2000);
  const int rounds = quick ? 10 : 40;
  for (int sites : {8, 16, 32}) {
    Rounds(sites, rounds, false, floor_ms);
    Rounds(sites, rounds, true, floor_ms);
  }
  Throughput(quick ? 2000 : 10000, true);
  Throughput(quick ? 2000 : 10000, false);
  Idle(8, quick ? 5 : 20);
  return 0;
}
