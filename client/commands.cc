#include "client/commands.h"

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/output.h"
#include "daemon/balance/label_suggest.h"
#include "daemon/roster/roster_doc.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "hyperfed/v1/hyperfed.grpc.pb.h"

namespace hyperfed::client {
namespace {

namespace v1 = ::hyperfed::v1;

// `roster remove` runs at most this many rounds to empty the drained site.
constexpr int kMaxDrainRounds = 5;
namespace health = ::grpc::health::v1;

const char* const kHealthServices[] = {"", "hyperfed.v1.Admin", "hyperfed.v1.Peer"};

class Runner {
 public:
  Runner(const Options& o, const std::shared_ptr<grpc::Channel>& channel, std::ostream& out, std::ostream& err)
      : o_(o), channel_(channel), admin_(v1::Admin::NewStub(channel)), out_(out), err_(err) {}

  int Run() {
    const std::string& c = o_.command;
    if (c == "status") return Status();
    if (c == "topology") return Topology();
    if (c == "jobs") return Jobs();
    if (c == "migrations") return Migrations();
    if (c == "rounds") return Rounds();
    if (c == "waits") return Waits();
    if (c == "balance") return Balance();
    if (c == "drain" || c == "undrain") return Drain(c == "drain");
    if (c == "submit") return Submit();
    if (c == "explain") return Explain();
    if (c == "force-release") return ForceRelease();
    if (c == "health") return Health();
    if (c == "roster") return Roster();
    err_ << "hyperfedctl: unknown command '" << c << "'\n";
    return kExitUsage;
  }

 private:
  // Every call carries the deadline and, when there is one, the token. The
  // token goes as plain metadata rather than call credentials because gRPC
  // refuses call credentials on a plain-text channel (--insecure).
  std::unique_ptr<grpc::ClientContext> Context(absl::Duration timeout) const {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    if (!o_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + o_.token);
    return ctx;
  }
  std::unique_ptr<grpc::ClientContext> Context() const { return Context(o_.timeout); }

  int Fail(const grpc::Status& st) const { return Fail(st, o_.endpoint); }
  int Fail(const grpc::Status& st, const std::string& endpoint) const {
    err_ << "hyperfedctl: " << RpcErrorLine(st.error_code(), st.error_message(), endpoint, o_.timeout) << "\n";
    return kExitRpcFailure;
  }

  // The Admin service of `site` ("" or the site asked: the one asked). A
  // site never passes an operator's credential on (docs/security.md,
  // "Operators' credentials"), so jobs, submit and drain of another site go
  // to that site itself: its endpoint is the one the site asked knows, and
  // the call carries the same CA, token and certificate, which that site
  // checks as its own. Sets *endpoint to where the call goes; nullptr after
  // printing why when the site asked does not answer.
  v1::Admin::Stub* AdminFor(const std::string& site, std::string* endpoint) {
    *endpoint = o_.endpoint;
    if (site.empty()) return admin_.get();
    v1::StatusReply r;
    auto ctx = Context();
    if (auto st = admin_->Status(ctx.get(), v1::StatusRequest(), &r); !st.ok()) {
      Fail(st);
      return nullptr;
    }
    if (r.site() == site) return admin_.get();
    for (const v1::SiteStatus& s : r.sites()) {
      if (s.site() != site || s.endpoint().empty()) continue;
      Options there = o_;
      there.endpoint = s.endpoint();
      there.server_name = site;
      other_ = v1::Admin::NewStub(MakeChannel(there));
      *endpoint = s.endpoint();
      return other_.get();
    }
    return admin_.get();  // a site it does not know: its refusal says so
  }

  int Status() {
    v1::StatusReply r;
    auto ctx = Context();
    if (auto st = admin_->Status(ctx.get(), v1::StatusRequest(), &r); !st.ok()) return Fail(st);
    out_ << (o_.json ? StatusJson(r) : StatusText(r));
    return kExitOk;
  }

  int Topology() {
    v1::TopologyReply r;
    auto ctx = Context();
    if (auto st = admin_->Topology(ctx.get(), v1::TopologyRequest(), &r); !st.ok()) return Fail(st);
    out_ << (o_.json ? TopologyJson(r) : o_.dot ? TopologyDot(r) : TopologyText(r));
    return kExitOk;
  }

