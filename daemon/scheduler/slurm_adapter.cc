#include "daemon/scheduler/slurm_adapter.h"

#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/common/trusted_path.h"
#include "nlohmann/json.hpp"

namespace hyperfed::scheduler {
namespace {

using nlohmann::json;

constexpr char kCommentPrefix[] = "hyperfed1";
constexpr size_t kSlurmMaxOutput = size_t{1} << 30;

bool SafeChar(unsigned char c) {
  return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == ':' || c == '/' || c == '@' || c == '+';
}

std::string PctEncode(absl::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (SafeChar(c))
      out.push_back(static_cast<char>(c));
    else
      absl::StrAppendFormat(&out, "%%%02X", c);
  }
  return out;
}

bool PctDecode(absl::string_view s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out->push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return false;
    int v = 0;
    for (int k = 1; k <= 2; ++k) {
      const char h = s[i + k];
      v <<= 4;
      if (h >= '0' && h <= '9')
        v |= h - '0';
      else if (h >= 'A' && h <= 'F')
        v |= h - 'A' + 10;
      else if (h >= 'a' && h <= 'f')
        v |= h - 'a' + 10;
      else
        return false;
    }
    out->push_back(static_cast<char>(v));
    i += 2;
  }
  return true;
}

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A number field of sinfo JSON: a plain number (Slurm 22.05, null for
// "not set") or, from 23.02 on, {"set": bool, "infinite": bool, "number": n}.
// Not set and infinite read as 0 (no value, no limit).
int64_t Int(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number()) return it->get<int64_t>();
  if (it->is_object()) {
    auto n = it->find("number");
    if (n == it->end() || !n->is_number()) return 0;
    if (auto set = it->find("set"); set != it->end() && set->is_boolean() && !set->get<bool>()) return 0;
    if (auto inf = it->find("infinite"); inf != it->end() && inf->is_boolean() && inf->get<bool>()) return 0;
    return n->get<int64_t>();
  }
  return 0;
}

}  // namespace

JobState MapSlurmState(const std::string& state, const std::string& reason) {
  // JobHeldUser, JobHeldAdmin, "launch failed requeued held": none starts
  // until released.
  const bool held_reason = absl::StrContains(absl::AsciiStrToLower(reason), "held");
  if (state == "PENDING" || state == "REQUEUED" || state == "REQUEUE_FED")
    return held_reason ? JobState::kHeld : JobState::kPending;
  if (state == "REQUEUE_HOLD" || state == "SPECIAL_EXIT" || state == "RESV_DEL_HOLD") return JobState::kHeld;
  if (state == "RUNNING" || state == "SUSPENDED" || state == "STOPPED" || state == "CONFIGURING" ||
      state == "COMPLETING" || state == "SIGNALING" || state == "STAGE_OUT" || state == "RESIZING")
    return JobState::kRunning;
  if (state == "COMPLETED" || state == "FAILED" || state == "TIMEOUT" || state == "NODE_FAIL" || state == "PREEMPTED" ||
      state == "BOOT_FAIL" || state == "DEADLINE" || state == "OUT_OF_MEMORY")
    return JobState::kDone;
  if (state == "CANCELLED") return JobState::kCancelled;
  // A state this adapter does not know: running is the one state in which
  // hyperfed neither moves nor cancels a job, nor treats it as finished.
  return JobState::kRunning;
}

std::string NotPortable(const SlurmQueueJob& j) {
  if (!j.dependency.empty()) return "a dependency";
  if (!j.array_task.empty()) return "a job array";
  if (!j.het_job.empty()) return "a heterogeneous job";
  if (j.tasks > 1 || j.nodes > 1) return "more than one task or node";
  const std::pair<const char*, const std::string*> requests[] = {
      {"tres_per_job", &j.tres_per_job},   {"tres_per_node", &j.tres_per_node}, {"tres_per_socket", &j.tres_per_socket},
      {"tres_per_task", &j.tres_per_task}, {"licenses", &j.licenses},           {"features", &j.features}};
  for (const auto& [what, value] : requests)
    if (!value->empty()) return absl::StrCat("a ", what, " request");
  return "";
}

int64_t SlurmDurationSeconds(const std::string& text) {
  // squeue's _print_secs: "D-HH:MM:SS", "H:MM:SS", or "M:SS" below an hour.
  absl::string_view s = text;
  int64_t days = 0;
  if (size_t dash = s.find('-'); dash != absl::string_view::npos) {
    if (!absl::SimpleAtoi(s.substr(0, dash), &days) || days < 0) return 0;
    s.remove_prefix(dash + 1);
  }
  std::vector<absl::string_view> parts = absl::StrSplit(s, ':');
  if (parts.size() < 2 || parts.size() > 3) return 0;
  int64_t total = 0;
  for (absl::string_view p : parts) {
    int64_t v = 0;
    if (p.empty() || !absl::SimpleAtoi(p, &v) || v < 0 || v > 1000000000) return 0;
    total = total * 60 + v;
  }
  return days * 86400 + total;
}

int64_t SlurmMemoryMb(const std::string& text) {
  absl::string_view s = text;
  // What Slurm's convert_num_unit prints: a number and K, M, G, T or P
  // (binary), or a bare number of MB.
  double scale = 1;
  if (const size_t unit = s.empty() ? absl::string_view::npos : absl::string_view("KMGTP").find(s.back());
      unit != absl::string_view::npos) {
    scale = std::pow(1024.0, static_cast<double>(unit) - 1);
    s.remove_suffix(1);
  }
  double v = 0;
  if (s.empty() || !absl::SimpleAtod(s, &v) || !std::isfinite(v) || v < 0 || v * scale > 9e15) return 0;
  return static_cast<int64_t>(std::llround(v * scale));
}

namespace {

// The fields SlurmQueueJob holds, in the order ParseSqueue reads them.
constexpr const char* kSqueueFields[] = {
    "JobID",         "ArrayTaskID",  "HetJobID",   "State",        "Reason",        "SubmitTime",
    "StartTime",     "EligibleTime", "Partition",  "UserName",     "Cluster",       "Name",
    "NumCPUs",       "MinMemory",    "tres-alloc", "TimeLimit",    "WorkDir",       "BatchFlag",
    "Dependency",    "NumTasks",     "NumNodes",   "tres-per-job", "tres-per-node", "tres-per-socket",
    "tres-per-task", "Licenses",     "Feature",    "Comment",      "admin_comment"};
constexpr size_t kSqueueFieldCount = sizeof(kSqueueFields) / sizeof(kSqueueFields[0]);

// squeue prints "(null)" for a string not set and "N/A" for a number or id
// not set. Read so only where a job without one is normal (a comment, a
// dependency): a name, user, partition or folder is taken as printed.
std::string Text(absl::string_view v, absl::string_view none = "(null)") { return v == none ? "" : std::string(v); }
int64_t Number(absl::string_view v) {
  int64_t n = 0;
  return absl::SimpleAtoi(v, &n) && n > 0 ? n : 0;
}
// The mem= of a TRES list ("cpu=2,mem=200M,node=1,billing=2").
int64_t TresMemoryMb(absl::string_view tres) {
  for (absl::string_view item : absl::StrSplit(tres, ','))
    if (absl::ConsumePrefix(&item, "mem=")) return SlurmMemoryMb(std::string(item));
  return 0;
}

}  // namespace

std::string SlurmQueueSeparator() {
  // "~" and 22 letters or digits: 131 random bits, short enough that the
  // separators (one per field) stay a fraction of what squeue prints.
  constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;  // the kernel's randomness (getrandom): not guessable from earlier reads
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 2);
  std::string out = "~";
  for (int i = 0; i < 22; ++i) out.push_back(kAlphabet[pick(rd)]);
  return out;
}

std::string SqueueFormat(const std::string& sep) {
  // Width 0: the whole value, never cut or padded.
  std::string out;
  for (const char* f : kSqueueFields) absl::StrAppend(&out, out.empty() ? "" : ",", f, ":0", sep);
  return out;
}

