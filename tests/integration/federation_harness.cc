#include "tests/integration/federation_harness.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace hyperfed::testing {
namespace {

// `n` distinct free loopback ports: every socket stays bound until all are
// chosen, so the kernel cannot hand the same port out twice.
std::vector<int> FreePorts(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    fds.push_back(fd);
    ports.push_back(ntohs(a.sin_port));
  }
  for (int fd : fds) close(fd);
  return ports;
}

// Site i's `scheduler:` line.
std::string SchedulerLine(const FederationOptions& o, int i, int slots) {
  const std::string& adapter =
      i < static_cast<int>(o.site_adapters.size()) && !o.site_adapters[i].empty() ? o.site_adapters[i] : o.adapter;
  if (adapter == "sim")
    return absl::StrCat("scheduler: {adapter: sim, options: {slots: \"", slots, "\", time_scale: \"", o.time_scale,
                        "\"}}\n");
  std::string opts;
  if (i < static_cast<int>(o.adapter_options.size())) {
    for (const auto& [k, v] : o.adapter_options[i])
      absl::StrAppend(&opts, opts.empty() ? "" : ", ", k, ": \"", absl::CEscape(v), "\"");
  }
  return absl::StrCat("scheduler: {adapter: ", adapter, ", options: {", opts, "}}\n");
}

}  // namespace

