#include "daemon/server/peer_client.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "daemon/common/log.h"
#include "daemon/server/convert.h"
#include "daemon/server/partition_hook.h"
#include "daemon/server/protocol.h"

namespace hyperfed::server {
namespace {

absl::Status Unknown(const std::string& site) {
  return absl::NotFoundError(absl::StrCat("site ", site, " is not in the roster"));
}

absl::Status Cut(const std::string& site) {
  return absl::UnavailableError(absl::StrCat("no route to ", site, " (partition test hook)"));
}

}  // namespace

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::FailedPreconditionError(absl::StrCat("cannot read ", what, " ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<TlsFiles> ReadTlsFiles(const config::SecurityConfig& sec) {
  TlsFiles f;
  if (sec.insecure) return f;
  auto ca = ReadWholeFile(sec.ca, "CA certificate");
  if (!ca.ok()) return ca.status();
  auto cert = ReadWholeFile(sec.cert, "certificate");
  if (!cert.ok()) return cert.status();
  auto key = ReadWholeFile(sec.key, "private key");
  if (!key.ok()) return key.status();
  f.ca = *ca;
  f.cert = *cert;
  f.key = *key;
  return f;
}

std::unique_ptr<grpc::ClientContext> ContextWithDeadline(absl::Duration timeout) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return ctx;
}

GrpcPeers::GrpcPeers(const config::Config& config, const federation::LiveConfig* live, TlsFiles tls)
    : config_(config), live_(live), tls_(std::move(tls)) {}

GrpcPeers::Conn* GrpcPeers::DialLocked(const std::string& site, const std::string& endpoint) {
  grpc::ChannelArguments args;
  // A peer's answer is held to the limit its requests are (docs/security.md,
  // row 8): a reply is no more trusted than a request.
  args.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes));
  // Reconnect quickly after a peer restarts (defaults back off to minutes):
  // at most a second between attempts, so that a peer back from an outage
  // hears this site within its peer_timeout (2 s here left a restarted
  // compose site hearing one peer 3.1 s after it served).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A connection to a peer that went silent is dropped and dialled again
  // (kPeerKeepaliveMs): also between calls, and however few calls there are.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kPeerKeepaliveMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kPeerKeepaliveTimeoutMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (config_.security.insecure) {
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = tls_.ca;
    o.pem_private_key = tls_.key;
    o.pem_cert_chain = tls_.cert;
    creds = grpc::SslCredentials(o);
    // The peer's certificate must name the site the roster says is there.
    args.SetSslTargetNameOverride(site);
  }
  auto c = std::make_unique<Conn>();
  c->endpoint = endpoint;
  c->channel = grpc::CreateCustomChannel(endpoint, creds, args);
  c->peer = v1::Peer::NewStub(c->channel);
  dialled_.push_back(std::move(c));
  return dialled_.back().get();
}

GrpcPeers::Conn* GrpcPeers::Get(const std::string& site) {
  const std::shared_ptr<const config::Roster> roster = live_->roster();
  const config::RosterEntry* e = roster->FindSite(site);
  // A removed site, for the migrations still in flight with it.
  if (!e) e = roster->FindDeparted(site);
  std::lock_guard<std::mutex> l(mu_);
  auto it = conns_.find(site);
  if (it != conns_.end() && (!e || it->second->endpoint == e->endpoint)) return it->second;
  if (!e) return nullptr;
  return conns_[site] = DialLocked(site, e->endpoint);
}

absl::StatusOr<bool> GrpcPeers::FetchRoster(const config::Seed& seed) {
  Conn* c;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = conns_.find(seed.id);
    if (it != conns_.end() && it->second->endpoint == seed.endpoint) {
      c = it->second;
    } else {
      Conn*& kept = seeds_[{seed.id, seed.endpoint}];  // one channel per seed, however often it is asked
      if (!kept) kept = DialLocked(seed.id, seed.endpoint);
      c = kept;
    }
  }
  if (PartitionedFrom(seed.id)) return Cut(seed.id);
  v1::GetRosterRequest req;
  req.set_site(live_->self());
  v1::SignedRoster doc;
  auto ctx = ContextWithDeadline(live_->balancer().step_timeout);
  if (auto st = c->peer->GetRoster(ctx.get(), req, &doc); !st.ok()) return FromGrpc(st);
  if (!keeper_) return false;
  return keeper_->Offer(doc, seed.id);
}