absl::StatusOr<std::vector<SlurmQueueJob>> ParseSqueue(const std::string& out, const std::string& sep) {
  auto unsupported = [&](absl::string_view why) {
    return absl::FailedPreconditionError(
        absl::StrCat("slurm: unsupported squeue output (", why, "): \"", absl::CEscape(out.substr(0, 300)), "\""));
  };
  // Every field ends with `sep` and every record with `sep` "\n": the
  // pieces are the fields, those after the first record's starting with
  // the "\n" that ended the record before, and a last piece "\n".
  std::vector<absl::string_view> pieces = absl::StrSplit(out, sep);
  std::vector<SlurmQueueJob> jobs;
  if (out.empty()) return jobs;
  if ((pieces.size() - 1) % kSqueueFieldCount != 0 || pieces.back() != "\n")
    return unsupported(absl::StrCat(pieces.size() - 1, " fields, not records of ", kSqueueFieldCount));
  for (size_t r = 0; r + 1 < pieces.size(); r += kSqueueFieldCount) {
    absl::string_view f[kSqueueFieldCount];
    for (size_t k = 0; k < kSqueueFieldCount; ++k) f[k] = pieces[r + k];
    if (r > 0 && !absl::ConsumePrefix(&f[0], "\n")) return unsupported("a record does not start a line");
    SlurmQueueJob j;
    j.id = std::string(f[0]);
    if (!AllDigits(j.id)) return unsupported(absl::StrCat("job id \"", absl::CEscape(j.id), "\" is not a number"));
    j.array_task = Text(f[1], "N/A");
    j.het_job = Text(f[2], "N/A");
    j.state = std::string(f[3]);
    j.reason = std::string(f[4]);
    j.submit_s = Number(f[5]);
    j.start_s = Number(f[6]);
    j.eligible_s = Number(f[7]);
    j.partition = std::string(f[8]);
    j.user = std::string(f[9]);
    j.cluster = std::string(f[10]);
    j.name = std::string(f[11]);
    j.cpus = Number(f[12]);
    j.min_memory_mb = SlurmMemoryMb(std::string(f[13]));
    j.tres_memory_mb = TresMemoryMb(f[14]);
    j.time_limit_s = SlurmDurationSeconds(std::string(f[15]));
    j.workdir = std::string(f[16]);
    j.batch = f[17] != "0";
    j.dependency = Text(f[18]);
    j.tasks = Number(f[19]);
    j.nodes = Number(f[20]);
    j.tres_per_job = Text(f[21], "N/A");
    j.tres_per_node = Text(f[22], "N/A");
    j.tres_per_socket = Text(f[23], "N/A");
    j.tres_per_task = Text(f[24], "N/A");
    j.licenses = Text(f[25]);
    j.features = Text(f[26]);
    j.comment = Text(f[27]);
    j.admin_comment = Text(f[28]);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

namespace {

bool QueueOrder(const Job& a, const Job& b) {
  int64_t ia = 0, ib = 0;
  (void)absl::SimpleAtoi(a.id, &ia);
  (void)absl::SimpleAtoi(b.id, &ib);
  return std::tie(a.queued_at_ms, ia) < std::tie(b.queued_at_ms, ib);
}

absl::Status NotFound(const std::string& id) {
  return absl::NotFoundError(absl::StrCat("slurm: no job ", id, " in the managed partitions"));
}

}  // namespace

std::string EncodeSlurmComment(const SlurmJobMeta& m) {
  std::string out = kCommentPrefix;
  if (!m.tag.empty()) absl::StrAppend(&out, ";t=", PctEncode(m.tag));
  if (m.has_key) absl::StrAppend(&out, ";k=", PctEncode(m.key));
  // %.17g: the cost comes back as the same double.
  if (m.has_cost) absl::StrAppend(&out, ";c=", absl::StrFormat("%.17g", m.cost));
  if (m.duration_ms != 0) absl::StrAppend(&out, ";d=", m.duration_ms);
  if (m.pinned >= 0) absl::StrAppend(&out, ";p=", m.pinned);
  if (m.no_workdir) absl::StrAppend(&out, ";w=0");
  for (const auto& [k, v] : m.env) absl::StrAppend(&out, ";e=", PctEncode(k), "=", PctEncode(v));
  if (!m.owner.empty()) absl::StrAppend(&out, ";o=", PctEncode(m.owner));
  if (!m.mark.empty()) absl::StrAppend(&out, ";m=", PctEncode(m.mark));
  return out;
}

std::string SlurmMarkMessage(const SlurmJobMeta& m, const std::string& user) {
  std::string out = "hyperfed-slurm-mark-v1";
  for (const std::string* f : {&m.tag, &m.key, &m.owner, &user}) absl::StrAppend(&out, ";", f->size(), ":", *f);
  return out;
}

bool DecodeSlurmComment(const std::string& comment, SlurmJobMeta* m) {
  *m = SlurmJobMeta{};
  std::vector<std::string> parts = absl::StrSplit(comment, ';');
  if (parts.empty() || parts[0] != kCommentPrefix) return false;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    if (p.size() < 2 || p[1] != '=') return false;
    const std::string v = p.substr(2);
    switch (p[0]) {
      case 't':
        if (!PctDecode(v, &m->tag)) return false;
        break;
      case 'k':
        if (!PctDecode(v, &m->key)) return false;
        m->has_key = true;
        break;
      case 'c':
        if (!absl::SimpleAtod(v, &m->cost)) return false;
        m->has_cost = true;
        break;
      case 'd':
        if (!absl::SimpleAtoi(v, &m->duration_ms)) return false;
        break;
      case 'p':
        m->pinned = v == "1" ? 1 : 0;
        break;
      case 'w':
        m->no_workdir = v == "0";
        break;
      case 'o':
        if (!PctDecode(v, &m->owner)) return false;
        break;
      case 'm':
        if (!PctDecode(v, &m->mark)) return false;
        break;
      case 'e': {
        const size_t eq = v.find('=');
        std::string name, value;
        if (eq == std::string::npos || !PctDecode(v.substr(0, eq), &name) || !PctDecode(v.substr(eq + 1), &value))
          return false;
        m->env[name] = value;
        break;
      }
      default:
        break;  // a field from a newer hyperfed: ignored
    }
  }
  return true;
}

namespace {

absl::StatusOr<passwd> LookUpUser(const std::string& name, std::string* buf) {
  passwd pw{};
  passwd* found = nullptr;
  buf->assign(16384, '\0');
  const int rc = getpwnam_r(name.c_str(), &pw, buf->data(), buf->size(), &found);
  if (rc != 0 || found == nullptr) return absl::NotFoundError(absl::StrCat("no local user \"", name, "\""));
  return pw;
}

// Why moved jobs may not run as local user `name` (uid `uid`), or "" when
// they may: never root, the daemon's own account or one in deny_users; and
// an account a peer's spec chose (run_as: owner, by same-name or a
// users_map line) only in uid_min..uid_max, the ordinary users' range
// (issue 34, finding 1: owner "munge" read munge.key). run_as_account is the
// operator's own choice of one account, so the range does not bind it
// ("nobody", uid 65534, is the usual one).
std::string WhyNotRunAs(const SlurmOptions& o, const std::string& name, uint32_t uid, bool peer_chosen) {
  if (uid == 0) return absl::StrCat("\"", name, "\" is root");
  if (uid == geteuid()) return absl::StrCat("\"", name, "\" is the daemon's own account, which runs no jobs");
  if (o.deny_users.contains(name)) return absl::StrCat("\"", name, "\" is listed in deny_users (a service account)");
  if (peer_chosen && (uid < o.uid_min || uid > o.uid_max)) {
    return absl::StrCat("\"", name, "\" has uid ", uid, ", outside uid_min..uid_max (", o.uid_min, "..", o.uid_max,
                        "): not an ordinary user's account");
  }
  return "";
}

}  // namespace

absl::Status CheckRunAsOptions(const SlurmOptions& o) {
  if (o.run_as == SlurmRunAs::kAccount) {
    std::string buf;
    auto pw = LookUpUser(o.run_as_account, &buf);
    if (!pw.ok()) {
      return OptionError("run_as_account",
                         absl::StrCat("scheduler option \"run_as_account\": ", pw.status().message()));
    }
    if (std::string why = WhyNotRunAs(o, o.run_as_account, pw->pw_uid, /*peer_chosen=*/false); !why.empty())
      return OptionError("run_as_account", absl::StrCat("scheduler option \"run_as_account\": ", why));
  }
  for (const auto& [from, target] : o.users_map) {
    std::string buf;
    auto pw = LookUpUser(target.user, &buf);
    if (!pw.ok()) continue;  // refused per job while it does not exist
    if (std::string why = WhyNotRunAs(o, target.user, pw->pw_uid, /*peer_chosen=*/true); !why.empty()) {
      return OptionError(
          "users_map", absl::StrCat("scheduler option \"users_map\": ", o.users_map_file, ":", target.line, ": ", why));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SlurmAdapter>> SlurmAdapter::Open(const AdapterContext& ctx) {
  auto o = ParseSlurmOptions(ctx.options);
  if (!o.ok()) return o.status();
  return Open(*std::move(o), ctx);
}

absl::StatusOr<std::unique_ptr<SlurmAdapter>> SlurmAdapter::Open(SlurmOptions options, const AdapterContext& ctx) {
  std::string key_path = options.mark_key;
  if (key_path.empty() && !ctx.state_dir.empty()) key_path = ctx.state_dir + "/mark.key";
  if (key_path.empty()) {
    return OptionError(
        "mark_key",
        "scheduler option \"mark_key\": needed when the daemon has no state_dir (the migration mark's key)");
  }
  auto key = MarkKey::LoadOrCreate(key_path);
  if (!key.ok()) return key.status();
  // Checked now so that a site learns at start, not at its first transfer
  // (and again for every job: users change).
  if (auto st = CheckRunAsOptions(options); !st.ok()) return st;
  std::string env_dir = std::filesystem::path(key_path).parent_path().string();
  if (env_dir.empty()) env_dir = ".";
  return std::unique_ptr<SlurmAdapter>(new SlurmAdapter(std::move(options), *std::move(key), std::move(env_dir)));
}

absl::StatusOr<CommandResult> SlurmAdapter::RunRaw(std::vector<std::string>* argv, std::string stdin_text,
                                                   std::string cwd,
                                                   const std::map<std::string, std::string>& extra_env) const {
  if (!options_.bin_dir.empty()) (*argv)[0] = options_.bin_dir + "/" + (*argv)[0];
  // A fixed environment: nothing of the daemon's (its PATH could lead to
  // another sbatch, LD_PRELOAD into it, SBATCH_* would set options) and
  // nothing of any spec's (issue 12, row 1).
  std::map<std::string, std::string> env = {
      {"PATH", options_.bin_dir.empty() ? std::string(kSlurmSafePath) : options_.bin_dir + ":" + kSlurmSafePath},
      {"LANG", "C"},
      {"LC_ALL", "C"}};
  if (!options_.slurm_conf.empty()) env["SLURM_CONF"] = options_.slurm_conf;
  for (const auto& [k, v] : extra_env) env[k] = v;
  CommandSpec spec{.argv = *argv,
                   .stdin_text = std::move(stdin_text),
                   .env = std::move(env),
                   .inherit_env = false,
                   .cwd = std::move(cwd),
                   .timeout = options_.timeout,
                   // squeue and sinfo on a big cluster print many MiB; a cut
                   // list would hide jobs, so only a runaway is cut.
                   .max_output = kSlurmMaxOutput};
  return RunCommand(spec);
}

absl::StatusOr<CommandResult> SlurmAdapter::Run(std::vector<std::string> argv, std::string stdin_text, std::string cwd,
                                                const std::map<std::string, std::string>& extra_env) const {
  auto r = RunRaw(&argv, std::move(stdin_text), std::move(cwd), extra_env);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0 || r->term_signal != 0) return CommandFailure(argv, *r);
  if (r->out_truncated) {
    return absl::UnavailableError(
        absl::StrCat("`", CommandLine(argv), "` printed more than ", kSlurmMaxOutput >> 20, " MiB"));
  }
  return r;
}

absl::StatusOr<SlurmAdapter::Queue> SlurmAdapter::ReadQueue() {
  // --all: hidden partitions too; --states=all: finished jobs too (tags
  // must be found while slurmctld keeps them).
  const std::vector<std::string> argv = {"squeue", "--noheader", "--all", "--states=all"};
  const std::string sep = SlurmQueueSeparator();
  auto r = Run(argv, "", "", {{"SQUEUE_FORMAT2", SqueueFormat(sep)}, {"SLURM_TIME_FORMAT", "%s"}});
  if (!r.ok()) return r.status();
  auto jobs = ParseSqueue(r->out, sep);
  if (!jobs.ok()) return jobs.status();
  Queue q;
  for (const SlurmQueueJob& j : *jobs) {
    Entry e;
    e.partition = j.partition;
    // Jobs outside `partitions` and `users` stay in the queue, marked: tag
    // lookups must see every job hyperfed submitted, wherever it is now, or
    // a retried submit would run sbatch again.
    if (!options_.partitions.empty()) {
      e.managed = false;
      for (absl::string_view p : absl::StrSplit(e.partition, ','))
        e.managed = e.managed || options_.partitions.contains(std::string(p));
    }
    e.user = j.user;
    if (!options_.users.empty() && !options_.users.contains(e.user)) e.managed = false;
    Job& job = e.job;
    job.id = j.id;
    job.state = MapSlurmState(j.state, j.reason);
    job.queued_at_ms = j.submit_s * 1000;
    if (job.state == JobState::kPending) {
      // What `squeue --start` prints: 0 until a scheduler pass has planned
      // the job; Slurm's "infinite" reads 0 too.
      if (j.start_s > 0 && j.start_s < (int64_t{1} << 32) - 1) e.start_ms = j.start_s * 1000;
    }
    e.comment = j.comment;
    e.admin_comment = j.admin_comment;
    e.window_end_s = SlurmWindowEnd(e.admin_comment);
    e.eligible_s = j.eligible_s;
    e.has_meta = DecodeSlurmComment(e.comment, &e.meta);
    // Only a mark made with this site's key, for the user the job runs as,
    // makes it a job hyperfed submitted. Any other "hyperfed1;" comment is
    // its user's: no tag, no owner (issue 12, row 2).
    e.marked = e.has_meta && !e.meta.mark.empty() && mark_.Verify(SlurmMarkMessage(e.meta, e.user), e.meta.mark);
    if (e.has_meta && !e.marked) {
      e.meta.tag.clear();
      e.meta.owner.clear();
    }
    JobSpec& s = job.spec;
    s.name = j.name;
    s.cores = static_cast<int>(std::clamp<int64_t>(j.cpus, 1, 1 << 30));
    // squeue's MinMemory is per node or per CPU without saying which; on
    // one node the job's TRES say what it has in all (per CPU: times its
    // CPUs). No request stays 0 (tres-alloc then shows the default it got).
    s.memory_mb = j.min_memory_mb;
    if (s.memory_mb > 0 && j.nodes <= 1 && j.tres_memory_mb > 0) s.memory_mb = j.tres_memory_mb;
    s.time_limit_s = j.time_limit_s;
    const bool no_workdir = (e.has_meta && e.meta.no_workdir) || !options_.keep_workdir;
    s.workdir = no_workdir ? "" : j.workdir;
    if (e.has_meta) {
      s.env = e.meta.env;  // the user's own job's variables (checked below)
      job.tag = e.meta.tag;
    }
    // The key (the job's identity in the federation: "exactly once" is
    // checked by it), the cost and the sim duration come from a comment only
    // when hyperfed wrote it (its mark verifies); a user's own comment could
    // claim another job's key (issue 34, finding 5).
    if (e.marked) s.duration_ms = e.meta.duration_ms;
    s.owner = e.marked ? e.meta.owner : e.user;
    s.key = e.marked && e.meta.has_key ? e.meta.key : absl::StrCat(j.cluster, "/", job.id);
    s.cost = e.marked && e.meta.has_cost
                 ? e.meta.cost
                 : static_cast<double>(s.cores) * static_cast<double>(s.time_limit_s > 0 ? s.time_limit_s : 1);
    bool pinned = !options_.pin_marker.empty() && absl::StartsWith(s.name, options_.pin_marker);
    if (e.has_meta && e.meta.pinned >= 0) pinned = e.meta.pinned == 1;
    for (absl::string_view p : absl::StrSplit(e.partition, ','))
      pinned = pinned || options_.pinned_partitions.contains(std::string(p));
    // What a JobSpec cannot carry pins the job: moved, it would run without
    // it (too early, without its GPUs, as one task instead of many).
    pinned = pinned || !NotPortable(j).empty();
    // No script to move: an srun/salloc job, or one whose script slurmctld
    // could not give (ExportIn found out).
    e.batch = j.batch;
    // Pins that SetPinned(false) cannot lift, with why.
    for (absl::string_view p : absl::StrSplit(e.partition, ','))
      if (options_.pinned_partitions.contains(std::string(p))) e.fixed_pin = absl::StrCat("is in pinned partition ", p);
    if (std::string why = NotPortable(j); e.fixed_pin.empty() && !why.empty()) e.fixed_pin = "has " + why;
    if (e.fixed_pin.empty() && !e.batch) e.fixed_pin = "has no batch script (srun/salloc)";
    // A user's own comment may name variables; one that no site would take
    // (PATH, LD_PRELOAD, SLURM_*, ...) keeps the job here.
    for (const auto& [name, value] : s.env) {
      if (std::string why = RefusedEnvName(name); !why.empty() && e.fixed_pin.empty())
        e.fixed_pin = absl::StrCat("has environment variable \"", absl::CEscape(name), "\", which is refused: ", why);
    }
    if (e.fixed_pin.empty() && unreadable_.contains({job.id, job.queued_at_ms}))
      e.fixed_pin = "has a batch script slurmctld cannot give";
    job.pinned = pinned || !e.fixed_pin.empty();
    q.emplace(job.id, std::move(e));
  }
  return q;
}

absl::StatusOr<std::string> SlurmAdapter::FetchScript(const std::string& id) const {
  const std::vector<std::string> argv = {"scontrol", "write", "batch_script", id, "-"};
  auto r = Run(argv);
  if (!r.ok()) return r.status();
  // scontrol exits 0 even when it could not fetch the script; it then says
  // why on stderr and prints nothing.
  if (r->out.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("`", CommandLine(argv), "` printed no batch script: ", absl::StripAsciiWhitespace(r->err)));
  }
  return std::move(r->out);
}

void SlurmAdapter::TrimScripts(const Queue& q) {
  // Gone, or the id now names another job (ids restart after slurmctld -c).
  auto live = [&](const JobKey& k) {
    auto it = q.find(k.first);
    return it != q.end() && it->second.job.queued_at_ms == k.second;
  };
  std::erase_if(unreadable_, [&](const JobKey& k) { return !live(k); });
  std::erase_if(scripts_, [&](const auto& kv) { return !live(kv.first); });
}

absl::StatusOr<std::vector<Job>> SlurmAdapter::ListJobs() {
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return q.status();
  TrimScripts(*q);
  std::vector<Job> out;
  for (auto& [id, e] : *q) {
    if (!e.managed || e.job.state == JobState::kDone || e.job.state == JobState::kCancelled) continue;
    out.push_back(e.job);
  }
  std::sort(out.begin(), out.end(), QueueOrder);
  return out;
}

absl::StatusOr<int64_t> SlurmAdapter::CountMigratable() {
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return q.status();
  int64_t n = 0;
  for (const auto& [id, e] : *q) n += e.managed && e.job.state == JobState::kPending && !e.job.pinned;
  return n;
}

namespace {

// Whether a node of `sinfo --json` can take new jobs: not DOWN, DRAIN(ED,
// ING) or FAIL(ING). Slurm 22.05 gives "state" as a word and the flags in
// "state_flags"; 23.02 gives "state" as an array of both.
bool NodeUsable(const json& n) {
  std::vector<std::string> words;
  for (const char* key : {"state", "state_flags"}) {
    auto it = n.find(key);
    if (it == n.end()) continue;
    if (it->is_string()) words.push_back(it->get<std::string>());
    if (it->is_array())
      for (const json& w : *it)
        if (w.is_string()) words.push_back(w.get<std::string>());
  }
  for (std::string w : words) {
    absl::AsciiStrToUpper(&w);
    for (const char* bad : {"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING"})
      if (w == bad) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<Capacity> SlurmAdapter::GetCapacity() {
  const std::vector<std::string> argv = {"sinfo", "--json"};
  auto r = Run(argv);
  if (!r.ok()) return r.status();
  json doc = json::parse(r->out, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_array())
    return absl::UnavailableError("`sinfo --json` printed no node list: " + r->out.substr(0, 200));
  int64_t cpus = 0;
  for (const json& n : doc["nodes"]) {
    bool counted = options_.partitions.empty();
    if (auto p = n.find("partitions"); !counted && p != n.end() && p->is_array()) {
      for (const json& name : *p) counted = counted || (name.is_string() && options_.partitions.contains(name));
    }
    if (counted && NodeUsable(n)) cpus += Int(n, "cpus");
  }
  if (cpus <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "slurm: no CPUs in ", options_.partitions.empty() ? std::string("the cluster")
                                                          : "partitions " + absl::StrJoin(options_.partitions, ",")));
  }
  return Capacity{.units = cpus, .speed = options_.speed};
}

std::optional<absl::Status> SlurmAdapter::ChangeIn(const Queue& q, Change c, const std::string& id) {
  if (!AllDigits(id)) return NotFound(id);
  auto it = q.find(id);
  if (it == q.end() || !it->second.Visible()) return NotFound(id);
  const JobState s = it->second.job.state;
  const char* what = c == Change::kHold ? "hold" : c == Change::kRelease ? "release" : "cancel";
  auto refuse = [&] {
    return absl::FailedPreconditionError(
        absl::StrCat("slurm: cannot ", what, " job ", id, ": it is ", JobStateName(s)));
  };
  switch (c) {
    case Change::kHold:
      if (s == JobState::kHeld) return absl::OkStatus();
      if (s != JobState::kPending) return refuse();
      return std::nullopt;
    case Change::kRelease:
      if (s == JobState::kPending) return absl::OkStatus();
      if (s != JobState::kHeld) return refuse();
      return std::nullopt;
    case Change::kCancel:
      if (s == JobState::kCancelled) return absl::OkStatus();
      if (s != JobState::kPending && s != JobState::kHeld) return refuse();
      return std::nullopt;
  }
  return absl::InternalError("unreachable");
}

std::vector<std::string> SlurmAdapter::ChangeCommand(Change c, const std::vector<std::string>& ids) {
  switch (c) {
    case Change::kHold:
      return {"scontrol", "hold", absl::StrJoin(ids, ",")};
    case Change::kRelease:
      return {"scontrol", "release", absl::StrJoin(ids, ",")};
    case Change::kCancel: {
      // --state=PENDING: a job that started since the queue was read is
      // left running (Cancel must never kill a running job). scancel checks
      // the state on its side just before it sends the cancel, so a job that
      // starts in that moment can still be hit; the second read in
      // ChangeMany then shows what happened (see docs/adapters.md).
      std::vector<std::string> argv = {"scancel", "--state=PENDING"};
      argv.insert(argv.end(), ids.begin(), ids.end());
      return argv;
    }
  }
  return {};
}

std::vector<absl::Status> SlurmAdapter::ChangeMany(Change c, const std::vector<std::string>& ids) {
  if (ids.empty()) return {};
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return std::vector<absl::Status>(ids.size(), q.status());
  std::vector<absl::Status> out(ids.size());
  // What the queue already answers (unknown, already so, cannot be), and
  // the jobs that need the command: each once, however often it is named.
  std::vector<std::string> act;
  std::map<std::string, std::vector<size_t>> asked;  // id -> its places in `ids`
  for (size_t i = 0; i < ids.size(); ++i) {
    if (auto it = asked.find(ids[i]); it != asked.end()) {
      it->second.push_back(i);
      continue;
    }
    std::optional<absl::Status> known = ChangeIn(*q, c, ids[i]);
    if (known) {
      out[i] = *known;
      continue;
    }
    asked[ids[i]].push_back(i);
    act.push_back(ids[i]);
  }
  // One command per kSlurmChangeBatch jobs (scontrol and scancel take
  // lists). A failed command may still have changed some of its jobs: the
  // second read below says which, job by job; the command's error is kept
  // for those it did not change.
  std::map<std::string, absl::Status> failed;  // id -> its command's error
  absl::Status stuck;                          // a timed-out command: Slurm is not answering
  for (size_t from = 0; from < act.size(); from += kSlurmChangeBatch) {
    const std::vector<std::string> chunk(act.begin() + from,
                                         act.begin() + std::min(act.size(), from + kSlurmChangeBatch));
    // One timeout is enough: the rest would each wait as long again.
    absl::Status st = stuck.ok() ? Run(ChangeCommand(c, chunk)).status() : stuck;
    if (absl::IsDeadlineExceeded(st)) stuck = st;
    if (!st.ok())
      for (const std::string& id : chunk) failed[id] = st;
  }
  // A pending job may start between the queue read and the command; Slurm
  // then answers the hold with success and the job runs. Read again so that
  // such a job is reported as running, never as held.
  std::optional<absl::StatusOr<Queue>> after;
  if (!act.empty() && (c != Change::kRelease || !failed.empty())) after = ReadQueue();
  for (const std::string& id : act) {
    absl::Status st = Judge(c, id, failed.count(id) ? failed[id] : absl::OkStatus(), after ? &*after : nullptr);
    for (size_t i : asked[id]) out[i] = st;
  }
  return out;
}

absl::Status SlurmAdapter::Judge(Change c, const std::string& id, const absl::Status& command,
                                 const absl::StatusOr<Queue>* after) {
  if (absl::IsDeadlineExceeded(command) || !after) return command;
  if (!after->ok()) return after->status();
  auto it = (*after)->find(id);
  if (it == (*after)->end()) return command;  // gone: only the command can tell
  const JobState got = it->second.job.state;
  if (c == Change::kRelease) return got == JobState::kHeld ? command : absl::OkStatus();
  const JobState want = c == Change::kHold ? JobState::kHeld : JobState::kCancelled;
  if (got == want) return absl::OkStatus();  // the batch took, even if its command failed for another job
  if (!command.ok()) return command;
  if (got == JobState::kPending || (c == Change::kCancel && got == JobState::kHeld)) {
    // The command succeeded but did not take (scancel --state=PENDING
    // filters on a state it read a moment earlier): the job is still where
    // it can be held or cancelled, so retrying is right and safe.
    return absl::UnavailableError(absl::StrCat("slurm: job ", id, " is still ", JobStateName(got), " after ",
                                               c == Change::kHold ? "scontrol hold" : "scancel", "; try again"));
  }
  return absl::FailedPreconditionError(absl::StrCat("slurm: job ", id, " is ", JobStateName(got), ", not ",
                                                    JobStateName(want), " (it changed meanwhile)"));
}

absl::Status SlurmAdapter::Hold(const std::string& id) { return ChangeMany(Change::kHold, {id})[0]; }
absl::Status SlurmAdapter::Release(const std::string& id) { return ChangeMany(Change::kRelease, {id})[0]; }
absl::Status SlurmAdapter::Cancel(const std::string& id) { return ChangeMany(Change::kCancel, {id})[0]; }
std::vector<absl::Status> SlurmAdapter::HoldMany(const std::vector<std::string>& ids) {
  return ChangeMany(Change::kHold, ids);
}
std::vector<absl::Status> SlurmAdapter::ReleaseMany(const std::vector<std::string>& ids) {
  return ChangeMany(Change::kRelease, ids);
}
std::vector<absl::Status> SlurmAdapter::CancelMany(const std::vector<std::string>& ids) {
  return ChangeMany(Change::kCancel, ids);
}

absl::StatusOr<const SlurmAdapter::Entry*> SlurmAdapter::ExportableIn(const Queue& q, const std::string& id) {
  if (!AllDigits(id)) return NotFound(id);
  auto it = q.find(id);
  if (it == q.end() || !it->second.Visible()) return NotFound(id);
  const Entry& e = it->second;
  if (!e.batch) {
    return absl::FailedPreconditionError(
        absl::StrCat("slurm: job ", id, " has no batch script (started by srun or salloc); it is pinned"));
  }
  if (absl::StrContains(e.fixed_pin, "environment variable"))
    return absl::FailedPreconditionError(absl::StrCat("slurm: job ", id, " ", e.fixed_pin, "; it is pinned"));
  return &e;
}

absl::StatusOr<JobSpec> SlurmAdapter::Export(const std::string& id) { return ExportMany({id})[0]; }

std::vector<absl::StatusOr<JobSpec>> SlurmAdapter::ExportMany(const std::vector<std::string>& ids) {
  if (ids.empty()) return {};
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return std::vector<absl::StatusOr<JobSpec>>(ids.size(), q.status());
  auto key_of = [](const Job& j) { return JobKey{j.id, j.queued_at_ms}; };
  // What the queue answers, and the scripts not cached yet: each job's once.
  std::vector<absl::StatusOr<const Entry*>> found;
  std::vector<JobKey> fetch;
  std::set<JobKey> fetching;
  for (const auto& id : ids) {
    found.push_back(ExportableIn(*q, id));
    if (!found.back().ok()) continue;
    const JobKey key = key_of((*found.back())->job);
    if (!scripts_.contains(key) && fetching.insert(key).second) fetch.push_back(key);
  }
  absl::Status stuck;
  std::vector<absl::StatusOr<std::string>> got = RunParallel<std::string>(
      fetch.size(), kSlurmParallelCommands, &stuck, [&](size_t k) { return FetchScript(fetch[k].first); });
  std::map<JobKey, absl::Status> failed;
  for (size_t k = 0; k < fetch.size(); ++k) {
    if (got[k].ok()) {
      scripts_[fetch[k]] = *std::move(got[k]);
      continue;
    }
    absl::Status st = got[k].status();
    if (absl::IsFailedPrecondition(st)) {
      // slurmctld answered and has no script for it: it never will.
      unreadable_.insert(fetch[k]);
      st =
          absl::FailedPreconditionError(absl::StrCat(st.message(), "; job ", fetch[k].first, " is pinned from now on"));
    }
    failed[fetch[k]] = st;
  }
  std::vector<absl::StatusOr<JobSpec>> out;
  for (const auto& e : found) {
    if (!e.ok()) {
      out.push_back(e.status());
    } else if (auto it = failed.find(key_of((*e)->job)); it != failed.end()) {
      out.push_back(it->second);
    } else {
      JobSpec spec = (*e)->job.spec;
      spec.script = scripts_.at(key_of((*e)->job));
      out.push_back(std::move(spec));
    }
  }
  return out;
}

std::vector<absl::StatusOr<Job>> SlurmAdapter::GetJobs(const std::vector<std::string>& ids) {
  if (ids.empty()) return {};
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return std::vector<absl::StatusOr<Job>>(ids.size(), q.status());
  std::vector<absl::StatusOr<Job>> out;
  for (const auto& id : ids) {
    auto it = AllDigits(id) ? q->find(id) : q->end();
    if (it == q->end() || !it->second.Visible()) {
      out.push_back(NotFound(id));
      continue;
    }
    out.push_back(it->second.job);
  }
  return out;
}

absl::StatusOr<std::vector<Job>> SlurmAdapter::FindByTag(const std::string& tag) {
  if (tag.empty()) return absl::InvalidArgumentError("slurm: FindByTag needs a non-empty tag");
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return q.status();
  std::vector<Job> out;
  for (auto& [id, e] : *q) {
    if (!e.marked || e.meta.tag != tag) continue;
    out.push_back(e.job);
  }
  std::sort(out.begin(), out.end(), QueueOrder);
  return out;
}

namespace {

// What a submitted job carries in its comment: `user` is the one it runs as.
SlurmJobMeta MetaFor(const JobSpec& spec, const std::string& tag) {
  SlurmJobMeta m;
  m.tag = tag;
  m.has_key = true;
  m.key = spec.key;
  m.has_cost = true;
  m.cost = spec.cost;
  m.duration_ms = spec.duration_ms;
  m.no_workdir = spec.workdir.empty();
  m.env = spec.env;
  m.owner = spec.owner;
  return m;
}

absl::Status CommentFits(const std::string& comment) {
  if (comment.size() <= kSlurmMaxComment) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("job spec: tag, key, owner and environment take ", comment.size(),
                                                 " bytes in the Slurm comment, over Slurm's limit of ",
                                                 kSlurmMaxComment));
}

// Room for the tag a migration gives a job ("hyperfed:<id>:<index>", ids up
// to 200 bytes, percent-encoded), when the tag is not known yet.
constexpr size_t kTagReserve = 256;
// A mark: 64 hex digits.
constexpr size_t kMarkLength = 64;

bool AllowedDirectiveValue(absl::string_view v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '_' || c == ',' || c == ':' || c == '@';
  });
}

// `line` is one of the directives FilterSbatchDirectives keeps.
bool AllowedDirective(absl::string_view line) {
  if (!absl::ConsumePrefix(&line, "#SBATCH")) return false;
  if (line.empty() || (line[0] != ' ' && line[0] != '\t')) return false;
  line = absl::StripLeadingAsciiWhitespace(line);
  absl::ConsumeSuffix(&line, "\n");
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  if (line == "--requeue" || line == "--no-requeue") return true;
  for (absl::string_view opt : {"--mail-type=", "--open-mode=", "--signal="})
    if (absl::ConsumePrefix(&line, opt)) return AllowedDirectiveValue(line);
  return false;
}

// Where sbatch's own words say the scheduler refused the job (or its
// options) rather than could not be asked: everything but the failures to
// reach slurmctld.
bool SbatchRefused(const CommandResult& r) {
  if (r.term_signal != 0 || r.exit_code == 0) return false;
  if (!absl::StrContains(r.err, "sbatch: error:")) return false;
  for (const char* transport : {"Unable to contact slurm controller",
                                "Socket timed out",
                                "Zero Bytes were transmitted",
                                "Slurm controller not responding",
                                "Communication connection failure",
                                "Connection refused",
                                "Connection timed out",
                                "authentication",
                                "Munge",
                                "munge",
                                "temporarily unable",
                                "temporarily unavailable",
                                "Transport endpoint",
                                "No route to host",
                                "Network is unreachable",
                                "configuration source",
                                "fetch_config",
                                "Slurmctld is busy",
                                "Resource temporarily",
                                "Cannot allocate memory",
                                "Interrupted system call"}) {
    if (absl::StrContains(r.err, transport)) return false;
  }
  return true;
}

}  // namespace

