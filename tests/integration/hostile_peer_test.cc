// A hostile or buggy peer (docs/security.md): a stand-in that holds a valid
// site certificate (site-3's) tries each federation-level abuse against real
// daemons over gRPC. Each is refused with the right code and changes
// nothing; afterwards real rounds still run and every job key exists
// exactly once with none held. (The scheduler-level rows run against a
// real Slurm in tests/scheduler/slurm_hostile_test.cc; the network-level ones in
// hostile_network_test.cc.)

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

constexpr int kHostile = 3;
const char kHostileId[] = "site-3";

std::unique_ptr<grpc::ClientContext> Ctx(int seconds = 20) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return c;
}

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

class HostilePeerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto f = TestFederation::Start({.sites = 4, .max_batch = 10});
    ASSERT_TRUE(f.ok()) << f.status();
    fed_ = f->release();
    ASSERT_TRUE(Submit(*fed_, 0, 24, 600000).ok());
  }
  static void TearDownTestSuite() {
    delete fed_;
    fed_ = nullptr;
  }
  // What site `at` says of `site` (its Status row).
  static v1::SiteStatus Row(int at, const std::string& site) {
    v1::StatusReply s;
    auto c = fed_->Context();
    EXPECT_TRUE(fed_->Admin(at)->Status(c.get(), v1::StatusRequest(), &s).ok());
    for (const auto& row : s.sites())
      if (row.site() == site) return row;
    return {};
  }
  // Every key exactly once, none held, at the end of each test.
  void TearDown() override {
    std::multiset<std::string> keys = AllKeys(*fed_);
    EXPECT_EQ(keys.size(), 24u);
    for (const std::string& k : keys) EXPECT_EQ(k.find('#'), std::string::npos) << k << " twice";
    for (int i = 0; i < fed_->size(); ++i) EXPECT_EQ(CountState(ListJobs(*fed_, i), "held"), 0) << "site-" << i;
  }
  static TestFederation* fed_;
};
TestFederation* HostilePeerTest::fed_ = nullptr;

// An EXCHANGE of a made-up round from the hostile site to its partner
// site-1 across dimension 1, carrying one row of its own.
v1::ExchangeRequest ExchangeFromHostile(int64_t load, double capacity) {
  v1::ExchangeRequest ex;
  ex.set_round_id("r-hostile");
  ex.set_epoch(NowMs());
  ex.set_kind(v1::ExchangeRequest::EXCHANGE);
  ex.set_dimension(1);
  ex.set_from_label(kHostile);
  v1::LoadRow* row = ex.add_rows();
  row->set_label(kHostile);
  row->set_load(load);
  row->set_capacity(capacity);
  return ex;
}

TEST_F(HostilePeerTest, Row4_CapacityAndLoadBeyondTheRosterAreRefused) {
  const double before = Row(0, kHostileId).capacity();
  struct Claim {
    double capacity;
    int64_t load;
  };
  for (const Claim& c : {Claim{1e300, 1}, Claim{std::numeric_limits<double>::infinity(), 1},
                         Claim{std::nan(""), 1}, Claim{2e6, 1}, Claim{-1, 1}, Claim{4, int64_t{1} << 40}}) {
    v1::HeartbeatRequest hb;
    hb.set_site(kHostileId);
    hb.set_label(kHostile);
    hb.set_capacity(c.capacity);
    hb.set_load(c.load);
    v1::HeartbeatReply reply;
    auto ctx = Ctx();
    grpc::Status st = PeerAs(*fed_, 0, kHostileId)->Heartbeat(ctx.get(), hb, &reply);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.capacity << " " << st.error_message();
  }
  EXPECT_EQ(Row(0, kHostileId).capacity(), before) << "site-0's view is unchanged";
  // The same numbers inside a round message.
  v1::ExchangeRequest ex = ExchangeFromHostile(1, 1e300);
  v1::ExchangeReply er;
  auto ctx = Ctx();
  grpc::Status st = PeerAs(*fed_, 1, kHostileId)->Exchange(ctx.get(), ex, &er);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
}