absl::StatusOr<balance::LoadTable> GrpcPeers::Exchange(const std::string& site, const federation::ExchangeMessage& m,
                                                       absl::Duration timeout) {
  Conn* c = Get(site);
  if (!c) return Unknown(site);
  if (PartitionedFrom(site)) return Cut(site);
  Reconnect({c}, ReconnectUntil(ExchangeCallTimeout(timeout)));
  v1::ExchangeRequest req;
  ToProto(m, &req);
  v1::ExchangeReply reply;
  auto ctx = ContextWithDeadline(ExchangeCallTimeout(timeout));
  if (auto st = c->peer->Exchange(ctx.get(), req, &reply); !st.ok()) return FromGrpc(st);
  return FromProto(reply.rows());
}

absl::StatusOr<federation::LookupAnswer> GrpcPeers::Lookup(const std::string& site,
                                                           const federation::ExchangeMessage& m,
                                                           absl::Duration timeout) {
  Conn* c = Get(site);
  if (!c) return Unknown(site);
  if (PartitionedFrom(site)) return Cut(site);
  Reconnect({c}, ReconnectUntil(ExchangeCallTimeout(timeout)));
  v1::ExchangeRequest req;
  ToProto(m, &req);
  v1::ExchangeReply reply;
  auto ctx = ContextWithDeadline(ExchangeCallTimeout(timeout));
  if (auto st = c->peer->Exchange(ctx.get(), req, &reply); !st.ok()) return FromGrpc(st);
  return LookupAnswerFromReply(reply);
}

absl::StatusOr<federation::LookupAnswer> LookupAnswerFromReply(const v1::ExchangeReply& reply) {
  if (!reply.has_lookup()) return absl::InvalidArgumentError("the reply to a lookup carries no answer");
  const v1::LookupAnswer& a = reply.lookup();
  if (a.found()) {
    if (!a.has_run() || a.run().level() < 0 || a.run().begin() < 0 || a.run().begin() >= a.run().end())
      return absl::InvalidArgumentError("a lookup's answer: the run found is not a non-empty [begin, end)");
    if (auto st = balance::CheckStartProfile(ProfileFromProto(a.row()), config::kMaxReportedWaitMs); !st.ok())
      return absl::InvalidArgumentError(absl::StrCat("a lookup's answer: ", st.message()));
  } else if (a.next_label() < 0 || a.next_level() < 0 || a.position() < 0) {
    return absl::InvalidArgumentError("a lookup's answer: a negative next hop");
  }
  return FromProto(a);
}

