#include "daemon/scheduler/exec_adapter.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "daemon/common/trusted_path.h"
#include "google/protobuf/util/json_util.h"
#include "hyperfed/exec/v1/exec.pb.h"

namespace hyperfed::scheduler {

namespace pb = ::hyperfed::exec::v1;

namespace {

bool ValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

absl::Status JsonString(const char* field, const std::string& s, std::string* out) {
  if (!ValidUtf8(s)) {
    return absl::InvalidArgumentError(
        absl::StrCat("exec scheduler: job spec field ", field, " is not valid UTF-8 (JSON cannot carry it)"));
  }
  *out += '"';
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\r':
        *out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          *out += absl::StrFormat("\\u%04x", c);
        } else {
          *out += ch;
        }
    }
  }
  *out += '"';
  return absl::OkStatus();
}

// The shortest decimal that reads back as the same double.
std::string ShortestDouble(double d) {
  for (int precision = 1; precision <= 17; ++precision) {
    std::string s = absl::StrFormat("%.*g", precision, d);
    double back = 0;
    if (absl::SimpleAtod(s, &back) && back == d) return s;
  }
  return absl::StrFormat("%.17g", d);
}

absl::StatusOr<JobState> ParseState(const std::string& s) {
  if (s == "pending") return JobState::kPending;
  if (s == "held") return JobState::kHeld;
  if (s == "running") return JobState::kRunning;
  if (s == "done") return JobState::kDone;
  if (s == "cancelled") return JobState::kCancelled;
  return absl::InvalidArgumentError(
      absl::StrCat("state \"", s, "\" is not one of pending, held, running, done, cancelled"));
}

JobSpec FromProto(const pb::JobSpec& p) {
  JobSpec s;
  s.name = p.name();
  s.script = p.script();
  s.cores = p.cores();
  s.memory_mb = p.memory_mb();
  s.time_limit_s = p.time_limit_s();
  s.workdir = p.workdir();
  for (const auto& [k, v] : p.env()) s.env[k] = v;
  s.duration_ms = p.duration_ms();
  s.cost = p.cost();
  s.key = p.key();
  s.owner = p.owner();
  return s;
}

// Ids and tags go on argv: one that a command's option parser could take
// for an option ("-x"), or that argv cannot carry (a NUL), never names a job.
bool ArgvSafe(const std::string& s) { return !s.empty() && s[0] != '-' && s.find('\0') == std::string::npos; }

}  // namespace

absl::StatusOr<std::string> JobSpecToJson(const JobSpec& s) {
  if (s.cores < 1 || s.memory_mb < 0 || s.time_limit_s < 0 || s.duration_ms < 0 || !std::isfinite(s.cost) ||
      s.cost < 0) {
    return absl::InvalidArgumentError(
        "exec scheduler: job spec needs cores >= 1, memory_mb, time_limit_s, duration_ms >= 0 and a finite cost >= 0");
  }
  std::string out = "{\"name\":";
  if (auto st = JsonString("name", s.name, &out); !st.ok()) return st;
  out += ",\"script\":";
  if (auto st = JsonString("script", s.script, &out); !st.ok()) return st;
  absl::StrAppend(&out, ",\"cores\":", s.cores, ",\"memory_mb\":", s.memory_mb, ",\"time_limit_s\":", s.time_limit_s,
                  ",\"workdir\":");
  if (auto st = JsonString("workdir", s.workdir, &out); !st.ok()) return st;
  out += ",\"env\":{";
  bool first = true;
  for (const auto& [k, v] : s.env) {
    if (!first) out += ',';
    first = false;
    if (auto st = JsonString("env (a name)", k, &out); !st.ok()) return st;
    out += ':';
    if (auto st = JsonString("env (a value)", v, &out); !st.ok()) return st;
  }
  absl::StrAppend(&out, "},\"duration_ms\":", s.duration_ms, ",\"cost\":", ShortestDouble(s.cost), ",\"key\":");
  if (auto st = JsonString("key", s.key, &out); !st.ok()) return st;
  out += ",\"owner\":";
  if (auto st = JsonString("owner", s.owner, &out); !st.ok()) return st;
  out += "}\n";
  return out;
}

absl::StatusOr<std::unique_ptr<ExecAdapter>> ExecAdapter::Create(const AdapterContext& ctx) {
  auto o = ParseExecOptions(ctx.options);
  if (!o.ok()) return o.status();
  return Create(*std::move(o));
}