std::string FilterSbatchDirectives(const std::string& script) {
  std::string out;
  out.reserve(script.size() + 64);
  // Where sbatch 22.05 reads directives (src/sbatch/opt.c,
  // _opt_batch_script; src/sbatch/xlate.c, xlate_batch_script):
  // "#SBATCH" and "#SLURM" at the start of a line up to the first line
  // that is neither blank nor a comment; "#PBS" and "#BSUB" at the start of
  // a line anywhere before the 101st line not starting with '#' (unless
  // --ignore-pbs, which SubmitIn passes: these lines go anyway, should an
  // sbatch not honour it). Matched here in any case and after blanks too,
  // a superset of what sbatch matches (issue 34, finding 4).
  bool header = true;
  int not_comment = 0;  // lines not starting with '#', as xlate.c counts them
  size_t pos = 0;
  while (pos < script.size()) {
    size_t end = script.find('\n', pos);
    end = end == std::string::npos ? script.size() : end + 1;
    const absl::string_view line(script.data() + pos, end - pos);
    pos = end;
    const absl::string_view body = absl::StripAsciiWhitespace(line);
    if (header && !body.empty() && body[0] != '#') header = false;  // sbatch reads no #SBATCH/#SLURM after it
    if (line.empty() || line[0] != '#') ++not_comment;
    const bool native = absl::StartsWithIgnoreCase(body, "#SBATCH") || absl::StartsWithIgnoreCase(body, "#SLURM");
    const bool foreign = absl::StartsWithIgnoreCase(body, "#PBS") || absl::StartsWithIgnoreCase(body, "#BSUB");
    if ((header && native && !AllowedDirective(line)) || (foreign && not_comment <= 100)) {
      absl::StrAppend(&out, "# hyperfed removed: ", line);
      continue;
    }
    out.append(line.data(), line.size());
  }
  return out;
}

