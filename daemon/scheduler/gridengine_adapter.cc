#include "daemon/scheduler/gridengine_adapter.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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

constexpr size_t kMaxOutput = size_t{1} << 30;
// Where Debian keeps Grid Engine's programs (bin_dir's default when it exists).
constexpr char kDebianGridEngineBin[] = "/usr/lib/gridengine";
// Ids per `qstat -j` command.
constexpr size_t kStatBatch = 200;
// A ledger record of a job no longer in the queue is dropped after this.
constexpr absl::Duration kLedgerKeep = absl::Hours(24 * 7);

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

absl::Status NotFound(const std::string& id) {
  return absl::NotFoundError(absl::StrCat("gridengine: no job \"", id, "\""));
}

bool QueueOrder(const Job& a, const Job& b) {
  if (a.queued_at_ms != b.queued_at_ms) return a.queued_at_ms < b.queued_at_ms;
  int64_t x = 0, y = 0;
  (void)absl::SimpleAtoi(a.id, &x);
  (void)absl::SimpleAtoi(b.id, &y);
  return x < y;
}

// ---- XML

class XmlReader {
 public:
  explicit XmlReader(const std::string& t) : t_(t) {}

  absl::StatusOr<XmlNode> Document() {
    SkipMisc();
    XmlNode root;
    if (auto st = Element(&root, 0); !st.ok()) return st;
    SkipMisc();
    if (p_ != t_.size()) return Error("text after the root element");
    return root;
  }

 private:
  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat("XML: ", what, " at byte ", p_));
  }
  bool At(absl::string_view s) const { return absl::string_view(t_).substr(std::min(p_, t_.size()), s.size()) == s; }
  void SkipSpace() {
    while (p_ < t_.size() && absl::ascii_isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  // Blanks, <?...?> and <!-- ... --> between elements.
  void SkipMisc() {
    for (;;) {
      SkipSpace();
      if (At("<?")) {
        size_t e = t_.find("?>", p_);
        p_ = e == std::string::npos ? t_.size() : e + 2;
      } else if (At("<!--")) {
        size_t e = t_.find("-->", p_);
        p_ = e == std::string::npos ? t_.size() : e + 3;
      } else {
        return;
      }
    }
  }
  static bool NameChar(char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == ':' || c == '.';
  }
  std::string Name() {
    size_t s = p_;
    while (p_ < t_.size() && NameChar(t_[p_])) ++p_;
    return t_.substr(s, p_ - s);
  }
  absl::Status Decode(absl::string_view raw, std::string* out) const {
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '&') {
        out->push_back(raw[i]);
        continue;
      }
      size_t semi = raw.find(';', i);
      if (semi == absl::string_view::npos || semi - i > 12) return Error("bad entity");
      absl::string_view ent = raw.substr(i + 1, semi - i - 1);
      if (ent == "lt") {
        out->push_back('<');
      } else if (ent == "gt") {
        out->push_back('>');
      } else if (ent == "amp") {
        out->push_back('&');
      } else if (ent == "quot") {
        out->push_back('"');
      } else if (ent == "apos") {
        out->push_back('\'');
      } else if (absl::ConsumePrefix(&ent, "#")) {
        uint32_t v = 0;
        bool ok = absl::ConsumePrefix(&ent, "x") ? absl::SimpleHexAtoi(ent, &v) : absl::SimpleAtoi(ent, &v);
        if (!ok || v == 0 || v > 0x10FFFF) return Error("bad character reference");
        // UTF-8.
        if (v < 0x80) {
          out->push_back(static_cast<char>(v));
        } else if (v < 0x800) {
          out->push_back(static_cast<char>(0xC0 | (v >> 6)));
          out->push_back(static_cast<char>(0x80 | (v & 0x3F)));
        } else if (v < 0x10000) {
          out->push_back(static_cast<char>(0xE0 | (v >> 12)));
          out->push_back(static_cast<char>(0x80 | ((v >> 6) & 0x3F)));
          out->push_back(static_cast<char>(0x80 | (v & 0x3F)));
        } else {
          out->push_back(static_cast<char>(0xF0 | (v >> 18)));
          out->push_back(static_cast<char>(0x80 | ((v >> 12) & 0x3F)));
          out->push_back(static_cast<char>(0x80 | ((v >> 6) & 0x3F)));
          out->push_back(static_cast<char>(0x80 | (v & 0x3F)));
        }
      } else {
        return Error("unknown entity");
      }
      i = semi;
    }
    return absl::OkStatus();
  }
  absl::Status Element(XmlNode* n, int depth) {
    if (depth > 64) return Error("elements nested too deep");
    if (!At("<")) return Error("expected an element");
    ++p_;
    n->name = Name();
    if (n->name.empty()) return Error("element without a name");
    for (;;) {
      SkipSpace();
      if (At("/>")) {
        p_ += 2;
        return absl::OkStatus();
      }
      if (At(">")) {
        ++p_;
        break;
      }
      std::string an = Name();
      if (an.empty()) return Error("bad attribute");
      SkipSpace();
      if (!At("=")) return Error("attribute without a value");
      ++p_;
      SkipSpace();
      if (p_ >= t_.size() || (t_[p_] != '"' && t_[p_] != '\'')) return Error("unquoted attribute");
      const char q = t_[p_++];
      size_t e = t_.find(q, p_);
      if (e == std::string::npos) return Error("unterminated attribute");
      std::string v;
      if (auto st = Decode(absl::string_view(t_).substr(p_, e - p_), &v); !st.ok()) return st;
      n->attrs[an] = std::move(v);
      p_ = e + 1;
    }
    for (;;) {
      if (p_ >= t_.size()) return Error(absl::StrCat("unterminated element <", n->name, ">"));
      if (At("</")) {
        p_ += 2;
        if (Name() != n->name) return Error(absl::StrCat("mismatched end of <", n->name, ">"));
        SkipSpace();
        if (!At(">")) return Error("bad end tag");
        ++p_;
        return absl::OkStatus();
      }
      if (At("<!--") || At("<?")) {
        SkipMisc();
        continue;
      }
      if (At("<![CDATA[")) {
        size_t e = t_.find("]]>", p_);
        if (e == std::string::npos) return Error("unterminated CDATA");
        n->text.append(t_, p_ + 9, e - p_ - 9);
        p_ = e + 3;
        continue;
      }
      if (At("<")) {
        n->children.emplace_back();
        if (auto st = Element(&n->children.back(), depth + 1); !st.ok()) return st;
        continue;
      }
      size_t e = t_.find('<', p_);
      if (e == std::string::npos) e = t_.size();
      if (auto st = Decode(absl::string_view(t_).substr(p_, e - p_), &n->text); !st.ok()) return st;
      p_ = e;
    }
  }

  const std::string& t_;
  size_t p_ = 0;
};

