// The web view (docs/operations.md, "Web view") on real daemons: its JSON
// API answers what the Admin service (and so hyperfedctl) answers, to the
// same callers; and a
// real browser (headless Chromium) shows every site with its state, a
// finished round with its transfers, a killed site down within seconds, and
// where a job is and why it moved; and, with placement at arrival on, the
// site's waits and where its arriving jobs went as charts. The browser
// tests save screenshots (web-view.png, web-view-down.png,
// web-view-waits.png in the working folder, the build folder under ctest).

#include <httplib.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/browser.h"
#include "tests/integration/federation_harness.h"
#include "tests/integration/jobs_util.h"

namespace hyperfed::testing {
namespace {

constexpr int64_t kLong = 3'600'000;

// A federation of 4 sites (4 slots each) where site 3 had 40 more jobs than
// the others and one round balanced them; the round's final event.
struct Balanced {
  std::unique_ptr<TestFederation> f;
  v1::RoundEvent round;
};

void StartBalanced(Balanced* b) {
  auto f = TestFederation::Start({.sites = 4});
  ASSERT_TRUE(f.ok()) << f.status();
  b->f = *std::move(f);
  ASSERT_TRUE(b->f->WaitHealthy(absl::Seconds(20), 3).ok());
  ASSERT_TRUE(Submit(*b->f, 3, 44, kLong).ok());
  absl::SleepFor(absl::Seconds(1));  // a heartbeat carries the new load
  auto r = RunRound(*b->f, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->ok()) << r->message();
  ASSERT_GT(r->final_event().transfers_size(), 0) << r->message();
  b->round = r->final_event();
}

httplib::Result Get(const TestFederation& f, int site, const std::string& path, const std::string& token) {
  httplib::Client c("127.0.0.1", f.MetricsPort(site));
  c.set_read_timeout(15, 0);
  httplib::Headers h;
  if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
  return c.Get(path, h);
}

nlohmann::json Json(const httplib::Result& r) { return nlohmann::json::parse(r->body, nullptr, false); }

TEST(WebViewTest, ApiAnswersWhatTheAdminServiceAnswersToTheSameCallers) {
  Balanced b;
  ASSERT_NO_FATAL_FAILURE(StartBalanced(&b));
  TestFederation& f = *b.f;

  // No token, a wrong one: the Admin service's own refusal.
  auto r = Get(f, 1, "/api/v1/status", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(Json(r)["code"], "UNAUTHENTICATED") << r->body;
  r = Get(f, 1, "/api/v1/status", "not-the-token");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401) << r->body;

  // Status: the rows Admin.Status gives, as JSON (daemon/protojson).
  r = Get(f, 1, "/api/v1/status", f.Token());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(r->get_header_value("Cache-Control"), "no-store");
  nlohmann::json status = Json(r);
  v1::StatusReply admin;
  auto ctx = f.Context();
  ASSERT_TRUE(f.Admin(1)->Status(ctx.get(), v1::StatusRequest(), &admin).ok());
  EXPECT_EQ(status["site"], "site-1");
  ASSERT_EQ(status["sites"].size(), static_cast<size_t>(admin.sites_size()));
  for (int i = 0; i < admin.sites_size(); ++i) {
    EXPECT_EQ(status["sites"][i]["site"], admin.sites(i).site());
    EXPECT_EQ(status["sites"][i]["state"], admin.sites(i).state());
  }

  // Rounds, asked at a site that did not coordinate: the coordinator's
  // record of the round just run, transfers and all.
  r = Get(f, 2, "/api/v1/rounds?limit=5", f.Token());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  nlohmann::json rounds = Json(r);
  EXPECT_EQ(rounds["site"], "site-0");
  ASSERT_EQ(rounds["rounds"].size(), 1u) << r->body;
  const nlohmann::json& round = rounds["rounds"][0];
  EXPECT_EQ(round["round_id"], b.round.round_id());
  EXPECT_TRUE(round["done"].get<bool>());
  EXPECT_TRUE(round["ok"].get<bool>());
  EXPECT_TRUE(round["moved"].is_number_integer()) << r->body;  // int64 is a JSON number
  EXPECT_EQ(round["moved"], b.round.moved());
  ASSERT_EQ(round["transfers"].size(), static_cast<size_t>(b.round.transfers_size()));
  for (int i = 0; i < b.round.transfers_size(); ++i) {
    EXPECT_EQ(round["transfers"][i]["from"], b.round.transfers(i).from());
    EXPECT_EQ(round["transfers"][i]["to"], b.round.transfers(i).to());
  }
  EXPECT_DOUBLE_EQ(round["max_share_error_before"].get<double>(), b.round.max_share_error_before());
  // hyperfedctl rounds reads the same record.
  Out ctl = Shell(absl::StrCat(HyperfedctlPath(), " --endpoint ", f.Endpoint(2), " --server-name site-2 --ca ",
                               f.CertDir(), "/ca.pem --token-file ", f.CertDir(), "/admin-token rounds --json"));
  ASSERT_EQ(ctl.code, 0) << ctl.text;
  nlohmann::json listed = nlohmann::json::parse(ctl.text, nullptr, false);
  ASSERT_FALSE(listed.is_discarded()) << ctl.text;
  EXPECT_EQ(listed["site"], "site-0");
  EXPECT_EQ(listed["rounds"][0]["round_id"], b.round.round_id());
  EXPECT_EQ(listed["rounds"][0]["moved"], b.round.moved());
  // The same record, the same JSON: hyperfedctl --json prints what the API answers.
  EXPECT_EQ(listed, rounds) << ctl.text << "\nthe API:\n" << rounds.dump();

  // Bad requests change nothing and say why; unknown paths are 404.
  r = Get(f, 1, "/api/v1/rounds?limit=many", f.Token());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Json(r)["code"], "INVALID_ARGUMENT");
  EXPECT_NE(r->body.find("limit: 'many' is not a whole number"), std::string::npos) << r->body;
  r = Get(f, 1, "/api/v1/migrations?limit=-1", f.Token());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;  // the Admin service's own check
  r = Get(f, 1, "/api/v1/status?verbose=1", f.Token());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("unknown parameter 'verbose'"), std::string::npos) << r->body;
  r = Get(f, 1, "/api/v1/explain?job=", f.Token());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  r = Get(f, 1, "/api/v1/rounds?site=nowhere", f.Token());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  r = Get(f, 1, "/api/v1/balance", f.Token());  // read-only: no call that changes anything
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);

  // The page: no token needed to load it (it holds no data), locked down.
  r = Get(f, 1, "/", "");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("<script src=\"/app.js\""), std::string::npos);
  EXPECT_NE(r->get_header_value("Content-Security-Policy").find("default-src 'none'"), std::string::npos);
  r = Get(f, 1, "/app.js", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  // Prometheus's endpoint is unchanged beside it.
  r = Get(f, 1, "/metrics", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("hyperfed_rounds_total"), std::string::npos);
}