absl::StatusOr<RunAsUser> ResolveRunAs(const SlurmOptions& o, const JobSpec& s, const std::string& scheduler) {
  auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat(scheduler, ": ", why, " (docs/adapters.md, \"Who moved jobs run as\")"));
  };
  std::string local;
  switch (o.run_as) {
    case SlurmRunAs::kUnset:
      return refuse(
          "this site runs no jobs from other sites: set scheduler option run_as to \"account\" (with "
          "run_as_account: an unprivileged local user) or \"owner\" (with users_map: same-name or a mapping file); "
          "hyperfed never runs them as its own account");
    case SlurmRunAs::kAccount:
      local = o.run_as_account;
      break;
    case SlurmRunAs::kOwner: {
      if (s.owner.empty())
        return refuse("the job has no owner, and this site runs jobs as their owner (run_as: owner)");
      if (o.same_name) {
        local = s.owner;
      } else if (auto it = o.users_map.find({s.source_site, s.owner});
                 !s.source_site.empty() && it != o.users_map.end()) {
        local = it->second.user;
      } else if (auto any = o.users_map.find({"*", s.owner}); !s.source_site.empty() && any != o.users_map.end()) {
        local = any->second.user;
      } else {
        return refuse(absl::StrCat("owner \"", s.owner, "\" from site \"", s.source_site, "\" is not in users_map ",
                                   o.users_map_file, " (lines \"", s.source_site.empty() ? "site" : s.source_site, ":",
                                   s.owner, " local_user\" or \"*:", s.owner, " local_user\")"));
      }
      break;
    }
  }
  std::string buf;
  auto pw = LookUpUser(local, &buf);
  if (!pw.ok())
    return refuse(absl::StrCat("owner \"", s.owner, "\" maps to local user \"", local, "\", which does not exist"));
  if (std::string why = WhyNotRunAs(o, local, pw->pw_uid, o.run_as == SlurmRunAs::kOwner); !why.empty()) {
    return refuse(absl::StrCat("owner \"", s.owner, "\" maps to local user ", why));
  }
  return RunAsUser{.name = local, .uid = pw->pw_uid, .gid = pw->pw_gid};
}

