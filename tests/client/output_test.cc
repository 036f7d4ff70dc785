#include "client/output.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/client/json_check.h"

namespace hyperfed::client {
namespace {

using testing::CheckJsonLines;

// A string that breaks naive JSON writers: quotes, backslash, control
// characters, valid UTF-8, and one byte that is not UTF-8.
const std::string kNasty = std::string("a\"b\\c\nd\te\x01 \xc3\xa9 \xe2\x82\xac") + "\xff" + "z";

#define EXPECT_JSON(text, asserts)                                                       \
  do {                                                                                   \
    auto check_ = CheckJsonLines(text, asserts);                                         \
    if (!check_) GTEST_SKIP() << "python3 not found: cannot parse the JSON to check it"; \
    EXPECT_EQ(*check_, "") << "JSON: " << (text);                                        \
  } while (0)

TEST(JsonTest, TheCheckerRejectsBadJsonAndFailedAsserts) {
  auto bad = CheckJsonLines("{\"a\": 1,}\n", "");
  if (!bad) GTEST_SKIP() << "python3 not found: cannot parse the JSON to check it";
  EXPECT_NE(*bad, "");
  EXPECT_NE(*CheckJsonLines("{\"a\": 1}\n", "assert docs[0]['a'] == 2"), "");
  EXPECT_EQ(*CheckJsonLines("{\"a\": 1}\n", "assert docs[0]['a'] == 1"), "");
}

TEST(TableTest, ColumnsAlignAndNumbersGoRight) {
  Table t({"NAME", "N"}, {false, true});
  t.AddRow({"a", "1"});
  t.AddRow({"longer", "100"});
  t.AddRow({"\xc3\xa9t\xc3\xa9", "7"});  // width counts characters, not bytes
  EXPECT_EQ(t.Render(),
            "NAME      N\n"
            "a         1\n"
            "longer  100\n"
            "\xc3\xa9t\xc3\xa9       7\n");
}

TEST(FormatTest, RealsLabelsTimes) {
  EXPECT_EQ(FormatReal(4), "4");
  EXPECT_EQ(FormatReal(2.5), "2.5");
  EXPECT_EQ(FormatReal(1.0 / 3), "0.333");
  EXPECT_EQ(FormatReal(-0.0001), "0");
  EXPECT_EQ(FormatLabel(5, 3), "5 (101)");
  EXPECT_EQ(FormatLabel(5, 0), "5");
  EXPECT_EQ(FormatUnixMillis(0), "-");
  EXPECT_EQ(FormatUnixMillis(1714564800000), "2024-05-01 12:00:00Z");
}

TEST(RpcErrorTest, OneLineForEachKindOfFailure) {
  const std::string ep = "127.0.0.1:7101";
  EXPECT_EQ(RpcErrorLine(grpc::StatusCode::UNAVAILABLE,
                         "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7101: Failed to "
                         "connect to remote host: Connection refused",
                         ep, absl::Seconds(10)),
            "cannot reach 127.0.0.1:7101: connection refused (is hyperfedd running?)");
  EXPECT_NE(RpcErrorLine(grpc::StatusCode::UNAVAILABLE, "Ssl handshake failed: SSL_ERROR_SSL", ep, absl::Seconds(1))
                .find("TLS handshake failed"),
            std::string::npos);
  EXPECT_EQ(RpcErrorLine(grpc::StatusCode::UNAVAILABLE, "no coordinator", ep, absl::Seconds(1)),
            "127.0.0.1:7101 is unavailable: no coordinator");
  EXPECT_EQ(RpcErrorLine(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded", ep, absl::Seconds(10)),
            "no answer from 127.0.0.1:7101 within 10s (is hyperfedd running? --timeout gives it longer)");
  EXPECT_EQ(RpcErrorLine(grpc::StatusCode::UNAUTHENTICATED, "wrong admin token", ep, absl::Seconds(1)),
            "wrong admin token");
  EXPECT_EQ(RpcErrorLine(grpc::StatusCode::INVALID_ARGUMENT, "site 'x' is not\nin the roster", ep, absl::Seconds(1)),
            "site 'x' is not; in the roster");
  EXPECT_EQ(RpcErrorLine(grpc::StatusCode::PERMISSION_DENIED, "", ep, absl::Seconds(1)),
            "127.0.0.1:7101 refused: permission denied");
}

v1::SiteStatus Site(const std::string& name, int label, const std::string& state, int64_t load, double cap) {
  v1::SiteStatus s;
  s.set_site(name);
  s.set_label(label);
  s.set_state(state);
  s.set_load(load);
  s.set_capacity(cap);
  s.set_load_per_capacity(cap > 0 ? load / cap : 0);
  s.set_last_round("r-7");
  s.set_endpoint(name + ":7101");
  s.set_age_ms(120);
  return s;
}

v1::StatusReply SampleStatus() {
  v1::StatusReply r;
  r.set_site("site-a");
  r.set_algorithm("improved-dem");
  r.set_last_round("r-7");
  r.set_last_round_summary("moved 5 jobs");
  *r.add_sites() = Site("site-a", 0, "self", 10, 4);
  *r.add_sites() = Site("site-b", 1, "up", 3, 2);
  *r.add_sites() = Site("site-c", 2, "down", 0, 0);
  *r.add_sites() = Site(kNasty, 3, "drained", 1, 8);
  return r;
}

TEST(StatusOutputTest, TableHasEveryColumnAndTheRoundSummary) {
  std::string t = StatusText(SampleStatus());
  for (const char* s : {"SITE", "LABEL", "STATE", "LOAD", "CAPACITY", "LOAD/CAP", "LAST ROUND", "answered by site-a",
                        "algorithm: improved-dem", "last round: r-7", "moved 5 jobs"})
    EXPECT_NE(t.find(s), std::string::npos) << s << " missing in\n" << t;
  std::vector<std::string> lines = absl::StrSplit(t, '\n');
  ASSERT_GE(lines.size(), 3u);
  ASSERT_EQ(lines.size(), 11u) << "a control character broke the table:\n" << t;
  // The byte that is not UTF-8 shows as an escape too (TerminalSafe).
  EXPECT_EQ(lines[1], "SITE                       LABEL  STATE    LOAD  CAPACITY  LOAD/CAP  LAST ROUND") << t;
  EXPECT_EQ(lines[2], "site-a                    0 (00)  self       10         4     2.500  r-7") << t;
  EXPECT_EQ(lines[4], "site-c                    2 (10)  down        0         0         -  r-7") << t;
  EXPECT_EQ(lines[5],
            "a\"b\\c\\nd\\te\\x01 \xc3\xa9 \xe2\x82\xac\\xffz  3 (11)  drained     1         8     0.125  r-7")
      << t;
}

TEST(StatusOutputTest, JsonParsesWithEveryRow) {
  EXPECT_JSON(StatusJson(SampleStatus()),
              "d = docs[0]\n"
              "assert d['site'] == 'site-a' and d['algorithm'] == 'improved-dem' and d['last_round'] == 'r-7'\n"
              "assert [s['label'] for s in d['sites']] == [0, 1, 2, 3]\n"
              "a = d['sites'][0]\n"
              "assert a['load'] == 10 and a['capacity'] == 4 and a['load_per_capacity'] == 2.5, a\n"
              "assert a['state'] == 'self' and a['age_ms'] == 120 and a['endpoint'] == 'site-a:7101'\n"
              "assert d['sites'][3]['site'].startswith('a\"b\\\\c\\n')\n");
}

v1::TopologyReply SampleTopology() {
  v1::TopologyReply r;
  r.set_dimension(2);
  *r.add_sites() = Site("site-a", 0, "self", 4, 1);
  *r.add_sites() = Site("site-b", 1, "up", 2, 1);
  *r.add_sites() = Site("site-c", 2, "down", 0, 1);
  r.add_fault_labels(2);
  r.add_fault_labels(3);
  r.set_mode("mcwa around 2 faults: site-c down, position 3 empty");
  return r;
}

TEST(TopologyOutputTest, TextListsEveryPositionAndTheFaultSet) {
  std::string t = TopologyText(SampleTopology());
  for (const char* s : {"2-cube (4 positions)", "0 (00)  site-a", "3 (11)  -       empty", "fault set: 2 (10), 3 (11)",
                        "mode: mcwa around 2 faults"})
    EXPECT_NE(t.find(s), std::string::npos) << s << " missing in\n" << t;
}

TEST(TopologyOutputTest, DotDrawsTheCubeWithFaultsDashed) {
  std::string d = TopologyDot(SampleTopology());
  EXPECT_EQ(d,
            "graph hyperfed {\n"
            "  node [shape=box];\n"
            "  n0 [label=\"00\\nsite-a\\nself\"];\n"
            "  n1 [label=\"01\\nsite-b\\nup\"];\n"
            "  n2 [label=\"10\\nsite-c\\ndown\\nfault\", style=dashed];\n"
            "  n3 [label=\"11\\n(empty)\\nfault\", style=dashed];\n"
            "  n0 -- n1;\n"
            "  n0 -- n2 [style=dashed];\n"
            "  n1 -- n3 [style=dashed];\n"
            "  n2 -- n3 [style=dashed];\n"
            "}\n");
}

TEST(TopologyOutputTest, DotEscapesQuotesInSiteNames) {
  v1::TopologyReply r;
  r.set_dimension(1);
  *r.add_sites() = Site("we\"ird\\", 0, "self", 0, 1);
  std::string d = TopologyDot(r);
  EXPECT_NE(d.find("label=\"0\\nwe\\\"ird\\\\\\nself\""), std::string::npos) << d;
  EXPECT_NE(d.find("n0 -- n1 [style=dashed];"), std::string::npos) << d;
}

TEST(TopologyOutputTest, JsonParses) {
  EXPECT_JSON(TopologyJson(SampleTopology()),
              "d = docs[0]\n"
              "assert d['dimension'] == 2 and d['fault_labels'] == [2, 3] and d['mode'].startswith('mcwa')\n"
              "assert [s['site'] for s in d['sites']] == ['site-a', 'site-b', 'site-c']\n");
}

v1::JobsReply SampleJobs() {
  v1::JobsReply r;
  v1::Job* j = r.add_jobs();
  j->set_id("17");
  j->set_site("site-a");
  j->set_state("pending");
  j->set_queued_at_ms(1714564800000);
  j->mutable_spec()->set_key("site-a-00000000000000ff");
  j->mutable_spec()->set_name(kNasty);
  j->mutable_spec()->set_cores(2);
  j->mutable_spec()->set_time_limit_s(7200);
  j = r.add_jobs();
  j->set_id("18");
  j->set_site("site-a");
  j->set_state("running");
  j->set_pinned(true);
  return r;
}

TEST(JobsOutputTest, TextAndJson) {
  std::string t = JobsText(SampleJobs());
  EXPECT_NE(t.find("17  site-a-00000000000000ff  site-a  pending"), std::string::npos) << t;
  EXPECT_NE(t.find("2024-05-01 12:00:00Z"), std::string::npos) << t;
  EXPECT_NE(t.find("2 jobs"), std::string::npos) << t;
  EXPECT_EQ(JobsText(v1::JobsReply()), "no jobs\n");
  // The reply as the web API gives it: the job's spec under "spec", every
  // field there, a spec that was not set at its zero values.
  EXPECT_JSON(JobsJson(SampleJobs()),
              "d = docs[0]\n"
              "assert list(d) == ['jobs'] and len(d['jobs']) == 2\n"
              "j = d['jobs'][0]\n"
              "assert j['id'] == '17' and j['site'] == 'site-a' and j['spec']['key'] == 'site-a-00000000000000ff'\n"
              "assert j['spec']['cores'] == 2 and j['spec']['name'].startswith('a\"b\\\\c\\n'), j\n"
              "assert j['queued_at_ms'] == 1714564800000 and j['pinned'] is False\n"
              "assert j['spec']['time_limit_s'] == 7200 and d['jobs'][1]['spec']['time_limit_s'] == 0\n"
              "assert d['jobs'][1]['spec']['env'] == {} and d['jobs'][1]['spec']['key'] == ''\n"
              "assert d['jobs'][1]['pinned'] is True and d['jobs'][1]['state'] == 'running'\n");
}

TEST(MigrationsOutputTest, TextAndJson) {
  v1::MigrationsReply r;
  v1::Migration* m = r.add_migrations();
  m->set_id("m-1");
  m->set_direction("out");
  m->set_peer("site-b");
  m->set_state("done");
  m->set_jobs(2);
  m->set_round_id("r-3");
  m->set_updated_ms(1714564800000);
  m->add_job_keys("k1");
  m->add_job_keys("k2");
  std::string t = MigrationsText(r);
  EXPECT_NE(t.find("m-1  out        site-b  done      2  r-3    2024-05-01 12:00:00Z"), std::string::npos) << t;
  EXPECT_EQ(MigrationsText(v1::MigrationsReply()), "no migrations\n");
  EXPECT_JSON(MigrationsJson(r),
              "m = docs[0]['migrations'][0]\n"
              "assert m['id'] == 'm-1' and m['jobs'] == 2 and m['job_keys'] == ['k1', 'k2'], m\n");
}

TEST(WaitsOutputTest, TextAndJsonGiveEachHourAndWhereJobsWerePlaced) {
  v1::WaitsReply r;
  r.set_site("site-a");
  for (int i = 0; i < 6; ++i) {
    v1::WaitHour* h = r.add_hours();
    h->set_start_ms(1714564800000 + i * 3600000LL);
    if (i == 5) {
      h->set_started(12);
      h->set_p50_ms(65'000);
      h->set_p95_ms(725'400);
    }
  }
  r.set_started(12);
  r.set_p50_ms(65'000);
  r.set_p95_ms(725'400);
  v1::PlacementRecord* p = r.mutable_placement();
  p->set_enabled(true);
  p->set_passes(40);
  p->set_placed(3);
  p->set_kept(9);
  v1::PlacedAt* a = p->add_to();
  a->set_site("site-b");
  a->set_jobs(3);
  const std::string t = WaitsText(r);
  EXPECT_EQ(t,
            "jobs started at site-a in the last 6 hours: 12, waited p50 1m5s, p95 12m5s\n"
            "HOUR                  STARTED   P50    P95\n"
            "2024-05-01 12:00:00Z        0     -      -\n"
            "2024-05-01 13:00:00Z        0     -      -\n"
            "2024-05-01 14:00:00Z        0     -      -\n"
            "2024-05-01 15:00:00Z        0     -      -\n"
            "2024-05-01 16:00:00Z        0     -      -\n"
            "2024-05-01 17:00:00Z       12  1m5s  12m5s\n"
            "placement at arrival: on; since start 3 jobs placed at peers, 9 kept here, 0 not moved (40 passes)\n"
            "PLACED AT  JOBS\n"
            "site-b        3\n");
  EXPECT_EQ(FormatWait(850), "850ms");
  EXPECT_EQ(FormatWait(7'530'000), "2h5m30s");
  EXPECT_JSON(WaitsJson(r),
              "d = docs[0]\n"
              "assert d['site'] == 'site-a' and d['started'] == 12 and d['p95_ms'] == 725400, d\n"
              "assert [h['started'] for h in d['hours']] == [0, 0, 0, 0, 0, 12], d\n"
              "assert d['placement']['to'] == [{'site': 'site-b', 'jobs': 3}], d\n"
              "assert d['placement']['enabled'] is True and d['placement']['kept'] == 9, d\n");
  v1::WaitsReply none;
  none.set_site("site-c");
  none.add_hours()->set_start_ms(1714564800000);
  EXPECT_EQ(WaitsText(none).substr(0, 53), "jobs started at site-c in the last 1 hours: none\nHOUR");
}

TEST(RoundsOutputTest, TextAndJsonNameTheSitesOfEachTransfer) {
  v1::RoundsReply r;
  r.set_site("site-a");
  EXPECT_EQ(RoundsText(r, {}), "no rounds recorded at site-a\n");
  v1::Round* x = r.add_rounds();
  x->set_round_id("r-7");
  x->set_done(true);
  x->set_ok(true);
  x->set_started_ms(1714564800000);
  x->set_steps(2);
  x->set_moved(12);
  x->set_max_share_error_before(6);
  x->set_max_share_error_after(0.5);
  v1::Transfer* t = x->add_transfers();
  t->set_step(1);
  t->set_from(1);
  t->set_to(0);
  t->set_count(12);
  x->add_events("round r-7 finished");
  v1::Round* y = r.add_rounds();
  y->set_round_id("r-6");
  y->set_done(true);
  y->set_dry_run(true);
  const std::map<int, std::string> sites = {{0, "site-a"}, {1, "site-b"}};
  std::string text = RoundsText(r, sites);
  EXPECT_NE(text.find("rounds recorded at site-a, newest first:"), std::string::npos) << text;
  EXPECT_NE(text.find("r-7"), std::string::npos) << text;
  EXPECT_NE(text.find("2024-05-01 12:00:00Z  finished"), std::string::npos) << text;
  EXPECT_NE(text.find("6 -> 0.5"), std::string::npos) << text;
  EXPECT_NE(text.find("site-b->site-a 12"), std::string::npos) << text;
  EXPECT_NE(text.find("r-6 (dry run)"), std::string::npos) << text;
  EXPECT_NE(text.find("ended early"), std::string::npos) << text;  // done, not ok
  // The reply as the web API gives it: transfers by label (status --json
  // names them).
  EXPECT_JSON(RoundsJson(r),
              "d = docs[0]\n"
              "assert d['site'] == 'site-a' and len(d['rounds']) == 2\n"
              "x = d['rounds'][0]\n"
              "assert x['round_id'] == 'r-7' and x['moved'] == 12 and x['ok'] is True, x\n"
              "assert x['transfers'] == [{'step': 1, 'from': 1, 'to': 0, 'count': 12}], x\n"
              "assert x['started_ms'] == 1714564800000 and x['finished_ms'] == 0, x\n"
              "assert x['before'] == [] and x['after'] == [] and x['mode_name'] == '', x\n"
              "assert x['events'] == ['round r-7 finished'] and d['rounds'][1]['dry_run'] is True\n");
}

v1::RoundEvent FinalEvent() {
  v1::RoundEvent e;
  e.set_round_id("r-9");
  e.set_message("site-a: exchanged dimension 1\nround r-9 done");
  e.set_final(true);
  e.set_ok(true);
  auto row = [](google::protobuf::RepeatedPtrField<v1::LoadRow>* rows, int label, int64_t load, double cap) {
    v1::LoadRow* r = rows->Add();
    r->set_label(label);
    r->set_load(load);
    r->set_capacity(cap);
  };
  row(e.mutable_before(), 0, 10, 1);
  row(e.mutable_before(), 1, 0, 1);
  row(e.mutable_after(), 0, 5, 1);
  row(e.mutable_after(), 1, 5, 1);
  v1::Transfer* t = e.add_transfers();
  t->set_step(0);
  t->set_from(0);
  t->set_to(1);
  t->set_count(5);
  e.set_moved(5);
  e.set_steps(1);
  e.set_messages(4);
  e.set_max_share_error_before(5);
  e.set_max_share_error_after(0);
  return e;
}

TEST(BalanceOutputTest, EventLinesThenTheBeforeAfterTable) {
  v1::RoundEvent first;
  first.set_round_id("r-9");
  first.set_message("site-a: round r-9 started\n");
  EXPECT_EQ(BalanceEventText(first), "site-a: round r-9 started\n");
  std::map<int, std::string> sites{{0, "site-a"}};  // label 1 unknown: "-"
  std::string t = BalanceResultText(FinalEvent(), sites);
  EXPECT_EQ(t,
            "\nround r-9 finished\n"
            "SITE    LABEL  CAPACITY  LOAD BEFORE  LOAD AFTER\n"
            "site-a      0         1           10           5\n"
            "-           1         1            0           5\n"
            "\nmoved 5 jobs in 1 step, 4 messages\n"
            "max share error: 5 -> 0\n"
            "transfers:\n"
            "  step 0: 0 -> 1: 5 jobs\n");
  v1::RoundEvent bad = FinalEvent();
  bad.set_ok(false);
  EXPECT_NE(BalanceResultText(bad, sites).find("round r-9 ended early"), std::string::npos);
}

TEST(BalanceOutputTest, JsonLinesOneObjectPerEventWithTheTableInTheFinalOne) {
  v1::RoundEvent first;
  first.set_round_id("r-9");
  first.set_message(kNasty);
  std::map<int, std::string> sites{{0, "site-a"}, {1, "site-b"}};
  std::string lines = BalanceEventJson(first, sites) + BalanceEventJson(FinalEvent(), sites);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 2) << lines;
  EXPECT_JSON(lines,
              "assert len(docs) == 2\n"
              "assert docs[0]['final'] is False and docs[0]['round_id'] == 'r-9' and 'table' not in docs[0]\n"
              "f = docs[1]\n"
              "assert f['final'] is True and f['ok'] is True and f['moved'] == 5 and f['steps'] == 1\n"
              "assert f['messages'] == 4 and f['max_share_error_before'] == 5 and f['max_share_error_after'] == 0\n"
              "assert f['table'] == [{'site': 'site-a', 'label': 0, 'capacity': 1, 'load_before': 10, "
              "'load_after': 5}, {'site': 'site-b', 'label': 1, 'capacity': 1, 'load_before': 0, 'load_after': 5}], "
              "f['table']\n"
              "assert f['transfers'] == [{'step': 0, 'from': 0, 'to': 1, 'count': 5}]\n");
}

TEST(SubmitAndHealthOutputTest, TextAndJson) {
  v1::SubmitReply s;
  s.add_ids("1");
  s.add_ids("2");
  s.add_keys("k1");
  s.add_keys("k2");
  EXPECT_EQ(SubmitText(s), "submitted 2 jobs\nID  KEY\n1   k1\n2   k2\n");
  v1::SubmitReply many;
  for (int i = 1; i <= 25; ++i) {
    many.add_ids(std::to_string(i));
    many.add_keys("k" + std::to_string(i));
  }
  const std::string text = SubmitText(many);
  EXPECT_NE(text.find("... and 5 more (ids up to 25"), std::string::npos) << text;
  EXPECT_EQ(text.find("k21"), std::string::npos) << "only the first 20 are listed";
  std::vector<HealthRow> rows{{"", "SERVING"}, {"hyperfed.v1.Admin", "SERVING"}, {"hyperfed.v1.Peer", "NOT_SERVING"}};
  std::string h = HealthText("h:1", rows);
  EXPECT_NE(h.find("(server)           SERVING"), std::string::npos) << h;
  EXPECT_JSON(SubmitJson(s) + HealthJson("h:1", rows),
              "assert docs[0] == {'ids': ['1', '2'], 'keys': ['k1', 'k2']}\n"
              "h = docs[1]\n"
              "assert h['endpoint'] == 'h:1' and h['serving'] is False and len(h['services']) == 3\n"
              "assert h['services'][0] == {'service': '', 'status': 'SERVING'}\n");
}

// DrainReply is empty and ForceReleaseReply has the warning only: their JSON
// says what was asked too, as documented (docs/hyperfedctl.md, "JSON").
TEST(DrainAndForceReleaseOutputTest, JsonSaysWhatWasAsked) {
  v1::ForceReleaseReply f;
  f.set_warning(kNasty);
  EXPECT_JSON(DrainJson("site-b", true) + DrainJson("site-c", false) + ForceReleaseJson("m-1", f),
              "assert docs[0] == {'site': 'site-b', 'drained': True}, docs[0]\n"
              "assert docs[1] == {'site': 'site-c', 'drained': False}, docs[1]\n"
              "assert docs[2]['migration_id'] == 'm-1' and docs[2]['warning'].startswith('a\"b\\\\c\\n'), docs[2]\n"
              "assert list(docs[2]) == ['migration_id', 'warning']\n");
}

TEST(TopologyOutputTest, BalancingSubcubeAndTreesAreShown) {
  v1::TopologyReply r;
  r.set_dimension(4);
  v1::BalancingSubcube* b = r.add_subcubes();
  b->set_dim(2);
  b->set_base(0b0001);
  b->set_mask(0b1010);
  b->set_tree_depth(2);
  v1::TreeEdge* e = b->add_edges();
  e->set_child(0b0100);
  e->set_parent(0b0000);
  for (int label : {0, 4}) {
    v1::SiteStatus* site = r.add_sites();
    site->set_site("s" + std::to_string(label));
    site->set_label(label);
    site->set_state("up");
  }
  const std::string t = TopologyText(r);
  EXPECT_NE(t.find("balancing subcube X0X1 (dimension 2), tree depth 2"), std::string::npos) << t;
  EXPECT_NE(t.find("tree: 4 (0100) -> 0 (0000)"), std::string::npos) << t;
  EXPECT_NE(TopologyDot(r).find("bold"), std::string::npos) << "tree edges are drawn bold";
  EXPECT_NE(TopologyJson(r).find("\"tree_depth\":2,\"edges\":[{\"child\":4,\"parent\":0}]"), std::string::npos)
      << TopologyJson(r);
}

}  // namespace
}  // namespace hyperfed::client

namespace hyperfed::client {
namespace {

// Text a hostile site might send: a window-title escape (OSC), a cursor
// move (CSI), a C1 CSI both as UTF-8 and as a raw byte, DEL, a bell.
constexpr char kHostile[] = "x\x1b]0;owned\x07y\x1b[2Jz\xc2\x9bq\x9bw\x7fv";

TEST(TerminalSafeTest, ControlCharactersBecomeVisibleEscapes) {
  EXPECT_EQ(TerminalSafe(kHostile), "x\\x1b]0;owned\\x07y\\x1b[2Jz\\xc2\\x9bq\\x9bw\\x7fv");
  EXPECT_EQ(TerminalSafe("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(TerminalSafe(std::string("nul\0end", 7)), "nul\\x00end");
  // Printable text, UTF-8 included, is unchanged.
  EXPECT_EQ(TerminalSafe("site-3 \xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82"),
            "site-3 \xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82");
  // No byte below 0x20, no DEL, no C1 is left.
  for (unsigned char c : TerminalSafe(kHostile)) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << int(c);
  EXPECT_EQ(TerminalSafeLines("one\x1b[1m\ntwo\x07"), "one\\x1b[1m\ntwo\\x07");
}

bool HasControl(const std::string& s, bool newline_ok) {
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n' && newline_ok) continue;
    if (c < 0x20 || c == 0x7f || c == 0x9b) return true;
  }
  return false;
}

TEST(TerminalSafeTest, EveryRenderingOfRemoteTextIsEscaped) {
  v1::StatusReply st;
  st.set_site(kHostile);
  st.set_algorithm(kHostile);
  st.set_last_round(kHostile);
  st.set_last_round_summary(kHostile);
  st.set_last_round_mode(kHostile);
  v1::SiteStatus* s = st.add_sites();
  s->set_site(kHostile);
  s->set_state(kHostile);
  s->set_last_round(kHostile);
  EXPECT_FALSE(HasControl(StatusText(st), true)) << StatusText(st);
  EXPECT_FALSE(HasControl(StatusJson(st), true)) << StatusJson(st);

  v1::TopologyReply t;
  t.set_dimension(1);
  t.set_mode(kHostile);
  *t.add_sites() = *s;
  EXPECT_FALSE(HasControl(TopologyText(t), true));
  EXPECT_FALSE(HasControl(TopologyDot(t), true));

  v1::RoundEvent e;
  e.set_round_id(kHostile);
  e.set_message(absl::StrCat(kHostile, "\n", kHostile, "\n"));
  e.set_final(true);
  EXPECT_FALSE(HasControl(BalanceEventText(e), true)) << BalanceEventText(e);
  EXPECT_EQ(BalanceEventText(e), absl::StrCat(TerminalSafe(kHostile), "\n", TerminalSafe(kHostile), "\n"));
  EXPECT_FALSE(HasControl(BalanceResultText(e, {{0, kHostile}}), true));
  EXPECT_FALSE(HasControl(BalanceEventJson(e, {{0, kHostile}}), true));

  v1::JobsReply j;
  v1::Job* job = j.add_jobs();
  job->set_id(kHostile);
  job->set_site(kHostile);
  job->mutable_spec()->set_name(kHostile);
  job->mutable_spec()->set_key(kHostile);
  EXPECT_FALSE(HasControl(JobsText(j), true));
  EXPECT_FALSE(HasControl(JobsJson(j), true));

  v1::MigrationsReply m;
  m.add_migrations()->set_peer(kHostile);
  EXPECT_FALSE(HasControl(MigrationsText(m), true));
  EXPECT_FALSE(HasControl(MigrationsJson(m), true));

  v1::ExplainJobReply x;
  x.set_explanation(kHostile);
  EXPECT_FALSE(HasControl(ExplainJson(x), true));

  v1::WaitsReply w;
  w.set_site(kHostile);
  w.mutable_placement()->add_to()->set_site(kHostile);
  EXPECT_FALSE(HasControl(WaitsText(w), true));
  EXPECT_FALSE(HasControl(WaitsJson(w), true));

  EXPECT_FALSE(HasControl(RpcErrorLine(grpc::StatusCode::PERMISSION_DENIED, kHostile, "e:1", absl::Seconds(1)), false));
}

}  // namespace
}  // namespace hyperfed::client
