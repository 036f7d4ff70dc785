#include "daemon/scheduler/slurm_adapter.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace hyperfed::scheduler {
namespace {

using nlohmann::json;

constexpr char kCommentPrefix[] = "hyperfed1";
constexpr size_t kSlurmMaxOutput = size_t{1} << 30;

std::set<std::string> SplitList(const std::string& v) {
  std::set<std::string> out;
  for (absl::string_view p : absl::StrSplit(v, ',', absl::SkipWhitespace()))
    out.insert(std::string(absl::StripAsciiWhitespace(p)));
  return out;
}

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

// A number field of squeue/sinfo JSON: a plain number (Slurm 22.05, null for
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
std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

}  // namespace

absl::StatusOr<std::string> SlurmStateWord(const json& job_state) {
  if (job_state.is_string()) return job_state.get<std::string>();
  if (job_state.is_array() && !job_state.empty() &&
      std::all_of(job_state.begin(), job_state.end(), [](const json& w) { return w.is_string(); })) {
    // Slurm >= 23.02 lists the base state and its flags. The flags that
    // change what a job is doing win, in the order Slurm's own
    // job_state_string() checks them; other flags are ignored.
    for (const char* flag : {"COMPLETING", "CONFIGURING", "RESIZING", "RESV_DEL_HOLD", "REQUEUE_FED", "REQUEUE_HOLD",
                             "REQUEUED", "SPECIAL_EXIT", "STAGE_OUT", "SIGNALING", "STOPPED"}) {
      for (const json& w : job_state)
        if (w.get<std::string>() == flag) return std::string(flag);
    }
    return job_state[0].get<std::string>();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("slurm: unsupported squeue --json format: job_state is ", job_state.dump().substr(0, 100),
                   "; want a string (Slurm 22.05) or an array of strings (23.02 and later)"));
}

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

namespace {}  // namespace

std::string NotPortable(const nlohmann::json& j) {
  if (!Str(j, "dependency").empty()) return "a dependency";
  if (Int(j, "array_job_id") != 0) return "a job array";
  if (Int(j, "het_job_id") != 0) return "a heterogeneous job";
  if (Int(j, "tasks") > 1 || Int(j, "node_count") > 1) return "more than one task or node";
  for (const char* k : {"tres_per_job", "tres_per_node", "tres_per_socket", "tres_per_task", "licenses", "features"})
    if (!Str(j, k).empty()) return absl::StrCat("a ", k, " request");
  return "";
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

absl::StatusOr<SlurmOptions> ParseSlurmOptions(const std::map<std::string, std::string>& options,
                                               bool check_combination) {
  SlurmOptions o;
  for (const auto& [name, value] : options) {
    if (name == "slurm_conf") {
      o.slurm_conf = value;
    } else if (name == "bin_dir") {
      o.bin_dir = value;
    } else if (name == "timeout") {
      absl::Duration d;
      if (!absl::ParseDuration(value, &d) || d <= absl::ZeroDuration() || d > absl::Hours(1)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "scheduler option \"timeout\": want a duration in (0, 1h] such as \"30s\", got \"", value, "\""));
      }
      o.timeout = d;
    } else if (name == "partitions") {
      o.partitions = SplitList(value);
    } else if (name == "users") {
      o.users = SplitList(value);
    } else if (name == "submit_partition") {
      o.submit_partition = value;
    } else if (name == "submit_account") {
      o.submit_account = value;
    } else if (name == "pinned_partitions") {
      o.pinned_partitions = SplitList(value);
    } else if (name == "pin_marker") {
      o.pin_marker = value;
    } else if (name == "workdir_policy") {
      if (value != "keep" && value != "drop") {
        return absl::InvalidArgumentError(
            absl::StrCat("scheduler option \"workdir_policy\": want \"keep\" or \"drop\", got \"", value, "\""));
      }
      o.keep_workdir = value == "keep";
    } else if (name == "submit_dir") {
      o.submit_dir = value;
    } else if (name == "speed") {
      double d = 0;
      if (!absl::SimpleAtod(value, &d) || !std::isfinite(d) || d <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("scheduler option \"speed\": want a finite number > 0, got \"", value, "\""));
      }
      o.speed = d;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "scheduler option \"", name,
          "\" is unknown to the slurm adapter (known: bin_dir, partitions, pin_marker, pinned_partitions, "
          "slurm_conf, speed, submit_account, submit_dir, submit_partition, timeout, users, workdir_policy)"));
    }
  }
  if (!check_combination) return o;
  if (!o.partitions.empty() && o.submit_partition.empty()) {
    // Without it sbatch puts a job in Slurm's default partition, which need
    // not be managed: every job hyperfed submits must land where it looks.
    return absl::InvalidArgumentError(
        "scheduler option \"submit_partition\": required when \"partitions\" is set (one of them)");
  }
  if (!o.submit_partition.empty() && !o.partitions.empty() && !o.partitions.contains(o.submit_partition)) {
    return absl::InvalidArgumentError(absl::StrCat("scheduler option \"submit_partition\": \"", o.submit_partition,
                                                   "\" is not one of \"partitions\"; hyperfed would lose "
                                                   "sight of the jobs it submits"));
  }
  return o;
}