absl::StatusOr<RunAsUser> SlurmAdapter::RunAs(const JobSpec& s) const {
  return ResolveRunAs(options_, s, kSlurmAdapterName);
}

SlurmAdapter::NodeLimits SlurmAdapter::Limits() const {
  {
    absl::MutexLock l(&limits_mu_);
    if (absl::Now() - limits_at_ < absl::Minutes(1)) return limits_;
  }
  NodeLimits got;
  auto r = Run({"sinfo", "--json"});
  if (!r.ok()) return got;  // unknown: sbatch decides (and its refusal is final too)
  json doc = json::parse(r->out, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_array()) return got;
  for (const json& n : doc["nodes"]) {
    bool in = options_.submit_partition.empty() && options_.partitions.empty();
    if (auto p = n.find("partitions"); !in && p != n.end() && p->is_array()) {
      for (const json& name : *p) {
        if (!name.is_string()) continue;
        const std::string part = name.get<std::string>();
        in = in || (options_.submit_partition.empty() ? options_.partitions.contains(part)
                                                      : part == options_.submit_partition);
      }
    }
    if (!in) continue;
    got.cpus = std::max(got.cpus, Int(n, "cpus"));
    got.memory_mb = std::max(got.memory_mb, Int(n, "real_memory"));
  }
  absl::MutexLock l(&limits_mu_);
  limits_ = got;
  limits_at_ = absl::Now();
  return got;
}