// Rows of the page's tables and nodes of its cube, by attribute.
std::string SiteState(const std::string& site) {
  return absl::StrCat("(document.querySelector('#sites tr[data-site=\"", site, "\"]') || {}).dataset?.state");
}

TEST(WebViewTest, BrowserShowsSitesRoundsADownSiteAndWhereAJobIs) {
  if (Browser::Find().empty()) GTEST_SKIP() << "no chromium installed (scripts/setup installs Debian's chromium)";
  Balanced b;
  ASSERT_NO_FATAL_FAILURE(StartBalanced(&b));
  TestFederation& f = *b.f;
  auto browser = Browser::Start(f.dir());
  ASSERT_TRUE(browser.ok()) << browser.status();
  Browser& web = **browser;
  const std::string base = absl::StrCat("http://127.0.0.1:", f.MetricsPort(0), "/");

  // Without a token the page asks for one; signing in shows the view.
  ASSERT_TRUE(web.Navigate(base).ok());
  ASSERT_TRUE(web.WaitFor("!document.getElementById('login').hidden", absl::Seconds(10)).ok());
  ASSERT_TRUE(web.Eval("document.getElementById('view').hidden").value() == true);
  ASSERT_TRUE(web.Eval(absl::StrCat("document.getElementById('token').value = '", f.Token(),
                                    "'; document.querySelector('#login button').click(); true"))
                  .ok());
  auto shown = web.WaitFor("!document.getElementById('view').hidden && document.body.dataset.refreshes > 0",
                           absl::Seconds(10));
  ASSERT_TRUE(shown.ok()) << shown.status();

  // Every site with its state, in the table and in the cube.
  for (int i = 0; i < f.size(); ++i) {
    const std::string want = i == 0 ? "self" : "up";
    EXPECT_EQ(web.Eval(SiteState(f.SiteId(i))).value(), want) << f.SiteId(i);
    EXPECT_EQ(web.Eval(absl::StrCat("document.querySelector('#cube g[data-label=\"", i, "\"]').dataset.site"))
                  .value(),
              f.SiteId(i));
  }
  // The finished round with its transfers.
  const std::string row = absl::StrCat("document.querySelector('#rounds tr[data-round=\"", b.round.round_id(), "\"]')");
  ASSERT_TRUE(web.Eval(row + " !== null").value() == true);
  EXPECT_EQ(web.Eval(row + ".dataset.done").value(), "true");
  EXPECT_EQ(web.Eval(row + ".dataset.transfers").value(), std::to_string(b.round.transfers_size()));
  const std::string cells = web.Eval(row + ".textContent").value().get<std::string>();
  EXPECT_NE(cells.find("finished"), std::string::npos) << cells;
  const v1::Transfer& t = b.round.transfers(0);  // site i has label i
  EXPECT_NE(cells.find(absl::StrCat("site-", t.from(), "\u2192site-", t.to(), " ", t.count())), std::string::npos) << cells;
  EXPECT_TRUE(web.Screenshot("web-view.png").ok());

  // Where a job is and why it moved: a job that moved to site 0.
  std::string moved_key;
  for (const v1::Job& j : ListJobs(f, 0)) {
    auto ctx = f.Context();
    v1::ExplainJobRequest q;
    q.set_job(j.spec().key());
    v1::ExplainJobReply a;
    if (f.Admin(0)->ExplainJob(ctx.get(), q, &a).ok() && a.explanation().find("site-3") != std::string::npos) {
      moved_key = j.spec().key();
      break;
    }
  }
  ASSERT_FALSE(moved_key.empty()) << "no job at site-0 says it moved";
  ASSERT_TRUE(web.Eval(absl::StrCat("document.getElementById('job').value = '", moved_key,
                                    "'; document.querySelector('#search button').click(); true"))
                  .ok());
  auto explained = web.WaitFor(
      absl::StrCat("document.getElementById('explanation').textContent.includes('", moved_key, "')"),
      absl::Seconds(10));
  ASSERT_TRUE(explained.ok()) << explained.status();
  const std::string why = web.Eval("document.getElementById('explanation').textContent").value();
  EXPECT_NE(why.find("site-3"), std::string::npos) << why;  // where it came from

  // A killed site: the page, left open, shows it down within seconds
  // (the peer timeout is 2 s, the page refreshes every 2 s).
  f.Kill(2);
  const absl::Time killed = absl::Now();
  auto down = web.WaitFor(SiteState("site-2") + " === 'down'", absl::Seconds(15));
  ASSERT_TRUE(down.ok()) << down.status();
  const absl::Duration took = absl::Now() - killed;
  std::cout << "web view: site-2 shown down " << absl::FormatDuration(took) << " after kill -9\n";
  EXPECT_LE(took, absl::Seconds(10));
  EXPECT_EQ(web.Eval("document.querySelector('#cube g[data-label=\"2\"]').dataset.state").value(), "down");
  EXPECT_EQ(web.Eval(SiteState("site-1")).value(), "up");
  EXPECT_TRUE(web.Screenshot("web-view-down.png").ok());
}

