#include "coordinator/report/json_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

namespace rankscope {
namespace {

using nlohmann::json;

TEST(JsonWriter, NestedContainersGetCommasOnlyBetweenValues) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Member("a", 1).Key("b").BeginArray().Int(1).BeginObject().EndObject();
  w.BeginArray().EndArray().String("x").EndArray().Member("c", true).EndObject();
  EXPECT_EQ(out, R"({"a":1,"b":[1,{},[],"x"],"c":true})");
}

// Spilled at every closed container past the threshold: the pieces make the same text, the
// string never holds much more than the threshold, and after a failed sink nothing is sent.
TEST(JsonWriter, SpillsPiecesThatMakeTheSameText) {
  auto write = [](JsonWriter& w) {
    w.BeginArray();
    for (int i = 0; i < 1000; ++i) w.BeginObject().Member("i", i).Member("s", "text").EndObject();
    w.EndArray();
  };
  std::string whole;
  JsonWriter plain(&whole);
  write(plain);
  std::string buffer, joined;
  size_t largest = 0;
  JsonWriter spilling(&buffer);
  spilling.SpillTo(
      [&](std::string_view piece) {
        joined += piece;
        largest = std::max(largest, piece.size());
        return true;
      },
      100);
  write(spilling);
  EXPECT_TRUE(spilling.Spill());
  EXPECT_EQ(joined, whole);
  EXPECT_TRUE(buffer.empty());
  EXPECT_LT(largest, 200u);

  int calls = 0;
  JsonWriter failing(&buffer);
  failing.SpillTo(
      [&](std::string_view) {
        ++calls;
        return false;
      },
      100);
  write(failing);
  EXPECT_FALSE(failing.Spill());
  EXPECT_FALSE(failing.SinkOk());
  EXPECT_EQ(calls, 1);
  EXPECT_LT(buffer.size(), 200u);
}

TEST(JsonWriter, NumbersRoundTrip) {
  std::string out;
  JsonWriter w(&out);
  w.BeginArray().Int(std::numeric_limits<int64_t>::min()).Uint(UINT64_MAX).Double(0.1);
  w.Double(std::numeric_limits<double>::quiet_NaN()).EndArray();
  json doc = json::parse(out);
  EXPECT_EQ(doc[0].get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(doc[1].get<uint64_t>(), UINT64_MAX);
  EXPECT_EQ(doc[2].get<double>(), 0.1);
  EXPECT_TRUE(doc[3].is_null());
}

TEST(JsonWriter, MicrosKeepEveryNanosecond) {
  std::string out;
  JsonWriter w(&out);
  w.BeginArray().Micros(0).Micros(1).Micros(1'000).Micros(1'234'567).Micros(-1'500);
  w.Micros(std::numeric_limits<int64_t>::min()).EndArray();
  EXPECT_EQ(out, "[0,0.001,1,1234.567,-1.500,-9223372036854775.808]");
  EXPECT_TRUE(json::accept(out));
}

TEST(JsonWriter, StringsAreEscapedAndAlwaysValidUtf8) {
  const std::string input =
      std::string("q\"b\\n\nt\tc\x01 \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") +
      " bad:\xFF\xC3 overlong:\xC0\xAF surrogate:\xED\xA0\x80 end\xE2\x82";
  std::string out;
  JsonWriter(&out).String(input);
  json doc = json::parse(out);  // throws on invalid UTF-8 or a bad escape
  const std::string back = doc.get<std::string>();
  const std::string valid = "q\"b\\n\nt\tc\x01 \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 ";
  EXPECT_EQ(back.substr(0, valid.size()), valid);
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_NE(back.find("bad:" + fffd + fffd + " "), std::string::npos) << back;
  EXPECT_NE(back.find("overlong:" + fffd + fffd + " "), std::string::npos) << back;
  EXPECT_NE(back.find("surrogate:" + fffd + fffd + fffd + " "), std::string::npos) << back;
  EXPECT_NE(back.find("end" + fffd + fffd), std::string::npos) << back;
}

TEST(JsonWriter, AgreesWithNlohmannOnEveryByte) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  std::string out;
  JsonWriter(&out).String(all);
  const std::string expected = json(all).dump(-1, ' ', false, json::error_handler_t::replace);
  EXPECT_EQ(json::parse(out), json::parse(expected));
}

}  // namespace
}  // namespace rankscope
