// The Peer handlers without gRPC (daemon/server/peer_handlers.h), called the
// way a simulator calls them: a request with the site the transport
// authenticated, delivered to a Site on a fake clock. A request that claims
// another site than its caller, or carries a bad field, is refused and
// changes nothing; a good one reaches the Site.

#include "daemon/server/peer_handlers.h"

#include <memory>

#include "daemon/migration/journal.h"
#include "daemon/migration/migrator.h"
#include "daemon/server/convert.h"
#include "daemon/server/protocol.h"
#include "gtest/gtest.h"
#include "tests/migration/fake_adapter.h"
#include "tests/migration/test_util.h"

namespace hyperfed::server {
namespace {

// The site under test calls no peer here: every call fails.
class NoPeers : public federation::PeerClient {
 public:
  absl::StatusOr<balance::LoadTable> Exchange(const std::string&, const federation::ExchangeMessage&,
                                              absl::Duration) override {
    return absl::UnavailableError("no peers");
  }
  std::vector<StartAnswer> StartRound(const std::vector<std::string>& sites, const federation::RoundSpec&,
                                      absl::Duration) override {
    return std::vector<StartAnswer>(sites.size());
  }
  absl::Status ReportRound(const std::string&, const federation::RoundReport&, absl::Duration) override {
    return absl::UnavailableError("no peers");
  }
  absl::StatusOr<std::string> RequestBalance(const std::string&, const std::string&, const std::string&,
                                             absl::Duration) override {
    return absl::UnavailableError("no peers");
  }
  absl::Status Heartbeat(const std::string&, const federation::HeartbeatInfo&, absl::Duration) override {
    return absl::UnavailableError("no peers");
  }
};

class NoMover : public federation::JobMover {
 public:
  absl::StatusOr<Result> MoveJobs(const std::string&, int64_t, const std::string&) override {
    return absl::UnavailableError("no mover");
  }
};

class PeerHandlersTest : public ::testing::Test {
 protected:
  PeerHandlersTest() {
    config_.site.id = "site-0";
    config_.site.label = 0;
    for (int i = 0; i < 4; ++i)
      config_.roster.sites.push_back(
          {.id = "site-" + std::to_string(i), .label = i, .endpoint = "10.0.0.1:" + std::to_string(7100 + i)});
    config_.capacity.from_adapter = false;
    config_.capacity.units = 2;
    live_ = std::make_unique<federation::LiveConfig>(config_);
    site_ = std::make_unique<federation::Site>(config_, live_.get(), &adapter_, &mover_, &peers_, &env_);
    // No roster keeper, no migrator, no limiter: what a simulator gives.
    ServiceDeps deps;
    deps.config = &config_;
    deps.live = live_.get();
    deps.site = site_.get();
    deps.env = &env_;
    handlers_ = std::make_unique<PeerHandlers>(deps);
  }
  ~PeerHandlersTest() override { site_->Stop(); }

  v1::HeartbeatRequest Beat(const std::string& site, int label) {
    v1::HeartbeatRequest hb;
    hb.set_site(site);
    hb.set_label(label);
    hb.set_load(7);
    hb.set_capacity(2);
    hb.set_protocol(ProtocolVersion());
    return hb;
  }
  // An UP message of round r1 from site-1, well formed but for what a test
  // changes.
  v1::ExchangeRequest Up() {
    v1::ExchangeRequest ex;
    ex.set_round_id("r1");
    ex.set_epoch(absl::ToUnixMillis(env_.Now()));
    ex.set_from_label(1);
    ex.set_kind(v1::ExchangeRequest::UP);
    return ex;
  }
  absl::Time LastSeen(const std::string& site) {
    auto p = site_->membership().Find(site);
    return p ? p->last_seen : absl::InfinitePast();
  }

