#include "sim/compare_html.h"

#include "core/text.h"

#include <cmath>
#include <cstdio>
#include <initializer_list>

#include "sim/svg_plot.h"

namespace gpufleet::sim {
namespace {

// Scripts, fetches, frames and forms are refused by the browser as well; only the page's own
// style sheet is allowed.
constexpr const char* kHead =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
    "style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";

// Dark text on white (contrast 17:1), table borders and headers in greys readable against it.
constexpr const char* kStyle =
    "<style>\n"
    ":root{color-scheme:light}\n"
    "body{font-family:system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif;color:#1a1a1a;"
    "background:#fff;max-width:75rem;margin:1.5rem auto;padding:0 1rem;line-height:1.45}\n"
    "h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem}\n"
    ".scroll{overflow-x:auto}\n"
    ".scroll:focus{outline:2px solid #0072B2}\n"
    "table{border-collapse:collapse;margin:.5rem 0;font-variant-numeric:tabular-nums}\n"
    "caption{text-align:left;font-weight:600;padding:.4rem 0}\n"
    "th,td{border:1px solid #8a8a8a;padding:.3rem .55rem}\n"
    "thead th{background:#e6e6e6;vertical-align:bottom}\n"
    "tbody th{text-align:left;white-space:nowrap}\n"
    "td{text-align:right;white-space:nowrap}\n"
    "figure{margin:1.5rem 0}\n"
    "figcaption{margin-top:.3rem;color:#333}\n"
    "svg{max-width:100%;height:auto}\n"
    "footer{margin-top:2rem;color:#333;font-size:.9rem}\n"
    "</style>\n";

std::string Fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string Percent(double fraction) {
  return std::isfinite(fraction) ? Fixed(100 * fraction, 1) + "%" : "n/a";
}

double Ratio(double a, double b) { return b != 0 ? a / b : NAN; }

struct Column {
  std::string header;  // plain text, escaped when written
};

struct Row {
  std::string name;                // the row's header cell
  std::vector<std::string> cells;  // plain text, escaped when written
};

std::string Table(const std::string& caption, const std::vector<Column>& columns,
                  const std::vector<Row>& rows) {
  // A keyboard user can focus the scrolling region to scroll a table wider than the window.
  std::string out = "<div class=\"scroll\" role=\"region\" tabindex=\"0\" aria-label=\"" +
                    core::HtmlEscape(caption) + "\">\n<table>\n<caption>" + core::HtmlEscape(caption) +
                    "</caption>\n<thead>\n<tr>";
  for (const Column& c : columns) out += "<th scope=\"col\">" + core::HtmlEscape(c.header) + "</th>";
  out += "</tr>\n</thead>\n<tbody>\n";
  for (const Row& r : rows) {
    out += "<tr><th scope=\"row\">" + core::HtmlEscape(r.name) + "</th>";
    for (const std::string& cell : r.cells) out += "<td>" + core::HtmlEscape(cell) + "</td>";
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n</div>\n";
  return out;
}

// `svg` comes from `svg_plot.h`, which escapes every text it draws.
std::string Figure(const std::string& svg, const std::string& caption) {
  return "<figure>\n" + svg + "<figcaption>" + core::HtmlEscape(caption) + "</figcaption>\n</figure>\n";
}

// One bar per name, each labelled with its value.
std::string BarFigure(const std::vector<std::string>& names, const std::vector<double>& values,
                      int decimals, const std::string& unit, const std::string& title,
                      const std::string& caption) {
  std::vector<Bar> bars;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    bars.push_back({names[i], values[i], Fixed(values[i], decimals)});
  }
  PlotSpec spec;
  spec.title = title;
  spec.x_label = unit;
  spec.width = 760;
  return Figure(RenderSvgBarChart(spec, bars), caption);
}

// A metric drawn as one bar chart: its title, unit, decimals, caption and value of an item.
template <typename T>
struct Metric {
  const char* title;
  const char* unit;
  int decimals;
  const char* caption;
  double (*value)(const T&);
};

template <typename T>
std::string BarFigures(const std::vector<T>& items, const std::vector<std::string>& names,
                       std::initializer_list<Metric<T>> metrics) {
  std::string out;
  for (const Metric<T>& m : metrics) {
    std::vector<double> values;
    for (const T& item : items) values.push_back(m.value(item));
    out += BarFigure(names, values, m.decimals, m.unit, m.title, m.caption);
  }
  return out;
}

std::string Page(const std::string& title, const std::string& body) {
  return std::string(kHead) + "<title>" + core::HtmlEscape(title) + "</title>\n" + kStyle +
         "</head>\n<body>\n<main>\n" + body +
         "</main>\n<footer>Written by <code>gpufleet sim compare</code>. Static page: no script, "
         "nothing loaded from elsewhere.</footer>\n</body>\n</html>\n";
}

}  // namespace


std::string CompareHtml(const CompareContext& context, const std::vector<PolicyRun>& runs) {
  const PolicyRun* base = BaselineRun(runs);
  const std::string base_name = base ? base->policy : "-";
  std::string body = "<h1>Queue policies compared on " + core::HtmlEscape(context.trace) + "</h1>\n";
  body += "<p>" + std::to_string(context.jobs) + " jobs on " + core::HtmlEscape(context.cluster) +
          ", placement " + core::HtmlEscape(context.placement) + ", " + std::to_string(runs.size()) +
          " queue policies. Times in hours, makespan in days; the ratios are to " +
          core::HtmlEscape(base_name) + "&#39;s (below 1: better).</p>\n";

  const std::vector<Column> columns = {{"policy"},
                                       {"jobs"},
                                       {"avg JCT (h)"},
                                       {"p50 JCT (h)"},
                                       {"p95 JCT (h)"},
                                       {"p99 JCT (h)"},
                                       {"avg queue (h)"},
                                       {"makespan (d)"},
                                       {"utilization"},
                                       {"preemptions"},
                                       {"unfinished"},
                                       {"Jain index (VC slowdown)"},
                                       {"avg JCT vs " + base_name},
                                       {"p99 JCT vs " + base_name},
                                       {"replay (s)"}};
  std::vector<Row> rows;
  for (const PolicyRun& r : runs) {
    const JctSummary& s = r.summary;
    rows.push_back({r.policy,
                    {std::to_string(s.jobs), Fixed(s.avg_jct_s / 3600, 2),
                     Fixed(s.p50_jct_s / 3600, 2), Fixed(s.p95_jct_s / 3600, 2),
                     Fixed(s.p99_jct_s / 3600, 2), Fixed(s.avg_queue_s / 3600, 2),
                     Fixed(static_cast<double>(r.result.makespan_s) / 86400, 1),
                     Percent(s.utilization), std::to_string(r.result.preemptions),
                     std::to_string(s.unfinished), Fixed(s.jain_index, 3),
                     Fixed(base ? Ratio(s.avg_jct_s, base->summary.avg_jct_s) : NAN, 3),
                     Fixed(base ? Ratio(s.p99_jct_s, base->summary.p99_jct_s) : NAN, 3),
                     Fixed(r.seconds, 2)}});
  }
  body += "<h2>Results</h2>\n";
  body += Table("One row per queue policy (the same figures as compare.csv)", columns, rows);

  std::vector<std::string> names;
  for (const PolicyRun& r : runs) names.push_back(r.policy);
  using M = Metric<PolicyRun>;
  body += "<h2>Metrics by policy</h2>\n";
  body += BarFigures<PolicyRun>(
      runs, names,
      {M{"Average JCT", "hours", 2,
         "Average job completion time per policy, in hours (lower is better).",
         [](const PolicyRun& r) { return r.summary.avg_jct_s / 3600; }},
       M{"p99 JCT", "hours", 2,
         "99th percentile of job completion time per policy, in hours (lower is better).",
         [](const PolicyRun& r) { return r.summary.p99_jct_s / 3600; }},
       M{"Average queueing delay", "hours", 2,
         "Average time from submit to first start per policy, in hours (lower is better).",
         [](const PolicyRun& r) { return r.summary.avg_queue_s / 3600; }},
       M{"GPU utilization", "% of GPU-time", 1,
         "Busy GPU-seconds over GPUs times makespan, per policy, in percent.",
         [](const PolicyRun& r) { return 100 * r.summary.utilization; }},
       M{"Makespan", "days", 1, "First submit to last finish per policy, in days.",
         [](const PolicyRun& r) { return static_cast<double>(r.result.makespan_s) / 86400; }},
       M{"Preemptions", "preemptions", 0,
         "Running jobs stopped for a higher-ranked one, per policy.",
         [](const PolicyRun& r) { return static_cast<double>(r.result.preemptions); }}});

  body += "<h2>Across jobs and over time</h2>\n";
  for (const auto& [file, svg] : ComparePlots(runs)) {
    const std::string what =
        file == "jct-cdf.svg"
            ? "Share of jobs finished within a given completion time (x: log10 of hours), one "
              "line per policy."
            : "Share of GPUs busy, daily mean, one line per policy.";
    body += Figure(svg, what +
                            " Lines differ in dash pattern as well as colour; the legend "
                            "names each. Also saved as " +
                            file + ".");
  }
  return Page("gpufleet sim compare: " + context.trace, body);
}

std::string CostSweepHtml(const CompareContext& context, const std::vector<CostPoint>& points) {
  std::string body =
      "<h1>Cost against job completion time on " + core::HtmlEscape(context.trace) + "</h1>\n";
  body += "<p>" + std::to_string(context.jobs) + " jobs, queue policy " +
          core::HtmlEscape(context.policy) + ", placement " + core::HtmlEscape(context.placement) +
          "; the static clusters are built of one node type (" + core::HtmlEscape(context.cluster) +
          "), the autoscaled fleets are named by their files. Times in hours, money in "
          "dollars.</p>\n";
  const std::vector<Column> columns = {
      {"point"},         {"nodes (static; peak)"}, {"cost ($)"},         {"GPU-h bought"},
      {"GPU-h used"},    {"used/bought"},          {"avg JCT (h)"},      {"p99 JCT (h)"},
      {"avg queue (h)"}, {"unfinished"},           {"nodes created"},    {"interruptions"},
      {"GPU-h lost"},    {"consolidations"},       {"GPU-h lost moves"}, {"planner calls"},
      {"replay (s)"}};
  std::vector<Row> rows;
  for (const CostPoint& p : points) {
    const JctSummary& s = p.summary;
    auto fleet = [&](double v, int decimals) { return p.autoscaled ? Fixed(v, decimals) : "-"; };
    rows.push_back(
        {p.label,
         {std::to_string(p.nodes), Fixed(p.cost_usd, 0), Fixed(p.gpu_h_bought, 0),
          Fixed(p.gpu_h_used, 0),
          Fixed(p.gpu_h_bought > 0 ? p.gpu_h_used / p.gpu_h_bought : 0.0, 3),
          Fixed(s.avg_jct_s / 3600, 2), Fixed(s.p99_jct_s / 3600, 2),
          Fixed(s.avg_queue_s / 3600, 3), std::to_string(s.unfinished),
          fleet(static_cast<double>(p.fleet.nodes_created), 0),
          fleet(static_cast<double>(p.fleet.interruptions), 0), fleet(p.fleet.gpu_s_lost / 3600, 0),
          fleet(static_cast<double>(p.fleet.consolidations), 0),
          fleet(p.fleet.gpu_s_lost_moves / 3600, 0),
          fleet(static_cast<double>(p.fleet.planner_calls), 0), Fixed(p.seconds, 2)}});
  }
  body += "<h2>Results</h2>\n";
  body += Table("One row per cluster or fleet (the same figures as cost.csv)", columns, rows);

  std::vector<std::string> names;
  for (const CostPoint& p : points) names.push_back(p.label);
  using M = Metric<CostPoint>;
  body += "<h2>Metrics by point</h2>\n";
  body += BarFigures<CostPoint>(
      points, names,
      {M{"Cost", "dollars", 0, "What each cluster or fleet cost, in dollars.",
         [](const CostPoint& p) { return p.cost_usd; }},
       M{"Average JCT", "hours", 2, "Average job completion time, in hours (lower is better).",
         [](const CostPoint& p) { return p.summary.avg_jct_s / 3600; }}});
  const std::string title = "Cost against average JCT (" + context.policy + ", " +
                            std::to_string(context.jobs) + " jobs)";
  body += "<h2>Cost against JCT</h2>\n";
  body += Figure(CostPlot(points, title),
                 "Each point's cost in thousands of dollars against its average JCT in hours; "
                 "the static clusters form one line, each point labelled with its node count. "
                 "Also saved as cost-jct.svg.");
  return Page("gpufleet sim compare (cost): " + context.trace, body);
}

}  // namespace gpufleet::sim
