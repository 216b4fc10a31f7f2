#include "core/proc_stat.h"

#include <gtest/gtest.h>

namespace gpufleet::core {
namespace {

TEST(ProcStatTest, FieldsStartAfterTheLastParenthesisWhateverTheNameHolds) {
  const auto plain = StatFieldsAfterName("42 (sleep) S 1 42 42 0 -1\n");
  ASSERT_EQ(plain.size(), 6U);
  EXPECT_EQ(plain[0], "S");
  EXPECT_EQ(plain[2], "42");  // field 5: the process group
  // Found by a review: a job named its process "a\n) Z 1 1" (prctl PR_SET_NAME) and a reader
  // that took the first line found no fields, so the process dropped out of its job's group.
  const auto tricky = StatFieldsAfterName("77 (a\n) Z 1 1) R 1 99 99 0 -1\n");
  ASSERT_EQ(tricky.size(), 6U);
  EXPECT_EQ(tricky[0], "R");
  EXPECT_EQ(tricky[2], "99");
  EXPECT_TRUE(StatFieldsAfterName("no name here").empty());
  EXPECT_TRUE(StatFieldsAfterName("").empty());
}

}  // namespace
}  // namespace gpufleet::core
