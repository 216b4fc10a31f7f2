#pragma once
// Dependency-free SVG charts for the simulator's reports: a line (or scatter) chart (allocation
// vs. arrived demand, JCT CDFs) and a horizontal bar chart (one metric per policy). Pure: each
// returns the document as a string, every text escaped, ready to be saved or inlined in HTML.

#include <cstddef>
#include <string>
#include <vector>

namespace gpufleet::sim {

struct PlotSeries {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;  // NaN points are skipped
};

// How one series is drawn; without one, a line without dots or labels.
struct PlotMarks {
  bool line = true;                 // join the points
  bool markers = false;             // a dot at each point
  std::vector<std::string> labels;  // optional: a text beside each point (by index)
  std::string color;                // a CSS colour; empty: the default palette's, by series
  std::string dash;                 // an SVG stroke-dasharray ("6 3"); empty: solid
};

// Series `index`'s marks in a palette where every colour has at least 3:1 contrast on white
// and every series of the first ten has its own dash pattern too, so that lines are told apart
// without colour (the legend shows the pattern beside the name).
PlotMarks DistinctLine(size_t index);

struct PlotSpec {
  std::string title;
  std::string x_label;
  std::string y_label;
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  int width = 960, height = 600;
};

// `marks[s]`, when present, says how series `s` is drawn.
std::string RenderSvgLineChart(const PlotSpec& spec, const std::vector<PlotSeries>& series,
                               const std::vector<PlotMarks>& marks = {});

struct Bar {
  std::string label;       // drawn left of the bar
  double value = 0;        // NaN, infinite or negative: no bar
  std::string value_text;  // drawn after the bar, so no value is read from a length alone
};

// One horizontal bar per entry, top to bottom in the order given, scaled from 0 to the largest
// finite value; `spec.title` and `spec.x_label` (the unit) are used, the height follows the bars.
std::string RenderSvgBarChart(const PlotSpec& spec, const std::vector<Bar>& bars);

}  // namespace gpufleet::sim
