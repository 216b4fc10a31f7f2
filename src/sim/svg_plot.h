#pragma once
// A dependency-free SVG line (or scatter) chart, for the simulator's reports (allocation vs.
// arrived demand, JCT CDFs). Pure: it returns the document as a string.

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
};

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

}  // namespace gpufleet::sim