absl::Status SlurmAdapter::CheckSpec(const JobSpec& s) const { return CheckSpecWithin(s, Limits()); }

absl::Status SlurmAdapter::CheckSpecWithin(const JobSpec& s, const NodeLimits& limits) const {
  if (auto st = SchedulerAdapter::CheckSpec(s); !st.ok()) return st;
  if (!absl::StartsWith(s.script, "#!"))
    return absl::InvalidArgumentError("job spec: a Slurm batch script must start with \"#!\"");
  auto user = RunAs(s);
  if (!user.ok()) return user.status();
  const int64_t minutes = s.time_limit_s / 60 + (s.time_limit_s % 60 != 0);
  if (minutes > kSlurmMaxTimeMinutes) {
    return absl::InvalidArgumentError(absl::StrCat("job spec: time limit ", s.time_limit_s,
                                                   " s is over Slurm's largest, ", kSlurmMaxTimeMinutes, " minutes"));
  }
  if (s.memory_mb > kSlurmMaxMemoryMb) {
    return absl::InvalidArgumentError(
        absl::StrCat("job spec: memory ", s.memory_mb, " MB is over Slurm's largest, ", kSlurmMaxMemoryMb, " MB"));
  }
  // sbatch takes these and the job then waits for ever (BadConstraints,
  // PartitionConfig): refuse now, so the source keeps it.
  const std::string where =
      options_.submit_partition.empty() ? std::string("this site") : "partition " + options_.submit_partition;
  if (limits.cpus > 0 && s.cores > limits.cpus) {
    return absl::InvalidArgumentError(
        absl::StrCat("job spec: ", s.cores, " cores, but the largest node of ", where, " has ", limits.cpus));
  }
  if (limits.memory_mb > 0 && s.memory_mb > limits.memory_mb) {
    return absl::InvalidArgumentError(absl::StrCat("job spec: ", s.memory_mb, " MB of memory, but the largest node of ",
                                                   where, " has ", limits.memory_mb, " MB"));
  }
  SlurmJobMeta m = MetaFor(s, std::string(kTagReserve, 'x'));
  m.mark = std::string(kMarkLength, 'x');
  return CommentFits(EncodeSlurmComment(m));
}

