#include "daemon/server/daemon.h"

#include <fcntl.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <grpcpp/resource_quota.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "config/settings.h"
#include "daemon/common/log.h"
#include "daemon/server/protocol.h"
#include "daemon/server/web.h"

namespace hyperfed::server {
namespace {

// state_dir holds the journal and the sim adapter's queue: this daemon's
// account only (docs/operations.md, "Secure"). What PrepareStateDir would
// refuse, found without changing anything (`hyperfedd --check`): a path that
// others may change, one that is no folder or cannot be made, a folder that
// group or others may write (its files may have been changed by someone
// else).
absl::Status CheckStateDir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Its owner and the folders above it: no one else may swap its journal.
  if (std::string why = config::CheckTrustedPath(dir); !why.empty())
    return absl::FailedPreconditionError(absl::StrCat("state_dir ", dir, ": ", why));
  if (!fs::exists(dir, ec)) {
    // Made at start: the nearest folder above it that exists must take it.
    fs::path up = fs::absolute(dir, ec).parent_path();
    while (!up.empty() && !fs::exists(up, ec) && up != up.parent_path()) up = up.parent_path();
    if (!fs::is_directory(up, ec))
      return absl::FailedPreconditionError(
          absl::StrCat("state_dir ", dir, ": cannot be made: ", up.string(), " is no folder"));
    if (access(up.c_str(), W_OK | X_OK) != 0)
      return absl::FailedPreconditionError(
          absl::StrCat("state_dir ", dir, ": cannot be made in ", up.string(), ": ", strerror(errno)));
    return absl::OkStatus();
  }
  if (!fs::is_directory(dir, ec))
    return absl::FailedPreconditionError(absl::StrCat("state_dir ", dir, " is no folder"));
  const fs::perms p = fs::status(dir, ec).permissions();
  if (ec) return absl::FailedPreconditionError(absl::StrCat("state_dir ", dir, ": ", ec.message()));
  if ((p & (fs::perms::group_write | fs::perms::others_write)) != fs::perms::none)
    return absl::FailedPreconditionError(
        absl::StrFormat("state_dir %s has mode %04o: group or others may write it, so its journal cannot be "
                        "trusted; check its files, then chmod 700 it",
                        dir, static_cast<unsigned>(p & fs::perms::mask)));
  if (access(dir.c_str(), R_OK | W_OK | X_OK) != 0)
    return absl::FailedPreconditionError(absl::StrCat("state_dir ", dir, ": ", strerror(errno)));
  return absl::OkStatus();
}

// CheckStateDir, then makes state_dir 0700 (a new one, or one that others
// could read).
absl::Status PrepareStateDir(const std::string& dir) {
  namespace fs = std::filesystem;
  if (auto st = CheckStateDir(dir); !st.ok()) return st;
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) return absl::FailedPreconditionError(absl::StrCat("state_dir ", dir, ": ", ec.message()));
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
    if (ec) return absl::FailedPreconditionError(absl::StrCat("state_dir ", dir, ": chmod 700: ", ec.message()));
    return absl::OkStatus();
  }
  const fs::perms p = fs::status(dir, ec).permissions();
  if (ec) return absl::FailedPreconditionError(absl::StrCat("state_dir ", dir, ": ", ec.message()));
  if ((p & (fs::perms::group_all | fs::perms::others_all)) != fs::perms::none) {
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
    if (ec) return absl::FailedPreconditionError(absl::StrCat("state_dir ", dir, ": chmod 700: ", ec.message()));
    LogWarning(
        absl::StrFormat("state_dir %s had mode %04o: made it 0700", dir, static_cast<unsigned>(p & fs::perms::mask)));
  }
  return absl::OkStatus();
}

