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

TEST(PrintableOutput, KeepsLinesTabsAndProgressBarsAndEscapesTheRest) {
  EXPECT_EQ(PrintableOutput("epoch 1\tloss 0.5\r 50%\r100%\n"), "epoch 1\tloss 0.5\r 50%\r100%\n");
  // OSC 52 (set the clipboard), a screen clear, a C1 CSI and a right-to-left override.
  EXPECT_EQ(PrintableOutput("\x1b]52;c;Y3VybA==\x07"), "\\x1b]52;c;Y3VybA==\\x07");
  EXPECT_EQ(PrintableOutput("\x1b[2Jfake"), "\\x1b[2Jfake");
  EXPECT_EQ(PrintableOutput("a\xc2\x9b"
                            "31m"),
            "a\\x9b"
            "31m");
  EXPECT_EQ(PrintableOutput("x\xe2\x80\xaey"), "x\\u202ey");
  EXPECT_EQ(PrintableOutput("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");
  EXPECT_EQ(Printable("a\nb"), "a\\x0ab") << "Printable itself escapes line feeds";
}

TEST(WholeUtf8Prefix, StopsBeforeACharacterCutAtTheEnd) {
  EXPECT_EQ(WholeUtf8Prefix("abc"), 3u);
  EXPECT_EQ(WholeUtf8Prefix(""), 0u);
  EXPECT_EQ(WholeUtf8Prefix("a\xc3\xa9"), 3u);
  EXPECT_EQ(WholeUtf8Prefix("a\xc3"), 1u);
  EXPECT_EQ(WholeUtf8Prefix("a\xe2\x80"), 1u);
  EXPECT_EQ(WholeUtf8Prefix("a\xe2\x80\xae"), 4u);
  EXPECT_EQ(WholeUtf8Prefix("a\xf0\x9f\x98"), 1u);
  EXPECT_EQ(WholeUtf8Prefix("a\x80\x80\x80\x80"), 5u) << "not UTF-8: nothing held";
}

}  // namespace
}  // namespace gpufleet::core
