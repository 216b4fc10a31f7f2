#include "controller/advice_routes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "advise/advisor.h"
#include "advise/gpu_prices.h"
#include "advise/own_hardware.h"
#include "advise/sizing.h"
#include "controller/api_common.h"
#include "core/duration.h"

namespace gpufleet::controller {
namespace {

// Ended jobs read from the store at a time for GET /v1/report.
constexpr int64_t kReportPage = 10000;

using api::Dump;
using api::Fail;
using api::json;

// The job the path names, when the caller (a user) may see it; else answers and returns none.
std::optional<store::JobRecord> CallersJob(Controller& controller, const httplib::Request& req,
                                           httplib::Response& res) {
  auto user = api::AuthenticateUser(controller.store(), req, res, NowMs());
  if (!user) return std::nullopt;
  return api::VisibleJob(controller.store(), req.matches[1], *user, res);
}

double Round(double v, double step) { return std::round(v / step) * step; }

json Figure(float v) { return v < 0 ? json(nullptr) : json(Round(v, 0.1)); }

// Which of a series' buckets an answer carries: the first `limit` starting at or after `from_ms`
// (since the job's start), or, without `from_ms`, the latest `limit`.
struct BucketWindow {
  std::optional<int64_t> from_ms;
  int64_t limit = kDefaultBuckets;
  static constexpr int64_t kDefaultBuckets = 7 * 24 * 60;  // a week of one-minute buckets
  static constexpr int64_t kMaxBuckets = 14 * 24 * 60;
};

json UsageJson(const store::JobRecord& job, const Controller::JobUsageView& view,
               const BucketWindow& window) {
  const advise::JobUsage& u = view.usage;
  json buckets = json::array();
  std::size_t first = 0;
  if (window.from_ms) {
    first = static_cast<std::size_t>(
        std::lower_bound(u.buckets.begin(), u.buckets.end(), *window.from_ms,
                         [](const advise::UsageBucket& b, int64_t ms) { return b.start_ms < ms; }) -
        u.buckets.begin());
  } else if (static_cast<int64_t>(u.buckets.size()) > window.limit) {
    first = u.buckets.size() - static_cast<std::size_t>(window.limit);
  }
  const std::size_t end =
      std::min(u.buckets.size(), first + static_cast<std::size_t>(window.limit));
  // Figures never measured in any bucket (of the whole series): the source cannot give them.
  std::map<std::string, bool> seen;
  for (std::size_t i = 0; i < u.buckets.size(); ++i) {
    const advise::UsageBucket& b = u.buckets[i];
    const std::pair<const char*, float> figures[] = {
        {"sm_mean", b.sm_mean},
        {"sm_min", b.sm_min},
        {"sm_max", b.sm_max},
        {"membw_pct", b.membw_pct},
        {"fb_used_pct", b.fb_used_pct},
        {"pcie_mb_s", b.pcie_mb_s},
        {"power_pct", b.power_pct},
        {"throttled_pct", b.throttled_pct},
        {"active_gpus", b.active_gpus},
        {"cpu_used_pct", b.cpu_used_pct},
        {"cpu_throttled_pct", b.cpu_throttled_pct},
        {"cpu_pressure_pct", b.cpu_pressure_pct},
        {"io_pressure_pct", b.io_pressure_pct},
        {"mem_pressure_pct", b.mem_pressure_pct},
        {"mem_used_pct", b.mem_used_pct},
        {"io_mb_s", b.io_mb_s},
    };
    const bool shown = i >= first && i < end;
    json row;
    if (shown) row = {{"start_s", b.start_ms / 1000}};
    for (const auto& [name, value] : figures) {
      if (shown) row[name] = Figure(value);
      seen[name] = seen[name] || value >= 0;
    }
    if (shown) buckets.push_back(std::move(row));
  }
  json missing = json::array();
  for (const auto& [name, any] : seen) {
    if (!any) missing.push_back(name);
  }
  json gpus = json::array();
  for (const advise::GpuTotal& g : u.gpus) {
    gpus.push_back({{"node", g.node},
                    {"index", g.index},
                    {"samples", g.samples},
                    {"sm_mean", g.samples > 0 ? json(Round(g.sm_mean(), 0.1)) : json(nullptr)},
                    {"busy_samples", g.busy_samples},
                    {"mem_peak_mib", g.mem_peak_mib},
                    {"mem_total_mib", g.mem_total_mib}});
  }
  return {{"id", job.id},
          {"state", std::string(store::StateName(job.state))},
          {"live", view.live},
          {"bucket_s", advise::kBucketMs / 1000},
          {"host_source", std::string(core::UsageSourceName(u.host_source))},
          {"cpu_alloc_milli", u.cpu_alloc_milli},
          {"mem_alloc_mib", u.mem_alloc_mib},
          {"oom_kills", u.oom_kills},
          {"gpu_h_alloc", Round(view.gpu_h_alloc, 0.001)},
          {"gpu_h_used", Round(view.gpu_h_used, 0.001)},
          {"missing", std::move(missing)},
          {"buckets_total", u.buckets.size()},
          {"truncated", first > 0 || end < u.buckets.size()},
          {"buckets", std::move(buckets)},
          {"gpus", std::move(gpus)}};
}

json FindingJson(const advise::Finding& f) {
  json evidence = json::array();
  for (const advise::Evidence& e : f.evidence) {
    evidence.push_back({{"figure", e.figure},
                        {"value", Round(e.value, 0.01)},
                        {"unit", e.unit},
                        {"from_s", e.from_ms / 1000},
                        {"to_s", e.to_ms / 1000}});
  }
  json out = {{"kind", std::string(advise::FindingKindName(f.kind))},
              {"severity", std::string(advise::SeverityName(f.severity))},
              {"summary", f.summary},
              {"waste_gpu_h", Round(f.waste_gpu_h, 0.001)},
              {"evidence", std::move(evidence)},
              {"advice", f.advice},
              {"for_admins", f.for_admins}};
  if (!f.node.empty()) out["node"] = f.node;
  return out;
}

// A stored findings summary ("kind:severity:waste,...") as (kind, waste) pairs.
std::vector<std::pair<std::string, double>> SummaryFindings(const std::string& text) {
  std::vector<std::pair<std::string, double>> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const std::size_t a = item.find(':');
    const std::size_t b = a == std::string::npos ? a : item.find(':', a + 1);
    if (b == std::string::npos) continue;
    out.emplace_back(item.substr(0, a), std::strtod(item.c_str() + b + 1, nullptr));
  }
  return out;
}

// The sizing answer (advise/sizing.h) for the job's measured use, into `out`: "sizing",
// "recommended", "deadline_met", "break_even", "assumptions"; or "sizing_error".
void AddSizing(const Controller::JobUsageView& view, std::optional<double> deadline_h,
               const advise::OwnHardware& own, json& out) {
  advise::SizingRequest request;
  request.gpu_hours = view.gpu_h_alloc;
  request.model = view.facts.gpu_model;
  request.gpus = std::max(1, view.facts.gpus);
  if (view.gpu_h_alloc > 0) request.sm_mean_pct = 100.0 * view.gpu_h_used / view.gpu_h_alloc;
  request.scaling_efficiency = advise::EstimateScalingEfficiency(view.usage);
  request.deadline_hours = deadline_h;
  auto sized =
      advise::Size(request, core::GpuCatalog::Builtin(), advise::BuiltinPriceTable(), own);
  if (!sized) {
    out["sizing_error"] = sized.error();
    return;
  }
  const json answer = json::parse(advise::SizingToJson(sized.value()), nullptr, false);
  if (!answer.is_object()) return;
  for (const auto& [key, value] : answer.items()) out[key] = value;
}

}  // namespace

