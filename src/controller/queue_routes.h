#pragma once
// Why waiting jobs wait (issue 15):
//   GET /v1/queue/explain[?limit=N]   the waiting jobs in the scheduler's order, each with its
//       position, a machine-readable `kind`, the `reason` in words and, where the scheduler can
//       tell, the running job whose end first leaves room for it (Controller::ExplainQueue):
//       {"policy", "now_ms", "waiting", "truncated", "jobs": [{"position", "id", "user", "name",
//        "queue", "gpus", "nodes", "mine", "kind", "reason", "higher_priority_ahead",
//        "fits_after_job", "fits_after_s", "fits_after_basis"}]}
//       Any user may ask. Admins see every job whole; other users see every waiting job's
//       position, queue, size, kind and reason (so they know what is ahead of them) but the id,
//       user and name only of their own jobs (null otherwise). Reasons name other jobs by id
//       only, never by name, user or command. `limit` (default 1000, at most 100000): the first
//       so many jobs; `waiting` counts them all.
#include <nlohmann/json.hpp>
#include <set>

#include "controller/controller.h"
#include "net/http_server.h"

namespace gpufleet::controller {

void AddQueueRoutes(net::HttpServer& server, Controller& controller);

// One waiting job as GET /v1/queue/explain shows it to one caller, without "mine": `whole` says
// whether its id, user and name are shown (an admin, or the caller's own job); `shown` is the job
// ids the caller may see named (null: an admin, who sees everything). Where the job it fits after
// is predicted from run times the caller may not see, its end, basis and the reason's words for
// them are left out.
nlohmann::json QueueExplanationJson(const Controller::QueueExplanation& e, bool whole,
                                    const std::set<int64_t>* shown);

}  // namespace gpufleet::controller
