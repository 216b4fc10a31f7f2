#pragma once
// The cost model of owning GPUs, as the sizing advisor (advise/sizing.h) uses it, read from a small
// `key = value` text file (data/own_hardware.example.conf).
//
// Pure: no clock, file or socket; the caller reads the file.
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpufleet::advise {

// Defaults are those of data/own_hardware.example.conf: examples to replace with a site's own.
struct OwnHardware {
  double lifetime_years = 4;  // the purchase is written off over this many years
  double electricity_usd_per_kwh = 0.12;
  double pue = 1.4;                 // facility power / IT power (cooling, conversion losses)
  double ops_share = 0.10;          // yearly operations (staff, support, space) / purchase
  double utilization_target = 0.6;  // share of the hours a GPU is used; spreads fixed costs
  double server_overhead_usd_per_gpu = 4000;   // the host (CPUs, memory, network, rack) per GPU
  double server_overhead_watts_per_gpu = 150;  // the host's power per GPU
  bool operator==(const OwnHardware&) const = default;
};

// Parses `key = value` lines ('#' starts a comment, blank lines are skipped). Every key is
// optional (a missing one keeps its default) but may appear once; an unknown key, a repeated key,
// a line without '=' or a value out of range is an error that names the key and the line.
core::Result<OwnHardware> ParseOwnHardware(std::string_view text);

// Writes every key, one a line, in a form `ParseOwnHardware` reads back to an equal value.
std::string FormatOwnHardware(const OwnHardware& config);

}  // namespace gpufleet::advise
