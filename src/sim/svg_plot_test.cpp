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

TEST(SvgPlotTest, DistinctLinesDifferInDashAsWellAsColour) {
  const std::string svg = RenderSvgLineChart(Spec(), {{"a", {0, 1}, {1, 2}}, {"b", {0, 1}, {2, 3}}},
                                             {DistinctLine(0), DistinctLine(1)});
  EXPECT_EQ(DistinctLine(0).dash, "");  // the first is solid
  EXPECT_NE(DistinctLine(1).dash, DistinctLine(2).dash);
  EXPECT_NE(DistinctLine(1).color, DistinctLine(2).color);
  // The line and its legend swatch both carry the pattern.
  EXPECT_EQ(Count(svg, "stroke-dasharray=\"" + DistinctLine(1).dash + "\""), 2);
  EXPECT_NE(svg.find("<title>alloc &lt;vs&gt; demand &amp; more</title>"), std::string::npos);
  EXPECT_NE(svg.find("viewBox=\"0 0 960 600\""), std::string::npos);
}

TEST(SvgPlotTest, BarChartNamesEveryBarAndWritesItsValue) {
  PlotSpec spec = Spec();
  spec.x_label = "hours";
  const double nan = std::nan("");
  const std::string svg =
      RenderSvgBarChart(spec, {{"fifo", 4, "4.00"}, {"a<b", 2, "2.00"}, {"none", nan, "n/a"}});
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));
  EXPECT_EQ(Count(svg, "<"), Count(svg, ">"));
  EXPECT_EQ(Count(svg, "\""), 2 * (Count(svg, "=\"")));
  EXPECT_EQ(Count(svg, "<rect x="), 3);
  EXPECT_NE(svg.find(">fifo</text>"), std::string::npos);
  EXPECT_NE(svg.find(">a&lt;b</text>"), std::string::npos);
  EXPECT_NE(svg.find(">4.00</text>"), std::string::npos);
  EXPECT_NE(svg.find(">n/a</text>"), std::string::npos);
  EXPECT_NE(svg.find(">hours</text>"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  // The longest bar is twice the next one.
  auto width_of = [&](const std::string& after) {
    const size_t at = svg.find("width=\"", svg.find(after));
    return std::stod(svg.substr(at + 7));
  };
  EXPECT_NEAR(width_of(">fifo</text>"), 2 * width_of(">a&lt;b</text>"), 0.2);
  EXPECT_EQ(width_of(">none</text>"), 0);
}

}  // namespace
}  // namespace gpufleet::sim