  int Jobs() {
    std::string endpoint;
    v1::Admin::Stub* admin = AdminFor(o_.site, &endpoint);
    if (!admin) return kExitRpcFailure;
    v1::JobsRequest req;
    req.set_site(o_.site);
    v1::JobsReply r;
    auto ctx = Context();
    if (auto st = admin->Jobs(ctx.get(), req, &r); !st.ok()) return Fail(st, endpoint);
    out_ << (o_.json ? JobsJson(r) : JobsText(r));
    return kExitOk;
  }

  int Migrations() {
    v1::MigrationsRequest req;
    req.set_limit(o_.limit);
    v1::MigrationsReply r;
    auto ctx = Context();
    if (auto st = admin_->Migrations(ctx.get(), req, &r); !st.ok()) return Fail(st);
    out_ << (o_.json ? MigrationsJson(r) : MigrationsText(r));
    return kExitOk;
  }

  int Waits() {
    v1::WaitsReply r;
    auto ctx = Context();
    if (auto st = admin_->Waits(ctx.get(), v1::WaitsRequest(), &r); !st.ok()) return Fail(st);
    out_ << (o_.json ? WaitsJson(r) : WaitsText(r));
    return kExitOk;
  }

  int Rounds() {
    v1::RoundsRequest req;
    req.set_site(o_.site);
    req.set_limit(o_.limit);
    req.set_dry_runs(o_.dry_runs);
    v1::RoundsReply r;
    auto ctx = Context();
    if (auto st = admin_->Rounds(ctx.get(), req, &r); !st.ok()) return Fail(st);
    // The JSON is the reply as the web API gives it: labels, no site names.
    out_ << (o_.json ? RoundsJson(r) : RoundsText(r, SiteNames()));
    return kExitOk;
  }

  // The label -> site map for the before/after table. Best effort: without
  // it the table shows "-" for the site.
  std::map<int, std::string> SiteNames() {
    std::map<int, std::string> names;
    v1::StatusReply r;
    auto ctx = Context(std::min(o_.timeout, absl::Seconds(10)));
    if (admin_->Status(ctx.get(), v1::StatusRequest(), &r).ok())
      for (const auto& s : r.sites()) names[s.label()] = s.site();
    return names;
  }

  int Balance() {
    v1::BalanceRequest req;
    req.set_dry_run(o_.dry_run);
    req.set_mode(o_.mode);
    req.set_wait(o_.wait);
    auto ctx = Context();
    auto reader = admin_->Balance(ctx.get(), req);
    v1::RoundEvent e;
    bool any = false, final = false, ok = true;
    std::string round;
    while (reader->Read(&e)) {
      round = TerminalSafe(e.round_id());
      std::map<int, std::string> names;
      if (e.final()) names = SiteNames();
      if (o_.json) {
        out_ << BalanceEventJson(e, names);
      } else {
        if (!any) out_ << "round " << TerminalSafe(e.round_id()) << (o_.dry_run ? " (dry run)" : "") << "\n";
        out_ << BalanceEventText(e);
        if (e.final()) out_ << BalanceResultText(e, names);
      }
      out_.flush();
      any = true;
      if (e.final()) {
        final = true;
        ok = e.ok();
        break;
      }
      if (!o_.wait) break;
    }
    if (!final && !(any && !o_.wait)) {
      grpc::Status st = reader->Finish();
      if (!st.ok()) return Fail(st);
      err_ << "hyperfedctl: the daemon ended the stream before "
           << (any ? absl::StrCat("round ", round, " finished") : "it started a round") << "\n";
      return kExitRpcFailure;
    }
    // The daemon ends the stream after the event it was asked for; anything
    // left is not wanted.
    ctx->TryCancel();
    if (!ok) {
      err_ << "hyperfedctl: round " << round << " ended early (see its events)\n";
      return kExitRpcFailure;
    }
    return kExitOk;
  }

  int Drain(bool drain) {
    std::string endpoint;
    v1::Admin::Stub* admin = AdminFor(o_.site, &endpoint);
    if (!admin) return kExitRpcFailure;
    v1::DrainRequest req;
    req.set_site(o_.site);
    req.set_drain(drain);
    v1::DrainReply r;
    auto ctx = Context();
    if (auto st = admin->Drain(ctx.get(), req, &r); !st.ok()) return Fail(st, endpoint);
    if (o_.json) {
      out_ << DrainJson(o_.site, drain);
    } else {
      out_ << o_.site
           << (drain ? " drained: capacity 0, its pending jobs leave at the next round\n"
                     : " undrained: its configured capacity is back\n");
    }
    return kExitOk;
  }

