#include "controller/queue_routes.h"

#include <algorithm>
#include <cmath>

#include "controller/api_common.h"

namespace gpufleet::controller {
namespace {

using api::Dump;
using api::Fail;
using nlohmann::json;

constexpr int64_t kDefaultLimit = 1000;
constexpr int64_t kMaxLimit = 100000;

json ExplanationJson(const Controller::QueueExplanation& e, bool whole) {
  const sched::Explanation& why = e.why;
  return {{"position", why.position},
          {"id", whole ? json(why.id) : json(nullptr)},
          {"user", whole ? json(e.user) : json(nullptr)},
          {"name", whole ? json(e.name) : json(nullptr)},
          {"queue", e.queue},
          {"gpus", e.gpus},
          {"nodes", e.nodes},
          {"kind", std::string(sched::WaitKindName(why.kind))},
          {"reason", why.reason},
          {"higher_priority_ahead", why.higher_priority_ahead},
          {"fits_after_job", why.fits_after_job ? json(*why.fits_after_job) : json(nullptr)},
          {"fits_after_s", why.fits_after_s ? json(std::round(*why.fits_after_s)) : json(nullptr)},
          {"fits_after_basis", why.fits_after_job
                                   ? json(std::string(sched::EndBasisName(why.fits_after_basis)))
                                   : json(nullptr)}};
}

}  // namespace

void AddQueueRoutes(net::HttpServer& server, Controller& controller) {
  server.Get(
      "/v1/queue/explain", [&controller](const httplib::Request& req, httplib::Response& res) {
        auto user = api::AuthenticateUser(controller.store(), req, res, NowMs());
        if (!user) return;
        int64_t limit = kDefaultLimit;
        if (req.has_param("limit")) {
          auto v = api::ParseId(req.get_param_value("limit"));
          if (!v || *v < 1) {
            Fail(res, 400, "limit must be a positive integer", "limit");
            return;
          }
          limit = std::min(*v, kMaxLimit);
        }
        const int64_t now_ms = NowMs();
        const std::vector<Controller::QueueExplanation> all = controller.ExplainQueue(now_ms);
        json jobs = json::array();
        for (const Controller::QueueExplanation& e : all) {
          if (static_cast<int64_t>(jobs.size()) >= limit) break;
          const bool mine = e.user == user->name;
          jobs.push_back(ExplanationJson(e, user->admin || mine));
          jobs.back()["mine"] = mine;
        }
        const bool truncated = static_cast<int64_t>(all.size()) > limit;
        res.set_content(Dump({{"policy", controller.options().queue_policy},
                              {"now_ms", now_ms},
                              {"waiting", all.size()},
                              {"truncated", truncated},
                              {"jobs", std::move(jobs)}}),
                        "application/json");
      });
}

}  // namespace gpufleet::controller
