#include "core/gpu_catalog.h"

#include <gtest/gtest.h>

#include <string>

namespace gpufleet::core {
namespace {

constexpr const char* kHeader = "name,memory_gib,relative_speed,hourly_price_usd\n";

// The error of parsing `text`, which must fail.
std::string ParseError(const std::string& text) {
  auto r = GpuCatalog::Parse(text);
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? std::string() : r.error();
}

TEST(GpuCatalogTest, BuiltinHasTheOpenbModels) {
  const GpuCatalog& c = GpuCatalog::Builtin();
  for (const char* name : {"G1", "G2", "G3", "T4", "P100", "V100M16", "V100M32", "A10"}) {
    auto id = c.Find(name);
    ASSERT_TRUE(id.has_value()) << name;
    EXPECT_EQ(c.model(*id).name, name);
    EXPECT_GT(c.model(*id).relative_speed, 0);
  }
  EXPECT_LE(c.size(), kMaxModels);
  EXPECT_EQ(&GpuCatalog::Builtin(), &c);  // one instance
}

TEST(GpuCatalogTest, AliasesFindTheCanonicalModel) {
  const GpuCatalog& c = GpuCatalog::Builtin();
  EXPECT_EQ(c.Find("Tesla V100-SXM2-16GB"), c.Find("V100M16"));
  EXPECT_EQ(c.Find("V100-SXM2-32GB"), c.Find("V100M32"));
  EXPECT_NE(c.Find("V100M16"), c.Find("V100M32"));
  EXPECT_EQ(c.model(*c.Find("NVIDIA A10")).name, "A10");
  EXPECT_FALSE(c.Find("t4").has_value());  // names are case-sensitive
  EXPECT_FALSE(c.Find("").has_value());
}

TEST(GpuCatalogTest, ParsesModelsCommentsAndCrlf) {
  auto r = GpuCatalog::Parse(std::string("# comment\r\n\r\n") + kHeader +
                             "X1|x-one,16,0.5,1.25\r\nY2 , 80 , 2 , 0\n");
  ASSERT_TRUE(r.ok()) << r.error();
  const GpuCatalog& c = r.value();
  ASSERT_EQ(c.size(), 2);
  EXPECT_EQ(c.model(0).name, "X1");
  EXPECT_EQ(c.model(0).aliases, (std::vector<std::string>{"X1", "x-one"}));
  EXPECT_DOUBLE_EQ(c.model(0).memory_gib, 16);
  EXPECT_DOUBLE_EQ(c.model(0).relative_speed, 0.5);
  EXPECT_DOUBLE_EQ(c.model(0).hourly_price_usd, 1.25);
  EXPECT_EQ(c.Find("x-one"), ModelId{0});
  EXPECT_EQ(c.model(1).name, "Y2");
  EXPECT_DOUBLE_EQ(c.model(1).memory_gib, 80);
}

TEST(GpuCatalogTest, ParseErrorsNameTheLine) {
  EXPECT_NE(ParseError("name,memory\nA,1\n").find("line 1"), std::string::npos);
  // Comments and blank lines count: the bad row is on line 4.
  const std::string prefix = std::string("# c\n") + kHeader + "\n";
  std::string e = ParseError(prefix + "A,16,1\n");
  EXPECT_NE(e.find("line 4"), std::string::npos) << e;
  EXPECT_NE(e.find("4 fields"), std::string::npos) << e;
  e = ParseError(prefix + "A,lots,1,1\n");
  EXPECT_NE(e.find("line 4, column memory_gib"), std::string::npos) << e;
  e = ParseError(prefix + "A,16,0,1\n");
  EXPECT_NE(e.find("line 4, column relative_speed"), std::string::npos) << e;
  e = ParseError(prefix + "A,16,1,-2\n");
  EXPECT_NE(e.find("line 4, column hourly_price_usd"), std::string::npos) << e;
  e = ParseError(prefix + "A,16,1,inf\n");
  EXPECT_NE(e.find("hourly_price_usd"), std::string::npos) << e;
  e = ParseError(prefix + "A,16,1,1\nB|A,16,1,1\n");
  EXPECT_NE(e.find("line 5"), std::string::npos) << e;
  EXPECT_NE(e.find("duplicate model name 'A'"), std::string::npos) << e;
  e = ParseError(prefix + "A||B,16,1,1\n");
  EXPECT_NE(e.find("line 4: empty model name"), std::string::npos) << e;
  EXPECT_NE(ParseError(kHeader).find("no models"), std::string::npos);
  EXPECT_FALSE(GpuCatalog::Parse("").ok());
}

TEST(GpuCatalogTest, AtMost64Models) {
  std::string text = kHeader;
  // Appended piecewise: `"M" + std::to_string(i)` trips g++ 12's false -Wrestrict (GCC bug 105329).
  for (int i = 0; i < kMaxModels; ++i) {
    text += 'M';
    text += std::to_string(i);
    text += ",1,1,1\n";
  }
  ASSERT_TRUE(GpuCatalog::Parse(text).ok());
  text += "Extra,1,1,1\n";
  const std::string e = ParseError(text);
  EXPECT_NE(e.find("line 66"), std::string::npos) << e;
}

TEST(GpuCatalogTest, ParseSpec) {
  const GpuCatalog& c = GpuCatalog::Builtin();
  auto any = c.ParseSpec("");
  ASSERT_TRUE(any.ok());
  EXPECT_TRUE(any.value().IsAll());
  EXPECT_TRUE(c.ParseSpec("  ").value().IsAll());

  auto v100 = c.ParseSpec(" V100M16 | Tesla V100-SXM2-32GB ");
  ASSERT_TRUE(v100.ok()) << v100.error();
  EXPECT_FALSE(v100.value().IsAll());
  for (int id = 0; id < c.size(); ++id) {
    const std::string& name = c.model(static_cast<ModelId>(id)).name;
    EXPECT_EQ(v100.value().Contains(static_cast<ModelId>(id)),
              name == "V100M16" || name == "V100M32")
        << name;
  }

  auto bad = c.ParseSpec("T4|V100");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("unknown GPU model 'V100'"), std::string::npos) << bad.error();
  EXPECT_FALSE(c.ParseSpec("T4|").ok());  // an empty name is not "any"
}

TEST(GpuCatalogTest, FormatSpecIsCanonicalAndRoundTrips) {
  const GpuCatalog& c = GpuCatalog::Builtin();
  EXPECT_EQ(c.FormatSpec(ModelSet::All()), "");
  EXPECT_EQ(c.FormatSpec(ModelSet()), "");
  // Catalog order and canonical names, whatever the input order and aliases.
  const std::string v100 = c.FormatSpec(c.ParseSpec("Tesla V100-SXM2-32GB|V100M16").value());
  EXPECT_EQ(v100, "V100M16|V100M32");
  for (const char* spec : {"T4", "G1|G2|G3", "P100|A10", "V100M16|V100M32"}) {
    const ModelSet set = c.ParseSpec(spec).value();
    EXPECT_EQ(c.ParseSpec(c.FormatSpec(set)).value(), set) << spec;
  }
}

TEST(ModelSetTest, Basics) {
  ModelSet s;
  EXPECT_FALSE(s.Contains(0));
  s.Add(3);
  s.Add(63);
  EXPECT_TRUE(s.Contains(3));
  EXPECT_TRUE(s.Contains(63));
  EXPECT_FALSE(s.Contains(4));
  EXPECT_EQ(s, [] {
    ModelSet t = ModelSet::Of(63);
    t.Add(3);
    return t;
  }());
  EXPECT_TRUE(ModelSet::All().Contains(63));
  EXPECT_FALSE(s.IsAll());
}

}  // namespace
}  // namespace gpufleet::core