  int Submit() {
    v1::SubmitRequest req;
    req.set_site(o_.site);
    req.set_count(o_.count);
    req.set_duration_ms(absl::ToInt64Milliseconds(o_.duration));
    req.set_time_limit_ms(absl::ToInt64Milliseconds(absl::Ceil(o_.time_limit, absl::Milliseconds(1))));
    req.set_name(o_.name);
    req.set_cores(o_.cores);
    std::string endpoint;
    v1::Admin::Stub* admin = AdminFor(o_.site, &endpoint);
    if (!admin) return kExitRpcFailure;
    v1::SubmitReply r;
    auto ctx = Context();
    if (auto st = admin->Submit(ctx.get(), req, &r); !st.ok()) {
      // A daemon that took part of the order says so ("took N of M") and
      // lists the jobs it took in the failure's details: they exist.
      if (v1::SubmitReply taken; !st.error_details().empty() && taken.ParseFromString(st.error_details()))
        out_ << (o_.json ? SubmitJson(taken) : SubmitText(taken));
      return Fail(st, endpoint);
    }
    out_ << (o_.json ? SubmitJson(r) : SubmitText(r));
    return kExitOk;
  }

  int Explain() {
    v1::ExplainJobRequest req;
    req.set_job(o_.job);
    v1::ExplainJobReply r;
    auto ctx = Context();
    if (auto st = admin_->ExplainJob(ctx.get(), req, &r); !st.ok()) return Fail(st);
    if (o_.json) {
      out_ << ExplainJson(r);
    } else {
      out_ << TerminalSafeLines(r.explanation()) << "\n";
    }
    return kExitOk;
  }

  int ForceRelease() {
    v1::ForceReleaseRequest req;
    req.set_migration_id(o_.migration_id);
    v1::ForceReleaseReply r;
    auto ctx = Context();
    if (auto st = admin_->ForceRelease(ctx.get(), req, &r); !st.ok()) return Fail(st);
    if (o_.json) {
      out_ << ForceReleaseJson(o_.migration_id, r);
    } else {
      out_ << "released migration " << o_.migration_id << "\n";
      if (!r.warning().empty()) out_ << "warning: " << TerminalSafeLines(r.warning()) << "\n";
    }
    return kExitOk;
  }

  int Health() {
    auto stub = health::Health::NewStub(channel_);
    std::vector<HealthRow> rows;
    std::vector<std::string> not_serving;
    for (const char* service : kHealthServices) {
      health::HealthCheckRequest req;
      req.set_service(service);
      health::HealthCheckResponse r;
      auto ctx = Context();
      grpc::Status st = stub->Check(ctx.get(), req, &r);
      std::string status;
      if (st.error_code() == grpc::StatusCode::NOT_FOUND) {
        status = "SERVICE_UNKNOWN";  // the standard's answer for a name the server does not know
      } else if (!st.ok()) {
        return Fail(st);
      } else {
        status = health::HealthCheckResponse::ServingStatus_Name(r.status());
      }
      if (status != "SERVING") not_serving.push_back(*service ? service : "(server)");
      rows.push_back({service, status});
    }
    out_ << (o_.json ? HealthJson(o_.endpoint, rows) : HealthText(o_.endpoint, rows));
    if (!not_serving.empty()) {
      err_ << "hyperfedctl: not serving: " << absl::StrJoin(not_serving, ", ") << "\n";
      return kExitRpcFailure;
    }
    return kExitOk;
  }

  // ---- roster (docs/operations.md, "Join and leave")

  // The roster in force at the daemon asked; nullopt after printing why not.
  std::optional<config::Roster> CurrentRoster() {
    v1::AdminGetRosterReply r;
    auto ctx = Context();
    if (auto st = admin_->GetRoster(ctx.get(), v1::AdminGetRosterRequest(), &r); !st.ok()) {
      Fail(st);
      return std::nullopt;
    }
    auto roster = roster::FromProto(r.roster());
    if (!roster.ok()) {
      err_ << "hyperfedctl: the daemon's roster: " << roster.status().message() << "\n";
      return std::nullopt;
    }
    roster_site_ = r.site();
    return *std::move(roster);
  }