// One daemon per state_dir (leveldb's LOCK): an advisory lock on
// <state_dir>/LOCK, held while the process lives, which the kernel drops when
// it ends however it ends. The file names the holder's PID for the next one
// refused. Returns the open descriptor (close-on-exec: no command the adapter
// runs keeps the lock after the daemon).
absl::StatusOr<int> LockStateDir(const std::string& dir) {
  const std::string path = dir + "/LOCK";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return absl::FailedPreconditionError(absl::StrCat("state_dir ", dir, ": open LOCK: ", strerror(errno)));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    if (err != EWOULDBLOCK)
      return absl::FailedPreconditionError(absl::StrCat("state_dir ", dir, ": lock LOCK: ", strerror(err)));
    const std::string pid(absl::StripAsciiWhitespace(std::string(buf, n > 0 ? n : 0)));
    return absl::FailedPreconditionError(absl::StrCat("state_dir ", dir, " is in use by another hyperfedd (PID ",
                                                      pid.empty() ? "unknown" : pid,
                                                      "): one daemon per state_dir; stop that one first"));
  }
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int err = errno;
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat("state_dir ", dir, ": write LOCK: ", strerror(err)));
  }
  return fd;
}

// A reload's refusal: "FILE[:LINE]: KEY: why" as at start, saying that
// nothing changed.
absl::Status NotReloaded(const std::string& path, const absl::Status& st) {
  const std::string m(st.message());
  const size_t at = absl::StartsWith(m, path) ? m.find(": ", path.size()) : std::string::npos;
  return absl::Status(st.code(),
                      at == std::string::npos
                          ? absl::StrCat(path, ": not reloaded, nothing changed: ", m)
                          : absl::StrCat(m.substr(0, at), ": not reloaded, nothing changed: ", m.substr(at + 2)));
}

// Linking gRPC's reflection library registers its plugin with every
// ServerBuilder (a static initializer); this option takes it out again.
class NoReflection : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [](const auto& p) {
                                    return dynamic_cast<grpc::reflection::ProtoServerReflectionPlugin*>(p.get()) !=
                                           nullptr;
                                  }),
                   plugins->end());
  }
};

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  if (path.empty()) return std::string();
  auto text = ReadWholeFile(path, "admin token file");
  if (!text.ok()) return text.status();
  std::string t(absl::StripAsciiWhitespace(*text));
  if (t.empty()) return absl::FailedPreconditionError(absl::StrCat("admin token file ", path, " is empty"));
  return t;
}

}  // namespace