// Two sites of 2 cores with placement at arrival (docs/design.md §6.10). At
// site-0: a 2-core job of 6 s starts at once; the next (an hour) would wait
// seconds there while site-1 is idle: it is placed there; the third (an
// hour) would wait an hour at site-1 and seconds here: it stays and starts
// when the first ends. site-0's page shows, before, that no job started and
// none arrived; after, the hour's p50 and p95 wait, the p95 over 2 s, and a
// bar of one job placed at site-1 beside one kept here (the third; the
// first never queued). The JSON API and
// hyperfedctl waits give the same figures.
TEST(WebViewTest, BrowserShowsWaitsAndWhereArrivingJobsWent) {
  if (Browser::Find().empty()) GTEST_SKIP() << "no chromium installed (scripts/setup installs Debian's chromium)";
  FederationOptions o;
  o.sites = 2;
  o.slots = {2, 2};
  o.heartbeat = "200ms";
  o.placement = true;
  o.placement_margin = "1s";
  o.job_choice = "gain";
  auto started = TestFederation::Start(o);
  ASSERT_TRUE(started.ok()) << started.status();
  TestFederation& f = **started;
  ASSERT_TRUE(f.WaitHealthy(absl::Seconds(30)).ok());
  absl::SleepFor(absl::Seconds(1));  // each site hears the other's start profile
  auto browser = Browser::Start(f.dir());
  ASSERT_TRUE(browser.ok()) << browser.status();
  Browser& web = **browser;

  // Nothing yet: the empty states.
  ASSERT_TRUE(web.Navigate(absl::StrCat("http://127.0.0.1:", f.MetricsPort(0), "/#token=", f.Token())).ok());
  auto shown = web.WaitFor("document.body.dataset.refreshes > 0", absl::Seconds(10));
  ASSERT_TRUE(shown.ok()) << shown.status();
  EXPECT_EQ(web.Eval("document.getElementById('wait-summary').textContent").value(),
            "no job started in the last 6 hours");
  EXPECT_EQ(web.Eval("document.getElementById('placement-summary').textContent").value(),
            "no job has arrived at this site since its daemon started");
  EXPECT_EQ(web.Eval("document.querySelectorAll('#wait-chart rect, #placement-chart rect').length").value(), 0);

  ASSERT_TRUE(Submit(f, 0, 1, 6'000, 2).ok());
  ASSERT_TRUE(WaitRunning(f, 0, 1, absl::Seconds(10)));
  ASSERT_TRUE(Submit(f, 0, 1, kLong, 2).ok());
  ASSERT_TRUE(WaitRunning(f, 1, 1, absl::Seconds(10))) << "not placed at the idle site-1\n" << f.Log(0);
  ASSERT_TRUE(Submit(f, 0, 1, kLong, 2).ok());

  // The page, left open, shows the third job's start within a few refreshes.
  const std::string p95 =
      "Math.max(0, ...[...document.querySelectorAll('#wait-chart rect.p95')].map((r) => +r.dataset.ms))";
  auto waited = web.WaitFor(p95 + " > 2000", absl::Seconds(20));
  ASSERT_TRUE(waited.ok()) << waited.status() << "\n" << f.Log(0);
  // The hour's bars (two hours' when the jobs started either side of one).
  const int hours = web.Eval("document.querySelectorAll('#wait-chart rect.p50').length").value();
  EXPECT_GE(hours, 1);
  EXPECT_EQ(web.Eval("document.querySelectorAll('#wait-chart rect.p95').length").value(), hours);
  EXPECT_EQ(web.Eval("document.getElementById('wait-chart').dataset.started").value(), "2");
  const std::string summary = web.Eval("document.getElementById('wait-summary').textContent").value();
  EXPECT_NE(summary.find("2 jobs started in the last 6 hours"), std::string::npos) << summary;
  const std::string bar = "document.querySelector('#placement-chart rect[data-site=\"site-1\"]')";
  ASSERT_TRUE(web.Eval(bar + " !== null").value() == true) << web.Eval("document.body.innerText").value();
  EXPECT_EQ(web.Eval(bar + ".dataset.jobs").value(), "1");
  EXPECT_GT(web.Eval(bar + ".getBBox().width").value().get<double>(), 0);
  // Kept: the third job (the first started at once on arrival: never queued).
  EXPECT_EQ(web.Eval("document.querySelector('#placement-chart rect.kept').dataset.jobs").value(), "1");
  EXPECT_NE(
      web.Eval("document.getElementById('placement-chart').textContent").value().get<std::string>().find("site-1"),
      std::string::npos);
  EXPECT_TRUE(web.Screenshot("web-view-waits.png").ok());

  // The same figures through the JSON API, the Admin call and hyperfedctl.
  auto r = Get(f, 0, "/api/v1/waits", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401) << r->body;
  r = Get(f, 0, "/api/v1/waits", f.Token());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  nlohmann::json waits = Json(r);
  EXPECT_EQ(waits["site"], "site-0");
  EXPECT_EQ(waits["started"], 2);
  EXPECT_EQ(waits["hours"].size(), 6u);
  EXPECT_EQ(waits["placement"]["to"][0]["site"], "site-1");
  EXPECT_EQ(waits["placement"]["to"][0]["jobs"], 1);
  v1::WaitsReply admin;
  auto ctx = f.Context();
  ASSERT_TRUE(f.Admin(0)->Waits(ctx.get(), v1::WaitsRequest(), &admin).ok());
  EXPECT_EQ(admin.p95_ms(), waits["p95_ms"]);
  EXPECT_GT(admin.p95_ms(), 2000);
  EXPECT_EQ(admin.placement().kept(), 1);
  Out ctl = Shell(absl::StrCat(HyperfedctlPath(), " --endpoint ", f.Endpoint(0), " --server-name site-0 --ca ",
                               f.CertDir(), "/ca.pem --token-file ", f.CertDir(), "/admin-token waits"));
  ASSERT_EQ(ctl.code, 0) << ctl.text;
  EXPECT_NE(ctl.text.find("jobs started at site-0 in the last 6 hours: 2, waited p50 "), std::string::npos) << ctl.text;
  EXPECT_NE(ctl.text.find("site-1        1"), std::string::npos) << ctl.text;
}

}  // namespace
}  // namespace hyperfed::testing
