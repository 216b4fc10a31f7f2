#include "sim/csv_table.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>

namespace gpufleet::sim {

using core::Error;
using core::Result;

namespace {

// Appends the comma-separated fields of `line` to `out`; returns how many there were. A plain
// byte loop: trace fields are a few bytes long, shorter than a library search's call costs.
size_t SplitFields(std::string_view line, std::vector<std::string_view>* out) {
  size_t count = 1;
  const char* start = line.data();
  const char* const end = line.data() + line.size();
  for (const char* p = start; p != end; ++p) {
    if (*p != ',') continue;
    out->emplace_back(start, static_cast<size_t>(p - start));
    start = p + 1;
    ++count;
  }
  out->emplace_back(start, static_cast<size_t>(end - start));
  return count;
}

}  // namespace

Result<CsvTable> CsvTable::ReadFile(const std::string& path,
                                    const std::vector<std::string>& required) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open file"};
  // One read into a string of the file's size (a stream copy went through a second buffer);
  // what cannot tell its size (a pipe) is read to its end.
  std::string text;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in ? static_cast<std::streamoff>(in.tellg()) : -1;
  if (size > 0) {
    text.resize(static_cast<size_t>(size));
    in.seekg(0);
    in.read(text.data(), size);
    if (in.gcount() != size) return Error{path + ": read error"};
  } else {
    in.clear();
    in.seekg(0);
    in.clear();  // a pipe cannot seek; it is still at its start
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (in.bad()) return Error{path + ": read error"};
  return Parse(std::move(text), path, required);
}

Result<CsvTable> CsvTable::Parse(std::string text, std::string path,
                                 const std::vector<std::string>& required) {
  CsvTable table;
  table.path_ = std::move(path);
  table.text_ = std::move(text);
  // On the heap even when short: the fields point into it, and a short string's characters would
  // move with the table (the small-string buffer) and leave them dangling.
  table.text_.reserve(sizeof(std::string) + 1);
  std::string_view rest = table.text_;
  int line_no = 0;
  bool have_header = false;
  std::vector<std::string_view> header_fields;
  // Room for every row and field at once: no more than the text has line breaks and commas.
  const auto newlines = std::count(table.text_.begin(), table.text_.end(), '\n');
  const auto commas = std::count(table.text_.begin(), table.text_.end(), ',');
  table.lines_.reserve(static_cast<size_t>(newlines) + 1);
  table.fields_.reserve(static_cast<size_t>(newlines + commas) + 1);
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (!have_header) {
      have_header = true;
      SplitFields(line, &header_fields);
      for (auto f : header_fields) table.header_.emplace_back(f);
      continue;
    }
    const size_t count = SplitFields(line, &table.fields_);
    if (count != table.header_.size()) {
      return Error{table.path_ + ":" + std::to_string(line_no) + ": expected " +
                   std::to_string(table.header_.size()) + " fields as in the header, found " +
                   std::to_string(count)};
    }
    table.lines_.push_back(line_no);
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
  return Field(row, ColumnOf(column));
}

std::string CsvTable::Where(size_t row) const { return path_ + ":" + std::to_string(lines_[row]); }

std::string CsvTable::Where(size_t row, std::string_view column) const {
  return Where(row) + ": column '" + std::string(column) + "' (" +
         std::to_string(FindColumn(column) + 1) + ")";
}

std::string CsvTable::Where(size_t row, Column column) const {
  if (column.index < 0) return Where(row) + ": column (absent)";
  return Where(row, header_[static_cast<size_t>(column.index)]);
}

Result<int64_t> CsvTable::Int(size_t row, std::string_view column) const {
  return Int(row, ColumnOf(column));
}

Result<int64_t> CsvTable::Int(size_t row, Column column) const {
  std::string_view text = Field(row, column);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return Error{Where(row, column) + ": expected an integer, found '" + std::string(text) + "'"};
  }
  return value;
}

Result<int64_t> CsvTable::NonNegativeInt(size_t row, std::string_view column) const {
  return NonNegativeInt(row, ColumnOf(column));
}

Result<int64_t> CsvTable::NonNegativeInt(size_t row, Column column) const {
  auto value = Int(row, column);
  if (value.ok() && value.value() < 0) {
    return Error{Where(row, column) + ": must not be negative, found " +
                 std::to_string(value.value())};
  }
  return value;
}

}  // namespace gpufleet::sim
