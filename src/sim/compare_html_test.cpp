#include "sim/compare_html.h"

#include <gtest/gtest.h>

#include <string>

#include "core/text.h"
#include "testing/builders.h"

namespace gpufleet::sim {
namespace {

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// Two real replays on one 8-GPU node: a long 8-GPU job and a short 1-GPU one, arriving together
// (FIFO: average JCT 105 s; SJF: 60 s).
std::vector<PolicyRun> TwoRuns() {
  ClusterSpec cluster;
  cluster.name = "test";
  cluster.nodes.push_back(test::Node("n0").Gpus(8, "V100M32"));
  const std::vector<TraceJob> jobs = {{0, 0, 100, 8, "a"}, {1, 0, 10, 1, "b"}};
  auto runs = ComparePolicies(jobs, cluster, {"fifo", "sjf-oracle"}, "bestfit", TimeSimConfig{}, 1);
  EXPECT_TRUE(runs.ok());
  return std::move(runs).value();
}

CompareContext Context() {
  CompareContext context;
  context.trace = "csv:jobs.csv";
  context.cluster = "test";
  context.placement = "bestfit";
  context.jobs = 2;
  return context;
}

// What the page must never hold, whatever the data: script, handlers, anything fetched.
void ExpectSelfContained(const std::string& html) {
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(Count(html, "<html"), 1);
  EXPECT_EQ(html.substr(html.size() - 8), "</html>\n");
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("javascript:"), std::string::npos);
  // Quoted attributes only: data may hold "src=x" as text, escaped, which is harmless.
  for (const char* attribute : {"src=\"", "href=\"", "url(", "@import", "<link", "<img", "<iframe",
                                "<object", "<embed", "onload=\"", "onerror=\"", "onclick=\""}) {
    EXPECT_EQ(html.find(attribute), std::string::npos) << attribute;
  }
  EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  EXPECT_EQ(Count(html, "<svg"), Count(html, "</svg>"));
  EXPECT_EQ(Count(html, "<figure>"), Count(html, "</figure>"));
  EXPECT_EQ(Count(html, "<tr>"), Count(html, "</tr>"));
}

TEST(CompareHtmlTest, EscapesEveryMarkupCharacter) {
  EXPECT_EQ(core::HtmlEscape("<a href=\"x\">O'Neil & co</a>"),
            "&lt;a href=&quot;x&quot;&gt;O&#39;Neil &amp; co&lt;/a&gt;");
  EXPECT_EQ(core::HtmlEscape("plain-name_1.csv"), "plain-name_1.csv");
}

TEST(CompareHtmlTest, TableHasARowPerPolicyWithHeadersAndValues) {
  const std::vector<PolicyRun> runs = TwoRuns();
  const std::string html = CompareHtml(Context(), runs);
  ExpectSelfContained(html);
  EXPECT_EQ(Count(html, "<table>"), 1);
  EXPECT_NE(html.find("<caption>One row per queue policy"), std::string::npos);
  EXPECT_EQ(Count(html, "<th scope=\"row\">"), 2);
  EXPECT_EQ(Count(html, "<th scope=\"col\">"), 15);
  EXPECT_NE(html.find("<tr><th scope=\"row\">fifo</th><td>2</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("<tr><th scope=\"row\">sjf-oracle</th><td>2</td>"), std::string::npos);
  // FIFO's average JCT is 105 s = 0.03 h; SJF's ratio to it is 60 / 105.
  EXPECT_NE(html.find("<td>0.03</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>0.571</td>"), std::string::npos);
  EXPECT_NE(html.find("avg JCT vs fifo"), std::string::npos);
  EXPECT_NE(html.find("2 jobs on test, placement bestfit"), std::string::npos);
}

TEST(CompareHtmlTest, PlotsAreInlineSvgWithTextLabels) {
  const std::string html = CompareHtml(Context(), TwoRuns());
  // Six bar charts (one per metric) and the two line plots `ComparePlots` saves.
  EXPECT_EQ(Count(html, "<svg xmlns=\"http://www.w3.org/2000/svg\""), 8);
  EXPECT_EQ(Count(html, "<figcaption>"), 8);
  EXPECT_NE(html.find("<title>JCT CDF per queue policy</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>Average JCT</title>"), std::string::npos);
  EXPECT_NE(html.find("stroke-dasharray="), std::string::npos);  // lines differ beyond colour
  // Each bar is named, and carries its value as text: SJF's average JCT, 60 s, is 0.02 h.
  EXPECT_GE(Count(html, "text-anchor=\"end\">sjf-oracle</text>"), 6);
  EXPECT_NE(html.find(">0.02</text>"), std::string::npos);
}

TEST(CompareHtmlTest, HostileNamesAreEscapedEverywhere) {
  std::vector<PolicyRun> runs = TwoRuns();
  const std::string evil = "<script>alert(1)</script>\" onload=\"alert(2)";
  runs[0].policy = evil;
  runs[1].policy = "<img src=x onerror=alert(3)>";
  CompareContext context = Context();
  context.trace = "csv:</title><script>alert(4)</script>.csv";
  context.cluster = "a&b";
  context.placement = "'quoted'";
  const std::string html = CompareHtml(context, runs);
  ExpectSelfContained(html);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(Count(html, "</title>"), 1 + 8);  // the page's and each SVG's, none from the trace
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;&quot; onload=&quot;alert(2)"),
            std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(3)&gt;"), std::string::npos);
  EXPECT_NE(html.find("csv:&lt;/title&gt;&lt;script&gt;alert(4)&lt;/script&gt;.csv"),
            std::string::npos);
  EXPECT_NE(html.find("a&amp;b"), std::string::npos);
  EXPECT_NE(html.find("&#39;quoted&#39;"), std::string::npos);
}

TEST(CompareHtmlTest, NoRunsStillMakesAPage) {
  const std::string html = CompareHtml(Context(), {});
  ExpectSelfContained(html);
  EXPECT_EQ(Count(html, "<th scope=\"row\">"), 0);
}

TEST(CompareHtmlTest, CostSweepPageHasARowPerPointAndThePlot) {
  TimeSimResult r;
  r.jobs = {{1, 0, 100, 1100, 8, 1000, "a"}};
  r.makespan_s = 1100;
  r.busy_gpu_s = 8000;
  r.fleet.enabled = true;
  r.fleet.cost_usd = 12.5;
  r.fleet.gpu_s_bought = 8 * 3600;
  r.fleet.peak_nodes = 1;
  const std::vector<CostPoint> points = {StaticCostPoint("static-4", 4, 8, 10.0, r, 0.1),
                                         FleetCostPoint("<fleet>", r, 0.1)};
  CompareContext context = Context();
  context.policy = "priority";
  context.cluster = "8 x V100M32 at $10.00/h";
  const std::string html = CostSweepHtml(context, points);
  ExpectSelfContained(html);
  EXPECT_EQ(Count(html, "<th scope=\"row\">"), 2);
  EXPECT_NE(html.find("<tr><th scope=\"row\">&lt;fleet&gt;</th><td>1</td><td>12</td>"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("<fleet>"), std::string::npos);
  EXPECT_NE(html.find("<title>Cost against average JCT (priority, 2 jobs)</title>"),
            std::string::npos);
  EXPECT_EQ(Count(html, "<svg"), 3);
}

}  // namespace
}  // namespace gpufleet::sim