absl::StatusOr<std::unique_ptr<SlurmAdapter>> SlurmAdapter::Open(const AdapterContext& ctx) {
  auto o = ParseSlurmOptions(ctx.options);
  if (!o.ok()) return o.status();
  return std::unique_ptr<SlurmAdapter>(new SlurmAdapter(*std::move(o)));
}

absl::StatusOr<CommandResult> SlurmAdapter::Run(std::vector<std::string> argv, std::string stdin_text,
                                                std::map<std::string, std::string> env, std::string cwd) {
  if (!options_.bin_dir.empty()) argv[0] = options_.bin_dir + "/" + argv[0];
  CommandSpec spec{.argv = argv,
                   .stdin_text = std::move(stdin_text),
                   .env = std::move(env),
                   .cwd = std::move(cwd),
                   .timeout = options_.timeout,
                   // `squeue --json` on a big cluster runs to many MiB; a cut
                   // list would hide jobs, so only a runaway is cut.
                   .max_output = kSlurmMaxOutput};
  if (!options_.slurm_conf.empty()) spec.env["SLURM_CONF"] = options_.slurm_conf;
  auto r = RunCommand(spec);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0 || r->term_signal != 0) return CommandFailure(argv, *r);
  if (r->out_truncated) {
    return absl::UnavailableError(
        absl::StrCat("`", CommandLine(argv), "` printed more than ", kSlurmMaxOutput >> 20, " MiB"));
  }
  return r;
}

absl::StatusOr<SlurmAdapter::Queue> SlurmAdapter::ReadQueue() {
  // `squeue --json` ignores --states and lists every job slurmctld holds.
  const std::vector<std::string> argv = {"squeue", "--json"};
  auto r = Run(argv);
  if (!r.ok()) return r.status();
  json doc = json::parse(r->out, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("jobs") || !doc["jobs"].is_array())
    return absl::UnavailableError("`squeue --json` printed no job list: " + r->out.substr(0, 200));
  if (auto e = doc.find("errors"); e != doc.end() && e->is_array() && !e->empty())
    return absl::UnavailableError("`squeue --json` reported errors: " + e->dump().substr(0, 500));
  Queue q;
  for (const json& j : doc["jobs"]) {
    if (!j.is_object()) continue;
    Entry e;
    e.partition = Str(j, "partition");
    // Jobs outside `partitions` and `users` stay in the queue, marked: tag
    // lookups must see every job hyperfed submitted, wherever it is now, or
    // a retried submit would run sbatch again.
    if (!options_.partitions.empty()) {
      e.managed = false;
      for (absl::string_view p : absl::StrSplit(e.partition, ','))
        e.managed = e.managed || options_.partitions.contains(std::string(p));
    }
    if (!options_.users.empty() && !options_.users.contains(Str(j, "user_name"))) e.managed = false;
    Job& job = e.job;
    if (Int(j, "job_id") <= 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "slurm: unsupported squeue --json format: a job without a numeric job_id: ", j.dump().substr(0, 200)));
    }
    job.id = absl::StrCat(Int(j, "job_id"));
    auto word = j.contains("job_state") ? SlurmStateWord(j["job_state"]) : SlurmStateWord(json());
    if (!word.ok()) return word.status();
    job.state = MapSlurmState(*word, Str(j, "state_reason"));
    job.queued_at_ms = Int(j, "submit_time") * 1000;
    e.comment = Str(j, "comment");
    e.has_meta = DecodeSlurmComment(e.comment, &e.meta);
    JobSpec& s = job.spec;
    s.name = Str(j, "name");
    s.cores = static_cast<int>(std::max<int64_t>(1, Int(j, "cpus")));
    s.memory_mb = Int(j, "memory_per_node");
    if (s.memory_mb == 0) s.memory_mb = Int(j, "memory_per_cpu") * s.cores;
    const int64_t minutes = Int(j, "time_limit");
    // Slurm's "infinite" is a huge number (or null): no limit.
    s.time_limit_s = minutes > 0 && minutes < (int64_t{1} << 31) - 1 ? minutes * 60 : 0;
    const bool no_workdir = (e.has_meta && e.meta.no_workdir) || !options_.keep_workdir;
    s.workdir = no_workdir ? "" : Str(j, "current_working_directory");
    if (e.has_meta) {
      s.env = e.meta.env;
      s.duration_ms = e.meta.duration_ms;
      job.tag = e.meta.tag;
    }
    s.key = e.has_meta && e.meta.has_key ? e.meta.key : absl::StrCat(Str(j, "cluster"), "/", job.id);
    s.cost = e.has_meta && e.meta.has_cost
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
    if (auto b = j.find("batch_flag"); b != j.end() && b->is_boolean()) e.batch = b->get<bool>();
    // Pins that SetPinned(false) cannot lift, with why.
    for (absl::string_view p : absl::StrSplit(e.partition, ','))
      if (options_.pinned_partitions.contains(std::string(p))) e.fixed_pin = absl::StrCat("is in pinned partition ", p);
    if (std::string why = NotPortable(j); e.fixed_pin.empty() && !why.empty()) e.fixed_pin = "has " + why;
    if (e.fixed_pin.empty() && !e.batch) e.fixed_pin = "has no batch script (srun/salloc)";
    if (e.fixed_pin.empty() && unreadable_.contains({job.id, job.queued_at_ms}))
      e.fixed_pin = "has a batch script slurmctld cannot give";
    job.pinned = pinned || !e.fixed_pin.empty();
    q.emplace(job.id, std::move(e));
  }
  return q;
}

