#include "controller/scale_routes.h"

#include <cmath>
#include <cstdio>

#include "controller/api_common.h"

namespace gpufleet::controller {
namespace {

using api::Dump;
using api::Fail;
using nlohmann::json;

// What a failing provider script or store said may name cloud accounts, roles, subnets and
// images: admins read it; other users learn only that something failed.
constexpr const char* kAdminsOnly = "(an error; its text is shown to admins)";
bool IsFailure(const std::string& what) {
  return what == "store error" ||
         (what.size() >= 6 && what.compare(what.size() - 6, 6, "failed") == 0);
}

}  // namespace

json ScaleStatusJson(const Autoscaler& autoscaler, bool admin) {
  const Autoscaler::Status s = autoscaler.GetStatus();
  const scale::AutoscaleConfig& config = autoscaler.config();
  json groups = json::array();
  for (size_t g = 0; g < config.groups.size(); ++g) {
    const scale::NodeGroup& group = config.groups[g];
    const Autoscaler::GroupStatus& gs = s.groups[g];
    groups.push_back({{"name", group.name},
                      {"gpu_model", group.model_name},
                      {"gpus", group.gpus},
                      {"price_per_hour", group.price_per_hour},
                      {"spot_price_per_hour", group.spot_price_per_hour},
                      {"min", group.min},
                      {"max", group.max},
                      {"boot_s", group.boot_s},
                      {"creating", gs.creating},
                      {"booting", gs.booting},
                      {"ready", gs.ready},
                      {"retiring", gs.retiring},
                      {"failures", gs.failures},
                      {"backoff_until_ms", gs.backoff_until_ms},
                      {"last_error",
                       admin || gs.last_error.empty() ? gs.last_error : std::string(kAdminsOnly)}});
  }
  json nodes = json::array();
  for (const store::ScaleNodeRecord& n : s.nodes) {
    const int g = config.FindGroup(n.group);
    nodes.push_back({{"name", n.name},
                     {"group", n.group},
                     {"spot", n.spot},
                     {"state", n.state},
                     {"price_per_hour", g >= 0 ? config.groups[g].Price(n.spot) : 0.0},
                     {"created_ms", n.created_ms},
                     {"updated_ms", n.updated_ms},
                     {"detail", n.detail}});
  }
  json events = json::array();
  for (const Autoscaler::Event& e : s.events) {
    events.push_back({{"time_ms", e.time_ms},
                      {"what", e.what},
                      {"detail", admin || !IsFailure(e.what) ? e.detail : kAdminsOnly}});
  }
  const double cap = config.policy.max_spend_per_hour;
  json out = {{"provider", s.provider},
              {"policy",
               {{"expander", std::string(scale::ExpanderName(config.policy.expander))},
                {"scale_up_delay_s", config.policy.scale_up_delay_s},
                {"scale_down_unneeded_s", config.policy.scale_down_unneeded_s},
                {"spot_fallback_s", config.policy.spot_fallback_s},
                {"scan_interval_s", config.policy.scan_interval_s},
                {"max_spend_per_hour", std::isinf(cap) ? json(nullptr) : json(cap)}}},
              {"passes", s.passes},
              {"last_pass_ms", s.last_pass_ms},
              {"spend_per_hour", s.spend_per_hour},
              {"created", s.created},
              {"retired", s.retired},
              {"orphans_deleted", s.orphans_deleted},
              {"provider_errors", s.provider_errors},
              {"interruptions", s.interruptions},
              {"consolidations", s.consolidations},
              {"groups", std::move(groups)},
              {"nodes", std::move(nodes)},
              {"events", std::move(events)},
              {"unservable_jobs", s.unservable.size()},
              {"capped_jobs", s.capped.size()}};
  if (admin) {  // job ids are the owners' business
    json unservable = json::array();
    for (const auto& [id, why] : s.unservable) unservable.push_back({{"job", id}, {"why", why}});
    out["unservable"] = std::move(unservable);
    out["capped"] = s.capped;
  }
  return out;
}

void AddScaleRoutes(net::HttpServer& server, Controller& controller,
                    const std::atomic<const Autoscaler*>& autoscaler) {
  server.Get("/v1/scale", [&controller, &autoscaler](const httplib::Request& req,
                                                     httplib::Response& res) {
    auto user = api::AuthenticateUser(controller.store(), req, res, NowMs());
    if (!user) return;
    const Autoscaler* a = autoscaler.load();
    if (a == nullptr) {
      return Fail(res, 404, "this controller runs without an autoscaler (--autoscale FILE.toml)");
    }
    res.set_content(Dump(ScaleStatusJson(*a, user->admin)), "application/json");
  });
}

std::string ScaleMetricsText(const Autoscaler& autoscaler) {
  const Autoscaler::Status s = autoscaler.GetStatus();
  std::string out =
      "# HELP gpufleet_autoscaler_nodes Nodes the autoscaler holds, by group and state.\n"
      "# TYPE gpufleet_autoscaler_nodes gauge\n";
  for (const Autoscaler::GroupStatus& g : s.groups) {
    const std::pair<const char*, int> states[] = {
        {"creating", g.creating}, {"booting", g.booting}, {"ready", g.ready}, {"retiring", g.retiring}};
    for (const auto& [state, n] : states) {
      out += "gpufleet_autoscaler_nodes{group=\"" + g.name + "\",state=\"" + state + "\"} " +
             std::to_string(n) + "\n";
    }
  }
  char spend[64];
  std::snprintf(spend, sizeof spend, "%.6g", s.spend_per_hour);
  out += "# HELP gpufleet_autoscaler_spend_per_hour Hourly price of every node it holds.\n"
         "# TYPE gpufleet_autoscaler_spend_per_hour gauge\n"
         "gpufleet_autoscaler_spend_per_hour " + std::string(spend) + "\n";
  auto counter = [&](const char* name, const char* help, int64_t value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name +
           " " + std::to_string(value) + "\n";
  };
  counter("gpufleet_autoscaler_nodes_created_total", "Nodes the provider accepted.", s.created);
  counter("gpufleet_autoscaler_nodes_retired_total", "Nodes deleted after they were unneeded.",
          s.retired);
  counter("gpufleet_autoscaler_orphans_deleted_total",
          "Instances found without a record and deleted.", s.orphans_deleted);
  counter("gpufleet_autoscaler_provider_errors_total", "Provider calls that failed or timed out.",
          s.provider_errors);
  counter("gpufleet_autoscaler_spot_interruptions_total", "Spot interruption notices handled.",
          s.interruptions);
  counter("gpufleet_autoscaler_consolidations_total",
          "Nodes emptied (their restartable jobs moved) to be retired.", s.consolidations);
  out += "# HELP gpufleet_autoscaler_group_backoff Whether a group is backing off after failures.\n"
         "# TYPE gpufleet_autoscaler_group_backoff gauge\n";
  for (const Autoscaler::GroupStatus& g : s.groups) {
    out += "gpufleet_autoscaler_group_backoff{group=\"" + g.name + "\"} " +
           std::to_string(g.backoff_until_ms > s.last_pass_ms ? 1 : 0) + "\n";
  }
  return out;
}

}  // namespace gpufleet::controller
