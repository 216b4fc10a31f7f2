#include "store/store.h"

namespace gpufleet::store {

core::Result<bool> CheckTransitions(const std::vector<TransitionRequest>& requests) {
  for (const TransitionRequest& r : requests) {
    if (!TransitionAllowed(r.from, r.to)) {
      return core::Error{"job " + std::to_string(r.id) + ": " + std::string(StateName(r.from)) +
                         " -> " + std::string(StateName(r.to)) + " is not allowed"};
    }
  }
  return true;
}

core::Result<bool> Store::Transition(int64_t id, JobState from, JobState to,
                                     const JobUpdate& update, int64_t now_ms) {
  auto results = TransitionAll({TransitionRequest{id, from, to, update}}, now_ms);
  if (!results) return results.failure();
  return static_cast<bool>(results.value().front());
}

}  // namespace gpufleet::store