// A start profile is numbers from a peer too (docs/algorithms.md, "Jobs
// that gain"): a widest job above the roster's max_capacity, free cores
// beyond it, offsets not from 0 or beyond a year, or too many steps.
TEST_F(HostilePeerTest, Row4_StartProfilesBeyondTheRosterOrMalformedAreRefused) {
  {
    v1::HeartbeatRequest hb;
    hb.set_site(kHostileId);
    hb.set_label(kHostile);
    hb.set_capacity(4);
    hb.set_load(1);
    hb.set_widest(int64_t{1} << 40);
    v1::HeartbeatReply reply;
    auto ctx = Ctx();
    grpc::Status st = PeerAs(*fed_, 0, kHostileId)->Heartbeat(ctx.get(), hb, &reply);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  }
  struct Bad {
    const char* what;
    int64_t widest;
    std::vector<std::pair<int64_t, int64_t>> free;
  };
  std::vector<std::pair<int64_t, int64_t>> many;
  for (int64_t t = 0; t < 33; ++t) many.push_back({t, 1});
  for (const Bad& b : {Bad{"widest above max_capacity", 2'000'000, {{0, 1}}},
                       Bad{"more free than widest", 4, {{0, 5}}},
                       Bad{"not from 0", 4, {{5, 1}}},
                       Bad{"not ascending", 4, {{0, 1}, {0, 2}}},
                       Bad{"beyond a year", 4, {{0, 1}, {int64_t{400} * 24 * 3600 * 1000, 4}}},
                       Bad{"33 steps", 4, many}}) {
    v1::ExchangeRequest ex = ExchangeFromHostile(1, 4);
    v1::LoadRow* row = ex.mutable_rows(0);
    row->set_widest(b.widest);
    for (const auto& [offset, cores] : b.free) {
      v1::FreeAt* f = row->add_free();
      f->set_offset_ms(offset);
      f->set_cores(cores);
    }
    v1::ExchangeReply er;
    auto ctx = Ctx();
    grpc::Status st = PeerAs(*fed_, 1, kHostileId)->Exchange(ctx.get(), ex, &er);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << b.what << ": " << st.error_message();
    // Heartbeats carry the profile too (protocol 1.4, placement at
    // arrival): the same check.
    v1::HeartbeatRequest hb;
    hb.set_site(kHostileId);
    hb.set_label(kHostile);
    hb.set_capacity(4);
    hb.set_load(1);
    hb.set_protocol("1.4");
    hb.set_widest(b.widest);
    for (const auto& [offset, cores] : b.free) {
      v1::FreeAt* f = hb.add_free();
      f->set_offset_ms(offset);
      f->set_cores(cores);
    }
    v1::HeartbeatReply hr;
    auto hctx = Ctx();
    st = PeerAs(*fed_, 0, kHostileId)->Heartbeat(hctx.get(), hb, &hr);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << "heartbeat, " << b.what << ": " << st.error_message();
  }
}

TEST_F(HostilePeerTest, Row4_ATransferThePlanDoesNotSendIsRefused) {
  for (const std::string& round : {std::string("made-up-round"), std::string()}) {
    v1::TransferRequest t;
    t.set_migration_id(absl::StrCat(kHostileId, ":1000", round.size()));
    t.set_source_site(kHostileId);
    t.set_round_id(round);
    v1::JobSpec* j = t.add_jobs();
    j->set_key("planted-" + std::to_string(round.size()));
    j->set_name("planted");
    j->set_script("#!/bin/sh\ntrue\n");
    j->set_cores(1);
    v1::TransferReply reply;
    auto ctx = Ctx();
    grpc::Status st = PeerAs(*fed_, 1, kHostileId)->Transfer(ctx.get(), t, &reply);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << st.error_message();
    EXPECT_NE(st.error_message().find("round"), std::string::npos) << st.error_message();
  }
  for (const v1::Job& j : ListJobs(*fed_, 1)) EXPECT_EQ(j.spec().name(), "job") << "nothing planted";
}

TEST_F(HostilePeerTest, Row5_OnlyTheCoordinatorASiteRecognisesStartsARound) {
  v1::StartRoundRequest req;
  req.set_round_id("r-by-site-3");
  req.set_coordinator(kHostileId);  // names itself, with its own mode and fault set
  req.set_dimension(2);
  req.set_mode("mcwa");
  req.add_fault_labels(0);
  req.set_epoch(NowMs() + 3600 * 1000);
  req.set_deadline_unix_ms(NowMs() + 60 * 1000);
  v1::StartRoundReply reply;
  auto ctx = Ctx();
  grpc::Status st = PeerAs(*fed_, 1, kHostileId)->StartRound(ctx.get(), req, &reply);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_FALSE(reply.accepted());
  EXPECT_NE(reply.why_not().find("not the coordinator"), std::string::npos) << reply.why_not();
  // The real coordinator's round is not refused as busy or older.
  auto r = RunRound(*fed_, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok()) << r->message();
}

TEST_F(HostilePeerTest, Row6_MigrationIdsAreBoundToTheirSource) {
  // site-3 claims a migration id of site-0's, then aborts another.
  v1::TransferRequest t;
  t.set_migration_id("site-0:1");
  t.set_source_site(kHostileId);
  t.set_round_id("any");
  v1::JobSpec* j = t.add_jobs();
  j->set_key("claimed");
  j->set_script("#!/bin/sh\ntrue\n");
  j->set_cores(1);
  v1::TransferReply tr;
  auto c1 = Ctx();
  grpc::Status st = PeerAs(*fed_, 1, kHostileId)->Transfer(c1.get(), t, &tr);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  for (int i = 1; i <= 20; ++i) {
    v1::AbortRequest a;
    a.set_migration_id(absl::StrCat("site-0:", i));
    a.set_source_site(kHostileId);
    v1::AbortReply ar;
    auto c2 = Ctx();
    st = PeerAs(*fed_, 1, kHostileId)->Abort(c2.get(), a, &ar);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  }
  // site-0's own moves to site-1 still go through.
  auto r = RunRound(*fed_, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok()) << r->message();
}

