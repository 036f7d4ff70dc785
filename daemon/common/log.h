#pragma once

// Plain-words log lines on stderr: "2026-11-22T04:10:01.123Z site-a: round ...".

#include <string>

namespace hyperfed {

void Log(const std::string& line);

}  // namespace hyperfed
