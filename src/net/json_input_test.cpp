#include "net/json_input.h"

#include <gtest/gtest.h>

#include <string>

namespace gpufleet::net {
namespace {

TEST(JsonInputTest, DepthCountsBracketsOutsideStrings) {
  EXPECT_EQ(JsonNestingDepth(R"({"a":[1,{"b":2}]})", 64), 3);
  EXPECT_EQ(JsonNestingDepth(R"({"a":"[[[[\"[["})", 64), 1);
  EXPECT_EQ(JsonNestingDepth("", 64), 0);
}

// Security finding 6: a deeply nested value crashed whoever copied or printed it.
TEST(JsonInputTest, RefusesDeepNestingBeforeParsing) {
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  auto parsed = ParseJsonInput(deep);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().find("nested deeper than 64"), std::string::npos);
  EXPECT_TRUE(ParseJsonInput(std::string(64, '[') + std::string(64, ']')).ok());
  EXPECT_FALSE(ParseJsonInput(std::string(65, '[') + std::string(65, ']')).ok());
}

TEST(JsonInputTest, MalformedInputIsAnError) {
  auto parsed = ParseJsonInput("{\"a\":");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().find("malformed JSON"), std::string::npos);
}

// Found by fuzz/submit_request_fuzz and fuzz/heartbeat_reply_fuzz: nlohmann's out_of_range
// (number overflow) escaped ParseJsonInput as an exception.
TEST(JsonInputTest, ANumberBeyondADoubleIsMalformedNotAnException) {
  for (const char* text : {R"({"gpus":1e400})", "-1e99999", R"([1,2,1E3007])"}) {
    auto parsed = ParseJsonInput(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(parsed.error().find("malformed JSON"), std::string::npos) << parsed.error();
  }
}

TEST(JsonInputTest, CheckedReadersNeverTruncateOrWrap) {
  const nlohmann::json j = nlohmann::json::parse(
      R"({"big":1e300,"neg":-1,"huge":18446744073709551615,"ok":7,"s":"a\u0000b","b":1})");
  EXPECT_THROW(CheckedInt(j, "big", 0, 100, 0), std::invalid_argument);
  EXPECT_THROW(CheckedInt(j, "neg", 0, 100, 0), std::invalid_argument);
  EXPECT_THROW(CheckedInt(j, "huge", 0, 100, 0), std::invalid_argument);
  EXPECT_EQ(CheckedInt(j, "ok", 0, 100, 0), 7);
  EXPECT_EQ(CheckedInt(j, "absent", 0, 100, 42), 42);
  EXPECT_THROW(CheckedNumber(j, "big", 0, 100, 0), std::invalid_argument);
  EXPECT_THROW(CheckedString(j, "s", 100, ""), std::invalid_argument);
  EXPECT_THROW(CheckedBool(j, "b", false), std::invalid_argument);
  try {
    CheckedInt(j, "big", 0, 100, 0);
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "big: must be an integer in 0..100");
  }
}

}  // namespace
}  // namespace gpufleet::net
