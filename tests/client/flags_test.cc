#include "client/flags.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"

namespace hyperfed::client {
namespace {

absl::StatusOr<Options> Parse(std::vector<std::string> args, Environment env = {}) { return ParseArgs(args, env); }

// The usage error's message, or "" if parsing succeeded.
std::string Error(std::vector<std::string> args, Environment env = {}) {
  auto o = Parse(std::move(args), env);
  if (o.ok()) return "";
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(o.status().message());
}

TEST(FlagsTest, DefaultsWithoutFlagsOrEnvironment) {
  auto o = Parse({"status"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->command, "status");
  EXPECT_EQ(o->endpoint, "127.0.0.1:7101");
  EXPECT_EQ(o->timeout, absl::Seconds(10));
  EXPECT_FALSE(o->json);
  EXPECT_FALSE(o->insecure);
  EXPECT_EQ(o->token, "");
}

TEST(FlagsTest, EnvironmentGivesEndpointAndTokenAndFlagsOverrideIt) {
  Environment env{"site-b:7200", "envtoken"};
  auto o = Parse({"status"}, env);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->endpoint, "site-b:7200");
  EXPECT_EQ(o->token, "envtoken");
  o = Parse({"status", "--endpoint", "10.0.0.1:1", "--token=flagtoken"}, env);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->endpoint, "10.0.0.1:1");
  EXPECT_EQ(o->token, "flagtoken");
}

TEST(FlagsTest, EnvironmentGivesTokenFileCaAndServerNameAndFlagsOverrideThem) {
  Environment env{std::nullopt, std::nullopt, "/etc/hyperfed/admin-token", "/etc/hyperfed/ca.pem", "site-c"};
  auto o = Parse({"status"}, env);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->token_file, "/etc/hyperfed/admin-token");
  EXPECT_EQ(o->ca_file, "/etc/hyperfed/ca.pem");
  EXPECT_EQ(o->server_name, "site-c");
  o = Parse({"status", "--ca", "mine.pem", "--server-name", "site-d", "--token-file", "t"}, env);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->token_file, "t");
  EXPECT_EQ(o->ca_file, "mine.pem");
  EXPECT_EQ(o->server_name, "site-d");
  // --token replaces the environment's token file instead of clashing with it.
  o = Parse({"status", "--token", "flagtoken"}, env);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->token, "flagtoken");
  EXPECT_EQ(o->token_file, "");
  // --insecure drops the environment's TLS settings instead of clashing with them.
  o = Parse({"status", "--insecure"}, env);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ca_file, "");
  EXPECT_EQ(o->server_name, "");
}

TEST(FlagsTest, GlobalFlagsGoBeforeOrAfterTheCommand) {
  auto a = Parse({"--json", "--endpoint", "h:1", "--insecure", "jobs", "--site", "site-c"});
  auto b = Parse({"jobs", "--site=site-c", "--insecure", "--endpoint=h:1", "--json"});
  for (auto* o : {&a, &b}) {
    ASSERT_TRUE(o->ok()) << o->status();
    EXPECT_EQ((*o)->command, "jobs");
    EXPECT_EQ((*o)->site, "site-c");
    EXPECT_EQ((*o)->endpoint, "h:1");
    EXPECT_TRUE((*o)->json);
    EXPECT_TRUE((*o)->insecure);
  }
}

