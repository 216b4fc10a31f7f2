#include "sim/svg_plot.h"

#include <cmath>
#include <cstdio>

namespace gpufleet::sim {
namespace {

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A tick step of 1, 2 or 5 times a power of ten giving about `target` ticks.
double NiceStep(double span, int target) {
  const double raw = span / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

}  // namespace

std::string RenderSvgLineChart(const PlotSpec& spec, const std::vector<PlotSeries>& series,
                               const std::vector<PlotMarks>& marks_of) {
  static const PlotMarks kLine;
  const double left = 70, right = 200, top = 40, bottom = 55;
  const double pw = spec.width - left - right, ph = spec.height - top - bottom;
  const double xspan = spec.x_max > spec.x_min ? spec.x_max - spec.x_min : 1;
  const double yspan = spec.y_max > spec.y_min ? spec.y_max - spec.y_min : 1;
  auto X = [&](double x) { return left + (x - spec.x_min) / xspan * pw; };
  auto Y = [&](double y) { return top + ph - (y - spec.y_min) / yspan * ph; };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    std::to_string(spec.width) + "\" height=\"" + std::to_string(spec.height) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + Num(left + pw / 2) +
         "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" + Escape(spec.title) + "</text>\n";
  // Grid and ticks.
  const double xstep = NiceStep(xspan, 10), ystep = NiceStep(yspan, 8);
  for (double x = std::ceil(spec.x_min / xstep) * xstep; x <= spec.x_max + 1e-9; x += xstep) {
    svg += "<line x1=\"" + Num(X(x)) + "\" y1=\"" + Num(top) + "\" x2=\"" + Num(X(x)) + "\" y2=\"" +
           Num(top + ph) + "\" stroke=\"#e5e5e5\"/>\n";
    svg += "<text x=\"" + Num(X(x)) + "\" y=\"" + Num(top + ph + 16) +
           "\" text-anchor=\"middle\">" + Num(x).substr(0, Num(x).size() - 2) + "</text>\n";
  }
  for (double y = std::ceil(spec.y_min / ystep) * ystep; y <= spec.y_max + 1e-9; y += ystep) {
    svg += "<line x1=\"" + Num(left) + "\" y1=\"" + Num(Y(y)) + "\" x2=\"" + Num(left + pw) +
           "\" y2=\"" + Num(Y(y)) + "\" stroke=\"#e5e5e5\"/>\n";
    char label[32];
    std::snprintf(label, sizeof label, ystep < 1 ? "%.1f" : "%.0f", y);
    svg += "<text x=\"" + Num(left - 6) + "\" y=\"" + Num(Y(y) + 4) + "\" text-anchor=\"end\">" +
           label + "</text>\n";
  }
  svg += "<rect x=\"" + Num(left) + "\" y=\"" + Num(top) + "\" width=\"" + Num(pw) +
         "\" height=\"" + Num(ph) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  svg += "<text x=\"" + Num(left + pw / 2) + "\" y=\"" + Num(spec.height - 15.0) +
         "\" text-anchor=\"middle\">" + Escape(spec.x_label) + "</text>\n";
  svg += "<text transform=\"translate(18," + Num(top + ph / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + Escape(spec.y_label) + "</text>\n";
  // Series and legend.
  for (size_t s = 0; s < series.size(); ++s) {
    const char* color = kColors[s % (sizeof kColors / sizeof kColors[0])];
    const PlotMarks& style = s < marks_of.size() ? marks_of[s] : kLine;
    std::string points, marks;
    for (size_t i = 0; i < series[s].x.size() && i < series[s].y.size(); ++i) {
      const double x = series[s].x[i], y = series[s].y[i];
      if (std::isnan(x) || std::isnan(y) || x < spec.x_min || x > spec.x_max) continue;
      const double cx = X(x);
      const double cy = std::fmin(std::fmax(Y(y), top), top + ph);
      points += Num(cx) + "," + Num(cy) + " ";
      if (style.markers) {
        marks += "<circle cx=\"" + Num(cx) + "\" cy=\"" + Num(cy) + "\" r=\"4.5\" fill=\"" + color +
                 "\"/>\n";
      }
      if (i < style.labels.size() && !style.labels[i].empty()) {
        marks += "<text x=\"" + Num(cx + 7) + "\" y=\"" + Num(cy - 7) + "\" font-size=\"11\">" +
                 Escape(style.labels[i]) + "</text>\n";
      }
    }
    if (style.line) {
      svg += "<polyline fill=\"none\" stroke=\"" + std::string(color) +
             "\" stroke-width=\"1.8\" points=\"" + points + "\"/>\n";
    }
    svg += marks;
    const double ly = top + 14 + 20.0 * static_cast<double>(s);
    svg += "<line x1=\"" + Num(left + pw + 12) + "\" y1=\"" + Num(ly) + "\" x2=\"" +
           Num(left + pw + 36) + "\" y2=\"" + Num(ly) + "\" stroke=\"" + color +
           "\" stroke-width=\"2.5\"/>\n";
    svg += "<text x=\"" + Num(left + pw + 42) + "\" y=\"" + Num(ly + 4) + "\">" +
           Escape(series[s].name) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace gpufleet::sim