void CollectNamed(const XmlNode& n, const std::string& name, std::vector<const XmlNode*>* out) {
  if (n.name == name) out->push_back(&n);
  for (const XmlNode& c : n.children) CollectNamed(c, name, out);
}

int64_t ToInt(const std::string& s) {
  int64_t v = 0;
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(s), &v) ? v : 0;
}

// ---- The record hyperfed keeps in a job's context: the slurm adapter's
// comment, plus M=<MB> (the memory the spec asked for).

std::string EncodeContext(const SlurmJobMeta& m, int64_t memory_mb) {
  std::string out = EncodeSlurmComment(m);
  if (memory_mb > 0) absl::StrAppend(&out, ";M=", memory_mb);
  return out;
}

int64_t ContextMemory(const std::string& context) {
  for (absl::string_view p : absl::StrSplit(context, ';'))
    if (absl::ConsumePrefix(&p, "M=")) return ToInt(std::string(p));
  return 0;
}

// Grid Engine 8.1.9 takes a job name of printable ASCII without blanks and
// without / : @ \ * ? (qsub(1), -N); the qmaster refuses any other byte (a
// control character, a space, UTF-8) with only "Error reading answer list".
bool BadNameChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u <= ' ' || u >= 0x7f || absl::StrContains(absl::string_view("/:@\\*?", 6), c);
}

// Variables Grid Engine's commands read themselves (or set for the job from
// its own record).
std::string RefusedGridEngineEnv(const std::string& name) {
  for (const char* p : {"SGE_", "QRSH_", "QSUB_", "__SGE", "COMMD_"})
    if (absl::StartsWith(name, p)) return absl::StrCat("Grid Engine reads ", p, "* itself");
  return "";
}

// What qsub says when the qmaster could not be asked (never final).
bool QsubTransportFailure(const CommandResult& r) {
  if (r.term_signal != 0) return true;
  for (const char* t : {"commlib", "contact qmaster", "unable to send", "failed receiving", "got no connection",
                        "onnection refused", "timed out", "can't connect", "cannot connect", "no connection",
                        "unable to connect", "sge_qmaster", "unable to get qmaster", "gdi request"}) {
    if (absl::StrContains(r.err, t) || absl::StrContains(r.out, t)) return true;
  }
  return false;
}

using Raw = GridEngineJobFacts;

json RawToJson(const Raw& r) {
  return json{{"id", r.id},         {"user", r.user},          {"name", r.name},   {"context", r.context},
              {"cwd", r.cwd},       {"submit_s", r.submit_s},  {"cores", r.cores}, {"memory_mb", r.memory_mb},
              {"time_s", r.time_s}, {"fixed_pin", r.fixed_pin}};
}

bool RawFromJson(const json& j, Raw* r) {
  try {
    r->id = j.at("id").get<std::string>();
    r->user = j.at("user").get<std::string>();
    r->name = j.at("name").get<std::string>();
    r->context = j.at("context").get<std::string>();
    r->cwd = j.at("cwd").get<std::string>();
    r->submit_s = j.at("submit_s").get<int64_t>();
    r->cores = j.at("cores").get<int>();
    r->memory_mb = j.at("memory_mb").get<int64_t>();
    r->time_s = j.at("time_s").get<int64_t>();
    r->fixed_pin = j.at("fixed_pin").get<std::string>();
  } catch (const json::exception&) {
    return false;
  }
  return AllDigits(r->id);
}

// One element of `qstat -j <ids> -xml`'s djob_info.
Raw RawFromDetail(const XmlNode& e, const std::string& pe, const std::string& queue) {
  Raw r;
  r.id = absl::StrCat(ToInt(e.ChildText("JB_job_number")));
  r.user = e.ChildText("JB_owner");
  r.name = e.ChildText("JB_job_name");
  r.cwd = e.ChildText("JB_cwd");
  r.submit_s = ToInt(e.ChildText("JB_submission_time"));
  if (const XmlNode* ctx = e.Child("JB_context")) {
    for (const XmlNode& v : ctx->children)
      if (v.ChildText("VA_variable") == kGridEngineContextVar) r.context = v.ChildText("VA_value");
  }
  const std::string job_pe = e.ChildText("JB_pe");
  if (!job_pe.empty()) {
    if (const XmlNode* range = e.Child("JB_pe_range")) {
      if (const XmlNode* rn = range->Child("ranges")) {
        r.cores = static_cast<int>(std::max<int64_t>(1, ToInt(rn->ChildText("RN_min"))));
        if (rn->ChildText("RN_max") != rn->ChildText("RN_min")) r.fixed_pin = "asks for a range of slots";
      }
    }
    if (job_pe != pe && r.fixed_pin.empty()) r.fixed_pin = absl::StrCat("runs in parallel environment ", job_pe);
  }
  int64_t vmem_bytes = 0;
  if (const XmlNode* hard = e.Child("JB_hard_resource_list")) {
    for (const XmlNode& q : hard->children) {
      const std::string n = q.ChildText("CE_name");
      double d = 0;
      (void)absl::SimpleAtod(q.ChildText("CE_doubleval"), &d);
      if (n == "h_rt") {
        r.time_s = static_cast<int64_t>(d);
      } else if (n == "h_vmem") {
        vmem_bytes = static_cast<int64_t>(d);
      } else if (r.fixed_pin.empty()) {
        r.fixed_pin = absl::StrCat("requests resource ", n);
      }
    }
  }
  if (vmem_bytes > 0) r.memory_mb = (vmem_bytes * r.cores + (1 << 20) - 1) >> 20;
  // -q: only the managed queue (hyperfed's own submissions name it).
  if (const XmlNode* ql = e.Child("JB_hard_queue_list"); ql != nullptr && r.fixed_pin.empty()) {
    std::vector<const XmlNode*> names;
    CollectNamed(*ql, "QR_name", &names);
    for (const XmlNode* n : names)
      if (n->text != queue) r.fixed_pin = absl::StrCat("asks for queue ", n->text);
    if (names.empty()) r.fixed_pin = "asks for a queue of its own";
  }
  if ((e.Child("JB_jid_predecessor_list") != nullptr || e.Child("JB_jid_request_list") != nullptr) &&
      r.fixed_pin.empty())
    r.fixed_pin = "depends on other jobs";
  if (const XmlNode* ja = e.Child("JB_ja_structure")) {
    if (const XmlNode* tr = ja->Child("task_id_range"); tr && tr->ChildText("RN_max") != tr->ChildText("RN_min"))
      if (r.fixed_pin.empty()) r.fixed_pin = "is an array job";
  }
  // qsub -b y: a command, not a script (JB_type's binary bit, 0x8).
  if ((ToInt(e.ChildText("JB_type")) & 0x8) != 0 && r.fixed_pin.empty())
    r.fixed_pin = "is a command (qsub -b y), no script";
  return r;
}

}  // namespace