absl::StatusOr<std::string> SlurmAdapter::Script(const JobKey& key) {
  if (auto it = scripts_.find(key); it != scripts_.end()) return it->second;
  const std::string& id = key.first;
  const std::vector<std::string> argv = {"scontrol", "write", "batch_script", id, "-"};
  auto r = Run(argv);
  if (!r.ok()) return r.status();
  // scontrol exits 0 even when it could not fetch the script; it then says
  // why on stderr and prints nothing.
  if (r->out.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("`", CommandLine(argv), "` printed no batch script: ", absl::StripAsciiWhitespace(r->err)));
  }
  scripts_[key] = r->out;
  return r->out;
}

absl::Status SlurmAdapter::FillScript(Job* job) {
  auto s = Script({job->id, job->queued_at_ms});
  if (!s.ok()) return s.status();
  job->spec.script = *s;
  return absl::OkStatus();
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

absl::Status SlurmAdapter::ChangeIn(const Queue& q, Change c, const std::string& id) {
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
      return Run({"scontrol", "hold", id}).status();
    case Change::kRelease:
      if (s == JobState::kPending) return absl::OkStatus();
      if (s != JobState::kHeld) return refuse();
      return Run({"scontrol", "release", id}).status();
    case Change::kCancel:
      if (s == JobState::kCancelled) return absl::OkStatus();
      if (s != JobState::kPending && s != JobState::kHeld) return refuse();
      // --state=PENDING: a job that started since the queue was read is left
      // running (Cancel must never kill a running job). scancel checks the
      // state on its side just before it sends the cancel, so a job that
      // starts in that moment can still be hit; ChangeMany's second read
      // then shows what happened (see docs/adapters.md).
      return Run({"scancel", "--state=PENDING", id}).status();
  }
  return absl::InternalError("unreachable");
}

