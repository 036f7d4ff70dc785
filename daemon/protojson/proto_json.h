#pragma once

// The one JSON encoding of the protocol's messages: what `hyperfedctl --json`
// prints and what the web view's API (/api/v1/*) answers, so that the same
// reply has the same shape through both (docs/operations.md, "The JSON API";
// docs/hyperfedctl.md, "JSON").
//
// A message is an object with every field under its name in the .proto file
// (`round_id`, not `roundId`), in the order the file declares them, at its
// zero value too, so a reader never has to guess a missing key:
// - 32- and 64-bit integers are JSON numbers. (Protobuf's own JSON mapping
//   makes 64-bit ones strings for JavaScript's sake; the counts and
//   milliseconds here stay far below 2^53, where a double is still exact.)
// - doubles and floats are numbers, shortest text that reads back the same;
//   NaN and infinities, which JSON lacks, are null.
// - strings are valid UTF-8 (bytes that are not become U+FFFD); bytes are
//   base64; enums are their value's name (a number the .proto does not know
//   stays a number).
// - repeated fields are arrays; maps are objects, keys sorted.
// - a message field that is not set is its message at its zero values, so
//   the shape is the same whether a site filled it or not; a oneof member
//   that is not set is left out (only the one set is there).
// Thread-safe: pure functions.

#include <google/protobuf/message.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hyperfed::protojson {

// Objects keep the order keys were added in: a message's fields in the
// .proto's order, which is also the order people read them in.
using Json = nlohmann::ordered_json;

// `m` as a JSON value, by the rules above. Strings are kept as they are:
// write the value with Dump, which makes them valid UTF-8.
Json ToJson(const google::protobuf::Message& m);

// `j` as compact JSON text on one line (no newline). Strings are made valid
// UTF-8 and control characters (C0, DEL, C1) are written as \u escapes, so
// the text is safe to print on a terminal; non-finite numbers are null.
// Use this, not nlohmann's dump(), which throws on invalid UTF-8.
std::string Dump(const Json& j);

// `m` as one line of JSON text, newline-terminated: Dump(ToJson(m)) + "\n".
// hyperfedctl --json prints this; the web API answers with it.
std::string Encode(const google::protobuf::Message& m);

// `s` as a JSON string literal, quotes included, as Dump writes strings.
std::string Quote(std::string_view s);

}  // namespace hyperfed::protojson
