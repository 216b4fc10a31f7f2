#pragma once
// A dependency-free SVG line chart, for the simulator's reports (allocation vs. arrived demand,
// JCT CDFs). Pure: it returns the document as a string.

#include <string>
#include <vector>

namespace gpufleet::sim {

struct PlotSeries {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;  // NaN points are skipped
};

struct PlotSpec {
  std::string title;
  std::string x_label;
  std::string y_label;
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  int width = 960, height = 600;
};

std::string RenderSvgLineChart(const PlotSpec& spec, const std::vector<PlotSeries>& series);

}  // namespace gpufleet::sim