std::vector<absl::Status> SlurmAdapter::ChangeMany(Change c, const std::vector<std::string>& ids) {
  if (ids.empty()) return {};
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return std::vector<absl::Status>(ids.size(), q.status());
  std::vector<absl::Status> out;
  out.reserve(ids.size());
  absl::Status stuck;  // a timed-out command: Slurm is not answering
  for (const auto& id : ids) {
    // One timeout is enough: the rest would each wait as long again.
    out.push_back(stuck.ok() ? ChangeIn(*q, c, id) : stuck);
    if (absl::IsDeadlineExceeded(out.back())) stuck = out.back();
    // The same id again later in the batch sees the new state.
    if (out.back().ok()) {
      auto it = q->find(id);
      if (it != q->end() && it->second.job.state != JobState::kRunning) {
        it->second.job.state = c == Change::kHold      ? JobState::kHeld
                               : c == Change::kRelease ? JobState::kPending
                                                       : JobState::kCancelled;
      }
    }
  }
  if (c == Change::kHold || c == Change::kCancel) {
    // A pending job may start between the queue read and the command; Slurm
    // then answers the hold with success and the job runs. Read again so
    // that such a job is reported as running, never as held.
    auto after = ReadQueue();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!out[i].ok()) continue;
      if (!after.ok()) {
        out[i] = after.status();
        continue;
      }
      auto it = after->find(ids[i]);
      const JobState want = c == Change::kHold ? JobState::kHeld : JobState::kCancelled;
      if (it == after->end() || it->second.job.state == want) continue;
      const JobState got = it->second.job.state;
      if (got == JobState::kPending || (c == Change::kCancel && got == JobState::kHeld)) {
        // The command succeeded but did not take (scancel --state=PENDING
        // filters on a state it read a moment earlier, see ChangeIn): the
        // job is still where it can be held or cancelled, so retrying is
        // right and safe.
        out[i] = absl::UnavailableError(absl::StrCat("slurm: job ", ids[i], " is still ", JobStateName(got), " after ",
                                                     c == Change::kHold ? "scontrol hold" : "scancel", "; try again"));
      } else {
        out[i] = absl::FailedPreconditionError(absl::StrCat("slurm: job ", ids[i], " is ", JobStateName(got), ", not ",
                                                            JobStateName(want), " (it changed meanwhile)"));
      }
    }
  }
  return out;
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

absl::StatusOr<JobSpec> SlurmAdapter::ExportIn(const Queue& q, const std::string& id) {
  if (!AllDigits(id)) return NotFound(id);
  auto it = q.find(id);
  if (it == q.end() || !it->second.Visible()) return NotFound(id);
  const Entry& e = it->second;
  if (!e.batch) {
    return absl::FailedPreconditionError(
        absl::StrCat("slurm: job ", id, " has no batch script (started by srun or salloc); it is pinned"));
  }
  Job job = e.job;
  if (auto st = FillScript(&job); !st.ok()) {
    if (absl::IsFailedPrecondition(st)) {
      // slurmctld answered and has no script for it: it never will.
      unreadable_.insert({id, e.job.queued_at_ms});
      return absl::FailedPreconditionError(absl::StrCat(st.message(), "; job ", id, " is pinned from now on"));
    }
    return st;
  }
  return job.spec;
}

absl::StatusOr<JobSpec> SlurmAdapter::Export(const std::string& id) { return ExportMany({id})[0]; }

std::vector<absl::StatusOr<JobSpec>> SlurmAdapter::ExportMany(const std::vector<std::string>& ids) {
  if (ids.empty()) return {};
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return std::vector<absl::StatusOr<JobSpec>>(ids.size(), q.status());
  std::vector<absl::StatusOr<JobSpec>> out;
  for (const auto& id : ids) out.push_back(ExportIn(*q, id));
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
    if (!e.has_meta || e.meta.tag != tag) continue;
    out.push_back(e.job);
  }
  std::sort(out.begin(), out.end(), QueueOrder);
  return out;
}

namespace {

// What a submitted job carries in its comment.
std::string CommentFor(const JobSpec& spec, const std::string& tag) {
  SlurmJobMeta m;
  m.tag = tag;
  m.has_key = true;
  m.key = spec.key;
  m.has_cost = true;
  m.cost = spec.cost;
  m.duration_ms = spec.duration_ms;
  m.no_workdir = spec.workdir.empty();
  m.env = spec.env;
  return EncodeSlurmComment(m);
}

absl::Status CommentFits(const std::string& comment) {
  if (comment.size() <= kSlurmMaxComment) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("job spec: tag, key and environment take ", comment.size(),
                                                 " bytes in the Slurm comment, over Slurm's limit of ",
                                                 kSlurmMaxComment));
}

// Room for the tag a migration gives a job ("hyperfed:<id>:<index>", ids up
// to 200 bytes, percent-encoded), when the tag is not known yet.
constexpr size_t kTagReserve = 256;

}  // namespace