void FleetReportTally::Add(const std::vector<store::JobReportRow>& rows) {
  for (const store::JobReportRow& r : rows) {
    const std::string& key = by_ == "queue" ? r.queue : by_ == "model" ? r.gpu_model : r.user;
    Group& g = groups_[key.empty() ? "-" : key];
    const bool reclaimed = r.state == store::JobState::kCancelled && r.reason.rfind("idle for", 0) == 0;
    double waste = 0;
    for (const auto& [kind, w] : SummaryFindings(r.findings)) {
      if (kind == "efficient") continue;
      auto& k = kinds_[kind];
      ++k.first;
      k.second += w;
      waste += w;
    }
    for (Group* x : {&g, &total_}) {
      ++x->jobs;
      x->alloc += r.gpu_h_alloc;
      x->used += r.gpu_h_used;
      x->waste += waste;
      x->idle_reclaims += reclaimed ? 1 : 0;
    }
  }
}

json FleetReportTally::Json() const {
  auto group_json = [](const std::string& name, const Group& g) {
    return json{{"name", name},
                {"jobs", g.jobs},
                {"gpu_h_alloc", Round(g.alloc, 0.01)},
                {"gpu_h_used", Round(g.used, 0.01)},
                {"used_pct", g.alloc > 0 ? Round(100 * g.used / g.alloc, 0.1) : 0.0},
                {"waste_gpu_h", Round(g.waste, 0.01)},
                {"idle_reclaims", g.idle_reclaims}};
  };
  std::vector<std::pair<std::string, Group>> ranked(groups_.begin(), groups_.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    const double wa = a.second.alloc - a.second.used, wb = b.second.alloc - b.second.used;
    return wa != wb ? wa > wb : a.first < b.first;
  });
  json ranking = json::array();
  for (const auto& [name, g] : ranked) ranking.push_back(group_json(name, g));
  std::vector<std::pair<std::string, std::pair<int64_t, double>>> top(kinds_.begin(), kinds_.end());
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
    return a.second.second != b.second.second ? a.second.second > b.second.second
                                              : a.first < b.first;
  });
  json findings = json::array();
  for (const auto& [kind, k] : top) {
    findings.push_back({{"kind", kind}, {"jobs", k.first}, {"waste_gpu_h", Round(k.second, 0.01)}});
  }
  return {{"by", by_},
          {"total", group_json("total", total_)},
          {"ranking", std::move(ranking)},
          {"top_findings", std::move(findings)}};
}