absl::Status CheckRuntime(const config::Config& c) {
  if (auto st = CheckStateDir(c.state_dir); !st.ok()) return st;
  if (auto tls = ReadTlsFiles(c.security); !tls.ok()) return tls.status();
  if (auto t = ReadToken(c.security.admin_token_file); !t.ok()) return t.status();
  federation::LiveConfig live(c);
  if (auto k = RosterKeeper::Open(c, &live); !k.ok()) return k.status();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Create(const config::Config& config,
                                                       const scheduler::AdapterRegistry* adapters) {
  std::unique_ptr<Daemon> d(new Daemon);
  d->config_ = config;
  d->adapters_ = adapters;
  ConfigureLog(config.site.id, config.log);
  if (auto st = PrepareStateDir(config.state_dir); !st.ok()) return st;
  auto lock = LockStateDir(config.state_dir);
  if (!lock.ok()) return lock.status();
  d->lock_fd_ = *lock;
  d->live_ = std::make_unique<federation::LiveConfig>(config);
  auto keeper = RosterKeeper::Open(config, d->live_.get());
  if (!keeper.ok()) return keeper.status();
  d->roster_ = *std::move(keeper);
  auto tls = ReadTlsFiles(config.security);
  if (!tls.ok()) return tls.status();
  d->peers_ = std::make_unique<GrpcPeers>(config, d->live_.get(), *tls);
  d->peers_->SetRosterKeeper(d->roster_.get());
  auto stack = OpenSiteStack(config, *adapters, d->live_.get(), d->peers_.get(), d->peers_.get(), RealEnv::Get());
  if (!stack.ok()) return stack.status();
  d->adapter_ = std::move(stack->adapter);
  d->journal_ = std::move(stack->journal);
  d->migrator_ = std::move(stack->migrator);
  d->mover_ = std::move(stack->mover);
  d->site_ = std::move(stack->site);
  auto token = ReadToken(config.security.admin_token_file);
  if (!token.ok()) return token.status();
  d->peer_calls_ = std::make_unique<PeerCallLimiter>(config.security.max_calls_per_peer);
  ServiceDeps deps{&d->config_,       d->live_.get(),  d->roster_.get(), d->site_.get(),       d->migrator_.get(),
                   d->adapter_.get(), d->peers_.get(), *token,           d->peer_calls_.get(), RealEnv::Get()};
  d->peer_service_ = std::make_unique<PeerService>(deps);
  d->admin_service_ = std::make_unique<AdminService>(deps);
  return d;
}

absl::StatusOr<int> Daemon::Start() {
  // A restart first finishes what the journal left half done.
  if (auto st = migrator_->Recover(); !st.ok())
    LogError(absl::StrCat("recovery incomplete (retried in the background): ", st.message()));
  grpc::EnableDefaultHealthCheckService(false);  // ours is HealthService
  // Reflection lists every service and message to whoever asks, before any
  // credential is checked: off unless configured.
  if (config_.security.reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (config_.security.insecure) {
    LogWarning(
        "insecure: true: peers and operators talk in plain text and are not authenticated; for local demos "
        "only (listening on loopback only)");
    creds = grpc::InsecureServerCredentials();
  } else {
    auto tls = ReadTlsFiles(config_.security);
    if (!tls.ok()) return tls.status();
    grpc::SslServerCredentialsOptions o(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
    o.pem_root_certs = tls->ca;
    o.pem_key_cert_pairs.push_back({tls->key, tls->cert});
    creds = grpc::SslServerCredentials(o);
  }
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort(config_.site.listen, creds, &port);
  // Bounds on what any caller, authenticated or not, can make the server
  // hold (docs/operations.md, "Secure"): a message is parsed before its
  // handler checks who sent it, so the limit is small (kMaxMessageBytes;
  // a Transfer must fit in it, GrpcPeers::Transfer checks before sending);
  // handler threads are bounded (beyond: RESOURCE_EXHAUSTED), and so is
  // the memory gRPC's transports may take.
  b.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes));
  grpc::ResourceQuota quota(absl::StrCat("hyperfedd-", config_.site.id));
  quota.SetMaxThreads(config_.security.max_threads);
  quota.Resize(kServerMemoryBytes);
  b.SetResourceQuota(quota);
  // Flow-control windows grow only as far as the quota's memory pressure
  // lets them (no bandwidth-delay probing to open them wider).
  b.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  // gRPC sets SO_REUSEPORT by default: a second process could then bind the
  // same port and the kernel would split connections between the two. Off:
  // a port in use is an error.
  b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Peers PING every kPeerKeepaliveMs, also with no call open (GrpcPeers):
  // allowed, where gRPC's defaults would answer a PING more often than
  // every 5 minutes (2 hours with no call open) with GOAWAY. Twice as often
  // is still refused.
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, kPeerKeepaliveMs / 2);
  if (!config_.security.reflection) b.SetOption(std::make_unique<NoReflection>());
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<PeerCallInterceptorFactory>(peer_calls_.get()));
  b.experimental().SetInterceptorCreators(std::move(interceptors));
  b.RegisterService(peer_service_.get());
  b.RegisterService(admin_service_.get());
  b.RegisterService(&health_service_);
  server_ = b.BuildAndStart();
  if (!server_ || port == 0) {
    server_.reset();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config_.site.listen, " (in use?)"));
  }
  if (!config_.site.metrics_listen.empty()) {
    const WebView web(server_->InProcessChannel(grpc::ChannelArguments()), config_.site.web,
                      absl::StrSplit(config_.site.web_hosts, ',', absl::SkipWhitespace()));
    auto m = MetricsServer::Start(
        config_.site.metrics_listen, [this] { return RenderMetrics(); }, absl::Seconds(2),
        [&web](httplib::Server* h) { web.Register(h); });
    if (!m.ok()) {
      // Nothing else runs yet: the daemon stops as if never started.
      server_->Shutdown();
      server_.reset();
      return m.status();
    }
    metrics_ = *std::move(m);
    LogInfo(absl::StrCat("metrics on http://",
                         config_.site.metrics_listen.substr(0, config_.site.metrics_listen.rfind(':')), ":",
                         metrics_->port(), "/metrics"));
  }
  site_->Start();
  const std::shared_ptr<const config::Roster> roster = live_->roster();
  const config::RosterEntry* self = roster->FindSite(config_.site.id);
  LogInfo(absl::StrCat("serving on port ", port, " (",
                       self ? absl::StrCat("label ", self->label) : std::string("not in the roster yet"),
                       ", roster version ", roster->version, ": ", roster->sites.size(), " sites in a ",
                       roster->Dimension(), "-cube, adapter ", config_.scheduler.adapter, ", mode ",
                       std::string(config_.balancer.algorithm->name()), ", protocol ", ProtocolVersion(), ")"));
  if (!config_.seeds.empty()) join_ = RealEnv::Get()->StartThread([this] { JoinLoop(); });
  return port;
}

