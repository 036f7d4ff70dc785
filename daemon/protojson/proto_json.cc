#include "daemon/protojson/proto_json.h"

#include <google/protobuf/descriptor.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "daemon/common/text.h"

namespace hyperfed::protojson {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// A message field that is not set is written as its zero values, which for
// a message that holds itself would never end: past this depth it is null.
constexpr int kMaxDepth = 64;

Json MessageJson(const Message& m, int depth);

// A float as the double whose shortest text is the float's own ("0.1", not
// "0.10000000149011612").
double FloatValue(float f) {
  if (!std::isfinite(f)) return f;
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf - 1, f);
  *end = '\0';
  return std::strtod(buf, nullptr);
}

Json EnumJson(const FieldDescriptor* f, int number) {
  const google::protobuf::EnumValueDescriptor* v = f->enum_type()->FindValueByNumber(number);
  if (v == nullptr) return number;
  return v->name();
}

// The value of field `f` of `m`: the singular one when `i` < 0, else element
// `i` of the repeated field.
Json ValueJson(const Message& m, const FieldDescriptor* f, int i, int depth) {
  const Reflection* r = m.GetReflection();
  const bool rep = i >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return rep ? r->GetRepeatedInt32(m, f, i) : r->GetInt32(m, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return rep ? r->GetRepeatedInt64(m, f, i) : r->GetInt64(m, f);
    case FieldDescriptor::CPPTYPE_UINT32:
      return rep ? r->GetRepeatedUInt32(m, f, i) : r->GetUInt32(m, f);
    case FieldDescriptor::CPPTYPE_UINT64:
      return rep ? r->GetRepeatedUInt64(m, f, i) : r->GetUInt64(m, f);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return rep ? r->GetRepeatedDouble(m, f, i) : r->GetDouble(m, f);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return FloatValue(rep ? r->GetRepeatedFloat(m, f, i) : r->GetFloat(m, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return rep ? r->GetRepeatedBool(m, f, i) : r->GetBool(m, f);
    case FieldDescriptor::CPPTYPE_ENUM:
      return EnumJson(f, rep ? r->GetRepeatedEnumValue(m, f, i) : r->GetEnumValue(m, f));
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string s = rep ? r->GetRepeatedString(m, f, i) : r->GetString(m, f);
      if (f->type() == FieldDescriptor::TYPE_BYTES) return absl::Base64Escape(s);
      return s;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      if (rep) return MessageJson(r->GetRepeatedMessage(m, f, i), depth + 1);
      if (!r->HasField(m, f) && depth >= kMaxDepth) return nullptr;
      // Not set: the default instance, every field at its zero value.
      return MessageJson(r->GetMessage(m, f), depth + 1);
  }
  return nullptr;
}

// A map field as an object. JSON keys are strings, so an integer or bool key
// is written as its text; keys are sorted, as the map's own order is none.
Json MapJson(const Message& m, const FieldDescriptor* f, int depth) {
  const Reflection* r = m.GetReflection();
  const FieldDescriptor* key = f->message_type()->map_key();
  const FieldDescriptor* value = f->message_type()->map_value();
  std::map<std::string, Json> entries;
  for (int i = 0; i < r->FieldSize(m, f); ++i) {
    const Message& e = r->GetRepeatedMessage(m, f, i);
    Json k = ValueJson(e, key, -1, depth);
    entries[k.is_string() ? k.get<std::string>() : k.dump()] = ValueJson(e, value, -1, depth + 1);
  }
  Json out = Json::object();
  for (auto& [k, v] : entries) out[k] = std::move(v);
  return out;
}

Json MessageJson(const Message& m, int depth) {
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  const Reflection* r = m.GetReflection();
  Json out = Json::object();
  for (int n = 0; n < d->field_count(); ++n) {
    const FieldDescriptor* f = d->field(n);
    if (f->real_containing_oneof() != nullptr && !r->HasField(m, f)) continue;
    if (f->is_map()) {
      out[f->name()] = MapJson(m, f, depth);
    } else if (f->is_repeated()) {
      Json a = Json::array();
      for (int i = 0; i < r->FieldSize(m, f); ++i) a.push_back(ValueJson(m, f, i, depth));
      out[f->name()] = std::move(a);
    } else {
      out[f->name()] = ValueJson(m, f, -1, depth);
    }
  }
  return out;
}

void DumpTo(const Json& j, std::string* out) {
  switch (j.type()) {
    case Json::value_t::object: {
      *out += '{';
      bool first = true;
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (!first) *out += ',';
        first = false;
        *out += Quote(it.key());
        *out += ':';
        DumpTo(it.value(), out);
      }
      *out += '}';
      return;
    }
    case Json::value_t::array: {
      *out += '[';
      bool first = true;
      for (const Json& v : j) {
        if (!first) *out += ',';
        first = false;
        DumpTo(v, out);
      }
      *out += ']';
      return;
    }
    case Json::value_t::string:
      *out += Quote(j.get_ref<const std::string&>());
      return;
    case Json::value_t::number_float: {
      const double v = j.get<double>();
      if (!std::isfinite(v)) {
        *out += "null";
        return;
      }
      // Shortest text that reads back as the same double ("4", "0.1").
      char buf[64];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
      out->append(buf, end);
      return;
    }
    case Json::value_t::binary:
      *out += "null";  // not made by ToJson (bytes are base64 strings)
      return;
    default:  // null, booleans, integers
      *out += j.dump();
  }
}

}  // namespace

Json ToJson(const Message& m) { return MessageJson(m, 0); }

std::string Dump(const Json& j) {
  std::string out;
  DumpTo(j, &out);
  return out;
}

std::string Encode(const Message& m) { return Dump(ToJson(m)) + "\n"; }

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8Length(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (n == 2 && static_cast<unsigned char>(s[i]) == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(s[i + 1]));  // C1 control
      i += n;
      continue;
    }
    if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    char c = s[i++];
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
          out += absl::StrFormat("\\u%04x", static_cast<int>(c));
        else
          out += c;
    }
  }
  return out + "\"";
}

}  // namespace hyperfed::protojson
