#include "agent/top_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpufleet::agent {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;
// Eight heights of a sparkline cell, lowest first (UTF-8; one display column each).
constexpr const char* kSparks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                   "\u2585", "\u2586", "\u2587", "\u2588"};

// A line under construction that knows its width in display columns.
class Line {
 public:
  explicit Line(int width) : width_(width) {}
  // Appends printable ASCII, replacing anything else, and cuts at the width.
  Line& Text(const std::string& text) {
    for (char c : text) {
      if (columns_ >= width_) break;
      const auto u = static_cast<unsigned char>(c);
      bytes_ += (u >= 0x20 && u < 0x7f) ? c : '?';
      ++columns_;
    }
    return *this;
  }
  Line& Glyph(const char* utf8) {
    if (columns_ < width_) {
      bytes_ += utf8;
      ++columns_;
    }
    return *this;
  }
  Line& PadTo(int column) {
    while (columns_ < std::min(column, width_)) {
      bytes_ += ' ';
      ++columns_;
    }
    return *this;
  }
  int columns() const { return columns_; }
  int left() const { return width_ - columns_; }
  std::string str() const { return bytes_; }

 private:
  int width_;
  int columns_ = 0;
  std::string bytes_;
};

std::string Format(const char* format, double a, double b = 0) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, a, b);
  return buffer;
}

std::string Bar(double fraction, int width) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(std::lround(fraction * width));
  std::string bar(static_cast<std::size_t>(width) + 2, ' ');
  bar.front() = '[';
  bar.back() = ']';
  std::fill_n(bar.begin() + 1, filled, '|');
  return bar;
}

template <typename T>
std::string OrDash(const gpu::Reading<T>& r, const char* format, double scale = 1.0) {
  if (!r.has_value()) return "-";
  return Format(format, static_cast<double>(r.value) * scale);
}

bool ProcessLess(ProcessSort sort, const std::pair<int, const gpu::GpuProcess*>& a,
                 const std::pair<int, const gpu::GpuProcess*>& b) {
  const gpu::GpuProcess& x = *a.second;
  const gpu::GpuProcess& y = *b.second;
  switch (sort) {
    case ProcessSort::kGpuMemory:
      if (x.used_memory_bytes.value != y.used_memory_bytes.value) {
        return x.used_memory_bytes.value > y.used_memory_bytes.value;
      }
      break;
    case ProcessSort::kSmUtil:
      if (x.sm_util_pct.value != y.sm_util_pct.value)
        return x.sm_util_pct.value > y.sm_util_pct.value;
      break;
    case ProcessSort::kUser:
      if (x.user != y.user) return x.user < y.user;
      break;
    case ProcessSort::kPid:
      break;
  }
  if (x.pid != y.pid) return x.pid < y.pid;
  return a.first < b.first;
}

}  // namespace

bool SortForKey(char key, ProcessSort& sort) {
  switch (key) {
    case 'm':
      sort = ProcessSort::kGpuMemory;
      return true;
    case 's':
      sort = ProcessSort::kSmUtil;
      return true;
    case 'p':
      sort = ProcessSort::kPid;
      return true;
    case 'u':
      sort = ProcessSort::kUser;
      return true;
    default:
      return false;
  }
}

const char* SortName(ProcessSort sort) {
  switch (sort) {
    case ProcessSort::kGpuMemory:
      return "GPU memory";
    case ProcessSort::kSmUtil:
      return "SM%";
    case ProcessSort::kPid:
      return "pid";
    case ProcessSort::kUser:
      return "user";
  }
  return "";
}

