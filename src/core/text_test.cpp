#include "core/text.h"

#include <gtest/gtest.h>

namespace gpufleet::core {
namespace {

TEST(TextTest, TruncateUtf8KeepsShortTextAndNeverSplitsACharacter) {
  EXPECT_EQ(TruncateUtf8("short", 5), "short");
  EXPECT_EQ(TruncateUtf8("abcdefgh", 6), "abc...");
  // "é" is two bytes: a cut that would fall between them goes back before it.
  const std::string accents = "ab\xc3\xa9\xc3\xa9\xc3\xa9";  // ab + 3 x é, 8 bytes
  EXPECT_EQ(TruncateUtf8(accents, 6), "ab...");
  EXPECT_EQ(TruncateUtf8(accents, 7), "ab\xc3\xa9...");
  // A four-byte character at the cut.
  const std::string emoji = "\xf0\x9f\x98\x80\xf0\x9f\x98\x80";
  EXPECT_EQ(TruncateUtf8(emoji, 6), "...");
  EXPECT_EQ(TruncateUtf8(emoji, 7), "\xf0\x9f\x98\x80...");
  EXPECT_EQ(TruncateUtf8(emoji, 2), "..");
  for (std::size_t limit = 0; limit < 12; ++limit) {
    EXPECT_LE(TruncateUtf8(accents + emoji, limit).size(), limit);
  }
}

TEST(IsLoopbackHost, OnlyNamesOfThisMachine) {
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_FALSE(IsLoopbackHost("127.0.0.1.example.com"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("db.example"));
  EXPECT_FALSE(IsLoopbackHost(""));
}

}  // namespace
}  // namespace gpufleet::core