absl::StatusOr<std::unique_ptr<ExecAdapter>> ExecAdapter::Create(ExecOptions options) {
  return std::unique_ptr<ExecAdapter>(new ExecAdapter(std::move(options)));
}

absl::StatusOr<CommandOutput> ExecAdapter::Run(const std::string& op, const std::vector<std::string>& args,
                                               const std::string& input, bool job_op) {
  std::vector<std::string> argv = options_.commands.at(op);
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string what = absl::StrCat("exec scheduler: ", op, " command `", QuoteCommandLine(argv), "`");
  // A fixed environment: the daemon's passes only by name (pass_env).
  std::map<std::string, std::string> env = {{"PATH", kExecSafePath}, {"LANG", "C"}, {"LC_ALL", "C"}};
  for (const std::string& name : options_.pass_env)
    if (const char* v = getenv(name.c_str()); v != nullptr) env[name] = v;
  auto r = RunCommand(
      {.argv = argv, .stdin_text = input, .env = std::move(env), .inherit_env = false, .timeout = options_.timeout});
  if (!r.ok()) return absl::Status(r.status().code(), absl::StrCat(what, ": ", r.status().message()));
  if (r->exit_code == 0) return CommandOutput{.what = what, .result = *std::move(r)};
  std::string err(absl::StripAsciiWhitespace(r->err));
  if (!err.empty()) err = absl::StrCat(": ", err);
  if (r->term_signal != 0) {
    return absl::UnavailableError(absl::StrCat(what, " was killed by signal ", r->term_signal, err));
  }
  const std::string msg = absl::StrCat(what, " exited with ", r->exit_code, err);
  if (job_op && r->exit_code == kExecExitNotFound) return absl::NotFoundError(msg);
  if (job_op && r->exit_code == kExecExitWrongState) return absl::FailedPreconditionError(msg);
  if (op == "submit" && r->exit_code == kExecExitRefused) return absl::InvalidArgumentError(msg);
  return absl::UnavailableError(msg);
}