absl::Status SlurmAdapter::CheckSpec(const JobSpec& s) const {
  if (auto st = SchedulerAdapter::CheckSpec(s); !st.ok()) return st;
  if (!absl::StartsWith(s.script, "#!"))
    return absl::InvalidArgumentError("job spec: a Slurm batch script must start with \"#!\"");
  for (const auto& [k, v] : s.env) {
    if (k.empty() || absl::StrContains(k, '=') || absl::StrContains(k, ',') || absl::StrContains(k, '\0'))
      return absl::InvalidArgumentError(absl::StrCat("job spec: bad environment variable name \"", k, "\""));
    if (absl::StrContains(v, '\0'))
      return absl::InvalidArgumentError(absl::StrCat("job spec: environment variable ", k, " holds a NUL"));
  }
  return CommentFits(CommentFor(s, std::string(kTagReserve, 'x')));
}

absl::StatusOr<std::string> SlurmAdapter::SubmitIn(const JobSpec& spec, const std::string& tag, bool held) {
  if (auto st = CheckSpec(spec); !st.ok()) return st;
  const std::string comment = CommentFor(spec, tag);
  if (auto st = CommentFits(comment); !st.ok()) return st;
  std::vector<std::string> argv = {
      "sbatch",     "--parsable",          "--job-name=" + spec.name, absl::StrCat("--cpus-per-task=", spec.cores),
      "--ntasks=1", "--comment=" + comment};
  if (spec.memory_mb > 0) argv.push_back(absl::StrCat("--mem=", spec.memory_mb));
  if (spec.time_limit_s > 0) argv.push_back(absl::StrCat("--time=", (spec.time_limit_s + 59) / 60));
  if (!spec.workdir.empty()) argv.push_back("--chdir=" + spec.workdir);
  if (held) argv.push_back("--hold");
  if (!options_.submit_partition.empty()) argv.push_back("--partition=" + options_.submit_partition);
  if (!options_.submit_account.empty()) argv.push_back("--account=" + options_.submit_account);
  std::vector<std::string> names;
  for (const auto& [k, v] : spec.env) names.push_back(k);
  // Names only: sbatch takes the values from its own environment, so no
  // value (commas, quotes, newlines) is ever parsed by Slurm.
  argv.push_back(names.empty() ? std::string("--export=NONE") : "--export=" + absl::StrJoin(names, ","));
  auto r = Run(argv, spec.script, spec.env, options_.submit_dir);
  if (!r.ok()) return r.status();
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
  absl::MutexLock l(&mu_);
  std::map<std::string, std::string> by_tag;  // tag -> the first job carrying it
  bool any_tag = false;
  for (const auto& [spec, tag] : spec_and_tag) any_tag = any_tag || !tag.empty();
  if (any_tag) {
    auto q = ReadQueue();
    if (!q.ok()) return std::vector<absl::StatusOr<std::string>>(spec_and_tag.size(), q.status());
    std::vector<const Job*> tagged;
    for (const auto& [id, e] : *q)
      if (e.has_meta && !e.meta.tag.empty()) tagged.push_back(&e.job);
    std::sort(tagged.begin(), tagged.end(), [](const Job* a, const Job* b) { return QueueOrder(*a, *b); });
    for (const Job* j : tagged) by_tag.emplace(j->tag, j->id);
    std::vector<absl::StatusOr<std::string>> out;
    absl::Status stuck;  // as in ChangeMany
    for (const auto& [spec, tag] : spec_and_tag) {
      if (!tag.empty()) {
        if (auto it = by_tag.find(tag); it != by_tag.end()) {
          out.push_back(it->second);
          continue;
        }
      }
      out.push_back(stuck.ok() ? SubmitIn(spec, tag, held) : stuck);
      if (out.back().ok() && !tag.empty()) by_tag[tag] = *out.back();
      if (absl::IsDeadlineExceeded(out.back().status())) stuck = out.back().status();
    }
    return out;
  }
  std::vector<absl::StatusOr<std::string>> out;
  absl::Status stuck;
  for (const auto& [spec, tag] : spec_and_tag) {
    out.push_back(stuck.ok() ? SubmitIn(spec, tag, held) : stuck);
    if (absl::IsDeadlineExceeded(out.back().status())) stuck = out.back().status();
  }
  return out;
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

void RegisterSlurmAdapter(AdapterRegistry* registry) {
  (void)registry->Register(kSlurmAdapterName,
                           [](const AdapterContext& ctx) -> absl::StatusOr<std::unique_ptr<SchedulerAdapter>> {
                             auto a = SlurmAdapter::Open(ctx);
                             if (!a.ok()) return a.status();
                             return std::unique_ptr<SchedulerAdapter>(*std::move(a));
                           });
}

}  // namespace hyperfed::scheduler