json FleetReport(const std::vector<store::JobReportRow>& rows, const std::string& by) {
  FleetReportTally tally(by);
  tally.Add(rows);
  return tally.Json();
}

void AddAdviceRoutes(net::HttpServer& server, Controller& controller) {
  server.Get(R"(/v1/jobs/([^/]+)/usage)",
             [&controller](const httplib::Request& req, httplib::Response& res) {
               auto job = CallersJob(controller, req, res);
               if (!job) return;
               BucketWindow window;
               if (req.has_param("limit")) {
                 auto n = api::ParseId(req.get_param_value("limit"));
                 if (!n || *n < 1 || *n > BucketWindow::kMaxBuckets) {
                   return Fail(res, 400,
                               "limit must be an integer in 1.." +
                                   std::to_string(BucketWindow::kMaxBuckets),
                               "limit");
                 }
                 window.limit = *n;
               }
               if (req.has_param("from_s")) {
                 auto from = api::ParseId(req.get_param_value("from_s"));
                 if (!from || *from < 0 || *from > int64_t{1} << 40) {
                   return Fail(res, 400, "from_s must be a whole number of seconds, at least 0",
                               "from_s");
                 }
                 window.from_ms = *from * 1000;
               }
               auto view = controller.Usage(*job);
               if (!view) return Fail(res, view.failure());
               if (!view.value()) {
                 return Fail(res, 404, "job " + std::to_string(job->id) + " has no usage series");
               }
               res.set_content(Dump(UsageJson(*job, *view.value(), window)), "application/json");
             });
  server.Get(R"(/v1/jobs/([^/]+)/advice)",
             [&controller](const httplib::Request& req, httplib::Response& res) {
               auto job = CallersJob(controller, req, res);
               if (!job) return;
               // The parameters are checked whatever the job's usage, so that a wrong one is
               // never silently ignored.
               bool sizing = false;
               if (req.has_param("sizing")) {
                 const std::optional<bool> flag = api::ParseFlag(req.get_param_value("sizing"));
                 if (!flag) return Fail(res, 400, "sizing: 0, 1, true or false", "sizing");
                 sizing = *flag;
               }
               std::optional<double> deadline_h;
               if (req.has_param("deadline_s")) {
                 auto s = api::ParseId(req.get_param_value("deadline_s"));
                 if (!s || *s <= 0) {
                   return Fail(res, 400, "deadline_s must be a positive integer", "deadline_s");
                 }
                 deadline_h = static_cast<double>(*s) / 3600.0;
                 if (!sizing) {
                   return Fail(res, 400, "deadline_s is an input of the sizing: add sizing=1",
                               "deadline_s");
                 }
               }
               auto view = controller.Usage(*job);
               if (!view) return Fail(res, view.failure());
               json findings = json::array();
               json out = {{"id", job->id}, {"state", std::string(store::StateName(job->state))}};
               if (view.value()) {
                 for (const advise::Finding& f :
                      advise::Advise(view.value()->usage, view.value()->facts)) {
                   findings.push_back(FindingJson(f));
                 }
                 out["live"] = view.value()->live;
                 out["gpu_h_alloc"] = Round(view.value()->gpu_h_alloc, 0.001);
                 out["gpu_h_used"] = Round(view.value()->gpu_h_used, 0.001);
                 out["minutes"] = view.value()->usage.buckets.size();
                 if (sizing) {
                   AddSizing(*view.value(), deadline_h, controller.options().own_hardware, out);
                 }
               } else {
                 out["note"] = "no usage measured for this job (it has not run, or ran before "
                               "usage series were kept)";
               }
               out["findings"] = std::move(findings);
               res.set_content(Dump(out), "application/json");
             });
  server.Get("/v1/report", [&controller](const httplib::Request& req, httplib::Response& res) {
    auto caller = api::AuthenticateUser(controller.store(), req, res, NowMs());
    if (!caller) return;
    int64_t since_s = 7 * 86400;
    if (req.has_param("since")) {
      auto s = core::ParseDurationSeconds(req.get_param_value("since"));
      if (!s) return Fail(res, 400, "since: a duration such as 7d, 24h or 30m", "since");
      since_s = *s;
    }
    const std::string by = req.has_param("by") ? req.get_param_value("by") : "user";
    if (by != "user" && by != "queue" && by != "model") {
      return Fail(res, 400, "by: one of user, queue, model", "by");
    }
    // A user's report covers their own jobs only, read as such; in pages, so that a long report
    // holds the store for one page at a time (other requests and the controller's writes go
    // between) and keeps only its groups in memory.
    const int64_t since_ms = NowMs() - since_s * 1000;
    FleetReportTally tally(by);
    for (int64_t after = 0;;) {
      auto rows = controller.store().ReportRows(since_ms, caller->admin ? "" : caller->name, after,
                                                kReportPage);
      if (!rows) return api::Unavailable(res, rows.error());
      tally.Add(rows.value());
      if (static_cast<int64_t>(rows.value().size()) < kReportPage) break;
      after = rows.value().back().id;
    }
    json out = tally.Json();
    out["since_s"] = since_s;
    out["scope"] = caller->admin ? "fleet" : "user " + caller->name;
    res.set_content(Dump(out), "application/json");
  });
}

}  // namespace gpufleet::controller