absl::StatusOr<std::string> SlurmAdapter::SubmitIn(const JobSpec& spec, const std::string& tag, bool held,
                                                   const NodeLimits& limits) const {
  if (auto st = CheckSpecWithin(spec, limits); !st.ok()) return st;
  auto user = RunAs(spec);
  if (!user.ok()) return user.status();
  SlurmJobMeta meta = MetaFor(spec, tag);
  meta.mark = mark_.Sign(SlurmMarkMessage(meta, user->name));
  const std::string comment = EncodeSlurmComment(meta);
  if (auto st = CommentFits(comment); !st.ok()) return st;
  std::vector<std::string> argv = {
      "sbatch",     "--parsable",          "--job-name=" + spec.name, absl::StrCat("--cpus-per-task=", spec.cores),
      "--ntasks=1", "--comment=" + comment};
  if (spec.memory_mb > 0) argv.push_back(absl::StrCat("--mem=", spec.memory_mb));
  if (spec.time_limit_s > 0)
    argv.push_back(absl::StrCat("--time=", spec.time_limit_s / 60 + (spec.time_limit_s % 60 != 0)));
  if (!spec.workdir.empty()) argv.push_back("--chdir=" + spec.workdir);
  if (held) argv.push_back("--hold");
  if (!options_.submit_partition.empty()) argv.push_back("--partition=" + options_.submit_partition);
  if (!options_.submit_account.empty()) argv.push_back("--account=" + options_.submit_account);
  // As whom: never the daemon's account (RunAs); Slurm 22.05's sbatch takes
  // --uid from root only (docs/adapters.md).
  argv.push_back(absl::StrCat("--uid=", user->uid));
  argv.push_back(absl::StrCat("--gid=", user->gid));
  // #PBS and #BSUB lines are sbatch's too, unless told otherwise.
  argv.push_back("--ignore-pbs");
  // The environment goes to the job in a file sbatch reads (NAME=value
  // records separated by NUL), never into sbatch's own environment or argv.
  std::string env_file;
  if (spec.env.empty()) {
    argv.push_back("--export=NONE");
  } else {
    std::string records;
    for (const auto& [k, v] : spec.env) absl::StrAppend(&records, k, "=", v, std::string(1, '\0'));
    std::string tmpl = env_dir_ + "/.sbatch-env-XXXXXX";
    const int fd = mkostemp(tmpl.data(), O_CLOEXEC);  // mode 0600
    if (fd < 0) return absl::UnavailableError(absl::StrCat("slurm: cannot create ", tmpl, ": ", strerror(errno)));
    const bool ok = write(fd, records.data(), records.size()) == static_cast<ssize_t>(records.size());
    close(fd);
    env_file = tmpl;
    if (!ok) {
      unlink(env_file.c_str());
      return absl::UnavailableError(absl::StrCat("slurm: cannot write ", env_file));
    }
    // NIL: no variable from sbatch's environment, only the file's (and
    // Slurm's own SLURM_*), as NONE does for a job without variables.
    argv.push_back("--export=NIL");
    argv.push_back("--export-file=" + env_file);
  }
  auto r = RunRaw(&argv, FilterSbatchDirectives(spec.script), options_.submit_dir);
  if (!env_file.empty()) unlink(env_file.c_str());
  if (!r.ok()) return r.status();
  if (r->exit_code != 0 || r->term_signal != 0) {
    absl::Status failed = CommandFailure(argv, *r);
    // Final: slurmctld (or sbatch) refused this spec; the same would be
    // refused again (adapter.h, Submit).
    if (SbatchRefused(*r)) return absl::InvalidArgumentError(failed.message());
    return failed;
  }
  // "<id>" or "<id>;<cluster>".
  std::string id(absl::StripAsciiWhitespace(r->out.substr(0, r->out.find(';'))));
  if (!AllDigits(id))
    return absl::UnavailableError(absl::StrCat("`sbatch --parsable` printed \"", r->out, "\", no job id"));
  return id;
}

absl::StatusOr<std::string> SlurmAdapter::Submit(const JobSpec& spec, const std::string& tag, bool held) {
  auto r = SubmitMany({{spec, tag}}, held);
  return r[0];
}

std::vector<absl::StatusOr<std::string>> SlurmAdapter::SubmitMany(
    const std::vector<std::pair<JobSpec, std::string>>& spec_and_tag, bool held) {
  if (spec_and_tag.empty()) return {};
  // Held for the whole batch: no other call reads the queue between the tag
  // lookup below and the sbatch that adds a tag.
  absl::MutexLock l(&mu_);
  std::map<std::string, std::string> by_tag;  // tag -> the first job carrying it
  if (std::any_of(spec_and_tag.begin(), spec_and_tag.end(), [](const auto& st) { return !st.second.empty(); })) {
    auto q = ReadQueue();
    if (!q.ok()) return std::vector<absl::StatusOr<std::string>>(spec_and_tag.size(), q.status());
    std::vector<const Job*> tagged;
    for (const auto& [id, e] : *q)
      if (e.marked && !e.meta.tag.empty()) tagged.push_back(&e.job);
    std::sort(tagged.begin(), tagged.end(), [](const Job* a, const Job* b) { return QueueOrder(*a, *b); });
    for (const Job* j : tagged) by_tag.emplace(j->tag, j->id);
  }
  // One sinfo for the batch (CheckSpec's node limits), not one per thread.
  const NodeLimits limits = Limits();
  // Waves of sbatch commands run kSlurmParallelCommands at a time, with
  // one-by-one submission's answers for repeated tags (subprocess.h).
  std::vector<std::string> tags;
  tags.reserve(spec_and_tag.size());
  for (const auto& st : spec_and_tag) tags.push_back(st.second);
  absl::Status stuck;
  return SubmitTaggedInWaves(tags, std::move(by_tag), kSlurmParallelCommands, &stuck, [&](size_t i) {
    const auto& [spec, tag] = spec_and_tag[i];
    return SubmitIn(spec, tag, held, limits);
  });
}

absl::Status SlurmAdapter::SetPinned(const std::string& id, bool pinned) {
  if (!AllDigits(id)) return NotFound(id);
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return q.status();
  auto it = q->find(id);
  if (it == q->end() || !it->second.Visible()) return NotFound(id);
  const Entry& e = it->second;
  if (e.job.state == JobState::kDone || e.job.state == JobState::kCancelled)
    return absl::FailedPreconditionError(absl::StrCat("slurm: job ", id, " is ", JobStateName(e.job.state)));
  if (e.job.pinned == pinned) return absl::OkStatus();
  if (!pinned && !e.fixed_pin.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("slurm: job ", id, " ", e.fixed_pin, ", so it stays pinned"));
  }
  SlurmJobMeta m = e.has_meta ? e.meta : SlurmJobMeta{};
  m.pinned = pinned ? 1 : 0;
  return Run({"scontrol", "update", "JobId=" + id, "Comment=" + EncodeSlurmComment(m)}).status();
}

