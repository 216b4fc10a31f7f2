#include "cli/queue_commands.h"

#include <cstdio>
#include <string>

#include "cli/client_http.h"

namespace gpufleet::cli {
namespace {

using nlohmann::json;

int PrintSummary(const json& q) {
  std::printf("waiting %s, running %s (started %s, finished %s)\n",
              Cell(Field(q, "waiting")).c_str(), Cell(Field(q, "running")).c_str(),
              Cell(Field(q, "started")).c_str(), Cell(Field(q, "finished")).c_str());
  std::printf("nodes ready %s, lost %s; GPUs free %s of %s\n",
              Cell(Field(q, "nodes_ready")).c_str(), Cell(Field(q, "nodes_lost")).c_str(),
              Cell(Field(q, "free_gpus")).c_str(), Cell(Field(q, "gpus")).c_str());
  return 0;
}

}  // namespace

int RunQueue(const QueueOptions& o) {
  auto c = Connect(o.client);
  if (!c) return 1;
  if (!o.explain) {
    auto answer = Check(c->http->Get("/v1/queue"), *c, "queue");
    if (!answer) return 1;
    if (o.client.json) {
      std::printf("%s\n", answer->dump(2).c_str());
      return 0;
    }
    return PrintSummary(*answer);
  }
  auto answer = Check(c->http->Get("/v1/queue/explain?limit=" + std::to_string(o.limit)), *c,
                      "queue --explain");
  if (!answer) return 1;
  json& a = *answer;
  if (o.mine) {
    json kept = json::array();
    for (const json& j : Field(a, "jobs")) {
      if (j.value("mine", false)) kept.push_back(j);
    }
    a["jobs"] = std::move(kept);
  }
  if (o.client.json) {
    std::printf("%s\n", a.dump(2).c_str());
    return 0;
  }
  std::printf("%s waiting under the %s policy%s\n", Cell(Field(a, "waiting")).c_str(),
              Cell(Field(a, "policy")).c_str(),
              a.value("truncated", false) ? " (the first shown: --limit for more)" : "");
  if (Field(a, "jobs").empty()) return 0;
  // Others' jobs come without id, user or name for non-admins: "-".
  std::printf("%-5s %-8s %-12s %-6s %-18s %s\n", "POS", "ID", "USER", "GPUS", "KIND", "REASON");
  for (const json& j : Field(a, "jobs")) {
    std::string gpus = Cell(Field(j, "gpus"));
    if (j.value("nodes", 1) > 1) gpus += "x" + Cell(Field(j, "nodes"));
    std::printf("%-5s %-8s %-12s %-6s %-18s %s\n", Cell(Field(j, "position")).c_str(),
                Cell(Field(j, "id")).c_str(), Cell(Field(j, "user")).c_str(), gpus.c_str(),
                Cell(Field(j, "kind")).c_str(), Cell(Field(j, "reason")).c_str());
  }
  return 0;
}

}  // namespace gpufleet::cli
