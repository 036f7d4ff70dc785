#include "daemon/protojson/proto_json.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"
#include "hyperfed/v1/hyperfed.pb.h"

namespace hyperfed::protojson {
namespace {

// A string that breaks naive JSON writers: quotes, backslash, control
// characters, valid UTF-8, and one byte that is not UTF-8.
const std::string kNasty = std::string("a\"b\\c\nd\te\x01 \xc3\xa9 \xe2\x82\xac") + "\xff" + "z";

TEST(ProtoJsonTest, QuoteEscapesWhatJsonRequires) {
  EXPECT_EQ(Quote("plain"), "\"plain\"");
  EXPECT_EQ(Quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Quote("l1\nl2\r\t\b\f"), "\"l1\\nl2\\r\\t\\b\\f\"");
  EXPECT_EQ(Quote(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(Quote(std::string("nul\0x", 5)), "\"nul\\u0000x\"");
  EXPECT_EQ(Quote("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
  // Not UTF-8: a stray continuation byte, a truncated sequence, an overlong
  // encoding, a surrogate.
  EXPECT_EQ(Quote("\x80"), "\"\\ufffd\"");
  EXPECT_EQ(Quote("\xe2\x82"), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(Quote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(Quote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
  // DEL and C1 controls (U+0080..U+009F) too: the text is safe on a terminal.
  EXPECT_EQ(Quote("x\x7fy\xc2\x9bz"), "\"x\\u007fy\\u009bz\"");
}

TEST(ProtoJsonTest, NumbersRoundTripAndNonFiniteIsNull) {
  EXPECT_EQ(Dump(0.1), "0.1");
  EXPECT_EQ(Dump(2.0), "2");
  EXPECT_EQ(Dump(-1.5), "-1.5");
  EXPECT_EQ(Dump(1e300), "1e+300");
  EXPECT_EQ(Dump(std::nan("")), "null");
  EXPECT_EQ(Dump(1.0 / 0.0), "null");
  EXPECT_EQ(Dump(int64_t{-9'000'000'000}), "-9000000000");
}

TEST(ProtoJsonTest, DumpPlacesCommasAndKeepsTheOrder) {
  Json j = {{"z", 1}, {"b", {1, "x", Json::object(), Json::array()}}, {"c", true}, {"d", nullptr}};
  EXPECT_EQ(Dump(j), R"({"z":1,"b":[1,"x",{},[]],"c":true,"d":null})");
}

TEST(ProtoJsonTest, NastyStringsAreEscapedAsKeysAndValuesAndParseBack) {
  const std::string text = Dump({{kNasty, kNasty}});
  EXPECT_EQ(Quote(kNasty), "\"a\\\"b\\\\c\\nd\\te\\u0001 \xc3\xa9 \xe2\x82\xac\\ufffdz\"");
  EXPECT_EQ(text, "{" + Quote(kNasty) + ":" + Quote(kNasty) + "}");
  const std::string fixed = "a\"b\\c\nd\te\x01 \xc3\xa9 \xe2\x82\xac\xef\xbf\xbdz";  // U+FFFD for \xff
  EXPECT_EQ(Json::parse(text)[fixed], fixed) << text;
}

// What hyperfed's counts are: 64-bit, and past 2^31 a number still, not a
// string as protobuf's own JSON mapping would make it.
TEST(ProtoJsonTest, Int64AboveTwoToThe31IsANumber) {
  v1::Round r;
  r.set_moved(3'000'000'000);
  r.set_started_ms(1714564800000);
  r.set_messages(int64_t{1} << 40);
  const std::string text = Encode(r);
  EXPECT_NE(text.find("\"moved\":3000000000,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"started_ms\":1714564800000,"), std::string::npos) << text;
  const Json back = Json::parse(text);
  EXPECT_TRUE(back["moved"].is_number_integer()) << text;
  EXPECT_EQ(back["moved"].get<int64_t>(), 3'000'000'000);
  EXPECT_EQ(back["messages"].get<int64_t>(), int64_t{1} << 40);
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "one line";
}

TEST(ProtoJsonTest, EveryFieldUnderItsProtoNameInTheProtosOrderZeroValuesToo) {
  v1::SiteStatus s;
  s.set_site("site-a");
  s.set_load(7);
  EXPECT_EQ(Encode(s), R"({"site":"site-a","label":0,"state":"","load":7,"capacity":0,"load_per_capacity":0,)"
                       R"("last_round":"","endpoint":"","age_ms":0,"roster_version":0,"protocol":""})"
                       "\n");
}

TEST(ProtoJsonTest, UnsetMessagesAreTheirZeroValuesRepeatedAreArraysMapsAreSortedObjects) {
  v1::WaitsReply w;
  const Json j = ToJson(w);
  EXPECT_EQ(Dump(j["placement"]), R"({"enabled":false,"passes":0,"placed":0,"kept":0,"failed":0,"to":[]})");
  EXPECT_EQ(Dump(j["hours"]), "[]");

  v1::Job job;
  job.mutable_spec()->mutable_env()->insert({"b", "2"});
  job.mutable_spec()->mutable_env()->insert({"a", "1"});
  job.mutable_spec()->set_cost(std::nan(""));
  const Json spec = ToJson(job)["spec"];
  EXPECT_EQ(Dump(spec["env"]), R"({"a":"1","b":"2"})");
  EXPECT_EQ(Dump(spec["cost"]), "null");
}

TEST(ProtoJsonTest, EnumsByNameBytesAsBase64) {
  v1::ExchangeRequest x;
  x.set_kind(v1::ExchangeRequest::PHASE_DONE);
  EXPECT_EQ(ToJson(x)["kind"], "PHASE_DONE");
  x.set_kind(static_cast<v1::ExchangeRequest::Kind>(99));  // a newer sender's kind
  EXPECT_EQ(ToJson(x)["kind"], 99);
  v1::SignedRoster r;
  r.set_body(std::string("\x00\xff", 2));
  EXPECT_EQ(ToJson(r)["body"], "AP8=");
}

}  // namespace
}  // namespace hyperfed::protojson
