#pragma once
// A small reader for the header-first CSV files of cluster traces. It does no quoting (the traces
// have none) and reports every problem as "FILE:LINE: column NAME (N): what is wrong", so a
// user can go straight to the bad field.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpufleet::sim {

class CsvTable {
 public:
  // Reads `path`; fails when the file cannot be read, is empty, or lacks a column of `required`.
  static core::Result<CsvTable> ReadFile(const std::string& path,
                                         const std::vector<std::string>& required);
  // Parses `text` as if read from a file named `path` (for tests and generated inputs).
  static core::Result<CsvTable> Parse(std::string text, std::string path,
                                      const std::vector<std::string>& required);

  // A column found once by name, for readers that visit every row: the accessors that take one
  // skip the lookup by name that the others do for each field.
  struct Column {
    int index = -1;  // -1: the file has no such column
  };

  size_t rows() const { return lines_.size(); }
  bool HasColumn(std::string_view name) const { return FindColumn(name) >= 0; }
  Column ColumnOf(std::string_view name) const { return Column{FindColumn(name)}; }
  // The raw text of `column` in row `row`; "" when an optional column is absent.
  std::string_view Field(size_t row, std::string_view column) const;
  std::string_view Field(size_t row, Column column) const {
    return column.index < 0 ? std::string_view()
                            : fields_[row * header_.size() + static_cast<size_t>(column.index)];
  }
  // The field parsed as an integer; the error names file, line and column.
  core::Result<int64_t> Int(size_t row, std::string_view column) const;
  core::Result<int64_t> Int(size_t row, Column column) const;
  core::Result<int64_t> NonNegativeInt(size_t row, std::string_view column) const;
  core::Result<int64_t> NonNegativeInt(size_t row, Column column) const;
  int line(size_t row) const { return lines_[row]; }
  // "FILE:LINE: column NAME (N)" for error messages.
  std::string Where(size_t row, std::string_view column) const;
  std::string Where(size_t row, Column column) const;
  std::string Where(size_t row) const;
  const std::string& path() const { return path_; }

 private:
  int FindColumn(std::string_view name) const;

  std::string path_;
  std::string text_;  // owns the memory the fields point into
  std::vector<std::string> header_;
  // Row r's fields are fields_[r * header_.size() ...]: one allocation for the whole table, not
  // one per row (a fresh process pays a page fault for each new page it touches).
  std::vector<std::string_view> fields_;
  std::vector<int> lines_;  // each row's line number in the file
};

}  // namespace gpufleet::sim
