#pragma once
// The price table the sizing advisor (advise/sizing.h) reads: cloud on-demand and spot prices per
// instance-hour, and a purchase price with board power per GPU model, each row with its source and
// date. The built-in table is compiled from data/gpu_prices.csv; `ParsePriceTable` reads the same
// format, so sites can load their own.
//
// Pure: no clock, file or socket.
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpufleet::advise {

enum class PriceKind { kOnDemand, kSpot, kPurchase };
// "on-demand", "spot", "purchase".
std::string_view PriceKindName(PriceKind kind);

struct PriceRow {
  std::string model;  // a GPU catalog name (core::GpuCatalog), as written in the table
  PriceKind kind = PriceKind::kOnDemand;
  std::string provider;      // "aws", "gcp", "azure", "market", ...
  std::string offer;         // instance type and region, or the card
  int gpus = 1;              // GPUs in one instance (1 for a purchase)
  double usd = 0;            // per instance-hour; for a purchase, the price of one GPU
  double tdp_w = 0;          // board power, purchase rows only
  bool placeholder = false;  // no public source was found for `usd`
  std::string date, source, note;
  double usd_per_gpu_hour() const { return usd / gpus; }
};

struct PriceTable {
  std::vector<PriceRow> rows;  // in file order
};

// The table compiled into gpufleet from data/gpu_prices.csv.
const PriceTable& BuiltinPriceTable();

// Parses the CSV format of data/gpu_prices.csv ('#' comments, a header, 11 fields a row, no
// quoting); an error names the line and the column.
core::Result<PriceTable> ParsePriceTable(std::string_view text);

}  // namespace gpufleet::advise
