#include "advise/gpu_prices.h"

#include <charconv>
#include <cmath>
#include <optional>

#include "core/check.h"
#include "core/text.h"

namespace gpufleet::advise {

extern const char* const kBuiltinGpuPricesCsv;  // generated from data/gpu_prices.csv

namespace {

constexpr std::string_view kHeader =
    "model,kind,provider,offer,gpus,usd,tdp_w,placeholder,date,source,note";
constexpr int kFields = 11;

bool ParseKind(std::string_view s, PriceKind& out) {
  for (PriceKind kind : {PriceKind::kOnDemand, PriceKind::kSpot, PriceKind::kPurchase}) {
    if (s == PriceKindName(kind)) {
      out = kind;
      return true;
    }
  }
  return false;
}

std::optional<double> ParseNumber(std::string_view s) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return {};
  return v;
}

}  // namespace

std::string_view PriceKindName(PriceKind kind) {
  switch (kind) {
    case PriceKind::kOnDemand:
      return "on-demand";
    case PriceKind::kSpot:
      return "spot";
    case PriceKind::kPurchase:
      return "purchase";
  }
  return "?";
}

const PriceTable& BuiltinPriceTable() {
  static const PriceTable table = [] {
    auto parsed = ParsePriceTable(kBuiltinGpuPricesCsv);
    GPUFLEET_CHECK(parsed.ok());  // the built-in data is tested; a failure here is a build bug
    return std::move(parsed).value();
  }();
  return table;
}

core::Result<PriceTable> ParsePriceTable(std::string_view text) {
  PriceTable table;
  int line_no = 0;
  bool header_seen = false;
  for (std::string_view raw : core::SplitText(text, '\n')) {
    ++line_no;
    const std::string_view line = core::TrimText(raw);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = "GPU prices line " + std::to_string(line_no);
    if (!header_seen) {
      header_seen = true;
      if (line != kHeader)
        return core::Error{where + ": expected header '" + std::string(kHeader) + "'"};
      continue;
    }
    std::vector<std::string_view> f = core::SplitText(line, ',');
    if (f.size() != kFields) {
      return core::Error{where + ": expected " + std::to_string(kFields) + " fields, got " +
                         std::to_string(f.size())};
    }
    for (auto& field : f) field = core::TrimText(field);
    PriceRow row;
    row.model = f[0];
    if (row.model.empty()) return core::Error{where + ", column model: empty"};
    if (!ParseKind(f[1], row.kind))
      return core::Error{where + ", column kind: not on-demand, spot or purchase"};
    row.provider = f[2];
    row.offer = f[3];
    auto gpus = ParseNumber(f[4]);
    if (!gpus || *gpus < 1 || *gpus > 64 || *gpus != std::floor(*gpus))
      return core::Error{where + ", column gpus: not a whole number from 1 to 64"};
    row.gpus = static_cast<int>(*gpus);
    auto usd = ParseNumber(f[5]);
    if (!usd || *usd <= 0) return core::Error{where + ", column usd: not a positive number"};
    row.usd = *usd;
    auto tdp = ParseNumber(f[6]);
    if (!tdp || *tdp < 0) return core::Error{where + ", column tdp_w: not a non-negative number"};
    row.tdp_w = *tdp;
    if (f[7] != "yes" && f[7] != "no")
      return core::Error{where + ", column placeholder: not yes or no"};
    row.placeholder = f[7] == "yes";
    row.date = f[8];
    row.source = f[9];
    row.note = f[10];
    if (row.date.empty()) return core::Error{where + ", column date: empty"};
    if (row.source.empty()) return core::Error{where + ", column source: empty"};
    if (row.kind == PriceKind::kPurchase) {
      if (row.gpus != 1) return core::Error{where + ", column gpus: a purchase row is for 1 GPU"};
      if (row.tdp_w <= 0) return core::Error{where + ", column tdp_w: a purchase row needs it"};
    }
    table.rows.push_back(std::move(row));
  }
  if (!header_seen) return core::Error{"GPU prices: no header"};
  return table;
}

}  // namespace gpufleet::advise
