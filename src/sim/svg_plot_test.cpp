#include "sim/svg_plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace gpufleet::sim {
namespace {

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// Initialized, not assigned: assigning a one-letter literal trips g++ 12's false -Wrestrict
// (GCC bug 105651).
PlotSpec Spec() {
  return PlotSpec{.title = "alloc <vs> demand & more",
                  .x_label = "x",
                  .y_label = "y",
                  .x_max = 100,
                  .y_max = 100};
}

TEST(SvgPlotTest, WellFormedWithEverySeriesNamed) {
  const std::vector<PlotSeries> series = {{"bestfit", {0, 50, 100}, {0, 40, 90}},
                                          {"fgd", {0, 50, 100}, {0, 45, 95}}};
  const std::string svg = RenderSvgLineChart(Spec(), series);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(Count(svg, "<svg"), 1);
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));
  EXPECT_EQ(Count(svg, "<polyline"), 2);
  EXPECT_EQ(Count(svg, "<"), Count(svg, ">"));  // no stray angle brackets in text
  EXPECT_NE(svg.find(">bestfit</text>"), std::string::npos);
  EXPECT_NE(svg.find(">fgd</text>"), std::string::npos);
  EXPECT_EQ(Count(svg, "\""), 2 * (Count(svg, "=\"")));  // every attribute value is quoted
}

TEST(SvgPlotTest, EscapesMarkupInText) {
  const std::string svg = RenderSvgLineChart(Spec(), {{"a<b & c", {0, 1}, {1, 2}}});
  EXPECT_NE(svg.find("alloc &lt;vs&gt; demand &amp; more"), std::string::npos);
  EXPECT_NE(svg.find(">a&lt;b &amp; c</text>"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  EXPECT_EQ(svg.find("& c"), std::string::npos);
}

TEST(SvgPlotTest, SkipsNanPoints) {
  const double nan = std::nan("");
  const std::string svg =
      RenderSvgLineChart(Spec(), {{"s", {0, 10, 20, 30, nan}, {5, nan, 15, 25, 35}}});
  const size_t start = svg.find("points=\"");
  ASSERT_NE(start, std::string::npos);
  const std::string points = svg.substr(start + 8, svg.find('"', start + 8) - start - 8);
  EXPECT_EQ(Count(points, ","), 3) << points;  // x = 0, 20, 30
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("NaN"), std::string::npos);
}

}  // namespace
}  // namespace gpufleet::sim