void Daemon::JoinLoop() {
  bool said = false;
  std::unique_lock<std::mutex> l(stop_mu_);
  while (!stopping_) {
    if (live_->SelfEntry()) {
      said = false;
    } else {
      l.unlock();
      std::vector<std::string> why;
      for (const config::Seed& seed : config_.seeds) {
        auto took = peers_->FetchRoster(seed);
        if (!took.ok()) why.push_back(absl::StrCat(seed.id, ": ", took.status().message()));
        if (live_->SelfEntry()) break;
      }
      if (!live_->SelfEntry() && !std::exchange(said, true))
        LogWarning(absl::StrCat("joining: no seed has a roster that lists ", config_.site.id, " yet (",
                                why.empty() ? std::string("theirs do not") : absl::StrJoin(why, "; "),
                                "); an operator adds it with `hyperfedctl roster add ", config_.site.id, " --endpoint ",
                                config_.site.advertise, "`; asking again every heartbeat interval"));
      l.lock();
    }
    RealEnv::Get()->WaitFor(l, stop_cv_, live_->balancer().heartbeat_interval, [this] { return stopping_.load(); });
  }
}

absl::StatusOr<std::string> Daemon::Reload(const std::string& path) {
  auto next = config::LoadConfig(path, adapters_);
  if (!next.ok()) return NotReloaded(path, next.status());
  const config::Config& n = *next;
  const config::Config& o = config_;
  // What a running daemon cannot change: each needs a restart.
  std::vector<std::string> restart;
  auto differs = [&](bool changed, const char* key) {
    if (changed) restart.push_back(key);
  };
  // Every key of the settings tables (config/settings.h) says whether it
  // changes at once or needs a restart. The balancer's live values may
  // differ from the file's last read, so they are compared with the live ones.
  config::Config before = o;
  before.balancer = live_->balancer();
  const std::vector<config::SettingChange> settings = config::ChangedSettings(before, n);
  for (const config::SettingChange& c : settings)
    if (c.change == config::Change::kRestart) restart.push_back(c.key);
  // The YAML's roster is version 0: once a signed one is in force it is not
  // read, and an edit to it blocks no reload.
  const bool yaml_roster_used = live_->roster()->version == 0;
  differs(yaml_roster_used && n.roster.sites != o.roster.sites,
          "roster (a running federation changes it with `hyperfedctl roster`)");
  differs(n.seeds != o.seeds, "seeds");
  differs(n.federation != o.federation, "federation");
  differs(n.scheduler.adapter != o.scheduler.adapter, "scheduler.adapter");
  differs(n.state_dir != o.state_dir, "state_dir");
  if (!restart.empty())
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": not reloaded, nothing changed: ", absl::StrJoin(restart, ", "),
                     restart.size() == 1 ? " changes" : " change", " only with a restart"));
  // New adapter options: a new adapter made from them, checked as at start
  // (an error names the option's line) before anything changes.
  std::unique_ptr<scheduler::SchedulerAdapter> next_adapter;
  // Only between migrations: new options may change which jobs the adapter
  // sees or how it recognizes the copies it submitted (Slurm's partitions,
  // users, mark_key), which a migration in flight relies on.
  auto unsettled = [&]() -> std::string {
    int64_t n = 0;
    for (migration::Direction d : {migration::Direction::kOut, migration::Direction::kIn})
      if (auto u = journal_->Unsettled(d); u.ok()) n += u->migrations;
    if (n > 0) return absl::StrCat(n, " migrations are unsettled");
    if (site_->InRound()) return "a round is running here";
    return "";
  };
  if (n.scheduler.options != o.scheduler.options) {
    if (std::string why = unsettled(); !why.empty())
      return absl::UnavailableError(absl::StrCat(path, ": not reloaded, nothing changed: scheduler.options change ",
                                                 "only between migrations, and ", why, "; send SIGHUP again later"));
    auto made = adapters_->Create(n.scheduler.adapter, n.scheduler.parsed,
                                  scheduler::AdapterContext{n.state_dir, n.scheduler.options, RealEnv::Get()});
    if (!made.ok())
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": not reloaded, nothing changed: scheduler.options: ", made.status().message()));
    next_adapter = *std::move(made);
  }
  std::vector<std::string> changed;
  for (const config::SettingChange& c : settings) changed.push_back(absl::StrCat(c.key, " ", c.from, " -> ", c.to));
  if (next_adapter) {
    std::vector<std::string> options;
    for (const auto& [k, v] : n.scheduler.options) {
      auto it = o.scheduler.options.find(k);
      if (it == o.scheduler.options.end() || it->second != v) options.push_back(absl::StrCat(k, "=", v));
    }
    for (const auto& [k, v] : o.scheduler.options)
      if (!n.scheduler.options.contains(k)) options.push_back(absl::StrCat(k, " (default)"));
    changed.push_back(absl::StrCat("scheduler.options ", absl::StrJoin(options, ", ")));
    if (std::string why = unsettled(); !why.empty())  // again, as late as can be
      return absl::UnavailableError(absl::StrCat(path, ": not reloaded, nothing changed: ", why));
    adapter_->Swap(std::move(next_adapter));  // calls in flight finish on the old one
  }
  live_->SetBalancer(n.balancer);
  config_.balancer = n.balancer;
  config_.scheduler = n.scheduler;
  return changed.empty() ? std::string("nothing changed") : absl::StrJoin(changed, ", ");
}