const XmlNode* XmlNode::Child(const std::string& n) const {
  for (const XmlNode& c : children)
    if (c.name == n) return &c;
  return nullptr;
}

std::string XmlNode::ChildText(const std::string& n) const {
  const XmlNode* c = Child(n);
  return c ? c->text : "";
}

absl::StatusOr<XmlNode> ParseXml(const std::string& text) { return XmlReader(text).Document(); }

JobState MapGridEngineState(const std::string& s) {
  if (s == "z") return JobState::kDone;
  if (absl::StrContains(s, 'E')) return JobState::kHeld;
  // r running, R restarted, t transferring, s S T suspended.
  const bool running = s.find_first_of("rRtsST") != std::string::npos;
  if (running) return JobState::kRunning;
  if (absl::StrContains(s, 'd')) return JobState::kCancelled;
  if (absl::StrContains(s, 'h') && absl::StrContains(s, "qw")) return JobState::kHeld;
  if (s == "qw" || s == "w") return JobState::kPending;
  return JobState::kRunning;  // unknown: never moved, never cancelled
}

std::string FilterQsubDirectives(const std::string& script) {
  std::string out;
  out.reserve(script.size() + 64);
  size_t pos = 0;
  while (pos < script.size()) {
    size_t end = script.find('\n', pos);
    end = end == std::string::npos ? script.size() : end + 1;
    const absl::string_view line(script.data() + pos, end - pos);
    pos = end;
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "#$")) {
      absl::StrAppend(&out, "# hyperfed removed: ", line);
      continue;
    }
    out.append(line.data(), line.size());
  }
  return out;
}

absl::StatusOr<std::unique_ptr<GridEngineAdapter>> GridEngineAdapter::Open(const AdapterContext& ctx) {
  auto o = ParseGridEngineOptions(ctx.options);
  if (!o.ok()) return o.status();
  return Open(*std::move(o), ctx);
}

absl::StatusOr<std::unique_ptr<GridEngineAdapter>> GridEngineAdapter::Open(GridEngineOptions options,
                                                                           const AdapterContext& ctx) {
  if (auto st = CheckRunAsOptions(options.common); !st.ok()) return st;
  std::string key_path = options.common.mark_key;
  if (key_path.empty() && !ctx.state_dir.empty()) key_path = ctx.state_dir + "/mark.key";
  if (key_path.empty()) {
    return OptionError(
        "mark_key",
        "scheduler option \"mark_key\": needed when the daemon has no state_dir (the migration mark's key)");
  }
  auto key = MarkKey::LoadOrCreate(key_path);
  if (!key.ok()) return key.status();
  // Debian's /usr/bin/q* are shell wrappers that work out SGE_ARCH for
  // every call (a quarter second here); the programs are in
  // /usr/lib/gridengine.
  if (options.common.bin_dir.empty() && access(absl::StrCat(kDebianGridEngineBin, "/qsub").c_str(), X_OK) == 0)
    options.common.bin_dir = kDebianGridEngineBin;
  if (options.script_dir.empty()) {
    // The qmaster's spool, from the cell's bootstrap file.
    std::ifstream in(absl::StrCat(options.sge_root, "/", options.sge_cell, "/common/bootstrap"));
    std::string line;
    while (std::getline(in, line)) {
      std::vector<std::string> w = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
      if (w.size() == 2 && w[0] == "qmaster_spool_dir") options.script_dir = w[1] + "/job_scripts";
    }
  }
  // The cluster's name (scripts/gridengine-cluster writes it; Grid Engine's
  // installer too), else the cell's.
  std::string cluster = options.sge_cell;
  {
    std::ifstream in(absl::StrCat(options.sge_root, "/", options.sge_cell, "/common/cluster_name"));
    std::string line;
    if (std::getline(in, line) && !absl::StripAsciiWhitespace(line).empty())
      cluster = std::string(absl::StripAsciiWhitespace(line));
  }
  std::string dir = std::filesystem::path(key_path).parent_path().string();
  if (dir.empty()) dir = ".";
  // One ledger per cluster (SGE_ROOT, cell, qmaster port): job ids and
  // migration tags repeat between clusters, and a record of another
  // cluster's job must never answer a tag here (it would stop a submit).
  std::string cluster_id = absl::StrCat(options.sge_root, "/", options.sge_cell, ":", options.qmaster_port);
  for (char& ch : cluster_id)
    if (!absl::ascii_isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.') ch = '_';
  dir += "/gridengine-jobs";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec) chmod(dir.c_str(), 0700);
  dir += "/" + cluster_id;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("gridengine: cannot create ", dir, ": ", ec.message()));
  chmod(dir.c_str(), 0700);
  return std::unique_ptr<GridEngineAdapter>(new GridEngineAdapter(std::move(options), *std::move(key), dir, cluster));
}