  FakeEnv env_;
  config::Config config_;
  migration::testing::FakeAdapter adapter_{"site-0"};
  NoMover mover_;
  NoPeers peers_;
  std::unique_ptr<federation::LiveConfig> live_;
  std::unique_ptr<federation::Site> site_;
  std::unique_ptr<PeerHandlers> handlers_;
};

TEST_F(PeerHandlersTest, AWellFormedHeartbeatFromItsOwnSiteIsTaken) {
  v1::HeartbeatReply reply;
  absl::Status st = handlers_->Heartbeat("site-1", Beat("site-1", 1), &reply);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(reply.site(), "site-0");
  auto p = site_->membership().Find("site-1");
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->up);
  EXPECT_EQ(p->last_seen, env_.Now());
  EXPECT_EQ(p->load, 7);
  EXPECT_EQ(p->capacity, 2);
}

TEST_F(PeerHandlersTest, AHeartbeatClaimingAnotherSiteThanItsCallerIsDeniedAndChangesNothing) {
  v1::HeartbeatReply reply;
  absl::Status st = handlers_->Heartbeat("site-2", Beat("site-1", 1), &reply);
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied) << st;
  EXPECT_EQ(st.message(), "certificate names 'site-2' but the request claims 'site-1'");
  EXPECT_EQ(LastSeen("site-1"), absl::InfinitePast());
  EXPECT_EQ(LastSeen("site-2"), absl::InfinitePast());
  // No caller at all (a call without a certificate).
  st = handlers_->Heartbeat("", Beat("site-1", 1), &reply);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnauthenticated) << st;
  EXPECT_EQ(LastSeen("site-1"), absl::InfinitePast());
}

TEST_F(PeerHandlersTest, AHeartbeatWithAnOverlongRoundIdIsInvalidAndChangesNothing) {
  v1::HeartbeatReply reply;
  v1::HeartbeatRequest hb = Beat("site-1", 1);
  hb.set_round_id(std::string(201, 'r'));
  EXPECT_EQ(handlers_->Heartbeat("site-1", hb, &reply).code(), absl::StatusCode::kInvalidArgument);
  hb.set_round_id("");
  hb.set_last_round(std::string(201, 'r'));
  EXPECT_EQ(handlers_->Heartbeat("site-1", hb, &reply).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LastSeen("site-1"), absl::InfinitePast());
}