std::string ReadFile(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// HYPERFED_HYPERFEDD names another daemon binary (the benchmark compares two
// builds with one harness, run alternately: docs/benchmarks.md).
std::string HyperfeddPath() {
  const char* other = std::getenv("HYPERFED_HYPERFEDD");
  return other && *other ? other : HYPERFEDD_PATH;
}
std::string HyperfedctlPath() { return HYPERFEDCTL_PATH; }
std::string SourceDir() { return HYPERFED_SOURCE_DIR; }

absl::StatusOr<std::unique_ptr<TestFederation>> TestFederation::Start(const FederationOptions& o) {
  std::unique_ptr<TestFederation> f(new TestFederation);
  f->opts_ = o;
  // tmpfs when there is one: SQLite's fsyncs cost nothing there, and a
  // kill -9 (what the crash tests do) loses nothing either way.
  std::string tmpl = o.tmpfs && std::filesystem::is_directory("/dev/shm") ? "/dev/shm/hyperfed-fed-XXXXXX"
                                                                          : "/tmp/hyperfed-fed-XXXXXX";
  if (!mkdtemp(tmpl.data())) return absl::InternalError("mkdtemp failed");
  f->dir_ = tmpl;
  const int all = o.sites + o.joining;
  std::string ids;
  for (int i = 0; i < all; ++i) absl::StrAppend(&ids, " site-", i);
  const std::string gen = absl::StrCat("bash ", SourceDir(), "/scripts/gen-certs ", f->dir_, "/certs", ids,
                                       " >/dev/null 2>", f->dir_, "/gen-certs.log");
  if (std::system(gen.c_str()) != 0)
    return absl::InternalError("scripts/gen-certs failed: " + ReadFile(f->dir_ + "/gen-certs.log"));
  f->token_ = std::string(absl::StripAsciiWhitespace(ReadFile(f->dir_ + "/certs/admin-token")));
  f->sites_.resize(all);
  // gRPC and metrics ports for every site, all distinct.
  const std::vector<int> ports = FreePorts(2 * all);
  for (int i = 0; i < all; ++i) {
    f->sites_[i].port = ports[i];
    f->sites_[i].metrics_port = ports[all + i];
  }
  std::string roster;
  for (int i = 0; i < o.sites; ++i)
    absl::StrAppend(&roster, "  - {id: site-", i, ", label: ", i, ", endpoint: \"", f->Endpoint(i), "\"}\n");
  for (int i = 0; i < all; ++i) {
    const int slots = i < static_cast<int>(o.slots.size()) ? o.slots[i] : 4;
    std::ofstream c(f->ConfigPath(i));
    c << "site: {id: site-" << i << (i < o.sites ? absl::StrCat(", label: ", i) : "") << ", listen: \""
      << f->Endpoint(i) << "\", metrics_listen: \"" << f->Host(i) << ":" << f->sites_[i].metrics_port << "\"}\n"
      << (i < o.sites ? "roster:\n" + roster
                      : absl::StrCat("seeds: [{id: site-0, endpoint: \"", f->Endpoint(0), "\"}]\n"))
      << "capacity: from_adapter\n"
      << "balancer: {algorithm: " << o.algorithm << ", interval: " << o.interval
      << ", underload_threshold: " << o.underload_threshold
      << (o.min_imbalance >= 0 ? absl::StrCat(", min_imbalance: ", o.min_imbalance) : "")
      << ", heartbeat_interval: " << o.heartbeat
      << ", peer_timeout: " << o.peer_timeout << ", step_timeout: " << o.step_timeout << ", max_batch: " << o.max_batch
      << ", job_choice: " << o.job_choice << ", hysteresis: " << o.hysteresis
      << ", placement: " << (o.placement ? "true" : "false") << ", placement_margin: " << o.placement_margin << "}\n"
      << SchedulerLine(o, i, slots) << "state_dir: state/site-" << i << "\n";
    if (o.insecure) {
      c << "security: {insecure: true, admin_token_file: certs/admin-token, roster_key: certs/roster-pub.pem}\n";
    } else {
      c << "security: {cert: certs/site-" << i << ".pem, key: certs/site-" << i
        << "-key.pem, ca: certs/ca.pem, admin_token_file: certs/admin-token, roster_key: certs/roster-pub.pem}\n";
    }
  }
  for (int i = 0; i < o.sites; ++i)
    if (auto st = f->StartSite(i); !st.ok()) return st;
  if (auto st = f->WaitHealthy(o.healthy_timeout); !st.ok()) return st;
  return f;
}

TestFederation::~TestFederation() {
  for (int i = 0; i < size(); ++i) Stop(i);
  if (std::getenv("HYPERFED_KEEP_TEST_DIR") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

pid_t TestFederation::Pid(int i) const { return sites_[i].pid; }

std::string TestFederation::Host(int i) const {
  const auto& h = opts_.hosts;
  return i < static_cast<int>(h.size()) && !h[i].empty() ? h[i] : "127.0.0.1";
}

std::string TestFederation::MetricsUrl(int i) const {
  return absl::StrCat("http://", Host(i), ":", sites_[i].metrics_port, "/metrics");
}

std::string TestFederation::Endpoint(int i) const { return absl::StrCat(Host(i), ":", sites_[i].port); }
std::string TestFederation::ConfigPath(int i) const { return absl::StrCat(dir_, "/site-", i, ".yaml"); }

absl::Status TestFederation::StartSite(int i, const std::map<std::string, std::string>& env) {
  if (Running(i)) return absl::FailedPreconditionError("already running");
  const std::string log = absl::StrCat(dir_, "/site-", i, ".log");
  const std::string bin = HyperfeddPath(), cfg = ConfigPath(i);
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    FILE* out = freopen(log.c_str(), "a", stderr);
    (void)out;
    dup2(fileno(stderr), fileno(stdout));
    unsetenv("HYPERFED_CRASH_AT");
    unsetenv("HYPERFED_CRASH_SIGNAL");
    unsetenv("HYPERFED_PARTITION_FILE");
    if (opts_.partition_hook) setenv("HYPERFED_PARTITION_FILE", absl::StrCat(dir_, "/partition-", i).c_str(), 1);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    // `ip netns exec` enters the namespace and execs the daemon in the same
    // process, so the PID we hold is the daemon's.
    const std::string ns = i < static_cast<int>(opts_.netns.size()) ? opts_.netns[i] : "";
    std::vector<std::string> argv;
    if (!ns.empty()) argv = {"ip", "netns", "exec", ns};
    if (i < static_cast<int>(opts_.run_under.size()))
      argv.insert(argv.end(), opts_.run_under[i].begin(), opts_.run_under[i].end());
    argv.insert(argv.end(), {bin, "--config", cfg});
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  sites_[i].pid = pid;
  return absl::OkStatus();
}

void TestFederation::Cut(int i, const std::vector<int>& from) {
  const std::string path = absl::StrCat(dir_, "/partition-", i);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    for (int j : from) out << SiteId(j) << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());  // atomically: the daemon never reads half a file
}

void TestFederation::Heal(int i) { std::remove(absl::StrCat(dir_, "/partition-", i).c_str()); }

bool TestFederation::Running(int i) {
  if (sites_[i].pid <= 0) return false;
  int st;
  if (waitpid(sites_[i].pid, &st, WNOHANG) == sites_[i].pid) {
    sites_[i].pid = -1;
    return false;
  }
  return true;
}

bool TestFederation::WaitExit(int i, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    if (!Running(i)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void TestFederation::Kill(int i) {
  if (sites_[i].pid <= 0) return;
  kill(sites_[i].pid, SIGKILL);
  waitpid(sites_[i].pid, nullptr, 0);
  sites_[i].pid = -1;
}

void TestFederation::Stop(int i) {
  if (!Running(i)) return;
  kill(sites_[i].pid, SIGTERM);
  if (!WaitExit(i, absl::Seconds(5))) Kill(i);
}

std::unique_ptr<v1::Admin::Stub> TestFederation::Admin(int i) const { return v1::Admin::NewStub(Channel(i)); }

std::shared_ptr<grpc::Channel> TestFederation::Channel(int i) const {
  std::shared_ptr<grpc::ChannelCredentials> creds;
  grpc::ChannelArguments args;
  // Daemons start while the test already dials them: retry connects quickly.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  if (opts_.insecure) {
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = ReadFile(CertDir() + "/ca.pem");
    o.pem_cert_chain = ReadFile(CertDir() + "/admin.pem");
    o.pem_private_key = ReadFile(CertDir() + "/admin-key.pem");
    creds = grpc::SslCredentials(o);
    args.SetSslTargetNameOverride(SiteId(i));
  }
  return grpc::CreateCustomChannel(Endpoint(i), creds, args);
}

std::unique_ptr<grpc::ClientContext> TestFederation::Context(absl::Duration timeout) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  ctx->AddMetadata("authorization", "Bearer " + token_);
  return ctx;
}

absl::Status TestFederation::WaitHealthy(absl::Duration timeout, int expected_up) {
  const absl::Time end = absl::Now() + timeout;
  std::string last;
  for (int i = 0; i < size(); ++i) {
    if (!Running(i)) continue;
    int want = expected_up;
    if (want < 0) {
      want = 0;
      for (int j = 0; j < size(); ++j)
        if (j != i && sites_[j].pid > 0) ++want;
    }
    bool ok = false;
    while (absl::Now() < end) {
      // A new channel each time: a channel that failed to connect backs off
      // for seconds before it tries again.
      auto stub = Admin(i);
      v1::StatusReply r;
      auto ctx = Context(absl::Seconds(2));
      grpc::Status st = stub->Status(ctx.get(), v1::StatusRequest(), &r);
      if (st.ok()) {
        int up = 0;
        for (const auto& s : r.sites()) up += s.state() == "up" || s.state() == "drained";
        if (up == want) {
          ok = true;
          break;
        }
        last = absl::StrCat("site-", i, " sees ", up, " of ", want, " peers up");
      } else {
        last = absl::StrCat("site-", i, ": ", st.error_message());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!ok) return absl::DeadlineExceededError(absl::StrCat("federation not healthy: ", last, "\n", Log(i)));
  }
  return absl::OkStatus();
}

std::string TestFederation::Log(int i) const {
  std::string all = ReadFile(absl::StrCat(dir_, "/site-", i, ".log"));
  return all.size() > 4000 ? all.substr(all.size() - 4000) : all;
}

}  // namespace hyperfed::testing