absl::StatusOr<CommandResult> GridEngineAdapter::RunRaw(std::vector<std::string> argv, std::string stdin_text,
                                                        std::string cwd,
                                                        const std::map<std::string, std::string>& extra_env) const {
  const std::string& bin = options_.common.bin_dir;
  // A fixed environment: nothing of the daemon's, and of a spec's only the
  // variables qsub hands to the job (extra_env; CheckSpec refused the names
  // Grid Engine or the loader read).
  std::map<std::string, std::string> env = {
      {"PATH", bin.empty() ? std::string(kSlurmSafePath) : bin + ":" + kSlurmSafePath},
      {"LANG", "C"},
      {"LC_ALL", "C"},
      {"TZ", "UTC"},
      {"SGE_ROOT", options_.sge_root},
      {"SGE_CELL", options_.sge_cell}};
  if (!options_.qmaster_port.empty()) env["SGE_QMASTER_PORT"] = options_.qmaster_port;
  if (!options_.execd_port.empty()) env["SGE_EXECD_PORT"] = options_.execd_port;
  for (const auto& [k, v] : extra_env) env.emplace(k, v);
  CommandSpec spec{.argv = std::move(argv),
                   .stdin_text = std::move(stdin_text),
                   .env = std::move(env),
                   .inherit_env = false,
                   .cwd = std::move(cwd),
                   .timeout = options_.common.timeout,
                   .max_output = kMaxOutput};
  return RunCommand(spec);
}

absl::StatusOr<CommandResult> GridEngineAdapter::Run(std::vector<std::string> argv) const {
  if (!options_.common.bin_dir.empty()) argv[0] = options_.common.bin_dir + "/" + argv[0];
  auto r = RunRaw(argv, "", "", {});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0 || r->term_signal != 0) return CommandFailure(argv, *r);
  return r;
}

void GridEngineAdapter::LoadLedger() {
  if (ledger_loaded_) return;
  ledger_loaded_ = true;
  std::error_code ec;
  const int64_t oldest = absl::ToUnixSeconds(absl::Now() - kLedgerKeep);
  for (const auto& f : std::filesystem::directory_iterator(ledger_dir_, ec)) {
    if (f.path().extension() != ".json") continue;
    std::ifstream in(f.path());
    json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
    Ledgered l;
    if (j.is_discarded() || !j.is_object() || !j.contains("raw") || !RawFromJson(j["raw"], &l.raw)) continue;
    if (l.raw.submit_s > 0 && l.raw.submit_s < oldest) {
      std::filesystem::remove(f.path(), ec);
      continue;
    }
    l.cancelled = j.value("cancelled", false);
    if (auto sc = j.find("script"); sc != j.end() && sc->is_string()) {
      l.has_script = true;
      l.script = sc->get<std::string>();
    }
    ledger_[l.raw.id] = std::move(l);
  }
}

void GridEngineAdapter::Remember(const Ledgered& l) {
  ledger_[l.raw.id] = l;
  WriteLedgerRecord(l);
}

void GridEngineAdapter::WriteLedgerRecord(const Ledgered& l) const {
  json j = {{"raw", RawToJson(l.raw)}, {"cancelled", l.cancelled}};
  if (l.has_script) j["script"] = l.script;
  const std::string path = absl::StrCat(ledger_dir_, "/", l.raw.id, ".json");
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;  // kept in memory; the next read tries again
  const std::string text = j.dump();
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) unlink(tmp.c_str());
}

GridEngineAdapter::Entry GridEngineAdapter::MakeEntry(const Raw& raw, JobState state) const {
  Entry e;
  e.raw = raw;
  e.user = raw.user;
  if (!options_.common.users.empty() && !options_.common.users.contains(e.user)) e.managed = false;
  SlurmJobMeta meta;
  const bool has_meta = DecodeSlurmComment(raw.context, &meta);
  // Only a mark made with this site's key, for the user the job runs as,
  // makes it a job hyperfed submitted.
  e.marked = has_meta && !meta.mark.empty() && mark_.Verify(SlurmMarkMessage(meta, e.user), meta.mark);
  if (has_meta && !e.marked) {
    meta.tag.clear();
    meta.owner.clear();
  }
  Job& job = e.job;
  job.id = raw.id;
  job.state = state;
  job.queued_at_ms = raw.submit_s * 1000;
  job.tag = meta.tag;
  JobSpec& s = job.spec;
  s.name = raw.name;
  s.cores = raw.cores;
  s.memory_mb = e.marked && ContextMemory(raw.context) > 0 ? ContextMemory(raw.context) : raw.memory_mb;
  s.time_limit_s = raw.time_s;
  const bool no_workdir = (has_meta && meta.no_workdir) || !options_.common.keep_workdir;
  s.workdir = no_workdir ? "" : raw.cwd;
  if (has_meta) s.env = meta.env;
  if (e.marked) s.duration_ms = meta.duration_ms;
  s.owner = e.marked ? meta.owner : e.user;
  s.key = e.marked && meta.has_key ? meta.key : absl::StrCat(cluster_, "/", job.id);
  s.cost = e.marked && meta.has_cost
               ? meta.cost
               : static_cast<double>(s.cores) * static_cast<double>(s.time_limit_s > 0 ? s.time_limit_s : 1);
  bool pinned = !options_.common.pin_marker.empty() && absl::StartsWith(s.name, options_.common.pin_marker);
  if (has_meta && meta.pinned >= 0) pinned = meta.pinned == 1;
  e.fixed_pin = raw.fixed_pin;
  for (const auto& [name, value] : s.env) {
    std::string why = RefusedEnvName(name);
    if (why.empty()) why = RefusedGridEngineEnv(name);
    if (!why.empty() && e.fixed_pin.empty())
      e.fixed_pin = absl::StrCat("has environment variable \"", name, "\", which is refused: ", why);
  }
  job.pinned = pinned || !e.fixed_pin.empty();
  return e;
}

