#pragma once
// The advisor's HTTP API (issue 13), for a job's owner or an admin:
//   GET /v1/jobs/<id>/usage[?limit=N][&from_s=S]
//                               the job's usage series (one-minute buckets, per-GPU totals):
//                               the latest N buckets (default a week, at most two), or with
//                               from_s the first N from S seconds after its start on;
//                               "buckets_total" counts them all, "truncated" says some are left
//                               out
//   GET /v1/jobs/<id>/advice    the advisor's findings: kind, severity, waste_gpu_h, evidence,
//                               advice
//   GET /v1/report?since=7d&by=user|queue|model
//                               GPU-hours allocated and used, the waste ranking, the top findings
//                               and idle reclaims of jobs that ended since then (a non-admin sees
//                               only their own jobs)
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "controller/controller.h"
#include "net/http_server.h"

namespace gpufleet::controller {

void AddAdviceRoutes(net::HttpServer& server, Controller& controller);

// The fleet report over jobs ended since the report's start, grouped by `by` ("user", "queue" or
// "model"), as the JSON `GET /v1/report` answers: rows are added a page at a time (only the
// groups are kept), then Json() reports. Pure, for the report benchmark.
class FleetReportTally {
 public:
  explicit FleetReportTally(std::string by) : by_(std::move(by)) {}
  void Add(const std::vector<store::JobReportRow>& rows);
  nlohmann::json Json() const;

 private:
  struct Group {
    int64_t jobs = 0;
    double alloc = 0, used = 0, waste = 0;
    int64_t idle_reclaims = 0;
  };
  std::string by_;
  std::map<std::string, Group> groups_;
  std::map<std::string, std::pair<int64_t, double>> kinds_;  // finding -> (jobs, waste)
  Group total_;
};
// One page's report: FleetReportTally over `rows`.
nlohmann::json FleetReport(const std::vector<store::JobReportRow>& rows, const std::string& by);

}  // namespace gpufleet::controller