TEST(FlagsTest, SubmitParsesCountsAndDurations) {
  auto o = Parse({"submit", "--count", "12", "--duration", "500ms", "--site", "s", "--name", "n", "--cores", "4"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->count, 12);
  EXPECT_EQ(o->duration, absl::Milliseconds(500));
  EXPECT_EQ(o->site, "s");
  EXPECT_EQ(o->name, "n");
  EXPECT_EQ(o->cores, 4);
  o = Parse({"submit", "--count=1", "--duration=2m"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->duration, absl::Minutes(2));
  o = Parse({"submit", "--count=1", "--duration=1h30m"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->duration, absl::Minutes(90));
  EXPECT_EQ(o->time_limit, absl::ZeroDuration());  // none given
  o = Parse({"submit", "--count=1", "--duration=1h", "--time-limit", "1h30m"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->time_limit, absl::Minutes(90));
}

TEST(FlagsTest, PositionalArguments) {
  auto o = Parse({"drain", "site-b"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->command, "drain");
  EXPECT_EQ(o->site, "site-b");
  o = Parse({"undrain", "site-b"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->site, "site-b");
  o = Parse({"explain", "site-a-00ff"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->job, "site-a-00ff");
  o = Parse({"force-release", "--", "-odd-id"});  // after --, a leading dash is no flag
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->migration_id, "-odd-id");
}

TEST(FlagsTest, ALaterValueWinsAndAPositionalMayNameACommand) {
  auto o = Parse({"--timeout", "5s", "status", "--timeout", "7s", "--json", "--json"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->timeout, absl::Seconds(7));
  o = Parse({"drain", "status"});  // a site named like a command is still the site
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->command, "drain");
  EXPECT_EQ(o->site, "status");
  o = Parse({"completion", "bash"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->command, "completion");
  EXPECT_EQ(o->shell, "bash");
  EXPECT_TRUE(CompletionScript("bash").ok());
  EXPECT_EQ(CompletionScript("zsh").status().code(), absl::StatusCode::kNotFound);
}

TEST(FlagsTest, RoundsTakesLimitSiteAndDryRuns) {
  auto o = ParseArgs({"rounds", "--limit", "5", "--site", "site-b", "--dry-runs"}, {});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->command, "rounds");
  EXPECT_EQ(o->limit, 5);
  EXPECT_EQ(o->site, "site-b");
  EXPECT_TRUE(o->dry_runs);
  o = ParseArgs({"rounds"}, {});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->limit, 0);
  EXPECT_FALSE(o->dry_runs);
}

TEST(FlagsTest, RosterActionsAndTheirFlags) {
  // --endpoint before the command is the daemon asked; after `roster add`,
  // the new site's address.
  auto o = Parse({"--endpoint", "10.0.0.1:7101", "roster", "add", "site-i", "--endpoint", "10.0.0.9:7101", "--label",
                  "8", "--capacity-max", "64", "--roster-key", "k.pem"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->command, "roster");
  EXPECT_EQ(o->roster_action, "add");
  EXPECT_EQ(o->site, "site-i");
  EXPECT_EQ(o->endpoint, "10.0.0.1:7101");
  EXPECT_EQ(o->site_endpoint, "10.0.0.9:7101");
  EXPECT_EQ(o->label, 8);
  EXPECT_EQ(o->capacity_max, 64);
  EXPECT_EQ(o->roster_key_file, "k.pem");
  Environment env;
  env.roster_key = "from-env.pem";
  o = Parse({"roster", "remove", "site-c"}, env);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->roster_key_file, "from-env.pem");
  EXPECT_EQ(o->label, -1);
  o = Parse({"roster", "show"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->roster_key_file.empty()) << "show signs nothing";

  EXPECT_EQ(Error({"roster", "grow", "x"}), "ACTION: 'grow' is not show, add, remove, suggest or renew");
  o = Parse({"roster", "suggest", "--costs", "links.txt"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->costs_file, "links.txt");
  EXPECT_FALSE(o->apply);
  EXPECT_EQ(Error({"roster", "suggest"}), "roster suggest needs --costs FILE");
  EXPECT_EQ(Error({"roster", "suggest", "--costs", "c", "--apply"}),
            "roster suggest --apply needs --roster-key FILE (or HYPERFED_ROSTER_KEY)");
  EXPECT_EQ(Error({"roster", "show", "--apply"}), "--costs and --apply go with roster suggest");
  EXPECT_EQ(Error({"roster", "add", "site-i", "--roster-key", "k"}), "roster add needs --endpoint HOST:PORT");
  EXPECT_EQ(Error({"roster", "add", "--endpoint", "h:1", "--roster-key", "k"}), "roster add needs a SITE");
  EXPECT_EQ(Error({"roster", "remove", "site-c"}), "roster remove needs --roster-key FILE (or HYPERFED_ROSTER_KEY)");
  EXPECT_EQ(Error({"roster", "remove", "site-c", "--label", "2", "--roster-key", "k"}),
            "--endpoint, --label and --capacity-max go with roster add");
  EXPECT_EQ(Error({"roster", "show", "site-c"}), "roster show takes no SITE");
}

// docs/design.md §6.9: every signed roster expires; renew signs the one in
// force again (issue 34).
TEST(FlagsTest, RosterRenewAndHowLongASignedRosterIsTaken) {
  auto o = Parse({"roster", "add", "site-i", "--endpoint", "h:1", "--roster-key", "k"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->valid_for, absl::Hours(24 * 90)) << "90 days unless told";
  o = Parse({"roster", "renew", "--roster-key", "k", "--valid-for", "720h", "--modes", "exact,mcwa"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->roster_action, "renew");
  EXPECT_EQ(o->valid_for, absl::Hours(720));
  EXPECT_EQ(o->modes, "exact,mcwa");
  EXPECT_EQ(Error({"roster", "renew"}), "roster renew needs --roster-key FILE (or HYPERFED_ROSTER_KEY)");
  EXPECT_EQ(Error({"roster", "renew", "site-c", "--roster-key", "k"}), "roster renew takes no SITE");
  EXPECT_EQ(Error({"roster", "show", "--modes", "exact"}), "--modes goes with roster renew");
  EXPECT_NE(Error({"roster", "renew", "--roster-key", "k", "--valid-for", "0s"}), "");
}

TEST(FlagsTest, BalanceWaitWaitsTenMinutesUnlessTold) {
  auto o = Parse({"balance", "--wait"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->wait);
  EXPECT_EQ(o->timeout, absl::Minutes(10));
  o = Parse({"balance", "--wait", "--timeout", "30s", "--dry-run"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->dry_run);
  EXPECT_EQ(o->timeout, absl::Seconds(30));
  o = Parse({"balance"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->timeout, absl::Seconds(10));
}

TEST(FlagsTest, HelpForms) {
  auto o = Parse({"--help"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->command, "help");
  EXPECT_EQ(o->help_topic, "");
  o = Parse({"help", "balance"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->command, "help");
  EXPECT_EQ(o->help_topic, "balance");
  o = Parse({"submit", "--help"});  // no --count needed just to read the usage
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->help_topic, "submit");
  o = Parse({"-h", "drain"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->help_topic, "drain");
  EXPECT_NE(Error({"help", "nope"}).find("'nope'"), std::string::npos);
}

TEST(FlagsTest, UsageErrorsNameWhatIsWrong) {
  struct Case {
    std::vector<std::string> args;
    const char* needle;
  } cases[] = {
      {{}, "no command"},
      {{"frobnicate"}, "'frobnicate'"},
      {{"status", "--frobnicate"}, "--frobnicate"},
      {{"status", "-x"}, "'-x'"},
      {{"status", "--limit", "3"}, "--limit does not apply to 'status'"},
      {{"status", "extra"}, "'extra'"},
      {{"status", "--endpoint"}, "--endpoint needs a value"},
      {{"status", "--json=yes"}, "--json takes no value"},
      {{"status", "--endpoint", "nohostport"}, "--endpoint"},
      {{"status", "--endpoint", "h:99999"}, "--endpoint"},
      {{"status", "--endpoint", "::1:80"}, "IPv6"},
      {{"status", "--timeout", "10"}, "--timeout: '10' is not a duration"},
      {{"status", "--timeout", "0s"}, "--timeout"},
      {{"status", "--timeout", "-1s"}, "--timeout"},
      {{"status", "--token", ""}, "--token"},
      {{"status", "--token", "a b"}, "--token"},
      {{"status", "--token", "t", "--token-file", "f"}, "not both"},
      {{"status", "--insecure", "--ca", "ca.pem"}, "--insecure"},
      {{"status", "--insecure", "--server-name", "site-a"}, "--insecure"},
      {{"status", "--cert", "c.pem", "--ca", "ca.pem"}, "--cert and --key"},
      {{"migrations", "--limit", "ten"}, "--limit: 'ten' is not a whole number"},
      {{"migrations", "--limit", "0"}, "--limit"},
      {{"rounds", "--limit", "1001"}, "--limit"},
      {{"rounds", "--site", ""}, "--site"},
      {{"status", "--dry-runs"}, "--dry-runs"},
      {{"drain"}, "drain needs a SITE"},
      {{"drain", "a", "b"}, "'b'"},
      {{"explain"}, "JOB"},
      {{"force-release"}, "MIGRATION_ID"},
      {{"jobs", "--site", ""}, "--site"},
      {{"submit", "--duration", "1s"}, "--count"},
      {{"submit", "--count", "3"}, "--duration"},
      {{"submit", "--count", "0", "--duration", "1s"}, "--count"},
      {{"submit", "--count", "3", "--duration", "soon"}, "--duration: 'soon'"},
      {{"submit", "--count", "3", "--duration", "-5s"}, "--duration"},
      {{"submit", "--count", "3", "--duration", "1s", "--time-limit", "soon"}, "--time-limit: 'soon'"},
      {{"submit", "--count", "3", "--duration", "1s", "--time-limit", "-5s"}, "--time-limit"},
      {{"submit", "--count", "3", "--duration", "1s", "--cores", "0"}, "--cores"},
      {{"topology", "--wait"}, "--wait does not apply to 'topology'"},
      {{"--dot", "topology"}, "--dot goes after the command"},  // a command's flags follow it
      {{"--limit", "3"}, "--limit goes after its command"},
      {{"drain", ""}, "SITE: must not be empty"},
      {{"submit", "--count", "1", "--duration", "1s", "--name", std::string(201, 'n')}, "--name: over 200"},
      {{"balance", "--wait=yes"}, "--wait takes no value"},
      {{"completion"}, "completion needs a SHELL"},
      {{"completion", "zsh"}, "'zsh'"},
      {{"help", "balance", "drain"}, "'drain'"},
  };
  for (const Case& c : cases) {
    std::string e = Error(c.args);
    EXPECT_NE(e.find(c.needle), std::string::npos) << "args: " << testing::PrintToString(c.args) << " error: " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(FlagsTest, BadTokenFromTheEnvironmentIsAUsageError) {
  EXPECT_NE(Error({"status"}, Environment{std::nullopt, "bad\ntoken"}).find("HYPERFED_TOKEN"), std::string::npos);
}

class LoadFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/hyperfedctl-flags-XXXXXX";
    ASSERT_NE(mkdtemp(t), nullptr);
    dir_ = t;
  }
  void TearDown() override {
    for (const auto& f : files_) std::remove(f.c_str());
    rmdir(dir_.c_str());
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    files_.push_back(path);
    return path;
  }
  std::string dir_;
  std::vector<std::string> files_;
};

TEST_F(LoadFilesTest, ReadsTokenAndPemFiles) {
  auto o = Parse({"status", "--token-file", Write("token", "  s3cret\n"), "--ca",
                  Write("ca.pem", "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"), "--cert",
                  Write("c.pem", "-----BEGIN CERTIFICATE-----\n"), "--key",
                  Write("k.pem", "-----BEGIN PRIVATE KEY-----\n"), "--server-name", "site-a"});
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_TRUE(LoadFiles(&*o).ok());
  EXPECT_EQ(o->token, "s3cret");
  EXPECT_NE(o->ca.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(o->key.find("PRIVATE KEY"), std::string::npos);
  EXPECT_EQ(o->server_name, "site-a");
}

TEST_F(LoadFilesTest, TokenFileWinsOverTheEnvironment) {
  auto o = Parse({"status", "--token-file", Write("token", "fromfile")}, Environment{std::nullopt, "fromenv"});
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_TRUE(LoadFiles(&*o).ok());
  EXPECT_EQ(o->token, "fromfile");
}

TEST_F(LoadFilesTest, UnreadableOrWrongFilesNameTheFlag) {
  auto o = Parse({"status", "--ca", dir_ + "/missing.pem"});
  ASSERT_TRUE(o.ok());
  auto st = LoadFiles(&*o);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("--ca"), std::string::npos) << st;
  EXPECT_NE(st.message().find("missing.pem"), std::string::npos) << st;

  o = Parse({"status", "--ca", Write("notpem", "hello")});
  ASSERT_TRUE(o.ok());
  st = LoadFiles(&*o);
  EXPECT_NE(st.message().find("no PEM"), std::string::npos) << st;

  o = Parse({"status", "--token-file", Write("empty", "\n\n")});
  ASSERT_TRUE(o.ok());
  st = LoadFiles(&*o);
  EXPECT_NE(st.message().find("--token-file"), std::string::npos) << st;
  EXPECT_NE(st.message().find("empty"), std::string::npos) << st;
}

TEST(UsageTest, EveryCommandHasUsageAndTheOverviewListsIt) {
  auto overview = UsageText("");
  ASSERT_TRUE(overview.ok());
  for (const std::string& c : CommandNames()) {
    EXPECT_NE(overview->find("  " + c), std::string::npos) << c;
    auto u = UsageText(c);
    ASSERT_TRUE(u.ok()) << c;
    EXPECT_NE(u->find("usage: hyperfedctl " + c), std::string::npos) << *u;
  }
  EXPECT_NE(UsageText("submit")->find("--duration D"), std::string::npos);
  EXPECT_NE(overview->find("--endpoint HOST:PORT"), std::string::npos);
  EXPECT_EQ(UsageText("nope").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace hyperfed::client