std::vector<std::string> RenderTop(const TopModel& model, int width, int height) {
  width = std::max(width, 40);
  std::vector<std::string> lines;
  const bool simulated = model.host.backend == "simulated";

  Line head(width);
  head.Text("gpufleet top  " + model.host.hostname + "  ")
      .Text(simulated ? "SIMULATED GPUs" : "NVML driver " + model.host.driver_version)
      .Text("  " + std::to_string(model.samples.size()) + " GPUs");
  if (!model.clock_text.empty()) head.Text("  " + model.clock_text);
  lines.push_back(head.str());
  if (!model.host.notice.empty()) lines.push_back(Line(width).Text("! " + model.host.notice).str());
  if (model.samples.empty()) lines.push_back(Line(width).Text("no GPUs").str());

  const int spark_width = std::clamp(width / 6, 0, 30);
  const int fixed = 10 + 6 + 8 + 18 + (spark_width > 0 ? spark_width + 2 : 0);
  const int bar_width = std::max(5, (width - fixed) / 2 - 2);
  for (std::size_t i = 0; i < model.samples.size(); ++i) {
    const gpu::GpuSample& s = model.samples[i];
    Line first(width);
    first.Text(Format("%2.0f  ", s.index)).Text(s.name).Text("  ").Text(s.pci_bus_id).Text("  ");
    if (s.lost) {
      first.Text("LOST");
    } else {
      first.Text(OrDash(s.temperature_c, "%.0fC")).Text("  ");
      first.Text(OrDash(s.power_mw, "%.0fW", 1e-3))
          .Text(" / ")
          .Text(OrDash(s.power_limit_mw, "%.0fW", 1e-3));
      first.Text("  SM ").Text(OrDash(s.sm_clock_mhz, "%.0fMHz"));
    }
    first.Text("  ");
    if (s.health.healthy) {
      first.Text("OK");
    } else {
      std::string why;
      for (const std::string& reason : s.health.reasons) why += (why.empty() ? "" : "; ") + reason;
      first.Text("UNHEALTHY: " + why);
    }
    lines.push_back(first.str());

    Line second(width);
    second.Text("    UTIL ");
    const double util = s.gpu_util_pct.has_value() ? s.gpu_util_pct.value : 0;
    second.Text(Bar(util / 100.0, bar_width))
        .Text(s.gpu_util_pct.has_value() ? Format(" %3.0f%%", util) : "  n/a");
    second.Text("   MEM ");
    const bool mem =
        s.fb_used_bytes.has_value() && s.fb_total_bytes.has_value() && s.fb_total_bytes.value > 0;
    const double used = mem ? static_cast<double>(s.fb_used_bytes.value) : 0;
    const double total = mem ? static_cast<double>(s.fb_total_bytes.value) : 1;
    second.Text(Bar(used / total, bar_width));
    second.Text(mem ? Format(" %5.1f/%.1f GiB", used / kGiB, total / kGiB) : " n/a");
    if (spark_width > 0 && i < model.util_history.size() && !model.util_history[i].empty()) {
      second.Text("  ");
      const std::vector<float>& history = model.util_history[i];
      const std::size_t n =
          std::min<std::size_t>(history.size(), static_cast<std::size_t>(spark_width));
      for (std::size_t k = history.size() - n; k < history.size(); ++k) {
        const float v = history[k];
        if (std::isnan(v)) {
          second.Text(" ");
          continue;
        }
        const int level = std::clamp(static_cast<int>(v / 100.0f * 7.0f + 0.5f), 0, 7);
        second.Glyph(kSparks[level]);
      }
    }
    lines.push_back(second.str());
  }

  // Processes, across all GPUs.
  std::vector<std::pair<int, const gpu::GpuProcess*>> processes;
  bool any_supported = false;
  for (const gpu::GpuSample& s : model.samples) {
    if (!s.processes.has_value()) continue;
    any_supported = true;
    for (const gpu::GpuProcess& p : s.processes.value) processes.emplace_back(s.index, &p);
  }
  std::sort(processes.begin(), processes.end(),
            [&](const auto& a, const auto& b) { return ProcessLess(model.sort, a, b); });
  lines.push_back("");
  lines.push_back(Line(width)
                      .Text(std::string("PROCESSES  sorted by ") + SortName(model.sort) +
                            "  (keys: m memory, s SM%, p pid, u user, q quit)")
                      .str());
  Line columns(width);
  columns.Text("GPU  PID      USER          GPU-MEM   SM%  JOB           COMMAND");
  lines.push_back(columns.str());
  if (!any_supported && !model.samples.empty()) {
    lines.push_back(
        Line(width).Text("  (the driver does not report processes on these GPUs)").str());
  } else if (processes.empty()) {
    lines.push_back(Line(width).Text("  no GPU processes").str());
  }
  for (std::size_t k = 0; k < processes.size(); ++k) {
    if (height > 0 && static_cast<int>(lines.size()) >= height - 1 && k + 1 < processes.size()) {
      lines.push_back(Line(width)
                          .Text("  ... " + std::to_string(processes.size() - k) +
                                " more processes (enlarge the terminal)")
                          .str());
      break;
    }
    const gpu::GpuProcess& p = *processes[k].second;
    char text[96];
    std::snprintf(text, sizeof text, "%3d  %-7u  ", processes[k].first, p.pid);
    Line line(width);
    line.Text(text);
    // Fixed-width columns: each value is written, then the line is padded to the column's end.
    auto column = [&line](const std::string& value, int size, bool right_align) {
      const int begin = line.columns();
      const std::string cut = value.substr(0, static_cast<std::size_t>(size));
      if (right_align) line.PadTo(begin + size - static_cast<int>(cut.size()));
      line.Text(cut).PadTo(begin + size).Text("  ");
    };
    column(p.user.empty() ? "?" : p.user, 10, false);
    column(p.used_memory_bytes.has_value()
               ? Format("%.0fMiB", static_cast<double>(p.used_memory_bytes.value) / kMiB)
               : "n/a",
           9, true);
    column(p.sm_util_pct.has_value() ? Format("%.0f", p.sm_util_pct.value) : "-", 4, true);
    column(p.job_id.empty() ? "-" : p.job_id, 12, false);
    line.Text(p.command);
    lines.push_back(line.str());
  }
  if (height > 0 && static_cast<int>(lines.size()) > height)
    lines.resize(static_cast<std::size_t>(height));
  return lines;
}

}  // namespace gpufleet::agent