TEST_F(HostilePeerTest, Row8_RoundMessagesOnlyFromExpectedSitesOnceEachAndBounded) {
  auto exchange = [](int to, int kind, const std::string& round, int from, int rows) {
    v1::ExchangeRequest ex;
    ex.set_round_id(round);
    ex.set_epoch(NowMs() + 3600 * 1000);
    ex.set_kind(static_cast<v1::ExchangeRequest::Kind>(kind));
    ex.set_from_label(from);
    for (int i = 0; i < rows; ++i) {
      v1::LoadRow* r = ex.add_rows();
      r->set_label(i % 4);
      r->set_load(1);
      r->set_capacity(1);
    }
    v1::ExchangeReply reply;
    auto ctx = Ctx();
    return PeerAs(*fed_, to, kHostileId)->Exchange(ctx.get(), ex, &reply).error_code();
  };
  // Label 3 is no neighbour of label 0: it sends site-0 no UP.
  EXPECT_EQ(exchange(0, v1::ExchangeRequest::UP, "early-a", kHostile, 1), grpc::StatusCode::PERMISSION_DENIED);
  // More rows than the cube has positions.
  EXPECT_EQ(exchange(1, v1::ExchangeRequest::UP, "early-a", kHostile, 5), grpc::StatusCode::INVALID_ARGUMENT);
  // To its neighbour site-1: once each, and two rounds not started there.
  EXPECT_EQ(exchange(1, v1::ExchangeRequest::UP, "early-a", kHostile, 1), grpc::StatusCode::OK);
  EXPECT_EQ(exchange(1, v1::ExchangeRequest::UP, "early-a", kHostile, 1), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(exchange(1, v1::ExchangeRequest::UP, "early-b", kHostile, 1), grpc::StatusCode::OK);
  EXPECT_EQ(exchange(1, v1::ExchangeRequest::UP, "early-c", kHostile, 1), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // The junk it left crowds out no one else's: a real round runs whole.
  auto r = RunRound(*fed_, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok()) << r->message();
}

TEST_F(HostilePeerTest, Row11_ReportsOnlyFromTheRoundsSites) {
  v1::RoundReport rep;
  rep.set_round_id("a-round-not-running");
  rep.set_site(kHostileId);
  rep.set_label(kHostile);
  rep.set_ok(true);
  rep.set_capacity(4);
  v1::ReportRoundReply reply;
  auto ctx = Ctx();
  grpc::Status st = PeerAs(*fed_, 0, kHostileId)->ReportRound(ctx.get(), rep, &reply);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << st.error_message();
}

// Issue 34 (findings 6 and 7). The lowest live label is the coordinator;
// here site-0's certificate stands in for a hostile one that holds it.
v1::StartRoundRequest StartFromSite0(const std::string& id) {
  v1::StartRoundRequest req;
  req.set_round_id(id);
  req.set_coordinator("site-0");
  req.set_dimension(2);
  req.set_mode("exact");
  req.set_epoch(NowMs());
  req.set_deadline_unix_ms(NowMs() + 60 * 1000);
  return req;
}

TEST_F(HostilePeerTest, Issue34_ACoordinatorsFaultSetNamingASiteTheParticipantHearsIsDeclined) {
  v1::StartRoundRequest req = StartFromSite0("site-0-hostile-faults");
  req.add_fault_labels(3);  // site-3, site-1's cube neighbour: site-1 hears it every interval
  v1::StartRoundReply reply;
  auto ctx = Ctx();
  grpc::Status st = PeerAs(*fed_, 1, "site-0")->StartRound(ctx.get(), req, &reply);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_FALSE(reply.accepted());
  EXPECT_NE(reply.why_not().find("names site-3 (label 3) as down, but this site hears from it"), std::string::npos)
      << reply.why_not();
  auto r = RunRound(*fed_, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok()) << r->message();
}

TEST_F(HostilePeerTest, Issue34_AStartWithAWildEpochIsRefusedWhateverItsRosterVersion) {
  for (int64_t version : {0, 7}) {  // this site's, and one it does not have
    v1::StartRoundRequest req = StartFromSite0(absl::StrCat("site-0-hostile-epoch-", version));
    req.set_epoch(std::numeric_limits<int64_t>::max());
    req.set_roster_version(version);
    v1::StartRoundReply reply;
    auto ctx = Ctx();
    grpc::Status st = PeerAs(*fed_, 1, "site-0")->StartRound(ctx.get(), req, &reply);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << version << ": " << st.error_message();
    EXPECT_FALSE(reply.accepted());
  }
  // Nothing was fenced off: the real coordinator's rounds run.
  auto r = RunRound(*fed_, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok()) << r->message();
}

}  // namespace
}  // namespace hyperfed::testing
