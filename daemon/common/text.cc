#include "daemon/common/text.h"

#include "absl/strings/str_format.h"

namespace hyperfed {

size_t Utf8Length(std::string_view s, size_t i) {
  auto cont = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    if (i + k >= s.size()) return false;
    unsigned char c = static_cast<unsigned char>(s[i + k]);
    return c >= lo && c <= hi;
  };
  unsigned char b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return cont(1) ? 2 : 0;
  if (b == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if (b == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;  // no surrogates
  if (b >= 0xE1 && b <= 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (b == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (b >= 0xF1 && b <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

std::string TerminalSafe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char u = static_cast<unsigned char>(s[i]);
    const size_t n = Utf8Length(s, i);
    // C1 controls are U+0080..U+009F: 0xC2 0x80..0x9F in UTF-8.
    const bool c1 = n == 2 && u == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F;
    if (n > 1 && !c1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    if (c1) {
      absl::StrAppendFormat(&out, "\\x%02x\\x%02x", u, static_cast<unsigned char>(s[i + 1]));
      i += 2;
      continue;
    }
    ++i;
    if (u == '\n')
      out += "\\n";
    else if (u == '\t')
      out += "\\t";
    else if (u == '\r')
      out += "\\r";
    else if (u < 0x20 || u >= 0x7f)  // other C0, DEL, and bytes that are not UTF-8
      absl::StrAppendFormat(&out, "\\x%02x", u);
    else
      out += static_cast<char>(u);
  }
  return out;
}

}  // namespace hyperfed