TEST_F(PeerHandlersTest, GetReportChecksItsCallerAndRoundId) {
  v1::GetReportRequest req;
  req.set_site("site-1");
  req.set_round_id("site-1-1700000000000-4");
  v1::RoundReport reply;
  // The round's own coordinator gets this site's report (from its journal:
  // nothing committed here).
  absl::Status st = handlers_->GetReport("site-1", req, &reply);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(reply.site(), "site-0");
  EXPECT_TRUE(reply.from_journal());
  EXPECT_EQ(reply.transfers_size(), 0);
  // Another caller than the claimed site.
  EXPECT_EQ(handlers_->GetReport("site-2", req, &reply).code(), absl::StatusCode::kPermissionDenied);
  // A well-formed id of another coordinator's round.
  req.set_round_id("site-2-1700000000000-4");
  EXPECT_EQ(handlers_->GetReport("site-1", req, &reply).code(), absl::StatusCode::kPermissionDenied);
  // Ids that are no round's.
  for (const std::string& bad :
       {std::string(), std::string("site-1"), std::string("site-1-x-4"), std::string("-17-4"), std::string(201, '1')}) {
    req.set_round_id(bad);
    EXPECT_EQ(handlers_->GetReport("site-1", req, &reply).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST_F(PeerHandlersTest, AReportWithATransferFromAnotherSitesLabelIsInvalid) {
  v1::RoundReport r;
  r.set_round_id("site-0-1700000000000-1");
  r.set_site("site-1");
  r.set_label(1);
  r.set_capacity(2);
  v1::Transfer* t = r.add_transfers();
  t->set_from(2);  // site-2's label: a report speaks only for its own site
  t->set_to(3);
  t->set_count(5);
  v1::ReportRoundReply reply;
  EXPECT_EQ(handlers_->ReportRound("site-1", r, &reply).code(), absl::StatusCode::kInvalidArgument);
  t->set_from(1);
  t->set_count(-5);
  EXPECT_EQ(handlers_->ReportRound("site-1", r, &reply).code(), absl::StatusCode::kInvalidArgument);
  t->set_count(5);
  r.set_error(std::string(1001, 'e'));
  EXPECT_EQ(handlers_->ReportRound("site-1", r, &reply).code(), absl::StatusCode::kInvalidArgument);
  // Well formed, it reaches the site, which runs no such round.
  r.set_error("");
  EXPECT_EQ(handlers_->ReportRound("site-1", r, &reply).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(PeerHandlersTest, AnExchangeWithARowOutsideTheCubeIsInvalid) {
  v1::ExchangeRequest ex = Up();
  v1::LoadRow* row = ex.add_rows();
  row->set_label(7);  // the roster of 4 sites makes a 2-cube
  row->set_load(1);
  row->set_capacity(1);
  v1::ExchangeReply reply;
  absl::Status st = handlers_->Exchange("site-1", ex, &reply);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_EQ(st.message(), "row label 7 outside the 2-cube");
  EXPECT_EQ(reply.rows_size(), 0);
}

TEST_F(PeerHandlersTest, EpochsAreCheckedAgainstTheSitesClock) {
  // A day and a minute ahead of the fake clock: refused, whatever the real
  // clock says.
  v1::ExchangeRequest ex = Up();
  ex.set_epoch(absl::ToUnixMillis(env_.Now() + absl::Hours(24) + absl::Minutes(1)));
  v1::ExchangeReply reply;
  absl::Status st = handlers_->Exchange("site-1", ex, &reply);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_EQ(st.message(), "epoch must be > 0 and at most a day ahead of this site's clock");
  // The same epoch once the fake clock has moved on is no longer ahead.
  env_.Advance(absl::Hours(1));
  v1::HeartbeatRequest hb = Beat("site-1", 1);
  hb.set_epoch(ex.epoch());
  v1::HeartbeatReply hb_reply;
  st = handlers_->Heartbeat("site-1", hb, &hb_reply);
  EXPECT_TRUE(st.ok()) << st;
}

TEST_F(PeerHandlersTest, WithoutARosterKeeperGetRosterIsUnavailable) {
  v1::GetRosterRequest req;
  req.set_site("site-1");
  v1::SignedRoster reply;
  absl::Status st = handlers_->GetRoster("site-1", req, &reply);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
  EXPECT_EQ(st.message(), "no roster keeper");
}

// Issue 34, findings 2 and 5, at the RPC edge: a Transfer's jobs reach the
// scheduler with the caller's site as their source whatever the request's
// specs say, and a job the site refuses fails alone, named in the reply's
// refused_keys, which the conversion carries both ways.
TEST_F(PeerHandlersTest, ATransferTakesTheCallersSiteAndNamesTheJobsItRefuses) {
  migration::testing::TempDir dir;
  auto journal = migration::Journal::Open(dir.File("journal.db"));
  ASSERT_TRUE(journal.ok()) << journal.status();
  migration::Migrator migrator("site-0", &adapter_, journal->get(), nullptr, &env_, 100);
  ServiceDeps deps;
  deps.config = &config_;
  deps.live = live_.get();
  deps.site = site_.get();
  deps.env = &env_;
  deps.migrator = &migrator;
  PeerHandlers handlers(deps);
  adapter_.RefuseSpecsNamed("bad");
  v1::TransferRequest req;
  req.set_migration_id("site-1:1");
  req.set_source_site("site-1");
  for (const char* name : {"good", "bad", "fine"}) {
    v1::JobSpec* s = req.add_jobs();
    s->set_name(name);
    s->set_key(std::string("k-") + name);
    s->set_script("#!/bin/sh\ntrue\n");
    s->set_cores(1);
  }
  v1::TransferReply reply;
  // A caller claiming another site is denied and changes nothing.
  EXPECT_EQ(handlers.Transfer("site-2", req, &reply).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(adapter_.SubmittedSources().empty());
  ASSERT_TRUE(handlers.Transfer("site-1", req, &reply).ok());
  EXPECT_EQ(reply.new_ids_size(), 2);
  ASSERT_EQ(reply.refused_keys_size(), 1);
  EXPECT_EQ(reply.refused_keys(0), "k-bad");
  for (const std::string& source : adapter_.SubmittedSources()) EXPECT_EQ(source, "site-1");
  const migration::TransferReply back = FromProto(reply);
  EXPECT_EQ(back.new_ids.size(), 2u);
  EXPECT_EQ(back.refused_keys, std::vector<std::string>{"k-bad"});
  v1::AbortRequest abort;
  abort.set_migration_id("site-1:1");
  abort.set_source_site("site-1");
  v1::AbortReply ab;
  ASSERT_TRUE(handlers.Abort("site-1", abort, &ab).ok());
  EXPECT_FALSE(ab.aborted());
  EXPECT_EQ(FromProto(ab).refused_keys, std::vector<std::string>{"k-bad"});
}

}  // namespace
}  // namespace hyperfed::server
