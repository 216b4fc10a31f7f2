#include "advise/own_hardware.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gpufleet::advise {
namespace {

TEST(OwnHardware, TheExampleFileHoldsTheDefaults) {
  std::ifstream in(GPUFLEET_OWN_HARDWARE_EXAMPLE);
  ASSERT_TRUE(in) << GPUFLEET_OWN_HARDWARE_EXAMPLE;
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = ParseOwnHardware(text.str());
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed.value(), OwnHardware{});
}

TEST(OwnHardware, ReadsKeysCommentsAndBlankLines) {
  auto parsed = ParseOwnHardware(
      "# a site\n"
      "\n"
      "pue = 1.1   # new building\n"
      "  electricity_usd_per_kwh=0.2\r\n"
      "utilization_target = 1\n");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  OwnHardware want;
  want.pue = 1.1;
  want.electricity_usd_per_kwh = 0.2;
  want.utilization_target = 1;
  EXPECT_EQ(parsed.value(), want);
  EXPECT_EQ(ParseOwnHardware("").value(), OwnHardware{});
}

TEST(OwnHardware, FormatReadsBackEqual) {
  OwnHardware c;
  c.lifetime_years = 3.3333333333333335;
  c.electricity_usd_per_kwh = 0.1;
  c.pue = 1.0000000000000002;
  c.ops_share = 0;
  c.utilization_target = 0.123456789;
  c.server_overhead_usd_per_gpu = 1e-300;
  c.server_overhead_watts_per_gpu = 99999.5;
  const std::string text = FormatOwnHardware(c);
  auto back = ParseOwnHardware(text);
  ASSERT_TRUE(back.ok()) << back.error() << "\n" << text;
  EXPECT_EQ(back.value(), c);
  EXPECT_EQ(FormatOwnHardware(back.value()), text);
}

struct BadCase {
  const char* text;
  const char* key;      // the Error's field
  const char* message;  // a part of the message
};

TEST(OwnHardware, ErrorsNameTheKeyAndLine) {
  const BadCase cases[] = {
      {"pue = 1.2\nlifetime_years = 3\npue = 0.5\n", "pue",
       "line 3, key 'pue': already set on line 1"},
      {"# x\npue = 0.5\n", "pue", "line 2, key 'pue': 0.5 is out of range (1 to 5)"},
      {"lifetime_years = 0\n", "lifetime_years",
       "line 1, key 'lifetime_years': 0 is out of range (above 0"},
      {"\n\nutilization_target = 1.5\n", "utilization_target", "line 3, key 'utilization_target'"},
      {"ops_share = ten\n", "ops_share", "line 1, key 'ops_share': 'ten' is not a number"},
      {"ops_share =\n", "ops_share", "line 1, key 'ops_share': '' is not a number"},
      {"pue = inf\n", "pue", "line 1, key 'pue': 'inf' is not a number"},
      {"pue = 1.2x\n", "pue", "line 1, key 'pue'"},
      {"pue = 1.2\ngpu_price = 3\n", "gpu_price",
       "line 2: unknown key 'gpu_price' (known: lifetime_years"},
      {"pue 1.2\n", "", "line 1: expected 'key = value'"},
  };
  for (const BadCase& c : cases) {
    auto parsed = ParseOwnHardware(c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.failure().field, c.key) << c.text;
    EXPECT_NE(parsed.error().find(c.message), std::string::npos)
        << "got: " << parsed.error() << "\nwant: " << c.message;
  }
}

}  // namespace
}  // namespace gpufleet::advise