absl::StatusOr<balance::LoadTable> GrpcPeers::ExchangeUnless(const std::string& site,
                                                             const federation::ExchangeMessage& m,
                                                             absl::Duration timeout,
                                                             const std::function<bool()>& abandon) {
  if (abandon()) return absl::CancelledError("abandoned before the call");
  Conn* c = Get(site);
  if (!c) return Unknown(site);
  if (PartitionedFrom(site)) return Cut(site);
  Reconnect({c}, ReconnectUntil(ExchangeCallTimeout(timeout)));
  v1::ExchangeRequest req;
  ToProto(m, &req);
  v1::ExchangeReply reply;
  grpc::Status status;
  auto ctx = ContextWithDeadline(ExchangeCallTimeout(timeout));
  grpc::CompletionQueue cq;
  auto rpc = c->peer->AsyncExchange(ctx.get(), req, &cq);
  rpc->Finish(&reply, &status, &status);
  void* tag = nullptr;
  bool ok = false;
  bool cancelled = false;
  // The call has a deadline, so its event comes (CANCELLED once cancelled).
  while (cq.AsyncNext(&tag, &ok, absl::ToChronoTime(absl::Now() + kAbandonPoll)) == grpc::CompletionQueue::TIMEOUT) {
    if (!cancelled && abandon()) {
      ctx->TryCancel();
      cancelled = true;
    }
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  if (cancelled && status.error_code() == grpc::StatusCode::CANCELLED)
    return absl::CancelledError("abandoned: the callee left the round");
  if (!status.ok()) return FromGrpc(status);
  return FromProto(reply.rows());
}

void GrpcPeers::Reconnect(const std::vector<Conn*>& conns, absl::Time until) {
  std::vector<Conn*> failing;
  for (Conn* c : conns) {
    if (!c || c->channel->GetState(/*try_to_connect=*/false) != GRPC_CHANNEL_TRANSIENT_FAILURE) continue;
    grpc::experimental::ChannelResetConnectionBackoff(c->channel.get());
    c->channel->GetState(/*try_to_connect=*/true);
    failing.push_back(c);
  }
  // All dial at once; the wait is at most until `until` in all.
  for (Conn* c : failing) c->channel->WaitForConnected(absl::ToChronoTime(until));
}

absl::Time GrpcPeers::ReconnectUntil(absl::Duration timeout) {
  return absl::Now() + std::min(timeout / 2, kReconnectWait);
}

template <typename Reply, typename Start, typename Done>
void GrpcPeers::CallEach(const std::vector<std::string>& sites, absl::Duration timeout, bool reconnect, Start start,
                         Done done) {
  struct Call {
    grpc::ClientContext ctx;
    Reply reply;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<Reply>> rpc;
  };
  std::vector<std::unique_ptr<Call>> calls(sites.size());
  grpc::CompletionQueue cq;
  size_t pending = 0;
  std::vector<Conn*> conns(sites.size(), nullptr);
  for (size_t i = 0; i < sites.size(); ++i) {
    conns[i] = Get(sites[i]);
    if (conns[i] && PartitionedFrom(sites[i])) conns[i] = nullptr;
  }
  if (reconnect) Reconnect(conns, ReconnectUntil(timeout));
  for (size_t i = 0; i < sites.size(); ++i) {
    Conn* c = conns[i];
    if (!c) {
      done(i, Get(sites[i]) ? Cut(sites[i]) : Unknown(sites[i]), Reply());
      continue;
    }
    calls[i] = std::make_unique<Call>();
    calls[i]->ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    calls[i]->rpc = start(i, c->peer.get(), &calls[i]->ctx, &cq);
    calls[i]->rpc->Finish(&calls[i]->reply, &calls[i]->status, reinterpret_cast<void*>(i));
    ++pending;
  }
  // Every call has a deadline, so each ends.
  void* tag;
  bool ok;
  while (pending > 0 && cq.Next(&tag, &ok)) {
    --pending;
    const size_t i = reinterpret_cast<size_t>(tag);
    done(i, calls[i]->status.ok() ? absl::OkStatus() : FromGrpc(calls[i]->status), calls[i]->reply);
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

std::vector<federation::PeerClient::StartAnswer> GrpcPeers::StartRound(const std::vector<std::string>& sites,
                                                                       const federation::RoundSpec& spec,
                                                                       absl::Duration timeout) {
  v1::StartRoundRequest req;
  ToProto(spec, &req);
  std::vector<StartAnswer> out(sites.size());
  CallEach<v1::StartRoundReply>(
      sites, timeout, /*reconnect=*/true,
      [&](size_t, v1::Peer::Stub* stub, grpc::ClientContext* ctx, grpc::CompletionQueue* cq) {
        return stub->AsyncStartRound(ctx, req, cq);
      },
      [&](size_t i, const absl::Status& st, const v1::StartRoundReply& reply) {
        StartAnswer& a = out[i];
        if (!st.ok()) {
          a.why_not = std::string(st.message());
          return;
        }
        a.answered = true;
        a.accepted = reply.accepted();
        a.why_not = reply.why_not();
      });
  return out;
}

std::vector<absl::StatusOr<balance::LoadRow>> GrpcPeers::CurrentLoads(const std::vector<std::string>& sites,
                                                                      absl::Duration timeout) {
  v1::CurrentLoadRequest req;
  req.set_site(live_->self());
  std::vector<absl::StatusOr<balance::LoadRow>> out(sites.size(), absl::UnavailableError("no answer"));
  CallEach<v1::LoadRow>(
      sites, timeout, /*reconnect=*/true,
      [&](size_t, v1::Peer::Stub* stub, grpc::ClientContext* ctx, grpc::CompletionQueue* cq) {
        return stub->AsyncCurrentLoad(ctx, req, cq);
      },
      [&](size_t i, const absl::Status& st, const v1::LoadRow& reply) {
        if (st.ok()) {
          out[i] = FromProto(reply);
        } else {
          out[i] = st;
        }
      });
  return out;
}

std::vector<absl::Status> GrpcPeers::LeftRound(const std::vector<std::string>& sites, const std::string& round_id,
                                               const std::map<int, std::string>& left, absl::Duration timeout) {
  const v1::LeftRoundRequest req = ToLeftRoundRequest(live_->self(), round_id, left);
  std::vector<absl::Status> out(sites.size(), absl::UnavailableError("no answer"));
  CallEach<v1::LeftRoundReply>(
      sites, timeout, /*reconnect=*/true,
      [&](size_t, v1::Peer::Stub* stub, grpc::ClientContext* ctx, grpc::CompletionQueue* cq) {
        return stub->AsyncLeftRound(ctx, req, cq);
      },
      [&](size_t i, const absl::Status& st, const v1::LeftRoundReply&) { out[i] = st; });
  return out;
}

absl::Status GrpcPeers::ReportRound(const std::string& site, const federation::RoundReport& report,
                                    absl::Duration timeout) {
  Conn* c = Get(site);
  if (!c) return Unknown(site);
  if (PartitionedFrom(site)) return Cut(site);
  Reconnect({c}, ReconnectUntil(timeout));
  v1::RoundReport req;
  ToProto(report, &req);
  v1::ReportRoundReply reply;
  auto ctx = ContextWithDeadline(timeout);
  return FromGrpc(c->peer->ReportRound(ctx.get(), req, &reply));
}

absl::StatusOr<federation::RoundReport> GrpcPeers::GetReport(const std::string& site, const std::string& round_id,
                                                             absl::Duration timeout) {
  Conn* c = Get(site);
  if (!c) return Unknown(site);
  if (PartitionedFrom(site)) return Cut(site);
  Reconnect({c}, ReconnectUntil(timeout));
  v1::GetReportRequest req;
  req.set_site(live_->self());
  req.set_round_id(round_id);
  v1::RoundReport reply;
  auto ctx = ContextWithDeadline(timeout);
  if (auto st = c->peer->GetReport(ctx.get(), req, &reply); !st.ok()) return FromGrpc(st);
  return FromProto(reply);
}

absl::StatusOr<std::string> GrpcPeers::RequestBalance(const std::string& site, const std::string& from,
                                                      const std::string& reason, absl::Duration timeout) {
  Conn* c = Get(site);
  if (!c) return Unknown(site);
  if (PartitionedFrom(site)) return Cut(site);
  v1::RequestBalanceRequest req;
  req.set_site(from);
  req.set_reason(reason);
  v1::RequestBalanceReply reply;
  auto ctx = ContextWithDeadline(timeout);
  if (auto st = c->peer->RequestBalance(ctx.get(), req, &reply); !st.ok()) return FromGrpc(st);
  return reply.round_id();
}

absl::StatusOr<std::string> GrpcPeers::RequestOperatorRound(const std::string& site, const std::string& mode,
                                                            absl::Duration timeout) {
  Conn* c = Get(site);
  if (!c) return Unknown(site);
  if (PartitionedFrom(site)) return Cut(site);
  v1::RequestBalanceRequest req;
  req.set_site(live_->self());
  req.set_reason("operator");
  req.set_mode(mode);
  v1::RequestBalanceReply reply;
  auto ctx = ContextWithDeadline(timeout);
  if (auto st = c->peer->RequestBalance(ctx.get(), req, &reply); !st.ok()) return FromGrpc(st);
  return reply.round_id();
}

absl::StatusOr<v1::RoundsReply> GrpcPeers::Rounds(const std::string& site, const v1::PeerRoundsRequest& request,
                                                  absl::Duration timeout) {
  Conn* c = Get(site);
  if (!c) return Unknown(site);
  if (PartitionedFrom(site)) return Cut(site);
  v1::PeerRoundsRequest req = request;
  req.set_site(live_->self());
  v1::RoundsReply reply;
  auto ctx = ContextWithDeadline(timeout);
  if (auto st = c->peer->Rounds(ctx.get(), req, &reply); !st.ok()) return FromGrpc(st);
  return reply;
}

absl::StatusOr<int64_t> GrpcPeers::ProposeRoster(const std::string& site, const v1::SignedRoster& roster,
                                                 int64_t expected_version, absl::Duration timeout) {
  Conn* c = Get(site);
  if (!c) return Unknown(site);
  if (PartitionedFrom(site)) return Cut(site);
  v1::ProposeRosterRequest req;
  req.set_site(live_->self());
  req.set_expected_version(expected_version);
  *req.mutable_roster() = roster;
  v1::SetRosterReply reply;
  auto ctx = ContextWithDeadline(timeout);
  if (auto st = c->peer->ProposeRoster(ctx.get(), req, &reply); !st.ok()) return FromGrpc(st);
  return reply.version();
}

std::vector<absl::StatusOr<federation::ProbeAck>> GrpcPeers::Heartbeats(const std::vector<std::string>& sites,
                                                                        const federation::HeartbeatInfo& info,
                                                                        const std::vector<federation::Gossip>& gossip,
                                                                        absl::Duration timeout) {
  const absl::Time began = absl::Now();
  v1::HeartbeatRequest common;
  ToProto(info, &common);
  common.set_protocol(ProtocolVersion());
  // This site's roster goes along to each peer whose last answer said it
  // lacks it (docs/operations.md, "Join and leave").
  std::vector<v1::HeartbeatRequest> reqs(sites.size(), common);
  for (size_t i = 0; i < sites.size() && i < gossip.size(); ++i) ToProto(gossip[i], &reqs[i]);
  if (keeper_) {
    const std::string digest = keeper_->Digest();
    std::optional<v1::SignedRoster> mine;
    for (size_t i = 0; i < sites.size(); ++i) {
      reqs[i].set_roster_digest(digest);
      std::optional<PeerRoster> theirs;
      {
        std::lock_guard<std::mutex> l(mu_);
        if (auto it = peer_roster_.find(sites[i]); it != peer_roster_.end()) theirs = it->second;
      }
      if (!theirs || !keeper_->PeerLacks(theirs->version, theirs->digest)) continue;
      if (!mine) mine = keeper_->Current();
      if (mine) *reqs[i].mutable_roster() = *mine;
    }
  }
  std::vector<absl::StatusOr<federation::ProbeAck>> out(sites.size(), absl::UnavailableError("no answer"));
  std::vector<std::string> denied;
  CallEach<v1::HeartbeatReply>(
      sites, timeout, /*reconnect=*/false,
      [&](size_t i, v1::Peer::Stub* stub, grpc::ClientContext* ctx, grpc::CompletionQueue* cq) {
        return stub->AsyncHeartbeat(ctx, reqs[i], cq);
      },
      [&](size_t i, const absl::Status& st, const v1::HeartbeatReply& reply) {
        if (!st.ok()) {
          out[i] = st;
          if (st.code() == absl::StatusCode::kPermissionDenied) denied.push_back(sites[i]);
          return;
        }
        out[i] = ProbeAckFromProto(reply);
        {
          std::lock_guard<std::mutex> l(mu_);
          peer_roster_[sites[i]] = {reply.roster_version(), reply.roster_digest()};
        }
        if (reply.has_roster() && keeper_)
          if (auto took = keeper_->Offer(reply.roster(), sites[i]); !took.ok())
            LogWarning(absl::StrCat("roster from ", sites[i], " refused: ", took.status().message()));
      });
  // Not in a peer's roster: it may have a newer one without this site. One
  // newer roster is enough, so the first one taken ends the asking.
  // Only a roster that is not the operators' is worth a word: a peer with
  // none yet, or unreachable, is the common case while sites join.
  // The asking also ends once this tick's time (`timeout` from its start)
  // is spent: the next tick asks again.
  if (keeper_) {
    const absl::Time until = began + timeout;
    const std::shared_ptr<const config::Roster> roster = live_->roster();
    for (const std::string& site : denied) {
      if (absl::Now() >= until) break;
      const config::RosterEntry* entry = roster->FindSite(site);
      if (!entry) continue;
      auto got = FetchRoster({site, entry->endpoint});
      if (got.ok() && *got) break;
      if (absl::IsInvalidArgument(got.status()))
        LogWarning(absl::StrCat("roster from ", site, " not taken: ", got.status().message()));
    }
  }
  return out;
}

void GrpcPeers::HeardFrom(const std::string& site) {
  Conn* c = Get(site);
  if (c && c->channel->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_TRANSIENT_FAILURE)
    grpc::experimental::ChannelResetConnectionBackoff(c->channel.get());
}

std::vector<absl::StatusOr<bool>> GrpcPeers::ProbeFor(const std::vector<std::pair<std::string, std::string>>& asks,
                                                      absl::Duration timeout) {
  std::vector<std::string> helpers;
  for (const auto& [helper, target] : asks) helpers.push_back(helper);
  std::vector<absl::StatusOr<bool>> out(asks.size(), absl::UnavailableError("no answer"));
  // The helper waits a little less than this site does, so that its answer
  // comes back in time.
  const int64_t wait_ms = std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout * 0.8));
  CallEach<v1::ProbeForReply>(
      helpers, timeout, /*reconnect=*/false,
      [&](size_t i, v1::Peer::Stub* stub, grpc::ClientContext* ctx, grpc::CompletionQueue* cq) {
        v1::ProbeForRequest req;
        req.set_site(live_->self());
        req.set_target(asks[i].second);
        req.set_timeout_ms(wait_ms);
        return stub->AsyncProbeFor(ctx, req, cq);
      },
      [&](size_t i, const absl::Status& st, const v1::ProbeForReply& reply) {
        if (st.ok()) {
          out[i] = reply.answered();
        } else {
          out[i] = st;
        }
      });
  return out;
}

absl::StatusOr<v1::TransferRequest> EncodeTransfer(const migration::TransferRequest& req) {
  v1::TransferRequest p;
  ToProto(req, &p);
  if (p.ByteSizeLong() > kMaxMessageBytes)
    return absl::InvalidArgumentError(absl::StrCat("Transfer ", req.migration_id, " of ", req.jobs.size(), " jobs is ",
                                                   p.ByteSizeLong(), " bytes, over the ", kMaxMessageBytes,
                                                   "-byte message limit; lower balancer.max_batch"));
  return p;
}

absl::StatusOr<migration::TransferReply> GrpcPeers::Transfer(const std::string& dest_site,
                                                             const migration::TransferRequest& req) {
  Conn* c = Get(dest_site);
  if (!c) return Unknown(dest_site);
  if (PartitionedFrom(dest_site)) return Cut(dest_site);
  Reconnect({c}, ReconnectUntil(kTransferTimeout));
  auto p = EncodeTransfer(req);
  if (!p.ok()) return p.status();
  v1::TransferReply reply;
  auto ctx = ContextWithDeadline(kTransferTimeout);
  if (auto st = c->peer->Transfer(ctx.get(), *p, &reply); !st.ok()) return FromGrpc(st);
  return FromProto(reply);
}

absl::StatusOr<migration::AbortReply> GrpcPeers::Abort(const std::string& dest_site, const std::string& migration_id,
                                                       const std::string& source_site) {
  Conn* c = Get(dest_site);
  if (!c) return Unknown(dest_site);
  if (PartitionedFrom(dest_site)) return Cut(dest_site);
  Reconnect({c}, ReconnectUntil(kTransferTimeout));
  v1::AbortRequest p;
  p.set_migration_id(migration_id);
  p.set_source_site(source_site);
  v1::AbortReply reply;
  auto ctx = ContextWithDeadline(kTransferTimeout);
  if (auto st = c->peer->Abort(ctx.get(), p, &reply); !st.ok()) return FromGrpc(st);
  return FromProto(reply);
}

}  // namespace hyperfed::server