absl::StatusOr<GridEngineAdapter::Queue> GridEngineAdapter::ReadQueue() {
  LoadLedger();
  // Pending, running, suspended and finished (zombie) jobs of every user.
  auto r = Run({"qstat", "-u", "*", "-s", "prsz", "-xml"});
  if (!r.ok()) return r.status();
  auto doc = ParseXml(r->out);
  if (!doc.ok()) return absl::UnavailableError(absl::StrCat("`qstat -xml`: ", doc.status().message()));
  std::vector<const XmlNode*> lists;
  CollectNamed(*doc, "job_list", &lists);
  // One line per job (an array job shows a line per task group: any that
  // runs makes the job running).
  std::map<std::string, std::string> states;
  for (const XmlNode* j : lists) {
    const std::string id = absl::StrCat(ToInt(j->ChildText("JB_job_number")));
    if (id == "0") continue;
    const std::string st(absl::StripAsciiWhitespace(j->ChildText("state")));
    auto [it, fresh] = states.emplace(id, st);
    if (!fresh && MapGridEngineState(st) == JobState::kRunning) it->second = st;
  }
  std::vector<std::string> live;
  for (const auto& [id, st] : states)
    if (st != "z") live.push_back(id);
  std::map<std::string, Raw> details;
  for (size_t from = 0; from < live.size(); from += kStatBatch) {
    std::vector<std::string> chunk(live.begin() + from, live.begin() + std::min(live.size(), from + kStatBatch));
    auto d = Run({"qstat", "-j", absl::StrJoin(chunk, ","), "-xml"});
    // A job that ended between the two commands is no longer known: qstat
    // then exits 1 for the list; read them one by one.
    if (!d.ok() && chunk.size() > 1) {
      for (const std::string& id : chunk) {
        auto one = Run({"qstat", "-j", id, "-xml"});
        if (!one.ok()) continue;
        auto x = ParseXml(one->out);
        if (!x.ok()) return absl::UnavailableError(absl::StrCat("`qstat -j -xml`: ", x.status().message()));
        std::vector<const XmlNode*> els;
        if (const XmlNode* di = x->Child("djob_info"))
          for (const XmlNode& el : di->children) els.push_back(&el);
        for (const XmlNode* el : els) {
          Raw raw = RawFromDetail(*el, options_.pe, options_.queue);
          details[raw.id] = raw;
        }
      }
      continue;
    }
    if (!d.ok()) continue;  // the one job ended meanwhile
    auto x = ParseXml(d->out);
    if (!x.ok()) return absl::UnavailableError(absl::StrCat("`qstat -j -xml`: ", x.status().message()));
    if (const XmlNode* di = x->Child("djob_info")) {
      for (const XmlNode& el : di->children) {
        Raw raw = RawFromDetail(el, options_.pe, options_.queue);
        details[raw.id] = raw;
      }
    }
  }
  Queue q;
  for (const auto& [id, st] : states) {
    auto led = ledger_.find(id);
    if (st == "z") {
      // qstat shows a finished job without its context: the ledger knows
      // the ones hyperfed submitted (or saw).
      if (led != ledger_.end()) {
        q.emplace(id, MakeEntry(led->second.raw, led->second.cancelled ? JobState::kCancelled : JobState::kDone));
      }
      continue;
    }
    auto d = details.find(id);
    if (d == details.end()) {
      // Ended between the two reads. A job hyperfed knows stays visible
      // (as running: never moved or cancelled) so that a tag lookup now
      // cannot miss it; the next read shows it finished.
      if (led != ledger_.end()) q.emplace(id, MakeEntry(led->second.raw, JobState::kRunning));
      continue;
    }
    if (led != ledger_.end() && led->second.raw.submit_s != 0 && led->second.raw.submit_s != d->second.submit_s) {
      // The id names another job now (a cluster started afresh).
      std::error_code ec;
      std::filesystem::remove(absl::StrCat(ledger_dir_, "/", id, ".json"), ec);
      ledger_.erase(led);
      led = ledger_.end();
    }
    JobState state = MapGridEngineState(st);
    Entry e = MakeEntry(d->second, state);
    if (absl::StrContains(st, 'E') && e.fixed_pin.empty()) e.fixed_pin = "is in Grid Engine's error state";
    e.job.pinned = e.job.pinned || !e.fixed_pin.empty();
    if (e.marked &&
        (led == ledger_.end() || led->second.raw.submit_s == 0 || led->second.raw.context != d->second.context)) {
      Ledgered l = led == ledger_.end() ? Ledgered{} : led->second;
      l.raw = d->second;
      Remember(l);
    }
    q.emplace(id, std::move(e));
  }
  // Ledger jobs qstat no longer shows at all (past finished_jobs, or a
  // qmaster restarted): ended.
  for (const auto& [id, l] : ledger_) {
    if (q.contains(id) || states.contains(id)) continue;
    q.emplace(id, MakeEntry(l.raw, l.cancelled ? JobState::kCancelled : JobState::kDone));
  }
  return q;
}

absl::StatusOr<std::string> GridEngineAdapter::ReadScript(const std::string& id) const {
  if (options_.script_dir.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("gridengine: job ", id,
                     "'s script: no script folder (option script_dir, or qmaster_spool_dir in the cell's bootstrap)"));
  }
  const std::string path = absl::StrCat(options_.script_dir, "/", id);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(absl::StrCat(
        "gridengine: cannot read job ", id, "'s script ", path, ": ", strerror(errno),
        " (the daemon must run on the qmaster host, with classic spooling; docs/adapters.md, \"Grid Engine\")"));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<std::vector<Job>> GridEngineAdapter::ListJobs() {
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return q.status();
  std::vector<Job> out;
  for (auto& [id, e] : *q) {
    if (!e.managed || e.job.state == JobState::kDone || e.job.state == JobState::kCancelled) continue;
    out.push_back(e.job);
  }
  std::sort(out.begin(), out.end(), QueueOrder);
  return out;
}

namespace {

struct QueueSlots {
  int64_t total = 0;  // usable instances
  int64_t widest = 0;
};

// `qstat -f -q <queue> -xml`'s queue instances: those in state u (unknown),
// d/D (disabled), E (error), s/S (suspended), C (calendar), o (orphaned) or
// c (configuration ambiguous) take no jobs.
absl::StatusOr<QueueSlots> ReadSlots(const std::string& xml) {
  auto doc = ParseXml(xml);
  if (!doc.ok()) return absl::UnavailableError(absl::StrCat("`qstat -f -xml`: ", doc.status().message()));
  std::vector<const XmlNode*> qs;
  CollectNamed(*doc, "Queue-List", &qs);
  QueueSlots out;
  for (const XmlNode* q : qs) {
    const int64_t slots = ToInt(q->ChildText("slots_total"));
    out.widest = std::max(out.widest, slots);
    const std::string st = q->ChildText("state");
    if (st.find_first_of("udDEsSCoc") != std::string::npos) continue;
    out.total += slots;
  }
  return out;
}

}  // namespace

absl::StatusOr<Capacity> GridEngineAdapter::GetCapacity() {
  auto r = Run({"qstat", "-f", "-q", options_.queue, "-xml"});
  if (!r.ok()) return r.status();
  auto slots = ReadSlots(r->out);
  if (!slots.ok()) return slots.status();
  return Capacity{.units = slots->total, .speed = options_.common.speed};
}

