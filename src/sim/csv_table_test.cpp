#include "sim/csv_table.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>

#include "testing/builders.h"

namespace gpufleet::sim {
namespace {

TEST(CsvTableTest, ReadsRowsSkippingBlankLinesAndCrlf) {
  auto t = CsvTable::Parse("a,b,c\r\n1,x,-3\r\n\n4,,6\n", "t.csv", {"a", "c"});
  ASSERT_TRUE(t.ok()) << t.error();
  const CsvTable& table = t.value();
  ASSERT_EQ(table.rows(), 2u);
  EXPECT_EQ(table.Field(0, "b"), "x");
  EXPECT_EQ(table.Field(1, "b"), "");
  EXPECT_EQ(table.Field(0, "c"), "-3");  // the '\r' is gone
  EXPECT_EQ(table.line(0), 2);
  EXPECT_EQ(table.line(1), 4);  // blank line 3 is skipped but counted
  EXPECT_EQ(table.Int(1, "a").value(), 4);
  EXPECT_EQ(table.Int(0, "c").value(), -3);
  EXPECT_TRUE(table.HasColumn("b"));
  EXPECT_FALSE(table.HasColumn("d"));
  EXPECT_EQ(table.Field(0, "d"), "");  // an absent optional column reads as empty
  EXPECT_EQ(table.Where(1, "c"), "t.csv:4: column 'c' (3)");
  EXPECT_EQ(table.path(), "t.csv");
}

TEST(CsvTableTest, MissingColumnIsNamed) {
  auto t = CsvTable::Parse("a,b\n1,2\n", "t.csv", {"a", "memory_mib"});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error(), "t.csv:1: missing column 'memory_mib'");
}

TEST(CsvTableTest, WrongFieldCountNamesTheLine) {
  auto t = CsvTable::Parse("a,b\n1,2\n3\n", "t.csv", {});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("t.csv:3: expected 2 fields"), std::string::npos) << t.error();
  EXPECT_NE(t.error().find("found 1"), std::string::npos) << t.error();
}

TEST(CsvTableTest, EmptyInputIsAnError) {
  for (const char* text : {"", "\n\n", "\r\n"}) {
    auto t = CsvTable::Parse(text, "empty.csv", {});
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().find("empty.csv: empty file"), std::string::npos) << t.error();
  }
}

TEST(CsvTableTest, IntegerErrorsNameFileLineAndColumn) {
  auto t = CsvTable::Parse("name,n\nx,12a\ny,\nz,-7\nw, 5\nv,99999999999999999999\n", "p.csv", {});
  ASSERT_TRUE(t.ok()) << t.error();
  const CsvTable& table = t.value();
  auto bad = table.Int(0, "n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "p.csv:2: column 'n' (2): expected an integer, found '12a'");
  EXPECT_NE(table.Int(1, "n").error().find("p.csv:3: column 'n' (2)"), std::string::npos);
  EXPECT_EQ(table.Int(2, "n").value(), -7);
  auto negative = table.NonNegativeInt(2, "n");
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error(), "p.csv:4: column 'n' (2): must not be negative, found -7");
  EXPECT_FALSE(table.Int(3, "n").ok());  // no silent trimming
  EXPECT_FALSE(table.Int(4, "n").ok());  // out of range
}

TEST(CsvTableTest, AShortTableKeepsItsFieldsWhenMoved) {
  // Shorter than a string's in-place buffer: the fields must not point into a buffer that moves.
  auto t = CsvTable::Parse("k\nv\n", "t.csv", {"k"});
  ASSERT_TRUE(t.ok()) << t.error();
  CsvTable moved = std::move(t).value();
  t = CsvTable::Parse("k\ny\n", "u.csv", {"k"});  // reuses the storage the first one left
  ASSERT_EQ(moved.rows(), 1u);
  EXPECT_EQ(moved.Field(0, "k"), "v");
  EXPECT_EQ(t.value().Field(0, "k"), "y");
}

TEST(CsvTableTest, ReadFile) {
  test::TempFile file("table.csv", "k,v\na,1\n");
  auto t = CsvTable::ReadFile(file.path(), {"k", "v"});
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t.value().rows(), 1u);
  EXPECT_EQ(t.value().Where(0), file.path() + ":2");

  auto missing = CsvTable::ReadFile(file.path() + ".absent", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), file.path() + ".absent: cannot open file");
}

TEST(CsvTableTest, ReadFileReadsAPipe) {
  // A pipe has no size and cannot seek: `--pods <(generate ...)` must still work.
  test::TempFile holder("pipe-dir", "");
  const std::string fifo = holder.path() + ".fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    if (std::FILE* f = std::fopen(fifo.c_str(), "w")) {
      std::fputs("k,v\na,1\nb,2\n", f);
      std::fclose(f);
    }
  });
  auto t = CsvTable::ReadFile(fifo, {"k", "v"});
  writer.join();
  ::unlink(fifo.c_str());
  ASSERT_TRUE(t.ok()) << t.error();
  ASSERT_EQ(t.value().rows(), 2u);
  EXPECT_EQ(t.value().Field(1, "v"), "2");
}

}  // namespace
}  // namespace gpufleet::sim
