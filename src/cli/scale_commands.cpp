#include "cli/scale_commands.h"

#include <cstdio>
#include <ctime>

#include "cli/client_http.h"

namespace gpufleet::cli {
namespace {

using nlohmann::json;

// "HH:MM:SS" UTC of a time in ms since the epoch, "-" for none.
std::string Clock(int64_t ms) {
  if (ms <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &tm);
  return text;
}

}  // namespace

int RunScaleStatus(const ClientOptions& options) {
  auto c = Connect(options);
  if (!c) return 1;
  auto answer = Check(c->http->Get("/v1/scale"), *c, "scale status");
  if (!answer) return 1;
  const json& s = *answer;
  if (options.json) {
    std::printf("%s\n", s.dump(2).c_str());
    return 0;
  }
  const json& policy = Field(s, "policy");
  std::printf("provider %s, expander %s, scan every %s s, unneeded after %s s\n",
              Cell(Field(s, "provider")).c_str(), Cell(Field(policy, "expander")).c_str(),
              Cell(Field(policy, "scan_interval_s")).c_str(),
              Cell(Field(policy, "scale_down_unneeded_s")).c_str());
  std::printf(
      "spend %.2f/h of %s/h; created %s, retired %s, orphans deleted %s, provider errors "
      "%s, spot interruptions %s\n",
      s.value("spend_per_hour", 0.0),
      Field(policy, "max_spend_per_hour").is_null()
          ? "no cap"
          : Cell(Field(policy, "max_spend_per_hour")).c_str(),
      Cell(Field(s, "created")).c_str(), Cell(Field(s, "retired")).c_str(),
      Cell(Field(s, "orphans_deleted")).c_str(), Cell(Field(s, "provider_errors")).c_str(),
      Cell(Field(s, "interruptions")).c_str());
  std::printf("\n%-20s %-12s %-5s %-9s %-9s %-8s %-8s %-6s %-8s %-9s %s\n", "GROUP", "MODEL",
              "GPUS", "PRICE/H", "SPOT/H", "MIN-MAX", "CREATING", "BOOT", "READY", "RETIRING",
              "BACKOFF");
  for (const json& g : Field(s, "groups")) {
    const int64_t until = g.value("backoff_until_ms", int64_t{0});
    std::printf(
        "%-20s %-12s %-5s %-9.2f %-9.2f %-8s %-8s %-6s %-8s %-9s %s\n",
        Cell(Field(g, "name")).c_str(), Cell(Field(g, "gpu_model")).c_str(),
        Cell(Field(g, "gpus")).c_str(), g.value("price_per_hour", 0.0),
        g.value("spot_price_per_hour", 0.0),
        (Cell(Field(g, "min")) + "-" + Cell(Field(g, "max"))).c_str(),
        Cell(Field(g, "creating")).c_str(), Cell(Field(g, "booting")).c_str(),
        Cell(Field(g, "ready")).c_str(), Cell(Field(g, "retiring")).c_str(),
        until > s.value("last_pass_ms", int64_t{0}) ? ("until " + Clock(until)).c_str() : "-");
    if (!g.value("last_error", "").empty()) {
      std::printf("%-20s last error: %s\n", "", Cell(Field(g, "last_error")).c_str());
    }
  }
  if (!Field(s, "nodes").empty()) {
    std::printf("\n%-32s %-20s %-10s %-5s %-9s %s\n", "NODE", "GROUP", "STATE", "SPOT", "PRICE/H",
                "SINCE (UTC)");
    for (const json& n : Field(s, "nodes")) {
      std::printf("%-32s %-20s %-10s %-5s %-9.2f %s\n", Cell(Field(n, "name")).c_str(),
                  Cell(Field(n, "group")).c_str(), Cell(Field(n, "state")).c_str(),
                  n.value("spot", false) ? "yes" : "no", n.value("price_per_hour", 0.0),
                  Clock(n.value("updated_ms", int64_t{0})).c_str());
    }
  }
  const int64_t unservable = s.value("unservable_jobs", int64_t{0});
  const int64_t capped = s.value("capped_jobs", int64_t{0});
  if (unservable > 0 || capped > 0) {
    std::printf("\n%lld job(s) no group can hold; %lld waiting on a group's max or the spend cap\n",
                static_cast<long long>(unservable), static_cast<long long>(capped));
    if (s.contains("unservable")) {
      for (const json& u : Field(s, "unservable")) {
        std::printf("  job %s: %s\n", Cell(Field(u, "job")).c_str(), Cell(Field(u, "why")).c_str());
      }
    }
  }
  if (!Field(s, "events").empty()) {
    std::printf("\nEVENTS (latest last, UTC)\n");
    for (const json& e : Field(s, "events")) {
      std::printf("%s %-22s %s\n", Clock(e.value("time_ms", int64_t{0})).c_str(),
                  Cell(Field(e, "what")).c_str(), Cell(Field(e, "detail")).c_str());
    }
  }
  return 0;
}

}  // namespace gpufleet::cli
