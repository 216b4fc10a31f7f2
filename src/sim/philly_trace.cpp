#include "sim/philly_trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <tuple>

#include "sim/csv_table.h"

namespace gpufleet::sim {

using core::Error;
using core::Result;

namespace {

// Days from 1970-01-01 to the civil date (proleptic Gregorian), after H. Hinnant's algorithm.
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool ParseFixed(std::string_view text, size_t pos, size_t len, int64_t* out) {
  if (pos + len > text.size()) return false;
  int64_t v = 0;
  for (size_t i = pos; i < pos + len; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    v = v * 10 + (text[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

Result<int64_t> ParseTimestamp(std::string_view t) {
  int64_t y, mo, d, h, mi, s;
  const bool shape =
      t.size() == 19 && t[4] == '-' && t[7] == '-' && t[10] == ' ' && t[13] == ':' && t[16] == ':';
  if (!shape || !ParseFixed(t, 0, 4, &y) || !ParseFixed(t, 5, 2, &mo) || !ParseFixed(t, 8, 2, &d) ||
      !ParseFixed(t, 11, 2, &h) || !ParseFixed(t, 14, 2, &mi) || !ParseFixed(t, 17, 2, &s)) {
    return Error{"expected a time 'YYYY-MM-DD HH:MM:SS', found '" + std::string(t) + "'"};
  }
  static constexpr int kDaysInMonth[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1 || d > kDaysInMonth[mo - 1] || h > 23 || mi > 59 || s > 60) {
    return Error{"no such time '" + std::string(t) + "'"};
  }
  return DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
}

namespace {

const std::vector<std::string> kColumns = {"timestamp", "duration", "num_gpus", "cluster"};

Result<bool> CheckOptions(const PhillyReadOptions& options) {
  if (options.limit < 0 || options.window_start_s < 0 || options.window_end_s < 0) {
    return Error{"trace options: limit and time window must not be negative"};
  }
  return true;
}

Result<PhillyTrace> FromTable(Result<CsvTable> table, const std::string& path,
                              const PhillyReadOptions& options) {
  if (!table) return Error{table.error()};
  const CsvTable& t = table.value();
  struct Row {
    int64_t submit;
    PhillyJob job;
  };
  std::vector<Row> rows;
  rows.reserve(t.rows());
  PhillyTrace trace;
  std::set<std::tuple<int64_t, int64_t, int, std::string>> seen;
  for (size_t r = 0; r < t.rows(); ++r) {
    auto submit = ParseTimestamp(t.Field(r, "timestamp"));
    if (!submit) return Error{t.Where(r, "timestamp") + ": " + submit.error()};
    std::string_view dur_text = t.Field(r, "duration");
    double duration = 0;
    auto [ptr, ec] = std::from_chars(dur_text.data(), dur_text.data() + dur_text.size(), duration);
    if (dur_text.empty() || ec != std::errc() || ptr != dur_text.data() + dur_text.size() ||
        !std::isfinite(duration)) {
      return Error{t.Where(r, "duration") + ": expected a number of seconds, found '" +
                   std::string(dur_text) + "'"};
    }
    if (duration <= 0) {
      return Error{t.Where(r, "duration") + ": a job must run for a positive time, found '" +
                   std::string(dur_text) + "'"};
    }
    // Beyond this a run time is no run time, and its conversion to an integer (and the sums of
    // GPU-seconds made from it) would overflow.
    constexpr double kMaxDurationS = 10.0 * 366 * 86400;
    if (duration > kMaxDurationS) {
      return Error{t.Where(r, "duration") + ": longer than ten years, found '" +
                   std::string(dur_text) + "'"};
    }
    auto gpus = t.Int(r, "num_gpus");
    if (!gpus) return Error{gpus.error()};
    if (gpus.value() < 1 || gpus.value() > 1'000'000) {
      return Error{t.Where(r, "num_gpus") + ": must be a positive GPU count, found " +
                   std::to_string(gpus.value())};
    }
    PhillyJob job;
    job.line = t.line(r);
    job.duration_s = static_cast<int64_t>(std::ceil(duration));
    job.num_gpus = static_cast<int>(gpus.value());
    job.vc = std::string(t.Field(r, "cluster"));
    if (job.vc.empty()) return Error{t.Where(r, "cluster") + ": empty virtual cluster id"};
    if (!seen.emplace(submit.value(), job.duration_s, job.num_gpus, job.vc).second) {
      ++trace.duplicate_rows;
    }
    rows.push_back(Row{submit.value(), std::move(job)});
  }
  if (rows.empty()) return Error{path + ": no jobs"};
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.submit < b.submit; });
  const int64_t first = rows.front().submit;
  for (Row& row : rows) {
    const int64_t offset = row.submit - first;
    if (offset < options.window_start_s) continue;
    if (options.window_end_s > 0 && offset >= options.window_end_s) break;
    if (options.limit > 0 && static_cast<int64_t>(trace.jobs.size()) >= options.limit) break;
    row.job.submit_s = offset;
    trace.jobs.push_back(std::move(row.job));
  }
  if (trace.jobs.empty()) return Error{path + ": no jobs in the chosen window"};
  // Times are relative to the first kept job.
  const int64_t base = trace.jobs.front().submit_s;
  trace.first_submit_unix_s = first + base;
  for (size_t i = 0; i < trace.jobs.size(); ++i) {
    trace.jobs[i].id = static_cast<int64_t>(i);
    trace.jobs[i].submit_s -= base;
  }
  return trace;
}

}  // namespace

Result<PhillyTrace> ReadPhillyTrace(const std::string& path, const PhillyReadOptions& options) {
  if (auto ok = CheckOptions(options); !ok) return Error{ok.error()};
  return FromTable(CsvTable::ReadFile(path, kColumns), path, options);
}

Result<PhillyTrace> ParsePhillyTrace(std::string text, const std::string& path,
                                     const PhillyReadOptions& options) {
  if (auto ok = CheckOptions(options); !ok) return Error{ok.error()};
  return FromTable(CsvTable::Parse(std::move(text), path, kColumns), path, options);
}

}  // namespace gpufleet::sim
