#include "sim/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/text.h"

namespace gpufleet::sim {
namespace {

std::string Escape(const std::string& text) { return core::HtmlEscape(text); }

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
// Okabe-Ito and Tol hues darkened where needed: each has 3.4:1 to 12:1 contrast on white.
constexpr const char* kDistinctColors[] = {"#0072B2", "#D55E00", "#117733", "#882255", "#332288",
                                           "#996600", "#AA4499", "#444444", "#006D77", "#C2185B"};
constexpr const char* kDashes[] = {"",    "9 4",          "2 3", "9 3 2 3",  "14 4",
                                   "4 4", "14 3 2 3 2 3", "2 7", "18 4 5 4", "6 2"};

// The root element: a viewBox so that it scales when inlined, and the title as its accessible
// name.
std::string SvgOpen(int width, int height, const std::string& title) {
  const std::string w = std::to_string(width), h = std::to_string(height);
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + h +
         "\" viewBox=\"0 0 " + w + " " + h +
         "\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\">\n<title>" + Escape(title) +
         "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

}  // namespace

PlotMarks DistinctLine(size_t index) {
  constexpr size_t kColorCount = sizeof kDistinctColors / sizeof kDistinctColors[0];
  constexpr size_t kDashCount = sizeof kDashes / sizeof kDashes[0];
  PlotMarks marks;
  marks.color = kDistinctColors[index % kColorCount];
  marks.dash = kDashes[index % kDashCount];
  return marks;
}

std::string RenderSvgLineChart(const PlotSpec& spec, const std::vector<PlotSeries>& series,
                               const std::vector<PlotMarks>& marks_of) {
  static const PlotMarks kLine;
  const double left = 70, right = 200, top = 40, bottom = 55;
  const double pw = spec.width - left - right, ph = spec.height - top - bottom;
  const double xspan = spec.x_max > spec.x_min ? spec.x_max - spec.x_min : 1;
  const double yspan = spec.y_max > spec.y_min ? spec.y_max - spec.y_min : 1;
  auto X = [&](double x) { return left + (x - spec.x_min) / xspan * pw; };
  auto Y = [&](double y) { return top + ph - (y - spec.y_min) / yspan * ph; };

  std::string svg = SvgOpen(spec.width, spec.height, spec.title);
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
    const PlotMarks& style = s < marks_of.size() ? marks_of[s] : kLine;
    const std::string color = style.color.empty()
                                  ? std::string(kColors[s % (sizeof kColors / sizeof kColors[0])])
                                  : Escape(style.color);
    const std::string dash =
        style.dash.empty() ? "" : " stroke-dasharray=\"" + Escape(style.dash) + "\"";
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
      svg += "<polyline fill=\"none\" stroke=\"" + color + "\"" + dash +
             " stroke-width=\"1.8\" points=\"" + points + "\"/>\n";
    }
    svg += marks;
    const double ly = top + 14 + 20.0 * static_cast<double>(s);
    svg += "<line x1=\"" + Num(left + pw + 12) + "\" y1=\"" + Num(ly) + "\" x2=\"" +
           Num(left + pw + 48) + "\" y2=\"" + Num(ly) + "\" stroke=\"" + color + "\"" +
           (style.line ? dash : "") + " stroke-width=\"2.5\"/>\n";
    svg += "<text x=\"" + Num(left + pw + 54) + "\" y=\"" + Num(ly + 4) + "\">" +
           Escape(series[s].name) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

std::string RenderSvgBarChart(const PlotSpec& spec, const std::vector<Bar>& bars) {
  // Labels and values are measured at about 7 px a character (12 px sans-serif).
  size_t label_chars = 4, value_chars = 4;
  double max = 0;
  for (const Bar& b : bars) {
    label_chars = std::max(label_chars, b.label.size());
    value_chars = std::max(value_chars, b.value_text.size());
    if (std::isfinite(b.value)) max = std::max(max, b.value);
  }
  const double left = 12 + 7.0 * static_cast<double>(std::min<size_t>(label_chars, 32));
  const double right = 16 + 7.0 * static_cast<double>(std::min<size_t>(value_chars, 24));
  const double top = 40, row = 24, bar = 16, bottom = 40;
  const int height = static_cast<int>(top + row * static_cast<double>(bars.size()) + bottom);
  const double pw = std::max(120.0, spec.width - left - right);
  const int width = static_cast<int>(left + pw + right);
  const double scale = max > 0 ? pw / max : 0;

  std::string svg = SvgOpen(width, height, spec.title);
  svg +=
      "<text x=\"" + Num(left) + "\" y=\"22\" font-size=\"15\">" + Escape(spec.title) + "</text>\n";
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = top + row * static_cast<double>(i);
    const double w = std::isfinite(b.value) && b.value > 0 ? b.value * scale : 0;
    svg += "<text x=\"" + Num(left - 8) + "\" y=\"" + Num(y + bar - 4) + "\" text-anchor=\"end\">" +
           Escape(b.label) + "</text>\n";
    svg += "<rect x=\"" + Num(left) + "\" y=\"" + Num(y) + "\" width=\"" + Num(w) + "\" height=\"" +
           Num(bar) + "\" fill=\"" + kDistinctColors[0] + "\"/>\n";
    svg += "<text x=\"" + Num(left + w + 6) + "\" y=\"" + Num(y + bar - 4) + "\">" +
           Escape(b.value_text) + "</text>\n";
  }
  const double axis_y = top + row * static_cast<double>(bars.size());
  svg += "<line x1=\"" + Num(left) + "\" y1=\"" + Num(top - 4) + "\" x2=\"" + Num(left) +
         "\" y2=\"" + Num(axis_y) + "\" stroke=\"#333\"/>\n";
  svg += "<text x=\"" + Num(left) + "\" y=\"" + Num(axis_y + 22) + "\">" + Escape(spec.x_label) +
         "</text>\n";
  svg += "</svg>\n";
  return svg;
}

}  // namespace gpufleet::sim
