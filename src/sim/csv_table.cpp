#include "sim/csv_table.h"

#include <charconv>
#include <fstream>
#include <sstream>

namespace gpufleet::sim {

using core::Error;
using core::Result;

namespace {

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = line.find(',', start);
    if (pos == std::string_view::npos) {
      out.push_back(line.substr(start));
      return out;
    }
    out.push_back(line.substr(start, pos - start));
    start = pos + 1;
  }
}

}  // namespace

Result<CsvTable> CsvTable::ReadFile(const std::string& path,
                                    const std::vector<std::string>& required) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open file"};
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Error{path + ": read error"};
  return Parse(std::move(buffer).str(), path, required);
}

Result<CsvTable> CsvTable::Parse(std::string text, std::string path,
                                 const std::vector<std::string>& required) {
  CsvTable table;
  table.path_ = std::move(path);
  table.text_ = std::move(text);
  std::string_view rest = table.text_;
  int line_no = 0;
  bool have_header = false;
  std::vector<std::string_view> header_fields;
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    auto fields = SplitFields(line);
    if (!have_header) {
      have_header = true;
      for (auto f : fields) table.header_.emplace_back(f);
      continue;
    }
    if (fields.size() != table.header_.size()) {
      return Error{table.path_ + ":" + std::to_string(line_no) + ": expected " +
                   std::to_string(table.header_.size()) + " fields as in the header, found " +
                   std::to_string(fields.size())};
    }
    table.rows_.push_back(Row{line_no, std::move(fields)});
  }
  if (!have_header) return Error{table.path_ + ": empty file, expected a CSV header line"};
  for (const auto& column : required) {
    if (table.FindColumn(column) < 0) {
      return Error{table.path_ + ":1: missing column '" + column + "'"};
    }
  }
  return table;
}

int CsvTable::FindColumn(std::string_view name) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::string_view CsvTable::Field(size_t row, std::string_view column) const {
  int c = FindColumn(column);
  return c < 0 ? std::string_view() : rows_[row].fields[c];
}

std::string CsvTable::Where(size_t row) const {
  return path_ + ":" + std::to_string(rows_[row].line);
}

std::string CsvTable::Where(size_t row, std::string_view column) const {
  return Where(row) + ": column '" + std::string(column) + "' (" +
         std::to_string(FindColumn(column) + 1) + ")";
}

Result<int64_t> CsvTable::Int(size_t row, std::string_view column) const {
  std::string_view text = Field(row, column);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return Error{Where(row, column) + ": expected an integer, found '" + std::string(text) + "'"};
  }
  return value;
}

Result<int64_t> CsvTable::NonNegativeInt(size_t row, std::string_view column) const {
  auto value = Int(row, column);
  if (value.ok() && value.value() < 0) {
    return Error{Where(row, column) + ": must not be negative, found " +
                 std::to_string(value.value())};
  }
  return value;
}

}  // namespace gpufleet::sim