void Daemon::Shutdown() {
  if (stopping_.exchange(true)) return;
  // Create or Start failed (and said why): nothing runs, and the parts
  // Create did not get to are null.
  if (!server_) return;
  health_service_.SetNotServing();
  {
    // The waiting threads test stopping_ under stop_mu_: taken here, the
    // notification cannot fall between their test and their wait.
    std::lock_guard<std::mutex> l(stop_mu_);
  }
  stop_cv_.notify_all();
  if (join_) join_->Join();
  site_->Stop();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  metrics_.reset();
  LogInfo("stopped");
}

Daemon::~Daemon() {
  Shutdown();
  // Last: every part that uses state_dir is gone with the members below,
  // but none of them holds the lock; the process's end drops it anyway.
  if (lock_fd_ >= 0) close(lock_fd_);
}

std::string Daemon::RenderMetrics() {
  // Prometheus' text format, one family at a time: HELP and TYPE, then its
  // samples. Label values are roster ids ([A-Za-z0-9._-], checked at config
  // load) and fixed words, so none needs escaping. docs/operations.md,
  // "Watch", lists every family; deploy/prometheus/rules/hyperfed.yml alerts
  // on them.
  std::string out;
  auto family = [&out](const char* name, const char* type, const char* help) {
    absl::StrAppendFormat(&out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
  };
  auto sample = [&out](std::string_view series, double v) { absl::StrAppendFormat(&out, "%s %.17g\n", series, v); };
  auto metric = [&](const char* name, const char* type, const char* help, double v) {
    family(name, type, help);
    sample(name, v);
  };
  federation::SiteCounters c = site_->counters();
  auto snap = site_->Snapshot();
  const std::vector<federation::PeerInfo> view = site_->membership().View();
  int up = 0;
  for (const auto& p : view) up += (!p.self && p.up) ? 1 : 0;
  metric("hyperfed_rounds_total", "counter", "Rounds this site coordinated.", static_cast<double>(c.rounds));
  metric("hyperfed_rounds_failed_total", "counter", "Coordinated rounds that ended early.",
         static_cast<double>(c.rounds_failed));
  metric("hyperfed_rounds_failed_consecutive", "gauge",
         "Coordinated rounds in a row that ended early (0 once one finishes).",
         static_cast<double>(c.rounds_failed_in_a_row));
  family("hyperfed_round_duration_seconds", "summary", "Duration of coordinated rounds.");
  sample("hyperfed_round_duration_seconds_sum", c.round_seconds_sum);
  sample("hyperfed_round_duration_seconds_count", static_cast<double>(c.rounds));
  metric("hyperfed_last_round_duration_seconds", "gauge", "Duration of the last coordinated round.",
         c.last_round_seconds);
  if (c.rounds > 0) {
    metric("hyperfed_last_round_share_error_before", "gauge",
           "Max share error (jobs from a site's capacity share) when the last coordinated round started.",
           c.last_share_error_before);
    metric("hyperfed_last_round_share_error_after", "gauge",
           "Max share error (jobs from a site's capacity share) after the last coordinated round's transfers.",
           c.last_share_error_after);
  }
  metric("hyperfed_jobs_moved_out_total", "counter", "Jobs this site moved to other sites in rounds.",
         static_cast<double>(c.jobs_moved_out));
  metric("hyperfed_load", "gauge", "Movable pending jobs at this site (pending jobs some other site can run).",
         snap.ok() ? static_cast<double>(snap->load) : -1);
  metric("hyperfed_capacity", "gauge", "This site's capacity (0 while drained).", snap.ok() ? snap->capacity : -1);
  metric("hyperfed_peers_up", "gauge", "Other sites heard from within the peer timeout.", up);
  family("hyperfed_peer_up", "gauge", "1 while this site hears from the peer within the peer timeout, else 0.");
  for (const auto& p : view)
    if (!p.self) sample(absl::StrCat("hyperfed_peer_up{peer=\"", p.site, "\"}"), p.up ? 1 : 0);
  metric("hyperfed_drained", "gauge", "1 while this site is drained.", site_->drained() ? 1 : 0);
  metric("hyperfed_roster_version", "gauge", "The version of the roster in force here (0: the YAML's).",
         static_cast<double>(live_->roster()->version));
  // Past it the roster stays in force but no site takes it anew (docs/design.md §6.9).
  if (roster_ && roster_->Current()) {
    const absl::Time expires = roster_->Expires();
    metric("hyperfed_roster_expires_timestamp_seconds", "gauge",
           "When the signed roster in force expires, in Unix seconds (0: signed before rosters expired).",
           expires == absl::InfinitePast() ? 0 : absl::ToDoubleSeconds(expires - absl::UnixEpoch()));
  }
  metric("hyperfed_in_roster", "gauge", "1 while the roster in force lists this site.", live_->SelfEntry() ? 1 : 0);
  // Migrations not settled yet: outgoing ones hold their jobs at this site,
  // incoming ones are not yet submitted here (docs/operations.md, "Recover").
  struct Unsettled {
    const char* direction;
    migration::UnsettledSummary u;
  };
  std::vector<Unsettled> unsettled;
  for (migration::Direction d : {migration::Direction::kOut, migration::Direction::kIn})
    if (auto u = journal_->Unsettled(d); u.ok()) unsettled.push_back({migration::DirectionName(d), *u});
  const absl::Time now = RealEnv::Get()->Now();
  family("hyperfed_migrations_unsettled", "gauge",
         "Migrations in the journal not yet COMMITTED, ABORTED or FORCED, by direction.");
  for (const Unsettled& x : unsettled)
    sample(absl::StrCat("hyperfed_migrations_unsettled{direction=\"", x.direction, "\"}"),
           static_cast<double>(x.u.migrations));
  family("hyperfed_migration_jobs_unsettled", "gauge", "Jobs of the unsettled migrations, by direction.");
  for (const Unsettled& x : unsettled)
    sample(absl::StrCat("hyperfed_migration_jobs_unsettled{direction=\"", x.direction, "\"}"),
           static_cast<double>(x.u.jobs));
  family("hyperfed_migration_oldest_unsettled_age_seconds", "gauge",
         "Age of the oldest unsettled migration, by direction (0 when there is none).");
  for (const Unsettled& x : unsettled)
    sample(absl::StrCat("hyperfed_migration_oldest_unsettled_age_seconds{direction=\"", x.direction, "\"}"),
           x.u.oldest_created ? std::max(0.0, absl::ToDoubleSeconds(now - *x.u.oldest_created)) : 0);
  metric("hyperfed_journal_errors_total", "counter",
         "Failures of this site's migration journal (SQLite errors, unreadable rows) since the daemon started.",
         static_cast<double>(journal_->errors()));
  return out;
}

}  // namespace hyperfed::server