int64_t GridEngineAdapter::Widest() const {
  {
    absl::MutexLock l(&widest_mu_);
    if (absl::Now() - widest_at_ < absl::Minutes(1)) return widest_;
  }
  auto r = Run({"qstat", "-f", "-q", options_.queue, "-xml"});
  if (!r.ok()) return 0;
  auto slots = ReadSlots(r->out);
  if (!slots.ok()) return 0;
  absl::MutexLock l(&widest_mu_);
  widest_ = slots->widest;
  widest_at_ = absl::Now();
  return widest_;
}

absl::StatusOr<int64_t> GridEngineAdapter::WidestJob() {
  const int64_t w = Widest();
  if (w <= 0) {
    return absl::UnavailableError(
        absl::StrCat("gridengine: `qstat -f -q ", options_.queue, " -xml` gave no queue instance with slots"));
  }
  return w;
}

std::vector<absl::Status> GridEngineAdapter::ChangeMany(Change c, const std::vector<std::string>& ids) {
  if (ids.empty()) return {};
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return std::vector<absl::Status>(ids.size(), q.status());
  const char* what = c == Change::kHold ? "hold" : c == Change::kRelease ? "release" : "cancel";
  std::vector<absl::Status> out(ids.size());
  // What the queue already answers, and the jobs that need a command: each
  // once, however often it is named.
  std::vector<std::string> act;
  std::map<std::string, std::vector<size_t>> asked;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string& id = ids[i];
    if (auto it = asked.find(id); it != asked.end()) {
      it->second.push_back(i);
      continue;
    }
    auto it = AllDigits(id) ? q->find(id) : q->end();
    if (it == q->end() || !it->second.Visible()) {
      out[i] = NotFound(id);
      continue;
    }
    const JobState s = it->second.job.state;
    const bool noop = (c == Change::kHold && s == JobState::kHeld) ||
                      (c == Change::kRelease && s == JobState::kPending) ||
                      (c == Change::kCancel && s == JobState::kCancelled);
    const bool can = (c == Change::kHold && s == JobState::kPending) ||
                     (c == Change::kRelease && s == JobState::kHeld) ||
                     (c == Change::kCancel && (s == JobState::kPending || s == JobState::kHeld));
    if (noop) continue;
    if (!can) {
      out[i] = absl::FailedPreconditionError(
          absl::StrCat("gridengine: cannot ", what, " job ", id, ": it is ", JobStateName(s)));
      continue;
    }
    asked[id].push_back(i);
    act.push_back(id);
  }
  if (act.empty()) return out;
  auto set = [&](const std::string& id, const absl::Status& st) {
    for (size_t i : asked[id]) out[i] = st;
  };
  if (c == Change::kRelease) {
    std::vector<std::string> argv = {"qrls", "-h", "u"};
    argv.insert(argv.end(), act.begin(), act.end());
    const absl::Status st = Run(argv).status();
    auto after = ReadQueue();
    for (const std::string& id : act) {
      auto a = after.ok() ? after->find(id) : Queue::iterator();
      if (!after.ok()) {
        set(id, after.status());
      } else if (a != after->end() && a->second.job.state == JobState::kHeld) {
        set(id, st.ok() ? absl::FailedPreconditionError(absl::StrCat("gridengine: job ", id,
                                                                     " is still held after qrls -h u: it has an "
                                                                     "operator or system hold"))
                        : st);
      }
    }
    return out;
  }
  // Hold first, for a cancel too: qdel has no "only if pending", and a held
  // job cannot start between the check and the delete.
  std::vector<std::string> pending;
  for (const std::string& id : act)
    if (q->at(id).job.state == JobState::kPending) pending.push_back(id);
  absl::Status held_st;
  if (!pending.empty()) {
    std::vector<std::string> argv = {"qhold", "-h", "u"};
    argv.insert(argv.end(), pending.begin(), pending.end());
    held_st = Run(argv).status();
  }
  auto after = ReadQueue();
  if (!after.ok()) {
    for (const std::string& id : act) set(id, after.status());
    return out;
  }
  std::vector<std::string> doomed;
  for (const std::string& id : act) {
    auto a = after->find(id);
    if (a == after->end()) {
      set(id, held_st.ok() ? NotFound(id) : held_st);
      continue;
    }
    const JobState got = a->second.job.state;
    if (got == JobState::kHeld) {
      if (c == Change::kCancel) doomed.push_back(id);
      continue;
    }
    if (!held_st.ok()) {
      set(id, held_st);
    } else if (got == JobState::kPending) {
      set(id, absl::UnavailableError(absl::StrCat("gridengine: job ", id, " is still pending after qhold; try again")));
    } else {
      set(id, absl::FailedPreconditionError(
                  absl::StrCat("gridengine: job ", id, " is ", JobStateName(got), " (it changed meanwhile)")));
    }
  }
  if (doomed.empty()) return out;
  // The script goes once the job does: keep it (and that hyperfed cancelled
  // it) for Export and FindByTag.
  for (const std::string& id : doomed) {
    Ledgered led;
    if (auto lit = ledger_.find(id); lit != ledger_.end()) led = lit->second;
    led.raw = after->at(id).raw;
    led.cancelled = true;
    if (auto script = ReadScript(id); script.ok()) {
      led.has_script = true;
      led.script = *std::move(script);
    }
    Remember(led);
  }
  std::vector<std::string> argv = {"qdel"};
  argv.insert(argv.end(), doomed.begin(), doomed.end());
  if (absl::Status st = Run(argv).status(); !st.ok()) {
    // Some may be gone all the same: read again and judge each.
    auto last = ReadQueue();
    for (const std::string& id : doomed) {
      auto a = last.ok() ? last->find(id) : Queue::iterator();
      if (!last.ok() || (a != last->end() && a->second.job.state == JobState::kHeld)) set(id, st);
    }
  }
  return out;
}

absl::Status GridEngineAdapter::Hold(const std::string& id) { return ChangeMany(Change::kHold, {id})[0]; }
absl::Status GridEngineAdapter::Release(const std::string& id) { return ChangeMany(Change::kRelease, {id})[0]; }
absl::Status GridEngineAdapter::Cancel(const std::string& id) { return ChangeMany(Change::kCancel, {id})[0]; }
std::vector<absl::Status> GridEngineAdapter::HoldMany(const std::vector<std::string>& ids) {
  return ChangeMany(Change::kHold, ids);
}
std::vector<absl::Status> GridEngineAdapter::ReleaseMany(const std::vector<std::string>& ids) {
  return ChangeMany(Change::kRelease, ids);
}
std::vector<absl::Status> GridEngineAdapter::CancelMany(const std::vector<std::string>& ids) {
  return ChangeMany(Change::kCancel, ids);
}

