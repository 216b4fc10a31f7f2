#pragma once
// The advisor's client commands (issue 13): `gpufleet advise JOB` prints what holds a job back,
// with evidence, waste and advice (and with --sizing, which GPU and how many); `gpufleet report`
// sums GPU-hours allocated and used, the waste ranking, the top findings and idle reclaims.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/client_commands.h"

namespace gpufleet::cli {

struct AdviseOptions {
  ClientOptions client;
  int64_t id = 0;
  bool sizing = false;
  std::string deadline;  // "24h" ("" : none)
};
int RunAdvise(const AdviseOptions& options);

struct ReportOptions {
  ClientOptions client;
  std::string since = "7d";
  std::string by = "user";  // user, queue or model
};
int RunReport(const ReportOptions& options);

// Prints the findings of a GET /v1/jobs/<id>/advice answer (as `show` and `advise` do).
void PrintFindings(const nlohmann::json& advice);

}  // namespace gpufleet::cli
