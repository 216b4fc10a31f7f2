#include "cli/advise_commands.h"

#include <cstdio>
#include <string>

#include "cli/client_http.h"
#include "core/duration.h"

namespace gpufleet::cli {
namespace {

using nlohmann::json;

double Number(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

}  // namespace

void PrintFindings(const json& advice) {
  if (!advice.contains("findings") || !Field(advice, "findings").is_array()) return;
  const json& findings = Field(advice, "findings");
  if (findings.empty()) {
    std::printf("advice       %s\n",
                Cell(advice.value("note", json("no usage measured yet"))).c_str());
    return;
  }
  std::printf("advice       (%s GPU-h allocated, %s used%s)\n",
              Cell(Field(advice, "gpu_h_alloc")).c_str(), Cell(Field(advice, "gpu_h_used")).c_str(),
              advice.value("live", false) ? ", so far" : "");
  for (const json& f : findings) {
    std::printf("  %-8s %-20s %s\n", Cell(Field(f, "severity")).c_str(),
                Cell(Field(f, "kind")).c_str(), Cell(Field(f, "summary")).c_str());
    if (Number(f, "waste_gpu_h") > 0) {
      std::printf("           wastes about %.2f GPU-h\n", Number(f, "waste_gpu_h"));
    }
    if (f.contains("evidence") && Field(f, "evidence").is_array()) {
      for (const json& e : Field(f, "evidence")) {
        std::printf("           %s = %s %s over min %lld-%lld\n", Cell(Field(e, "figure")).c_str(),
                    Cell(Field(e, "value")).c_str(), Cell(Field(e, "unit")).c_str(),
                    static_cast<long long>(Number(e, "from_s") / 60),
                    static_cast<long long>(Number(e, "to_s") / 60));
      }
    }
    if (f.contains("advice") && Field(f, "advice").is_array()) {
      for (const json& a : Field(f, "advice")) std::printf("           -> %s\n", Cell(a).c_str());
    }
    if (f.value("for_admins", false)) {
      std::printf("           (a node problem: reported to admins%s%s)\n",
                  f.contains("node") ? ", node " : "",
                  f.contains("node") ? Cell(Field(f, "node")).c_str() : "");
    }
  }
}

int RunAdvise(const AdviseOptions& o) {
  auto c = Connect(o.client);
  if (!c) return 1;
  std::string path = "/v1/jobs/" + std::to_string(o.id) + "/advice";
  if (o.sizing) {
    path += "?sizing=1";
    if (!o.deadline.empty()) {
      auto seconds = core::ParseDurationSeconds(o.deadline);
      if (!seconds) {
        std::fprintf(stderr, "gpufleet: --deadline '%s': a duration such as 24h or 3d\n",
                     Printable(o.deadline).c_str());
        return 2;
      }
      path += "&deadline_s=" + std::to_string(*seconds);
    }
  }
  auto answer = Check(c->http->Get(path), *c, "advise");
  if (!answer) return 1;
  if (o.client.json) {
    std::printf("%s\n", answer->dump(2).c_str());
    return 0;
  }
  std::printf("job %lld (%s)\n", static_cast<long long>(o.id), Cell((*answer)["state"]).c_str());
  PrintFindings(*answer);
  if (answer->contains("sizing_error")) {
    std::printf("sizing       not possible: %s\n", Cell((*answer)["sizing_error"]).c_str());
  }
  if (answer->contains("sizing") && (*answer)["sizing"].is_array()) {
    std::printf("sizing\n  %-22s %5s %10s %12s  %s\n", "MODEL", "GPUS", "HOURS", "COST USD",
                "WHERE");
    for (const json& s : (*answer)["sizing"]) {
      std::printf("  %-22s %5s %10.1f %12.2f  %s\n", Cell(Field(s, "model")).c_str(),
                  Cell(Field(s, "gpus")).c_str(), Number(s, "est_hours"), Number(s, "cost"),
                  Cell(Field(s, "where")).c_str());
    }
    if (answer->contains("assumptions") && (*answer)["assumptions"].is_array()) {
      std::printf("assumptions\n");
      for (const json& a : (*answer)["assumptions"]) std::printf("  %s\n", Cell(a).c_str());
    }
  }
  return 0;
}

int RunReport(const ReportOptions& o) {
  auto c = Connect(o.client);
  if (!c) return 1;
  if (!core::ParseDurationSeconds(o.since)) {
    std::fprintf(stderr, "gpufleet: --since '%s': a duration such as 7d, 24h or 30m\n",
                 Printable(o.since).c_str());
    return 2;
  }
  if (o.by != "user" && o.by != "queue" && o.by != "model") {
    std::fprintf(stderr, "gpufleet: --by '%s': one of user, queue, model\n",
                 Printable(o.by).c_str());
    return 2;
  }
  auto answer = Check(
      c->http->Get("/v1/report?since=" + QueryValue(o.since) + "&by=" + QueryValue(o.by)), *c,
      "report");
  if (!answer) return 1;
  if (o.client.json) {
    std::printf("%s\n", answer->dump(2).c_str());
    return 0;
  }
  const json& t = (*answer)["total"];
  std::printf(
      "Jobs ended in the last %s (%s): %s; %s GPU-h allocated, %s used (%s%%); "
      "%s GPU-h in findings; %s idle reclaims\n",
      Printable(o.since).c_str(), Cell((*answer)["scope"]).c_str(), Cell(Field(t, "jobs")).c_str(),
      Cell(Field(t, "gpu_h_alloc")).c_str(), Cell(Field(t, "gpu_h_used")).c_str(),
      Cell(Field(t, "used_pct")).c_str(), Cell(Field(t, "waste_gpu_h")).c_str(),
      Cell(Field(t, "idle_reclaims")).c_str());
  std::printf("\n%-24s %6s %12s %12s %7s %12s %6s\n", Printable(o.by).c_str(), "JOBS", "ALLOC GPU-H",
              "USED GPU-H", "USED %", "WASTE GPU-H", "IDLE");
  for (const json& g : (*answer)["ranking"]) {
    std::printf("%-24s %6s %12s %12s %7s %12s %6s\n", Cell(Field(g, "name")).c_str(),
                Cell(Field(g, "jobs")).c_str(), Cell(Field(g, "gpu_h_alloc")).c_str(),
                Cell(Field(g, "gpu_h_used")).c_str(), Cell(Field(g, "used_pct")).c_str(),
                Cell(Field(g, "waste_gpu_h")).c_str(), Cell(Field(g, "idle_reclaims")).c_str());
  }
  std::printf("\n%-24s %6s %12s\n", "FINDING", "JOBS", "WASTE GPU-H");
  for (const json& f : (*answer)["top_findings"]) {
    std::printf("%-24s %6s %12s\n", Cell(Field(f, "kind")).c_str(), Cell(Field(f, "jobs")).c_str(),
                Cell(Field(f, "waste_gpu_h")).c_str());
  }
  return 0;
}

}  // namespace gpufleet::cli