absl::StatusOr<JobSpec> GridEngineAdapter::Export(const std::string& id) { return ExportMany({id})[0]; }

std::vector<absl::StatusOr<JobSpec>> GridEngineAdapter::ExportMany(const std::vector<std::string>& ids) {
  if (ids.empty()) return {};
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return std::vector<absl::StatusOr<JobSpec>>(ids.size(), q.status());
  std::vector<absl::StatusOr<JobSpec>> out;
  for (const std::string& id : ids) {
    auto it = AllDigits(id) ? q->find(id) : q->end();
    if (it == q->end() || !it->second.Visible()) {
      out.push_back(NotFound(id));
      continue;
    }
    const Entry& e = it->second;
    if (absl::StrContains(e.fixed_pin, "environment variable") || absl::StrContains(e.fixed_pin, "qsub -b y")) {
      out.push_back(
          absl::FailedPreconditionError(absl::StrCat("gridengine: job ", id, " ", e.fixed_pin, "; it is pinned")));
      continue;
    }
    JobSpec spec = e.job.spec;
    if (auto lit = ledger_.find(id); lit != ledger_.end() && lit->second.has_script) {
      spec.script = lit->second.script;
      out.push_back(std::move(spec));
      continue;
    }
    auto script = ReadScript(id);
    if (!script.ok()) {
      out.push_back(script.status());
      continue;
    }
    spec.script = *std::move(script);
    out.push_back(std::move(spec));
  }
  return out;
}

