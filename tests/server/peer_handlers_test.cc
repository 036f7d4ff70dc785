// The Peer handlers without gRPC (daemon/server/peer_handlers.h), called the
// way a simulator calls them: a request with the site the transport
// authenticated, delivered to a Site on a fake clock. A request that claims
// another site than its caller, or carries a bad field, is refused and
// changes nothing; a good one reaches the Site.

#include "daemon/server/peer_handlers.h"

#include <chrono>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/balance/quota.h"
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
  std::vector<absl::StatusOr<federation::ProbeAck>> Heartbeats(const std::vector<std::string>& sites,
                                                               const federation::HeartbeatInfo&,
                                                               const std::vector<federation::Gossip>&,
                                                               absl::Duration) override {
    return std::vector<absl::StatusOr<federation::ProbeAck>>(sites.size(), absl::UnavailableError("no peers"));
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

// docs/security.md, "Membership": a heartbeat's news and relayed rows are
// checked as its own row is; one bad item refuses the heartbeat whole.
TEST_F(PeerHandlersTest, GossipOutOfBoundsIsRefusedAndChangesNothing) {
  const int64_t now_ms = absl::ToUnixMillis(env_.Now());
  std::vector<std::pair<std::string, std::function<void(v1::HeartbeatRequest*)>>> bad = {
      {"news of a label no site has", [](v1::HeartbeatRequest* hb) { hb->add_news()->set_label(9); }},
      {"news with no state",
       [](v1::HeartbeatRequest* hb) {
         auto* n = hb->add_news();
         n->set_label(2);
       }},
      {"news a year ahead",
       [&](v1::HeartbeatRequest* hb) {
         auto* n = hb->add_news();
         n->set_label(2);
         n->set_state(v1::DOWN);
         n->set_incarnation(now_ms + absl::ToInt64Milliseconds(absl::Hours(24 * 365)));
       }},
      {"news by a label no site has",
       [](v1::HeartbeatRequest* hb) {
         auto* n = hb->add_news();
         n->set_label(2);
         n->set_state(v1::SUSPECT);
         n->set_by(77);
       }},
      {"a relayed row under another site's label",
       [](v1::HeartbeatRequest* hb) {
         auto* r = hb->add_rows()->mutable_row();
         r->set_site("site-2");
         r->set_label(3);
       }},
      {"a relayed row with a negative load",
       [](v1::HeartbeatRequest* hb) {
         auto* r = hb->add_rows()->mutable_row();
         r->set_site("site-2");
         r->set_label(2);
         r->set_load(-1);
       }},
      {"a relayed row a year old",
       [](v1::HeartbeatRequest* hb) {
         auto* r = hb->add_rows();
         r->mutable_row()->set_site("site-2");
         r->mutable_row()->set_label(2);
         r->set_age_ms(absl::ToInt64Milliseconds(absl::Hours(24 * 365)));
       }},
      {"a relayed row that carries news of its own",
       [](v1::HeartbeatRequest* hb) {
         auto* r = hb->add_rows()->mutable_row();
         r->set_site("site-2");
         r->set_label(2);
         auto* n = r->add_news();
         n->set_label(3);
         n->set_state(v1::DOWN);
       }},
      {"65 relayed rows",
       [](v1::HeartbeatRequest* hb) {
         for (int i = 0; i < 65; ++i) {
           auto* r = hb->add_rows()->mutable_row();
           r->set_site("site-2");
           r->set_label(2);
         }
       }},
      {"an incarnation a year ahead",
       [&](v1::HeartbeatRequest* hb) {
         hb->set_incarnation(now_ms + absl::ToInt64Milliseconds(absl::Hours(24 * 365)));
       }},
  };
  for (const auto& [what, spoil] : bad) {
    v1::HeartbeatRequest hb = Beat("site-1", 1);
    spoil(&hb);
    v1::HeartbeatReply reply;
    EXPECT_EQ(handlers_->Heartbeat("site-1", hb, &reply).code(), absl::StatusCode::kInvalidArgument) << what;
    EXPECT_EQ(LastSeen("site-1"), absl::InfinitePast()) << what;
    EXPECT_TRUE(site_->membership().Find("site-2")->up) << what;
  }
  // Well formed, they are taken: site-2 is down on site-1's word (not heard
  // here), site-3's row comes relayed.
  v1::HeartbeatRequest hb = Beat("site-1", 1);
  hb.set_incarnation(now_ms);
  auto* n = hb.add_news();
  n->set_label(2);
  n->set_state(v1::DOWN);
  n->set_by(1);
  auto* r = hb.add_rows()->mutable_row();
  r->set_site("site-3");
  r->set_label(3);
  r->set_load(42);
  r->set_capacity(2);
  v1::HeartbeatReply reply;
  ASSERT_TRUE(handlers_->Heartbeat("site-1", hb, &reply).ok());
  EXPECT_FALSE(site_->membership().Find("site-2")->up);
  EXPECT_EQ(site_->membership().Find("site-3")->load, 42);
  EXPECT_EQ(reply.incarnation(), site_->membership().incarnation()) << "the answer says this site's";
}

TEST_F(PeerHandlersTest, ProbeForIsCheckedAndAnswersWhetherTheTargetAnswered) {
  v1::ProbeForRequest req;
  req.set_site("site-1");
  req.set_target("site-2");
  req.set_timeout_ms(300);
  v1::ProbeForReply reply;
  EXPECT_EQ(handlers_->ProbeFor("site-2", req, &reply).code(), absl::StatusCode::kPermissionDenied);
  for (const std::string t : {"site-1", "site-0", "site-9"}) {
    v1::ProbeForRequest other = req;
    other.set_target(t);
    EXPECT_EQ(handlers_->ProbeFor("site-1", other, &reply).code(), absl::StatusCode::kInvalidArgument) << t;
  }
  for (int64_t ms : {0, -5, 2000}) {  // the interval is 1 s
    v1::ProbeForRequest other = req;
    other.set_timeout_ms(ms);
    EXPECT_EQ(handlers_->ProbeFor("site-1", other, &reply).code(), absl::StatusCode::kInvalidArgument) << ms;
  }
  // Well formed: this site (no peers reachable here) says the target did not
  // answer.
  site_->HeartbeatOnce();
  ASSERT_TRUE(handlers_->ProbeFor("site-1", req, &reply).ok());
  EXPECT_FALSE(reply.answered());
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

// A dry run asks each site its row now (Peer.CurrentLoad, protocol 1.5):
// the pending jobs its scheduler holds at the moment, not at its last
// heartbeat; only the site the request names may ask.
TEST_F(PeerHandlersTest, CurrentLoadAnswersThisSitesRowAsItIsNow) {
  v1::CurrentLoadRequest req;
  req.set_site("site-1");
  v1::LoadRow row;
  ASSERT_TRUE(handlers_->CurrentLoad("site-1", req, &row).ok());
  EXPECT_EQ(row.label(), 0);
  EXPECT_EQ(row.load(), 0);
  EXPECT_EQ(row.capacity(), 2);
  for (int i = 0; i < 3; ++i) adapter_.Add({.name = "j" + std::to_string(i)});
  ASSERT_TRUE(handlers_->CurrentLoad("site-1", req, &row).ok());
  EXPECT_EQ(row.load(), 3);
  EXPECT_EQ(handlers_->CurrentLoad("site-2", req, &row).code(), absl::StatusCode::kPermissionDenied);
  req.set_site("site-9");
  EXPECT_EQ(handlers_->CurrentLoad("site-9", req, &row).code(), absl::StatusCode::kPermissionDenied);
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

// Protocol 1.9, the exact round by prefix sums: scan totals no subcube of
// their dimension can have are refused and stored nowhere (the well-formed
// totals that follow are taken, once); so are totals from outside the
// partner's subcube, and on other kinds.
TEST_F(PeerHandlersTest, ScanTotalsNoSubcubeCanHaveAreRefusedAndChangeNothing) {
  const int64_t w = balance::CapacityWeight(2);
  auto scan = [&](int from, int dimension, auto edit) {
    v1::ExchangeRequest ex = Up();
    ex.set_from_label(from);
    ex.set_kind(v1::ExchangeRequest::SCAN);
    ex.set_dimension(dimension);
    v1::ScanTotals* t = ex.mutable_totals();
    t->set_load(5);
    t->set_weight_low(w);
    t->set_live(1);
    t->set_min_weight(w);
    t->set_max_weight(w);
    edit(&ex);
    v1::ExchangeReply reply;
    return handlers_->Exchange(absl::StrCat("site-", from), ex, &reply);
  };
  using Edit = std::function<void(v1::ExchangeRequest*)>;
  const std::vector<std::pair<std::string, Edit>> hostile{
      {"two sites in a 0-subcube", [](v1::ExchangeRequest* ex) { ex->mutable_totals()->set_live(2); }},
      {"a negative load", [](v1::ExchangeRequest* ex) { ex->mutable_totals()->set_load(-1); }},
      {"a weight above live x max", [](v1::ExchangeRequest* ex) { ex->mutable_totals()->set_weight_high(1); }},
      {"min above max", [&](v1::ExchangeRequest* ex) { ex->mutable_totals()->set_min_weight(w + 1); }},
      {"a weight beyond any capacity",
       [](v1::ExchangeRequest* ex) { ex->mutable_totals()->set_max_weight((int64_t{1} << 62) + 1); }},
      {"a load beyond what one site may hold",
       [](v1::ExchangeRequest* ex) { ex->mutable_totals()->set_load(config::kMaxReportedLoad + 1); }},
      {"no live site but a load", [](v1::ExchangeRequest* ex) { ex->mutable_totals()->set_live(0); }},
      {"no totals", [](v1::ExchangeRequest* ex) { ex->clear_totals(); }},
      {"a dimension outside the cube", [](v1::ExchangeRequest* ex) { ex->set_dimension(2); }},
      {"rows", [](v1::ExchangeRequest* ex) { ex->add_rows()->set_label(1); }},
      {"a phase", [](v1::ExchangeRequest* ex) { ex->set_phase(1); }},
  };
  for (const auto& [what, edit] : hostile)
    EXPECT_EQ(scan(1, 0, edit).code(), absl::StatusCode::kInvalidArgument) << what;
  EXPECT_EQ(scan(2, 0, [](v1::ExchangeRequest*) {}).code(), absl::StatusCode::kPermissionDenied)
      << "label 2 is not across dimension 0 from label 0";
  EXPECT_EQ(scan(2, 0, [](v1::ExchangeRequest* ex) { ex->set_from_label(1); }).code(),
            absl::StatusCode::kPermissionDenied)
      << "site-2 claims label 1";
  v1::ExchangeRequest up = Up();
  *up.mutable_totals() = v1::ScanTotals();
  v1::ExchangeReply reply;
  EXPECT_EQ(handlers_->Exchange("site-1", up, &reply).code(), absl::StatusCode::kInvalidArgument)
      << "only SCAN carries totals";
  // Nothing of the above was stored: the well-formed totals are taken, once.
  absl::Status st = scan(1, 0, [](v1::ExchangeRequest*) {});
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(scan(1, 0, [](v1::ExchangeRequest*) {}).code(), absl::StatusCode::kAlreadyExists);
  // Label 3 is in the subcube across dimension 1 (a stand-in's totals).
  st = scan(3, 1, [&](v1::ExchangeRequest* ex) {
    ex->mutable_totals()->set_live(2);
    ex->mutable_totals()->set_weight_low(2 * w);
  });
  EXPECT_TRUE(st.ok()) << st;
}

// A LOOKUP's run, level and position are bounded before it reaches the
// site: a run of a level outside the cube, an empty or reversed run, one
// beyond the federation's load, a level above the run's, a negative
// position, another site's row, and the fields on other kinds.
TEST_F(PeerHandlersTest, LookupsOutOfBoundsAreRefused) {
  auto lookup = [&](auto edit) {
    v1::ExchangeRequest ex = Up();
    ex.set_from_label(2);
    ex.set_kind(v1::ExchangeRequest::LOOKUP);
    ex.mutable_run()->set_level(1);
    ex.mutable_run()->set_begin(0);
    ex.mutable_run()->set_end(3);
    ex.set_level(1);
    ex.set_position(0);
    edit(&ex);
    v1::ExchangeReply reply;
    // One that got through would wait for this site's scan, which never
    // comes: the fake clock is moved past that wait, and the answer is
    // not the refusal expected.
    auto call = std::async(std::launch::async, [&] { return handlers_->Exchange("site-2", ex, &reply); });
    if (call.wait_for(std::chrono::seconds(2)) != std::future_status::ready) env_.Advance(absl::Minutes(5));
    absl::Status st = call.get();
    EXPECT_FALSE(reply.has_lookup());
    return st.code();
  };
  using Edit = std::function<void(v1::ExchangeRequest*)>;
  const std::vector<std::pair<std::string, Edit>> hostile{
      {"no run", [](v1::ExchangeRequest* ex) { ex->clear_run(); }},
      {"a run level outside the cube", [](v1::ExchangeRequest* ex) { ex->mutable_run()->set_level(2); }},
      {"a negative run level", [](v1::ExchangeRequest* ex) { ex->mutable_run()->set_level(-1); }},
      {"an empty run", [](v1::ExchangeRequest* ex) { ex->mutable_run()->set_end(0); }},
      {"a negative begin", [](v1::ExchangeRequest* ex) { ex->mutable_run()->set_begin(-1); }},
      {"a run beyond any load",
       [](v1::ExchangeRequest* ex) { ex->mutable_run()->set_end(std::numeric_limits<int64_t>::max()); }},
      {"a level above the run's", [](v1::ExchangeRequest* ex) { ex->mutable_run()->set_level(0); }},
      {"a negative position", [](v1::ExchangeRequest* ex) { ex->set_position(-1); }},
      {"a position beyond any load",
       [](v1::ExchangeRequest* ex) { ex->set_position(std::numeric_limits<int64_t>::max()); }},
      {"a dimension", [](v1::ExchangeRequest* ex) { ex->set_dimension(1); }},
      {"another site's row", [](v1::ExchangeRequest* ex) { ex->add_rows()->set_label(1); }},
      {"two rows",
       [](v1::ExchangeRequest* ex) {
         ex->add_rows()->set_label(2);
         ex->add_rows()->set_label(2);
       }},
      {"totals", [](v1::ExchangeRequest* ex) { ex->mutable_totals(); }},
  };
  for (const auto& [what, edit] : hostile) EXPECT_EQ(lookup(edit), absl::StatusCode::kInvalidArgument) << what;
  v1::ExchangeRequest up = Up();
  up.set_position(1);
  v1::ExchangeReply reply;
  EXPECT_EQ(handlers_->Exchange("site-1", up, &reply).code(), absl::StatusCode::kInvalidArgument)
      << "only LOOKUP carries a position";
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

// A profile's age (protocol 1.6) keeps jobs booked at the peers that placed
// them: a negative one, or one beyond a day, is refused.
TEST_F(PeerHandlersTest, AHeartbeatsProfileAgeIsBounded) {
  v1::HeartbeatReply reply;
  for (int64_t bad : {int64_t{-1}, absl::ToInt64Milliseconds(absl::Hours(24)) + 1}) {
    v1::HeartbeatRequest hb = Beat("site-1", 1);
    hb.set_profile_age_ms(bad);
    absl::Status st = handlers_->Heartbeat("site-1", hb, &reply);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(st.message(), "profile_age_ms must be between 0 and a day") << bad;
  }
  v1::HeartbeatRequest hb = Beat("site-1", 1);
  hb.set_profile_age_ms(1500);
  absl::Status st = handlers_->Heartbeat("site-1", hb, &reply);
  EXPECT_TRUE(st.ok()) << st;
}

// Peer.LeftRound (protocol 1.6) is only the round's coordinator's to send,
// and names positions of the cube, each once, with a bounded reason.
TEST_F(PeerHandlersTest, LeftRoundIsTheCoordinatorsAndNamesPositionsOfTheCube) {
  v1::LeftRoundReply reply;
  auto request = [](const std::string& round, std::vector<int> labels, size_t why = 10) {
    v1::LeftRoundRequest req;
    req.set_site("site-1");
    req.set_round_id(round);
    for (int label : labels) {
      auto* l = req.add_left();
      l->set_label(label);
      l->set_why(std::string(why, 'x'));
    }
    return req;
  };
  absl::Status st = handlers_->LeftRound("site-1", request("site-2-1700000000000-1", {3}), &reply);
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied) << st;
  st = handlers_->LeftRound("site-2", request("site-1-1700000000000-1", {3}), &reply);
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied) << st;
  for (const auto& [bad, message] : std::vector<std::pair<v1::LeftRoundRequest, std::string>>{
           {request("site-1-1700000000000-1", {4}), "left: label 4 outside the 4-position cube"},
           {request("site-1-1700000000000-1", {-1}), "left: label -1 outside the 4-position cube"},
           {request("site-1-1700000000000-1", {2, 2}), "left: label 2 twice"},
           {request("site-1-1700000000000-1", {0, 1, 2, 3, 0}), "left: more than the cube's 4 positions"},
           {request("site-1-1700000000000-1", {2}, 1001), "left: why over 1000 characters"},
           {request("r1", {2}), "round_id 'r1' is not of the form <site>-<unix ms>-<n>"}}) {
    st = handlers_->LeftRound("site-1", bad, &reply);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_EQ(st.message(), message);
  }
  // Well formed, for a round not running here: taken, and nothing changes.
  st = handlers_->LeftRound("site-1", request("site-1-1700000000000-1", {2, 3}), &reply);
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(site_->CurrentRound(), "");
}

TEST_F(PeerHandlersTest, WithoutARosterKeeperGetRosterIsUnavailable) {
  v1::GetRosterRequest req;
  req.set_site("site-1");
  v1::SignedRoster reply;
  absl::Status st = handlers_->GetRoster("site-1", req, &reply);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
  EXPECT_EQ(st.message(), "no roster keeper");
}

// Peer.Rounds serves what a site's operator asks of the coordinator through
// its own site: only to a roster site that is the caller, in bounded pages.
TEST_F(PeerHandlersTest, RoundsAreForARosterSiteThatIsTheCallerInBoundedPages) {
  ASSERT_TRUE(site_->Balance(/*dry_run=*/true, "operator", "").ok());
  v1::PeerRoundsRequest req;
  req.set_site("site-1");
  req.set_limit(10);
  req.set_dry_runs(true);
  v1::RoundsReply reply;
  absl::Status st = handlers_->Rounds("site-1", req, &reply);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(reply.site(), "site-0");
  EXPECT_EQ(reply.rounds_size(), 1);
  reply.Clear();
  EXPECT_EQ(handlers_->Rounds("site-2", req, &reply).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(handlers_->Rounds("", req, &reply).code(), absl::StatusCode::kUnauthenticated);
  req.set_site("site-9");
  EXPECT_EQ(handlers_->Rounds("site-9", req, &reply).code(), absl::StatusCode::kPermissionDenied);
  req.set_site("site-1");
  for (int limit : {0, -1, 51}) {
    req.set_limit(limit);
    EXPECT_EQ(handlers_->Rounds("site-1", req, &reply).code(), absl::StatusCode::kInvalidArgument) << limit;
  }
  req.set_limit(1);
  req.set_round_id(std::string(201, 'r'));
  EXPECT_EQ(handlers_->Rounds("site-1", req, &reply).code(), absl::StatusCode::kInvalidArgument);
  req.set_round_id("no-such-round");
  ASSERT_TRUE(handlers_->Rounds("site-1", req, &reply).ok());
  EXPECT_EQ(reply.rounds_size(), 0);
}

TEST_F(PeerHandlersTest, AProposedRosterNeedsItsCallerAndARosterKeeper) {
  v1::ProposeRosterRequest req;
  req.set_site("site-1");
  v1::SetRosterReply reply;
  auto any = [](const config::Roster&) { return absl::OkStatus(); };
  EXPECT_EQ(handlers_->ProposeRoster("site-2", req, &reply, any).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(handlers_->ProposeRoster("site-1", req, &reply, any).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(PeerHandlersTest, ARequestedRoundNamesAKnownModeOrNone) {
  v1::RequestBalanceRequest req;
  req.set_site("site-1");
  req.set_reason("operator");
  req.set_mode("bogus");
  v1::RequestBalanceReply reply;
  EXPECT_EQ(handlers_->RequestBalance("site-1", req, &reply).code(), absl::StatusCode::kInvalidArgument);
}

// A clock that runs `on_read` the first time it is read after a test arms
// it: the roster changes at a chosen moment inside a call.
class ArmedEnv : public FakeEnv {
 public:
  absl::Time Now() const override {
    std::function<void()> f;
    {
      std::lock_guard<std::mutex> l(mu_);
      f = std::exchange(on_read_, nullptr);
    }
    if (f) f();
    return FakeEnv::Now();
  }
  void Arm(std::function<void()> f) {
    std::lock_guard<std::mutex> l(mu_);
    on_read_ = std::move(f);
  }

 private:
  mutable std::mutex mu_;
  mutable std::function<void()> on_read_;
};

// Site-2 of four, with site-0 silent: site-1 is the coordinator it takes
// until site-0 is heard again (issue 34, finding 6).
class StartRoundDuringARosterChangeTest : public ::testing::Test {
 protected:
  StartRoundDuringARosterChangeTest() {
    config_.site.id = "site-2";
    config_.site.label = 2;
    for (int i = 0; i < 4; ++i)
      config_.roster.sites.push_back(
          {.id = "site-" + std::to_string(i), .label = i, .endpoint = "10.0.0.1:" + std::to_string(7100 + i)});
    config_.capacity.from_adapter = false;
    config_.capacity.units = 2;
    live_ = std::make_unique<federation::LiveConfig>(config_);
    site_ = std::make_unique<federation::Site>(config_, live_.get(), &adapter_, &mover_, &peers_, &env_);
    ServiceDeps deps;
    deps.config = &config_;
    deps.live = live_.get();
    deps.site = site_.get();
    deps.env = &env_;
    handlers_ = std::make_unique<PeerHandlers>(deps);
  }
  ~StartRoundDuringARosterChangeTest() override { site_->Stop(); }

  v1::StartRoundRequest Start(const std::string& coordinator, const std::string& id, int64_t epoch,
                              int64_t roster_version) {
    v1::StartRoundRequest req;
    req.set_round_id(id);
    req.set_coordinator(coordinator);
    req.set_dimension(2);
    req.set_mode("exact");
    req.set_epoch(epoch);
    req.set_deadline_unix_ms(absl::ToUnixMillis(env_.Now() + absl::Minutes(5)));
    req.set_roster_version(roster_version);
    return req;
  }
  // Roster version 1: the same sites, newly signed.
  void TakeVersion1() {
    auto v1 = std::make_shared<config::Roster>(*live_->roster());
    v1->version = 1;
    live_->SetRoster(v1);
  }

  ArmedEnv env_;
  config::Config config_;
  migration::testing::FakeAdapter adapter_{"site-2"};
  NoMover mover_;
  NoPeers peers_;
  std::unique_ptr<federation::LiveConfig> live_;
  std::unique_ptr<federation::Site> site_;
  std::unique_ptr<PeerHandlers> handlers_;
};

TEST_F(StartRoundDuringARosterChangeTest, AnEpochPastTheBoundIsRefusedWhateverTheRosterAndFencesNothing) {
  // Site-1 plans with roster version 1 while this site still has version 0;
  // version 1 arrives while the call is being handled.
  const v1::StartRoundRequest wild = Start("site-1", "site-1-1-1", std::numeric_limits<int64_t>::max(), 1);
  env_.Arm([this] { TakeVersion1(); });
  v1::StartRoundReply reply;
  absl::Status st = handlers_->StartRound("site-1", wild, &reply);
  EXPECT_EQ(live_->roster()->version, 1) << "the roster changed during the call";
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_FALSE(reply.accepted());
  EXPECT_EQ(site_->CurrentRound(), "");
  // The same with the roster already changed, and with no change at all.
  TakeVersion1();
  st = handlers_->StartRound("site-1", Start("site-1", "site-1-1-2", std::numeric_limits<int64_t>::max(), 0), &reply);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  st = handlers_->StartRound("site-1", Start("site-1", "site-1-1-3", std::numeric_limits<int64_t>::max(), 1), &reply);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_EQ(site_->CurrentRound(), "");
  EXPECT_EQ(site_->HighestEpoch(), 0) << "no wild epoch fences this site";
  // Site-0 is heard again: its rounds, of today's epochs, are taken.
  v1::HeartbeatRequest hb;
  hb.set_site("site-0");
  hb.set_label(0);
  hb.set_capacity(2);
  hb.set_roster_version(1);
  hb.set_protocol(ProtocolVersion());
  v1::HeartbeatReply hb_reply;
  ASSERT_TRUE(handlers_->Heartbeat("site-0", hb, &hb_reply).ok());
  const int64_t today = absl::ToUnixMillis(env_.Now());
  st = handlers_->StartRound("site-0", Start("site-0", "site-0-1-1", today, 1), &reply);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_TRUE(reply.accepted()) << reply.why_not();
  // Taken (its part may already have ended: this fixture has no peers, so
  // its first exchange fails at once).
  EXPECT_EQ(site_->HighestEpoch(), today);
  env_.Advance(absl::Minutes(10));  // the part, waiting for peers nobody started, ends
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