  // Signs `next` and sets it in place of version `expected`; false after
  // printing why not (a concurrent change: run the command again).
  // The roster keeps its federation and is taken for --valid-for from now
  // (docs/design.md §6.9).
  bool Publish(int64_t expected, absl::StatusOr<config::Roster> next, const std::string& what) {
    if (!next.ok()) {
      err_ << "hyperfedctl: " << next.status().message() << "\n";
      return false;
    }
    if (next->federation.empty()) {
      err_ << "hyperfedctl: the roster of " << TerminalSafe(roster_site_)
           << " names no federation (a daemon older than federation names): upgrade it first\n";
      return false;
    }
    next->expires_unix_ms = absl::ToUnixMillis(absl::Now() + o_.valid_for);
    auto doc = roster::Sign(*next, o_.roster_key);
    if (!doc.ok()) {
      err_ << "hyperfedctl: --roster-key " << o_.roster_key_file << ": " << doc.status().message() << "\n";
      return false;
    }
    v1::SetRosterRequest req;
    req.set_expected_version(expected);
    *req.mutable_roster() = *std::move(doc);
    v1::SetRosterReply r;
    auto ctx = Context();
    if (auto st = admin_->SetRoster(ctx.get(), req, &r); !st.ok()) {
      Fail(st);
      return false;
    }
    out_ << "roster version " << r.version() << ": " << what << "; " << next->sites.size() << " sites in a "
         << next->Dimension() << "-cube, federation " << TerminalSafe(next->federation) << ", expires "
         << absl::FormatTime(absl::FromUnixMillis(next->expires_unix_ms), absl::UTCTimeZone()) << "\n";
    return true;
  }

