#include "tests/integration/jobs_util.h"

#include <httplib.h>
#include <sys/wait.h>

#include <cstdio>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace hyperfed::testing {

Out Shell(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  Out o;
  if (!p) return o;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) o.text.append(buf, n);
  int st = pclose(p);
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return o;
}

std::unique_ptr<v1::Peer::Stub> PeerAs(TestFederation& f, int to, const std::string& as) {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = ReadFile(f.CertDir() + "/ca.pem");
  o.pem_cert_chain = ReadFile(f.CertDir() + "/" + as + ".pem");
  o.pem_private_key = ReadFile(f.CertDir() + "/" + as + "-key.pem");
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride(f.SiteId(to));
  return v1::Peer::NewStub(grpc::CreateCustomChannel(f.Endpoint(to), grpc::SslCredentials(o), args));
}

absl::Status Submit(TestFederation& f, int site, int count, int64_t duration_ms, int cores) {
  v1::SubmitRequest req;
  req.set_count(count);
  req.set_duration_ms(duration_ms);
  req.set_cores(cores);
  v1::SubmitReply reply;
  auto ctx = f.Context(absl::Seconds(60));
  grpc::Status st = f.Admin(site)->Submit(ctx.get(), req, &reply);
  if (!st.ok()) return absl::InternalError(st.error_message());
  return absl::OkStatus();
}

std::vector<v1::Job> ListJobs(TestFederation& f, int site) {
  v1::JobsRequest req;
  v1::JobsReply reply;
  auto ctx = f.Context();
  grpc::Status st = f.Admin(site)->Jobs(ctx.get(), req, &reply);
  if (!st.ok()) return {};
  return {reply.jobs().begin(), reply.jobs().end()};
}

int64_t CountState(const std::vector<v1::Job>& jobs, const std::string& state) {
  int64_t n = 0;
  for (const auto& j : jobs) n += j.state() == state;
  return n;
}

bool WaitRunning(TestFederation& f, int site, int count, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    if (CountState(ListJobs(f, site), "running") >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::multiset<std::string> AllKeys(TestFederation& f) {
  std::multiset<std::string> keys;
  for (int i = 0; i < f.size(); ++i) {
    if (!f.Running(i)) continue;
    for (const auto& j : ListJobs(f, i))
      if (j.state() != "done" && j.state() != "cancelled") keys.insert(j.spec().key());
  }
  return keys;
}

absl::StatusOr<RoundResult> RunRound(TestFederation& f, int site, bool dry_run, absl::Duration timeout,
                                     const std::string& mode) {
  return RunRound(f, *f.Admin(site), dry_run, timeout, mode);
}

absl::StatusOr<RoundResult> RunRound(TestFederation& f, v1::Admin::Stub& admin, bool dry_run, absl::Duration timeout,
                                     const std::string& mode) {
  v1::BalanceRequest req;
  req.set_wait(true);
  req.set_dry_run(dry_run);
  req.set_mode(mode);
  auto ctx = f.Context(timeout);
  auto reader = admin.Balance(ctx.get(), req);
  RoundResult r;
  v1::RoundEvent e;
  bool final = false;
  while (reader->Read(&e)) {
    if (!e.message().empty()) absl::StrAppend(&r.messages_, e.message(), "\n");
    if (e.final()) {
      r.final_ = e;
      final = true;
    }
  }
  grpc::Status st = reader->Finish();
  if (!st.ok()) return absl::InternalError(absl::StrCat("Balance: ", st.error_message(), "\n", r.messages_));
  if (!final) return absl::InternalError("no final event:\n" + r.messages_);
  return r;
}

absl::StatusOr<std::string> StartRound(TestFederation& f, int site, absl::Duration timeout) {
  v1::BalanceRequest req;
  req.set_wait(false);
  auto ctx = f.Context(timeout);
  auto reader = f.Admin(site)->Balance(ctx.get(), req);
  std::string id;
  v1::RoundEvent e;
  while (reader->Read(&e))
    if (id.empty()) id = e.round_id();
  grpc::Status st = reader->Finish();
  if (!st.ok()) return absl::InternalError(absl::StrCat("Balance: ", st.error_message()));
  if (id.empty()) return absl::InternalError("Balance: no event named the round");
  return id;
}

bool WaitRoundOver(TestFederation& f, int site, const std::string& id, absl::Duration timeout) {
  for (const absl::Time end = absl::Now() + timeout; absl::Now() < end;
       std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
    v1::RoundsReply r;
    auto ctx = f.Context(absl::Seconds(5));
    if (!f.Admin(site)->Rounds(ctx.get(), v1::RoundsRequest(), &r).ok()) continue;
    bool running = false;
    for (const v1::Round& round : r.rounds()) running |= round.round_id() == id && !round.done();
    if (!running) return true;
  }
  return false;
}

Out Fetch(const std::string& url) {
  // "http://HOST:PORT/PATH", with cpp-httplib, as the web view test's calls.
  const size_t path = url.find('/', url.find("://") + 3);
  httplib::Client c(url.substr(0, path));
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(5, 0);
  auto r = c.Get(path == std::string::npos ? "/" : url.substr(path));
  if (!r) return {1, httplib::to_string(r.error())};
  return {r->status == 200 ? 0 : r->status, r->body};
}

std::map<std::string, double> ParseMetrics(const std::string& text) {
  std::map<std::string, double> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line[0] == '#') continue;
    const auto space = line.rfind(' ');
    double v = 0;
    if (space == absl::string_view::npos || !absl::SimpleAtod(line.substr(space + 1), &v)) continue;
    samples[std::string(line.substr(0, space))] = v;
  }
  return samples;
}

}  // namespace hyperfed::testing
