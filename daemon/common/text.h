#pragma once

// Text from elsewhere (a peer, a job, a scheduler) made safe to show where a
// reader takes control characters for structure: a terminal (hyperfedctl) or
// a text log, one line an entry (docs/security.md, "Peer text").

#include <cstddef>
#include <string>
#include <string_view>

namespace hyperfed {

// The length of the valid UTF-8 sequence at s[i], or 0 if there is none.
size_t Utf8Length(std::string_view s, size_t i);

// `s` with control characters (C0 and DEL, so ESC and newlines too, and C1,
// U+0080..U+009F) and bytes that are not valid UTF-8 shown as escapes
// ("\x1b", "\n", "\xc2\x9b"), so that it can neither move a terminal's
// cursor, set its title, nor break a line, a table or a log entry.
// Printable text, UTF-8 included, is unchanged.
std::string TerminalSafe(std::string_view s);

}  // namespace hyperfed
