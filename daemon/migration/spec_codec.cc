#include "daemon/migration/spec_codec.h"

#include <charconv>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hyperfed::migration {
namespace {

constexpr char kVersion[] = "spec1";

// Numbers with std::to_chars: no temporary string, no locale. The double
// has the digits of printf's %.17g (what earlier versions wrote), so it
// reads back equal.
void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
  AppendField(out, std::string_view(buf, r.ptr - buf));
}

void AppendDouble(std::string* out, double v) {
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 17);
  AppendField(out, std::string_view(buf, r.ptr - buf));
}

bool ReadInt(std::string_view* in, int64_t* v) {
  std::string f;
  return ReadField(in, &f) && absl::SimpleAtoi(f, v);
}

bool ReadDouble(std::string_view* in, double* v) {
  std::string f;
  return ReadField(in, &f) && absl::SimpleAtod(f, v);
}

}  // namespace

void AppendField(std::string* out, std::string_view field) {
  char buf[24];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, field.size());
  *r.ptr = ':';
  out->append(buf, r.ptr + 1 - buf);
  out->append(field.data(), field.size());
}

bool ReadField(std::string_view* in, std::string* field) {
  size_t colon = in->find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 12) return false;
  uint64_t len = 0;
  if (!absl::SimpleAtoi(std::string(in->substr(0, colon)), &len)) return false;
  if (len > in->size() - colon - 1) return false;
  *field = std::string(in->substr(colon + 1, len));
  in->remove_prefix(colon + 1 + len);
  return true;
}

std::string EncodeSpec(const scheduler::JobSpec& s) {
  std::string out;
  // One allocation: the text fields plus a length prefix and a number per
  // field (at most 24 + 24 bytes each).
  size_t size = 12 * 48 + s.name.size() + s.script.size() + s.workdir.size() + s.key.size() + s.owner.size();
  for (const auto& [k, v] : s.env) size += 48 + k.size() + v.size();
  out.reserve(size);
  AppendField(&out, kVersion);
  AppendField(&out, s.name);
  AppendField(&out, s.script);
  AppendInt(&out, s.cores);
  AppendInt(&out, s.memory_mb);
  AppendInt(&out, s.time_limit_s);
  AppendField(&out, s.workdir);
  AppendInt(&out, static_cast<int64_t>(s.env.size()));
  for (const auto& [k, v] : s.env) {
    AppendField(&out, k);
    AppendField(&out, v);
  }
  AppendInt(&out, s.duration_ms);
  AppendDouble(&out, s.cost);
  AppendField(&out, s.key);
  // Last and only when set: records written before specs had an owner
  // read back unchanged.
  if (!s.owner.empty()) AppendField(&out, s.owner);
  return out;
}

absl::StatusOr<scheduler::JobSpec> DecodeSpec(std::string_view in) {
  auto bad = [] { return absl::InvalidArgumentError("malformed encoded job spec"); };
  scheduler::JobSpec s;
  std::string version;
  if (!ReadField(&in, &version) || version != kVersion) return bad();
  int64_t cores = 0, env_count = 0;
  if (!ReadField(&in, &s.name) || !ReadField(&in, &s.script) || !ReadInt(&in, &cores) || !ReadInt(&in, &s.memory_mb) ||
      !ReadInt(&in, &s.time_limit_s) || !ReadField(&in, &s.workdir) || !ReadInt(&in, &env_count) || env_count < 0) {
    return bad();
  }
  if (cores < INT32_MIN || cores > INT32_MAX) return bad();
  s.cores = static_cast<int>(cores);
  for (int64_t i = 0; i < env_count; ++i) {
    std::string k, v;
    if (!ReadField(&in, &k) || !ReadField(&in, &v)) return bad();
    s.env[k] = v;
  }
  if (!ReadInt(&in, &s.duration_ms) || !ReadDouble(&in, &s.cost) || !ReadField(&in, &s.key)) return bad();
  if (!in.empty() && (!ReadField(&in, &s.owner) || s.owner.empty())) return bad();
  if (!in.empty()) return bad();
  return s;
}

}  // namespace hyperfed::migration