  // Asks Status every 100 ms until `done` holds of a reply (true), the
  // call fails (false, after printing why) or `limit` passes (false, after
  // printing `what` and what `done` last said in `why`).
  bool PollStatus(absl::Duration limit, const std::string& what,
                  const std::function<bool(const v1::StatusReply&, std::string* why)>& done) {
    const absl::Time give_up = absl::Now() + limit;
    std::string why;
    while (true) {
      v1::StatusReply r;
      auto ctx = Context();
      if (auto st = admin_->Status(ctx.get(), v1::StatusRequest(), &r); !st.ok()) {
        Fail(st);
        return false;
      }
      if (done(r, &why)) return true;
      if (absl::Now() > give_up) {
        err_ << "hyperfedctl: " << what << (why.empty() ? "" : ": ") << why << "\n";
        return false;
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  }

  // Waits until every live site says it has roster `version` (a round
  // planned with it needs them all on it).
  bool AwaitVersion(int64_t version) {
    return PollStatus(std::max(o_.timeout, absl::Seconds(30)),
                      absl::StrCat("not every site has roster version ", version, " yet"),
                      [&](const v1::StatusReply& r, std::string* why) {
                        std::vector<std::string> behind;
                        for (const v1::SiteStatus& s : r.sites())
                          if (s.state() != "down" && s.roster_version() < version)
                            behind.push_back(TerminalSafe(s.site()));
                        *why = absl::StrJoin(behind, ", ");
                        return behind.empty();
                      });
  }

  // The movable load `site` reports, as of a heartbeat after `since`
  // (nullopt after printing why not).
  std::optional<int64_t> LoadOf(const std::string& site, absl::Time since) {
    int64_t load = 0;
    const bool got = PollStatus(absl::Seconds(30), absl::StrCat("no fresh word from ", TerminalSafe(site), " in 30 s"),
                                [&](const v1::StatusReply& r, std::string*) {
                                  const v1::SiteStatus* row = nullptr;
                                  for (const v1::SiteStatus& s : r.sites())
                                    if (s.site() == site) row = &s;
                                  // Down, or gone: nothing of it can move now;
                                  // its jobs stay on its own cluster.
                                  if (!row || row->state() == "down") {
                                    load = 0;
                                    return true;
                                  }
                                  load = row->load();
                                  return row->age_ms() >= 0 && absl::Now() - absl::Milliseconds(row->age_ms()) > since;
                                });
    if (!got) return std::nullopt;
    return load;
  }

  // Runs a round at the coordinator and waits for its end (nullopt after
  // printing why not).
  std::optional<v1::RoundEvent> RunRoundAndWait() {
    v1::BalanceRequest req;
    req.set_wait(true);
    auto ctx = Context(std::max(o_.timeout, absl::Minutes(10)));
    auto reader = admin_->Balance(ctx.get(), req);
    v1::RoundEvent ev;
    while (reader->Read(&ev))
      if (ev.final()) {
        ctx->TryCancel();
        return ev;
      }
    grpc::Status st = reader->Finish();
    if (!st.ok()) {
      Fail(st);
    } else {
      err_ << "hyperfedctl: the round ended without a result\n";
    }
    return std::nullopt;
  }

  int Roster() {
    std::optional<config::Roster> cur = CurrentRoster();
    if (!cur) return kExitRpcFailure;
    if (o_.roster_action == "show") {
      out_ << "roster version " << cur->version << (cur->version == 0 ? " (the sites' YAML roster)" : " (signed)")
           << " at " << TerminalSafe(roster_site_) << ": " << cur->sites.size() << " sites in a " << cur->Dimension()
           << "-cube, federation " << TerminalSafe(cur->federation) << ", expires "
           << (cur->expires_unix_ms == 0
                   ? std::string("never")
                   : absl::FormatTime(absl::FromUnixMillis(cur->expires_unix_ms), absl::UTCTimeZone()))
           << ", modes " << (cur->allowed_modes.empty() ? "all" : TerminalSafe(absl::StrJoin(cur->allowed_modes, ",")))
           << "\n";
      for (const config::RosterEntry& e : cur->sites)
        out_ << "  " << e.label << "  " << TerminalSafe(e.id) << "  " << TerminalSafe(e.endpoint) << "  max_capacity "
             << e.max_capacity << (e.drained ? "  drained" : "") << "\n";
      return kExitOk;
    }
    if (o_.roster_action == "suggest") return Suggest(*cur);
    if (o_.roster_action == "renew") {
      std::optional<std::vector<std::string>> modes;
      if (o_.modes == "all")
        modes.emplace();
      else if (!o_.modes.empty())
        modes = absl::StrSplit(o_.modes, ',');
      return Publish(cur->version, roster::Renewed(*cur, modes), "renewed") ? kExitOk : kExitRpcFailure;
    }
    if (o_.roster_action == "add") {
      auto next =
          roster::WithSite(*cur, o_.site, o_.site_endpoint, o_.label >= 0 ? std::optional<int>(o_.label) : std::nullopt,
                           o_.capacity_max > 0 ? std::optional<double>(o_.capacity_max) : std::nullopt);
      const std::string what = next.ok() ? absl::StrCat("added ", o_.site, " at label ", next->FindSite(o_.site)->label,
                                                        " (", o_.site_endpoint, ")")
                                         : "";
      return Publish(cur->version, next, what) ? kExitOk : kExitRpcFailure;
    }
    // remove: drain, let a round move its jobs, then take it out.
    const config::RosterEntry* e = cur->FindSite(o_.site);
    if (!e) {
      err_ << "hyperfedctl: site " << TerminalSafe(o_.site) << " is not in roster version " << cur->version << "\n";
      return kExitRpcFailure;
    }
    if (!e->drained) {
      auto drained = roster::Drained(*cur, o_.site);
      if (!Publish(cur->version, drained, absl::StrCat("drained ", o_.site))) return kExitRpcFailure;
      cur = *drained;
    }
    if (!AwaitVersion(cur->version)) return kExitRpcFailure;
    // Rounds until the drained site's movable queue is empty (a round moves
    // at most what its plan and batches allow), or one moves nothing.
    absl::Time since = absl::Now();
    for (int round = 0; round < kMaxDrainRounds; ++round) {
      const std::optional<int64_t> left = LoadOf(o_.site, since);
      if (!left) return kExitRpcFailure;
      if (*left == 0) break;
      std::optional<v1::RoundEvent> done = RunRoundAndWait();
      if (!done) return kExitRpcFailure;
      since = absl::Now();
      out_ << "round " << TerminalSafe(done->round_id()) << (done->ok() ? " finished" : " ended early") << ": moved "
           << done->moved() << " jobs\n";
      if (done->moved() == 0 && done->ok()) break;
    }
    const std::optional<int64_t> left = LoadOf(o_.site, since);
    if (!left) return kExitRpcFailure;
    if (*left > 0) {
      err_ << "hyperfedctl: " << TerminalSafe(o_.site) << " still has " << *left
           << " queued jobs other sites could run; it stays in the roster, drained: run the command again (or "
              "`hyperfedctl explain` one of its jobs)\n";
      return kExitRpcFailure;
    }
    return Publish(cur->version, roster::WithoutSite(*cur, o_.site), absl::StrCat("removed ", o_.site))
               ? kExitOk
               : kExitRpcFailure;
  }

  // Labels that follow the links (docs/algorithms.md): what they are, what
  // they cost, and what the last round's transfers would have cost with
  // them; --apply signs and sets them.
  int Suggest(const config::Roster& cur) {
    std::vector<std::string> ids;
    std::vector<int> labels;
    for (const config::RosterEntry& e : cur.sites) {
      ids.push_back(e.id);
      labels.push_back(e.label);
    }
    auto costs = balance::ParseLinkCosts(o_.costs, ids);
    if (!costs.ok()) {
      err_ << "hyperfedctl: --costs " << o_.costs_file << ": " << costs.status().message() << "\n";
      return kExitUsage;
    }
    auto next = balance::SuggestLabels(*costs, labels, cur.Dimension());
    if (!next.ok()) {
      err_ << "hyperfedctl: " << next.status().message() << "\n";
      return kExitRpcFailure;
    }
    out_ << "site                label now -> suggested\n";
    for (size_t i = 0; i < ids.size(); ++i)
      out_ << absl::StrFormat("%-20s %9d -> %d%s\n", TerminalSafe(ids[i]), labels[i], (*next)[i],
                              labels[i] == (*next)[i] ? "" : "  *");
    out_ << absl::StrFormat("label cost (lower keeps cheap pairs in smaller subcubes): %.6g -> %.6g\n",
                            balance::LabelCost(*costs, labels), balance::LabelCost(*costs, *next));
    // The last round, planned again under the suggested labels.
    v1::RoundsRequest req;
    req.set_limit(1);
    v1::RoundsReply rounds;
    auto ctx = Context();
    if (auto st = admin_->Rounds(ctx.get(), req, &rounds); !st.ok()) return Fail(st);
    const balance::RoundMode* mode =
        rounds.rounds_size() > 0 ? balance::FindRoundMode(rounds.rounds(0).mode_name()) : nullptr;
    if (!mode) {
      out_ << "no round recorded at the coordinator yet: the transfers' cost cannot be compared\n";
    } else {
      balance::LoadTable before;
      for (const v1::LoadRow& r : rounds.rounds(0).before()) before.push_back({r.label(), r.load(), r.capacity()});
      auto gain = balance::CompareTransfers(*mode, before, labels, *next, *costs);
      if (!gain.ok()) {
        out_ << "the last round (" << TerminalSafe(rounds.rounds(0).round_id())
             << ") cannot be planned again: " << gain.status().message() << "\n";
      } else {
        const double saved = gain->old_cost > 0 ? 100 * (gain->old_cost - gain->new_cost) / gain->old_cost : 0;
        out_ << absl::StrFormat(
            "the last round (%s, %s) planned again: its transfers cost %.6g now, %.6g with the suggested labels "
            "(%.1f%% lower)\n",
            TerminalSafe(rounds.rounds(0).round_id()), std::string(mode->name()), gain->old_cost, gain->new_cost,
            saved);
      }
    }
    if (!o_.apply) return kExitOk;
    if (*next == labels) {
      out_ << "nothing to apply: the suggested labels are the current ones\n";
      return kExitOk;
    }
    return Publish(cur.version, roster::Relabelled(cur, *next), "relabelled as suggested") ? kExitOk : kExitRpcFailure;
  }

  const Options& o_;
  std::string roster_site_;  // the site that answered GetRoster
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Admin::Stub> admin_;
  std::unique_ptr<v1::Admin::Stub> other_;  // AdminFor's stub for another site
  std::ostream& out_;
  std::ostream& err_;
};

}  // namespace

std::shared_ptr<grpc::Channel> MakeChannel(const Options& o) {
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (o.insecure) {
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = o.ca;  // empty: the system's roots
    ssl.pem_private_key = o.key;
    ssl.pem_cert_chain = o.cert;
    creds = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  if (!o.server_name.empty()) args.SetSslTargetNameOverride(o.server_name);
  return grpc::CreateCustomChannel(o.endpoint, creds, args);
}

int RunCommand(const Options& options, const std::shared_ptr<grpc::Channel>& channel, std::ostream& out,
               std::ostream& err) {
  return Runner(options, channel, out, err).Run();
}

}  // namespace hyperfed::client
