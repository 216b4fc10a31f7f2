#include "controller/queue_routes.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <string>
#include <string_view>

#include "controller/api_common.h"

namespace gpufleet::controller {
namespace {

using api::Dump;
using api::Fail;
using nlohmann::json;

constexpr int64_t kDefaultLimit = 1000;
constexpr int64_t kMaxLimit = 100000;

// `text` with every "job N" whose id is not in `shown` replaced by "another user's job": the
// reasons name other jobs by id only (sched::Explanation::reason), and a user reading the queue
// learns others' jobs' place in it, not their ids.
std::string WithoutOthersJobIds(const std::string& text, const std::set<int64_t>& shown) {
  static constexpr std::string_view kJob = "job ";
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t at = text.find(kJob, pos);
    if (at == std::string::npos) break;
    std::size_t end = at + kJob.size();
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    const bool word_start = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
    if (end == at + kJob.size() || !word_start) {
      out.append(text, pos, end - pos);
      pos = end;
      continue;
    }
    out.append(text, pos, at - pos);
    const std::size_t digits = end - at - kJob.size();
    const bool own = digits <= 18 && shown.count(std::stoll(text.substr(at + kJob.size(), digits)));
    out += own ? text.substr(at, end - at) : "another user's job";
    pos = end;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

}  // namespace

json QueueExplanationJson(const Controller::QueueExplanation& e, bool whole,
                          const std::set<int64_t>* shown) {
  const sched::Explanation& why = e.why;
  const bool after_shown =
      why.fits_after_job && (shown == nullptr || shown->count(*why.fits_after_job) > 0);
  // When the job waited on ends, and from what (time limit or estimate), is hidden from a user
  // where its prediction is not theirs to see (as GET /v1/jobs/ID hides it):
  //  - another user's job whose end is an estimate (from a time limit it stays, as Slurm's
  //    expected starts do);
  //  - their own job predicted from a mean that mixes in other users' run times, whatever the
  //    basis: were a time-limit end shown and an estimate hidden, the owner, who knows the time
  //    limit, would learn whether that mean is shorter (a few jobs would bisect it).
  const bool from_estimate =
      why.fits_after_job && why.fits_after_basis == sched::EndBasis::kEstimate;
  const bool end_private =
      shown != nullptr && why.fits_after_job && (after_shown ? e.fits_after_mixed : from_estimate);
  const bool when_shown = why.fits_after_s && !end_private;
  return {{"position", why.position},
          {"id", whole ? json(why.id) : json(nullptr)},
          {"user", whole ? json(e.user) : json(nullptr)},
          {"name", whole ? json(e.name) : json(nullptr)},
          {"queue", e.queue},
          {"gpus", e.gpus},
          {"nodes", e.nodes},
          {"kind", std::string(sched::WaitKindName(why.kind))},
          {"reason", shown == nullptr ? why.reason
                     : !end_private || why.reason_end_hidden.empty()
                         ? WithoutOthersJobIds(why.reason, *shown)
                         : WithoutOthersJobIds(why.reason_end_hidden, *shown)},
          {"higher_priority_ahead", why.higher_priority_ahead},
          {"fits_after_job", after_shown ? json(*why.fits_after_job) : json(nullptr)},
          {"fits_after_s", when_shown ? json(std::round(*why.fits_after_s)) : json(nullptr)},
          {"fits_after_basis", why.fits_after_job && !end_private
                                   ? json(std::string(sched::EndBasisName(why.fits_after_basis)))
                                   : json(nullptr)}};
}

void AddQueueRoutes(net::HttpServer& server, Controller& controller) {
  server.Get(
      "/v1/queue/explain", [&controller](const httplib::Request& req, httplib::Response& res) {
        auto user = api::AuthenticateUser(controller.store(), req, res, NowMs());
        if (!user) return;
        int64_t limit = kDefaultLimit;
        if (req.has_param("limit")) {
          auto v = api::ParseId(req.get_param_value("limit"));
          if (!v || *v < 1 || *v > kMaxLimit) {
            Fail(res, 400, "limit must be an integer in 1.." + std::to_string(kMaxLimit), "limit");
            return;
          }
          limit = *v;
        }
        const int64_t now_ms = NowMs();
        const std::vector<Controller::QueueExplanation> all = controller.ExplainQueue(now_ms);
        // What a user may see named: their own jobs, waiting or running.
        std::set<int64_t> own;
        if (!user->admin) {
          auto live = controller.store().LiveJobIdsOf(user->name);
          if (!live) return api::Unavailable(res, live.error());
          own.insert(live.value().begin(), live.value().end());
        }
        json jobs = json::array();
        for (const Controller::QueueExplanation& e : all) {
          if (static_cast<int64_t>(jobs.size()) >= limit) break;
          const bool mine = e.user == user->name;
          jobs.push_back(
              QueueExplanationJson(e, user->admin || mine, user->admin ? nullptr : &own));
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