absl::StatusOr<std::vector<PendingJob>> SlurmAdapter::Pending() {
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return q.status();
  std::vector<const Entry*> pending;
  for (const auto& [id, e] : *q)
    if (e.managed && e.job.state == JobState::kPending && !e.job.pinned) pending.push_back(&e);
  std::sort(pending.begin(), pending.end(), [](const Entry* a, const Entry* b) { return QueueOrder(a->job, b->job); });
  std::vector<PendingJob> out;
  out.reserve(pending.size());
  const int64_t now_s = absl::ToUnixSeconds(absl::Now());
  for (const Entry* e : pending) {
    out.push_back({.id = e->job.id,
                   .key = e->job.spec.key,
                   .cores = e->job.spec.cores,
                   .queued_at_ms = e->job.queued_at_ms,
                   .limit_ms = e->job.spec.time_limit_s * 1000,
                   .start_ms = e->start_ms,
                   .window_end_ms = e->InWindow(now_s) ? e->window_end_s * 1000 : 0});
  }
  return out;
}

absl::StatusOr<int64_t> SlurmAdapter::WidestJob() {
  const NodeLimits limits = Limits();
  if (limits.cpus <= 0) {
    return absl::UnavailableError(absl::StrCat(
        "slurm: `sinfo --json` gave no node CPUs for ",
        options_.submit_partition.empty() ? std::string("this site") : "partition " + options_.submit_partition));
  }
  return limits.cpus;
}

// The start time in what `sbatch --test-only` says ("sbatch: Job 12 to
// start at 2024-05-01T10:00:00 using 4 processors on nodes n1 in partition
// debug"), read as UTC; InternalError naming the output when there is none.
absl::StatusOr<int64_t> ParseSbatchTestOnlyStart(const std::string& output) {
  const std::string kMarker = " to start at ";
  const size_t at = output.find(kMarker);
  auto unreadable = [&] {
    return absl::InternalError(absl::StrCat("slurm: cannot read a start time in what `sbatch --test-only` printed: \"",
                                            absl::CEscape(output.substr(0, 300)), "\""));
  };
  if (at == std::string::npos) return unreadable();
  const size_t from = at + kMarker.size();
  const size_t end = output.find_first_of(" \t\r\n", from);
  const std::string word = output.substr(from, end == std::string::npos ? std::string::npos : end - from);
  absl::Time t;
  std::string err;
  if (!absl::ParseTime("%Y-%m-%dT%H:%M:%S", word, absl::UTCTimeZone(), &t, &err)) return unreadable();
  return absl::ToUnixMillis(t);
}

absl::StatusOr<std::vector<int64_t>> SlurmAdapter::ArrivalStarts(const std::vector<int64_t>& widths) {
  if (widths.empty()) return std::vector<int64_t>{};
  for (int64_t w : widths)
    if (w < 1) return absl::InvalidArgumentError(absl::StrCat("slurm: no job of ", w, " cores"));
  auto widest = WidestJob();
  if (!widest.ok()) return widest.status();
  for (int64_t w : widths) {
    if (w > *widest) {
      return absl::InvalidArgumentError(
          absl::StrCat("slurm: no job of ", w, " cores can run here (the largest node has ", *widest, ")"));
    }
  }
  std::vector<int64_t> out;
  for (int64_t w : widths) {
    // The comment in hyperfed's format: the probe stands for a job that
    // arrives from a peer, to which job_submit.lua gives no placement window.
    std::vector<std::string> argv = {"sbatch",
                                     "--test-only",
                                     "--job-name=hyperfed-arrival-probe",
                                     "--ntasks=1",
                                     absl::StrCat("--cpus-per-task=", w),
                                     "--export=NONE",
                                     absl::StrCat("--comment=", kCommentPrefix),
                                     "--wrap=true"};
    if (!options_.submit_partition.empty()) argv.push_back("--partition=" + options_.submit_partition);
    if (!options_.submit_account.empty()) argv.push_back("--account=" + options_.submit_account);
    auto r = RunRaw(&argv, "", options_.submit_dir, {{"TZ", "UTC"}});
    if (!r.ok()) return r.status();
    if (r->exit_code != 0 || r->term_signal != 0) {
      absl::Status failed = CommandFailure(argv, *r);
      if (SbatchRefused(*r)) return absl::InvalidArgumentError(failed.message());
      return failed;
    }
    auto start = ParseSbatchTestOnlyStart(r->err + "\n" + r->out);
    if (!start.ok()) return start.status();
    out.push_back(*start);
  }
  return out;
}

int64_t SlurmWindowEnd(const std::string& admin_comment) {
  int64_t end = 0;
  for (absl::string_view f : absl::StrSplit(admin_comment, ';')) {
    if (!absl::ConsumePrefix(&f, kSlurmWindowToken)) continue;
    int64_t v = 0;
    end = absl::SimpleAtoi(f, &v) && v > 0 ? v : 0;
  }
  return end;
}

std::string SlurmWindowKept(const std::string& admin_comment) {
  std::vector<std::string> fields = absl::StrSplit(admin_comment, ';');
  for (std::string& f : fields)
    if (absl::StartsWith(f, kSlurmWindowToken)) f = absl::StrCat(kSlurmWindowToken, "kept");
  return absl::StrJoin(fields, ";");
}

std::vector<absl::Status> SlurmAdapter::EndPlacementWindow(const std::vector<std::string>& ids) {
  if (ids.empty()) return {};
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return std::vector<absl::Status>(ids.size(), q.status());
  const int64_t now_s = absl::ToUnixSeconds(absl::Now());
  std::vector<absl::Status> out(ids.size());
  // The jobs in their window, each once, grouped by their new AdminComment.
  std::map<std::string, std::vector<size_t>> asked;                  // id -> its places in `ids`
  std::map<std::string, std::vector<std::string>> by_admin_comment;  // new AdminComment -> ids
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = AllDigits(ids[i]) ? q->find(ids[i]) : q->end();
    if (it == q->end() || !it->second.Visible()) {
      out[i] = NotFound(ids[i]);
      continue;
    }
    if (auto a = asked.find(ids[i]); a != asked.end()) {
      a->second.push_back(i);
      continue;
    }
    if (!it->second.InWindow(now_s)) continue;  // no window (any more): nothing to end
    asked[ids[i]].push_back(i);
    by_admin_comment[SlurmWindowKept(it->second.admin_comment)].push_back(ids[i]);
  }
  std::map<std::string, absl::Status> failed;  // id -> its command's error
  absl::Status stuck;                          // a timed-out command: Slurm is not answering
  for (const auto& [admin_comment, group] : by_admin_comment) {
    for (size_t from = 0; from < group.size(); from += kSlurmChangeBatch) {
      const std::vector<std::string> chunk(group.begin() + from,
                                           group.begin() + std::min(group.size(), from + kSlurmChangeBatch));
      absl::Status st = stuck.ok() ? Run({"scontrol", "update", "JobId=" + absl::StrJoin(chunk, ","), "StartTime=now",
                                          "AdminComment=" + admin_comment})
                                         .status()
                                   : stuck;
      if (absl::IsDeadlineExceeded(st)) stuck = st;
      if (!st.ok())
        for (const std::string& id : chunk) failed[id] = st;
    }
  }
  // scontrol goes on past a job it could not update and then exits
  // non-zero: read again to tell which jobs still need it.
  std::optional<absl::StatusOr<Queue>> after;
  if (!failed.empty() && stuck.ok()) after = ReadQueue();
  for (const auto& [id, places] : asked) {
    absl::Status st;
    if (auto f = failed.find(id); f != failed.end()) {
      st = f->second;
      if (after && after->ok()) {
        auto it = (*after)->find(id);
        if (it != (*after)->end() && !it->second.InWindow(absl::ToUnixSeconds(absl::Now()))) st = absl::OkStatus();
      }
    }
    for (size_t i : places) out[i] = st;
  }
  return out;
}

absl::StatusOr<SlurmOptions> SlurmAdapterFactory::Parse(const std::map<std::string, std::string>& options) const {
  return ParseSlurmOptions(options);
}

absl::StatusOr<std::unique_ptr<SchedulerAdapter>> SlurmAdapterFactory::Make(const SlurmOptions& options,
                                                                            const AdapterContext& ctx) const {
  auto a = SlurmAdapter::Open(options, ctx);
  if (!a.ok()) return a.status();
  return std::unique_ptr<SchedulerAdapter>(*std::move(a));
}

}  // namespace hyperfed::scheduler
