#include "sched/runtime_predictor.h"

#include <algorithm>

#include "core/text.h"

namespace gpufleet::sched {
namespace {

template <typename Map, typename Key>
const auto* Trusted(const Map& map, const Key& key, int64_t min_samples) {
  auto it = map.find(key);
  return it != map.end() && it->second.count >= min_samples ? &it->second : nullptr;
}

}  // namespace

std::string CommandOf(const std::vector<std::string>& argv) {
  std::string command;
  for (const std::string& arg : argv) {
    if (!command.empty()) command += ' ';
    command.append(arg, 0, kMaxCommandBytes + 1 - std::min(command.size(), kMaxCommandBytes + 1));
    if (command.size() > kMaxCommandBytes) return core::TruncateUtf8(command, kMaxCommandBytes);
  }
  return command;
}

void RuntimePredictor::Observe(const JobTraits& job, double runtime_s) {
  const auto add = [runtime_s](Mean& m) {
    ++m.count;
    m.sum += runtime_s;
  };
  if (!job.user.empty()) {
    if (!job.command.empty()) add(by_user_command_gpus_[{job.user, job.command, job.gpus}]);
    if (!job.name.empty()) add(by_user_name_[{job.user, job.name}]);
    add(by_user_queue_gpus_[{job.user, job.queue, job.gpus}]);
  }
  Observe(job.queue, job.gpus, runtime_s);
}

RuntimePrediction RuntimePredictor::Predict(const JobTraits& job) const {
  const auto from = [](const auto* mean, const char* basis) {
    return RuntimePrediction{mean->value(), basis, mean->count};
  };
  if (!job.user.empty()) {
    if (!job.command.empty()) {
      if (auto* m = Trusted(by_user_command_gpus_, std::make_tuple(job.user, job.command, job.gpus),
                            kMinSamples)) {
        return from(m, "user+command+gpus");
      }
    }
    if (!job.name.empty()) {
      if (auto* m = Trusted(by_user_name_, std::make_pair(job.user, job.name), kMinSamples)) {
        return from(m, "user+name");
      }
    }
    if (auto* m = Trusted(by_user_queue_gpus_, std::make_tuple(job.user, job.queue, job.gpus),
                          kMinSamples)) {
      return from(m, "user+queue+gpus");
    }
  }
  if (auto* m = Trusted(by_queue_gpus_, std::make_pair(job.queue, job.gpus), kMinSamples)) {
    return from(m, "queue+gpus");
  }
  if (auto* m = Trusted(by_queue_, job.queue, kMinSamples)) return from(m, "queue");
  if (auto* m = Trusted(by_gpus_, job.gpus, kMinSamples)) return from(m, "gpus");
  if (all_.count > 0) return from(&all_, "all");
  return RuntimePrediction{prior_s_, "prior", 0};
}

void RuntimePredictor::Observe(const std::string& queue, int gpus, double runtime_s) {
  for (Mean* m : {&by_queue_gpus_[{queue, gpus}], &by_queue_[queue], &by_gpus_[gpus], &all_}) {
    ++m->count;
    m->sum += runtime_s;
  }
}

double RuntimePredictor::Predict(const std::string& queue, int gpus) const {
  JobTraits job;
  job.queue = queue;
  job.gpus = gpus;
  return Predict(job).seconds;
}

}  // namespace gpufleet::sched