std::vector<absl::StatusOr<Job>> GridEngineAdapter::GetJobs(const std::vector<std::string>& ids) {
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

absl::StatusOr<std::vector<Job>> GridEngineAdapter::FindByTag(const std::string& tag) {
  if (tag.empty()) return absl::InvalidArgumentError("gridengine: FindByTag needs a non-empty tag");
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return q.status();
  std::vector<Job> out;
  for (auto& [id, e] : *q)
    if (e.marked && e.job.tag == tag) out.push_back(e.job);
  std::sort(out.begin(), out.end(), QueueOrder);
  return out;
}

namespace {

// Room for the tag a migration gives a job ("hyperfed:<id>:<index>", ids up
// to 200 bytes, percent-encoded) when the tag is not known yet, and for a
// mark (64 hex digits): as the slurm adapter reckons its comment.
constexpr size_t kTagReserve = 256;
constexpr size_t kMarkLength = 64;

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

}  // namespace

absl::Status GridEngineAdapter::CheckSpec(const JobSpec& s) const { return CheckSpecWithin(s, Widest()); }

absl::Status GridEngineAdapter::CheckSpecWithin(const JobSpec& s, int64_t widest) const {
  if (auto st = SchedulerAdapter::CheckSpec(s); !st.ok()) return st;
  if (!absl::StartsWith(s.script, "#!"))
    return absl::InvalidArgumentError("job spec: a Grid Engine job script must start with \"#!\"");
  if (s.name.empty()) return absl::InvalidArgumentError("job spec: Grid Engine needs a job name");
  if (std::any_of(s.name.begin(), s.name.end(), BadNameChar)) {
    return absl::InvalidArgumentError(
        "job spec: a Grid Engine job name is printable ASCII without blanks, / : @ \\ * or ?");
  }
  for (const auto& [name, value] : s.env) {
    if (std::string why = RefusedGridEngineEnv(name); !why.empty())
      return absl::InvalidArgumentError(absl::StrCat("job spec: environment variable \"", name, "\": ", why));
  }
  if (s.time_limit_s > (int64_t{1} << 31)) {
    return absl::InvalidArgumentError(
        absl::StrCat("job spec: time limit ", s.time_limit_s, " s is over what Grid Engine holds (2^31 s)"));
  }
  if (s.memory_mb > (int64_t{1} << 40))
    return absl::InvalidArgumentError(absl::StrCat("job spec: memory ", s.memory_mb, " MB is over 2^40 MB"));
  if (widest > 0 && s.cores > widest) {
    return absl::InvalidArgumentError(absl::StrCat("job spec: ", s.cores, " cores, but the widest host of queue ",
                                                   options_.queue, " has ", widest, " slots"));
  }
  auto user = ResolveRunAs(options_.common, s, kGridEngineAdapterName);
  if (!user.ok()) return user.status();
  // With the longest tag a migration gives and the mark.
  SlurmJobMeta m = MetaFor(s, std::string(kTagReserve, 'x'));
  m.mark = std::string(kMarkLength, 'x');
  if (const size_t size = EncodeContext(m, s.memory_mb).size(); size > kGridEngineMaxContext) {
    return absl::InvalidArgumentError(
        absl::StrCat("job spec: tag, key, owner and environment take ", size,
                     " bytes in Grid Engine's context variable, over hyperfed's limit of ", kGridEngineMaxContext));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> GridEngineAdapter::SubmitIn(const JobSpec& spec, const std::string& tag, bool held,
                                                        int64_t widest) const {
  if (auto st = CheckSpecWithin(spec, widest); !st.ok()) return st;
  auto user = ResolveRunAs(options_.common, spec, kGridEngineAdapterName);
  if (!user.ok()) return user.status();
  SlurmJobMeta meta = MetaFor(spec, tag);
  meta.mark = mark_.Sign(SlurmMarkMessage(meta, user->name));
  const std::string context = EncodeContext(meta, spec.memory_mb);
  const std::string qsub = options_.common.bin_dir.empty() ? "qsub" : options_.common.bin_dir + "/qsub";
  // As whom: qsub runs as that user (never root or the daemon's account:
  // ResolveRunAs), so Grid Engine records and runs the job as them.
  std::vector<std::string> argv = {"setpriv", absl::StrCat("--reuid=", user->uid), absl::StrCat("--regid=", user->gid),
                                   "--init-groups", qsub,
                                   // No defaults from sge_request files, no #$ directives.
                                   "-clear", "-C", "", "-terse", "-N", spec.name, "-q", options_.queue, "-ac",
                                   absl::StrCat(kGridEngineContextVar, "=", context)};
  if (spec.cores > 1) {
    argv.insert(argv.end(), {"-pe", options_.pe, absl::StrCat(spec.cores)});
  }
  if (spec.memory_mb > 0) {
    const int64_t per_slot = (spec.memory_mb + spec.cores - 1) / spec.cores;
    argv.insert(argv.end(), {"-l", absl::StrCat("h_vmem=", per_slot, "M")});
  }
  if (spec.time_limit_s > 0) argv.insert(argv.end(), {"-l", absl::StrCat("h_rt=", spec.time_limit_s)});
  if (!spec.workdir.empty()) {
    argv.insert(argv.end(), {"-wd", spec.workdir});
  } else {
    argv.push_back("-cwd");  // submit_dir
  }
  if (held) argv.push_back("-h");
  // Values reach the job through qsub's environment, never its argv.
  std::vector<std::string> names;
  for (const auto& [k, v] : spec.env) names.push_back(k);
  if (!names.empty()) argv.insert(argv.end(), {"-v", absl::StrJoin(names, ",")});
  auto r = RunRaw(argv, FilterQsubDirectives(spec.script), options_.common.submit_dir, spec.env);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0 || r->term_signal != 0) {
    absl::Status failed = CommandFailure(argv, *r);
    if (!QsubTransportFailure(*r)) return absl::InvalidArgumentError(failed.message());
    return failed;
  }
  std::string id(absl::StripAsciiWhitespace(r->out));
  id = id.substr(0, id.find('.'));
  if (!AllDigits(id)) return absl::UnavailableError(absl::StrCat("`qsub -terse` printed \"", r->out, "\", no job id"));
  return id;
}

absl::StatusOr<std::string> GridEngineAdapter::Submit(const JobSpec& spec, const std::string& tag, bool held) {
  return SubmitMany({{spec, tag}}, held)[0];
}

std::vector<absl::StatusOr<std::string>> GridEngineAdapter::SubmitMany(
    const std::vector<std::pair<JobSpec, std::string>>& spec_and_tag, bool held) {
  if (spec_and_tag.empty()) return {};
  // Held for the whole batch: no other call reads the queue between the tag
  // lookup and the qsub that adds a tag.
  absl::MutexLock l(&mu_);
  std::map<std::string, std::string> by_tag;
  if (std::any_of(spec_and_tag.begin(), spec_and_tag.end(), [](const auto& st) { return !st.second.empty(); })) {
    auto q = ReadQueue();
    if (!q.ok()) return std::vector<absl::StatusOr<std::string>>(spec_and_tag.size(), q.status());
    std::vector<const Job*> tagged;
    for (const auto& [id, e] : *q)
      if (e.marked && !e.job.tag.empty()) tagged.push_back(&e.job);
    std::sort(tagged.begin(), tagged.end(), [](const Job* a, const Job* b) { return QueueOrder(*a, *b); });
    for (const Job* j : tagged) by_tag.emplace(j->tag, j->id);
  }
  const int64_t widest = Widest();
  // Each job's record, written to disk by the thread that submitted it, the
  // moment qsub returns: the job is found by its tag even if it ends (or the
  // daemon stops) before the next read. Item i is written by one thread.
  std::vector<Ledgered> records(spec_and_tag.size());
  std::vector<std::string> tags;
  tags.reserve(spec_and_tag.size());
  for (const auto& st : spec_and_tag) tags.push_back(st.second);
  absl::Status stuck;
  std::vector<absl::StatusOr<std::string>> out =
      SubmitTaggedInWaves(tags, std::move(by_tag), kGridEngineParallelCommands, &stuck, [&](size_t i) {
        const auto& [spec, tag] = spec_and_tag[i];
        auto id = SubmitIn(spec, tag, held, widest);
        if (!id.ok() || tag.empty()) return id;
        auto user = ResolveRunAs(options_.common, spec, kGridEngineAdapterName);
        SlurmJobMeta meta = MetaFor(spec, tag);
        Ledgered& led = records[i];
        led.raw.id = *id;
        led.raw.user = user.ok() ? user->name : "";
        led.raw.name = spec.name;
        meta.mark = mark_.Sign(SlurmMarkMessage(meta, led.raw.user));
        led.raw.context = EncodeContext(meta, spec.memory_mb);
        led.raw.cwd = spec.workdir;
        led.raw.cores = spec.cores;
        led.raw.memory_mb = spec.memory_mb;
        led.raw.time_s = spec.time_limit_s;
        WriteLedgerRecord(led);
        return id;
      });
  for (Ledgered& led : records)
    if (!led.raw.id.empty()) ledger_[led.raw.id] = std::move(led);
  return out;
}

absl::Status GridEngineAdapter::SetPinned(const std::string& id, bool pinned) {
  if (!AllDigits(id)) return NotFound(id);
  absl::MutexLock l(&mu_);
  auto q = ReadQueue();
  if (!q.ok()) return q.status();
  auto it = q->find(id);
  if (it == q->end() || !it->second.Visible()) return NotFound(id);
  const Entry& e = it->second;
  if (e.job.state == JobState::kDone || e.job.state == JobState::kCancelled)
    return absl::FailedPreconditionError(absl::StrCat("gridengine: job ", id, " is ", JobStateName(e.job.state)));
  if (e.job.pinned == pinned) return absl::OkStatus();
  if (!pinned && !e.fixed_pin.empty())
    return absl::FailedPreconditionError(
        absl::StrCat("gridengine: job ", id, " ", e.fixed_pin, ", so it stays pinned"));
  SlurmJobMeta m;
  if (!DecodeSlurmComment(e.raw.context, &m)) m = SlurmJobMeta{};
  m.pinned = pinned ? 1 : 0;
  const std::string context = EncodeContext(m, ContextMemory(e.raw.context));
  return Run({"qalter", "-ac", absl::StrCat(kGridEngineContextVar, "=", context), id}).status();
}

absl::StatusOr<GridEngineOptions> GridEngineAdapterFactory::Parse(
    const std::map<std::string, std::string>& options) const {
  return ParseGridEngineOptions(options);
}

absl::StatusOr<std::unique_ptr<SchedulerAdapter>> GridEngineAdapterFactory::Make(const GridEngineOptions& options,
                                                                                 const AdapterContext& ctx) const {
  auto a = GridEngineAdapter::Open(options, ctx);
  if (!a.ok()) return a.status();
  return std::unique_ptr<SchedulerAdapter>(*std::move(a));
}

}  // namespace hyperfed::scheduler
