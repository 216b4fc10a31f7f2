#include "sched/runtime_predictor.h"

namespace gpufleet::sched {

void RuntimePredictor::Observe(const std::string& queue, int gpus, double runtime_s) {
  for (Mean* m : {&by_queue_gpus_[{queue, gpus}], &by_queue_[queue], &by_gpus_[gpus], &all_}) {
    ++m->count;
    m->sum += runtime_s;
  }
}

double RuntimePredictor::Predict(const std::string& queue, int gpus) const {
  if (auto it = by_queue_gpus_.find({queue, gpus});
      it != by_queue_gpus_.end() && it->second.count >= kMinSamples) {
    return it->second.value();
  }
  if (auto it = by_queue_.find(queue); it != by_queue_.end() && it->second.count >= kMinSamples) {
    return it->second.value();
  }
  if (auto it = by_gpus_.find(gpus); it != by_gpus_.end() && it->second.count >= kMinSamples) {
    return it->second.value();
  }
  return all_.count > 0 ? all_.value() : prior_s_;
}

}  // namespace gpufleet::sched
