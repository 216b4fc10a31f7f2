#include "core/gpu_catalog.h"

#include <charconv>
#include <cmath>

#include "core/text.h"

namespace gpufleet::core {

extern const char* const kBuiltinGpuCatalogCsv;  // generated from data/gpu_catalog.csv

namespace {

std::optional<double> ParseNonNegative(std::string_view s) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v) || v < 0) return {};
  return v;
}

}  // namespace

const GpuCatalog& GpuCatalog::Builtin() {
  static const GpuCatalog catalog = [] {
    auto parsed = Parse(kBuiltinGpuCatalogCsv);
    GPUFLEET_CHECK(parsed.ok());  // the built-in data is tested; a failure here is a build bug
    return std::move(parsed).value();
  }();
  return catalog;
}

Result<GpuCatalog> GpuCatalog::Parse(std::string_view text) {
  GpuCatalog catalog;
  int line_no = 0;
  bool header_seen = false;
  for (std::string_view raw : SplitText(text, '\n')) {
    ++line_no;
    std::string_view line = TrimText(raw);
    if (line.empty() || line.front() == '#') continue;
    if (!header_seen) {
      header_seen = true;
      if (line != "name,memory_gib,relative_speed,hourly_price_usd") {
        return Error{"GPU catalog line " + std::to_string(line_no) +
                     ": expected header 'name,memory_gib,relative_speed,hourly_price_usd'"};
      }
      continue;
    }
    auto fields = SplitText(line, ',');
    const std::string where = "GPU catalog line " + std::to_string(line_no);
    if (fields.size() != 4)
      return Error{where + ": expected 4 fields, got " + std::to_string(fields.size())};
    GpuModel model;
    for (std::string_view alias : SplitText(fields[0], '|')) {
      alias = TrimText(alias);
      if (alias.empty()) return Error{where + ": empty model name"};
      if (catalog.Find(alias))
        return Error{where + ": duplicate model name '" + std::string(alias) + "'"};
      model.aliases.emplace_back(alias);
    }
    model.name = model.aliases.front();
    auto mem = ParseNonNegative(TrimText(fields[1]));
    auto speed = ParseNonNegative(TrimText(fields[2]));
    auto price = ParseNonNegative(TrimText(fields[3]));
    if (!mem) return Error{where + ", column memory_gib: not a non-negative number"};
    if (!speed || *speed <= 0)
      return Error{where + ", column relative_speed: not a positive number"};
    if (!price) return Error{where + ", column hourly_price_usd: not a non-negative number"};
    model.memory_gib = *mem;
    model.relative_speed = *speed;
    model.hourly_price_usd = *price;
    if (catalog.models_.size() >= kMaxModels) return Error{where + ": more than 64 GPU models"};
    catalog.models_.push_back(std::move(model));
  }
  if (catalog.models_.empty()) return Error{"GPU catalog: no models"};
  return catalog;
}

std::optional<ModelId> GpuCatalog::Find(std::string_view name) const {
  for (size_t i = 0; i < models_.size(); ++i) {
    for (const auto& alias : models_[i].aliases) {
      if (alias == name) return static_cast<ModelId>(i);
    }
  }
  return std::nullopt;
}

Result<ModelSet> GpuCatalog::ParseSpec(std::string_view spec) const {
  spec = TrimText(spec);
  if (spec.empty()) return ModelSet::All();
  ModelSet set;
  for (std::string_view name : SplitText(spec, '|')) {
    name = TrimText(name);
    auto id = Find(name);
    if (!id) return Error{"unknown GPU model '" + std::string(name) + "'"};
    set.Add(*id);
  }
  return set;
}

std::string GpuCatalog::FormatSpec(ModelSet set) const {
  if (set.IsAll()) return "";
  std::string out;
  for (size_t i = 0; i < models_.size(); ++i) {
    if (!set.Contains(static_cast<ModelId>(i))) continue;
    if (!out.empty()) out += '|';
    out += models_[i].name;
  }
  return out;
}

}  // namespace gpufleet::core