namespace {

// Parses a command's stdout into `msg`; Internal, naming the command and
// what was wrong, when it is not the JSON the contract asks for.
absl::Status ParseOutput(const CommandOutput& o, google::protobuf::Message* msg) {
  const std::string what = absl::StrCat(o.what, " printed ");
  if (o.result.out_truncated) return absl::InternalError(absl::StrCat(what, "too much output"));
  const absl::string_view out = absl::StripAsciiWhitespace(o.result.out);
  if (out.empty()) return absl::InternalError(absl::StrCat(what, "nothing; want a JSON object on stdout"));
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  auto st = google::protobuf::util::JsonStringToMessage(std::string(out), msg, opts);
  if (!st.ok()) {
    std::string head(out.substr(0, 200));
    return absl::InternalError(
        absl::StrCat(what, "bad JSON (", st.message().as_string(), "); its stdout starts: ", head));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Job>> JobsFromOutput(const CommandOutput& o, std::vector<int64_t>* starts = nullptr) {
  pb::JobList list;
  if (auto st = ParseOutput(o, &list); !st.ok()) return st;
  std::vector<Job> jobs;
  for (int i = 0; i < list.jobs_size(); ++i) {
    const pb::Job& p = list.jobs(i);
    auto bad = [&](absl::string_view why) {
      return absl::InternalError(absl::StrCat(o.what, " printed a bad job (jobs[", i, "]): ", why));
    };
    if (!ArgvSafe(p.id())) return bad(absl::StrCat("id \"", p.id(), "\" is empty or starts with '-'"));
    auto state = ParseState(p.state());
    if (!state.ok()) return bad(state.status().message());
    Job j;
    j.id = p.id();
    j.state = *state;
    j.pinned = p.pinned();
    j.tag = p.tag();
    j.queued_at_ms = p.queued_at_ms();
    j.spec = FromProto(p.spec());
    if (p.start_ms() < 0) return bad(absl::StrCat("start_ms ", p.start_ms(), " is negative"));
    if (starts != nullptr) starts->push_back(p.start_ms());
    jobs.push_back(std::move(j));
  }
  return jobs;
}

}  // namespace

absl::StatusOr<std::vector<Job>> ExecAdapter::ListJobs() {
  absl::MutexLock l(&mu_);
  auto r = Run("list", {}, "", false);
  if (!r.ok()) return r.status();
  auto jobs = JobsFromOutput(*r);
  if (!jobs.ok()) return jobs.status();
  // A scheduler's listing may still show recently finished jobs.
  std::vector<Job> live;
  for (Job& j : *jobs) {
    if (j.state != JobState::kDone && j.state != JobState::kCancelled) live.push_back(std::move(j));
  }
  return live;
}

absl::StatusOr<Capacity> ExecAdapter::GetCapacity() {
  absl::MutexLock l(&mu_);
  return CapacityLocked();
}

absl::StatusOr<Capacity> ExecAdapter::CapacityLocked() {
  auto r = Run("capacity", {}, "", false);
  if (!r.ok()) return r.status();
  pb::Capacity p;
  if (auto st = ParseOutput(*r, &p); !st.ok()) return st;
  Capacity c{.units = p.units(), .speed = p.has_speed() ? p.speed() : 1.0};
  if (c.units < 1 || !std::isfinite(c.speed) || c.speed <= 0) {
    return absl::InternalError(
        absl::StrCat(r->what, " printed units ", c.units, " and speed ", c.speed, "; want units >= 1 and speed > 0"));
  }
  return c;
}

absl::StatusOr<std::vector<PendingJob>> ExecAdapter::Pending() {
  absl::MutexLock l(&mu_);
  auto r = Run("list", {}, "", false);
  if (!r.ok()) return r.status();
  std::vector<int64_t> starts;
  auto jobs = JobsFromOutput(*r, &starts);
  if (!jobs.ok()) return jobs.status();
  std::vector<PendingJob> out;
  for (size_t i = 0; i < jobs->size(); ++i) {
    const Job& j = (*jobs)[i];
    if (j.state != JobState::kPending || j.pinned) continue;
    out.push_back({.id = j.id,
                   .key = j.spec.key,
                   .cores = j.spec.cores,
                   .queued_at_ms = j.queued_at_ms,
                   .limit_ms = j.spec.time_limit_s * 1000,
                   .start_ms = j.state == JobState::kPending ? starts[i] : 0});
  }
  return out;
}

absl::StatusOr<int64_t> ExecAdapter::WidestLocked() {
  if (!options_.commands.contains("widest")) {
    auto c = CapacityLocked();  // the interface's default: capacity's units
    if (!c.ok()) return c.status();
    return c->units;
  }
  auto r = Run("widest", {}, "", false);
  if (!r.ok()) return r.status();
  pb::Widest p;
  if (auto st = ParseOutput(*r, &p); !st.ok()) return st;
  if (p.cores() < 1) return absl::InternalError(absl::StrCat(r->what, " printed cores ", p.cores(), "; want >= 1"));
  return p.cores();
}

absl::StatusOr<int64_t> ExecAdapter::WidestJob() {
  absl::MutexLock l(&mu_);
  return WidestLocked();
}

absl::StatusOr<std::vector<int64_t>> ExecAdapter::ArrivalStarts(const std::vector<int64_t>& widths) {
  for (int64_t w : widths)
    if (w < 1) return absl::InvalidArgumentError(absl::StrCat("exec scheduler: no job of ", w, " cores"));
  if (!options_.commands.contains("arrival")) return SchedulerAdapter::ArrivalStarts(widths);
  if (widths.empty()) return std::vector<int64_t>{};
  absl::MutexLock l(&mu_);
  auto widest = WidestLocked();
  if (!widest.ok()) return widest.status();
  std::vector<std::string> args;
  for (int64_t w : widths) {
    if (w > *widest) {
      return absl::InvalidArgumentError(
          absl::StrCat("exec scheduler: no job of ", w, " cores can run here (the widest is ", *widest, ")"));
    }
    args.push_back(absl::StrCat(w));
  }
  auto r = Run("arrival", args, "", false);
  if (!r.ok()) return r.status();
  pb::ArrivalStarts p;
  if (auto st = ParseOutput(*r, &p); !st.ok()) return st;
  if (static_cast<size_t>(p.starts_ms_size()) != widths.size()) {
    return absl::InternalError(
        absl::StrCat(r->what, " printed ", p.starts_ms_size(), " start times for ", widths.size(), " widths"));
  }
  std::vector<int64_t> out(p.starts_ms().begin(), p.starts_ms().end());
  for (int64_t t : out)
    if (t <= 0)
      return absl::InternalError(absl::StrCat(r->what, " printed start time ", t, "; want ms since the epoch"));
  return out;
}

absl::Status ExecAdapter::RunOnJob(const std::string& op, const std::string& id, std::vector<std::string> more) {
  if (!ArgvSafe(id)) return absl::NotFoundError(absl::StrCat("exec scheduler: no job \"", id, "\""));
  std::vector<std::string> args = {id};
  args.insert(args.end(), more.begin(), more.end());
  absl::MutexLock l(&mu_);
  return Run(op, args, "", true).status();
}

absl::Status ExecAdapter::Hold(const std::string& id) { return RunOnJob("hold", id, {}); }
absl::Status ExecAdapter::Release(const std::string& id) { return RunOnJob("release", id, {}); }
absl::Status ExecAdapter::Cancel(const std::string& id) { return RunOnJob("cancel", id, {}); }

absl::Status ExecAdapter::SetPinned(const std::string& id, bool pinned) {
  return RunOnJob("pin", id, {pinned ? "true" : "false"});
}

absl::StatusOr<JobSpec> ExecAdapter::Export(const std::string& id) {
  if (!ArgvSafe(id)) return absl::NotFoundError(absl::StrCat("exec scheduler: no job \"", id, "\""));
  absl::MutexLock l(&mu_);
  auto r = Run("export", {id}, "", true);
  if (!r.ok()) return r.status();
  pb::JobSpec p;
  if (auto st = ParseOutput(*r, &p); !st.ok()) return st;
  return FromProto(p);
}

absl::StatusOr<std::vector<Job>> ExecAdapter::FindByTagLocked(const std::string& tag) {
  auto r = Run("find_by_tag", {tag}, "", false);
  if (!r.ok()) return r.status();
  auto jobs = JobsFromOutput(*r);
  if (!jobs.ok()) return jobs.status();
  std::vector<Job> same;
  for (Job& j : *jobs) {
    if (j.tag == tag) same.push_back(std::move(j));
  }
  return same;
}

absl::StatusOr<std::vector<Job>> ExecAdapter::FindByTag(const std::string& tag) {
  if (!ArgvSafe(tag)) {
    return absl::InvalidArgumentError("exec scheduler: a tag must be non-empty and not start with '-'");
  }
  absl::MutexLock l(&mu_);
  return FindByTagLocked(tag);
}

absl::StatusOr<std::string> ExecAdapter::Submit(const JobSpec& spec, const std::string& tag, bool held) {
  if (!tag.empty() && !ArgvSafe(tag)) {
    return absl::InvalidArgumentError("exec scheduler: a tag must not start with '-' or contain NUL");
  }
  auto json = JobSpecToJson(spec);
  if (!json.ok()) return json.status();
  absl::MutexLock l(&mu_);
  if (!tag.empty()) {
    auto found = FindByTagLocked(tag);
    if (!found.ok()) return found.status();
    if (!found->empty()) return (*found)[0].id;
  }
  auto r = Run("submit", {tag, held ? "true" : "false"}, *json, false);
  if (!r.ok()) return r.status();
  pb::SubmitResult p;
  if (auto st = ParseOutput(*r, &p); !st.ok()) return st;
  if (!ArgvSafe(p.id())) {
    return absl::InternalError(
        absl::StrCat(r->what, " printed id \"", p.id(), "\"; want a non-empty id not starting with '-'"));
  }
  return p.id();
}

absl::Status ExecAdapter::CheckSpec(const JobSpec& spec) const {
  if (auto st = SchedulerAdapter::CheckSpec(spec); !st.ok()) return st;
  return JobSpecToJson(spec).status();
}

absl::StatusOr<ExecOptions> ExecAdapterFactory::Parse(const std::map<std::string, std::string>& options) const {
  return ParseExecOptions(options);
}

absl::StatusOr<std::unique_ptr<SchedulerAdapter>> ExecAdapterFactory::Make(const ExecOptions& options,
                                                                           const AdapterContext&) const {
  auto a = ExecAdapter::Create(options);
  if (!a.ok()) return a.status();
  return std::unique_ptr<SchedulerAdapter>(*std::move(a));
}

}  // namespace hyperfed::scheduler
