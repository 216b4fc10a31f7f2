#pragma once
// `RuntimePredictor`: predicts a job's run time from the jobs that have already finished, as the
// mean of the most specific class of finished jobs that has at least 3 members:
//   1. the same user, command and GPU count;
//   2. the same user and job name;
//   3. the same user, queue and GPU count;
//   4. the same queue and GPU count; 5. the same queue; 6. the same GPU count; 7. all jobs;
//   8. a fixed prior.
// Classes 1-3 need a user (traces without users, as the simulator's, start at 4). It learns only
// from what it is told has finished, so it never looks ahead (QSSF, Helios SC'21, uses
// predictions of this kind). Pure data; no clock.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace gpufleet::sched {

// What a prediction is keyed by. Empty strings: unknown (the classes that need them are skipped).
struct JobTraits {
  std::string user;
  std::string queue;
  std::string name;
  std::string command;  // the job's argv, joined by spaces
  int gpus = 1;         // all of its GPUs
};

// The command of a job's traits: its argv joined by spaces, cut to at most kMaxCommandBytes
// bytes (never inside a UTF-8 character), so that a key the predictor keeps for every command it
// has seen costs little whatever argv a user submits.
inline constexpr std::size_t kMaxCommandBytes = 512;
std::string CommandOf(const std::vector<std::string>& argv);

struct RuntimePrediction {
  double seconds = 0;
  // Which class it came from: "user+command+gpus", "user+name", "user+queue+gpus",
  // "queue+gpus", "queue", "gpus", "all", or "prior".
  const char* basis = "prior";
  int64_t samples = 0;  // finished jobs in that class
  // Whether it mixes in other users' run times (classes 4-7); the user's own classes (1-3) and
  // the fixed prior do not.
  bool MixesOtherUsersJobs() const {
    return !std::string_view(basis).starts_with("user+") && std::string_view(basis) != "prior";
  }
};

class RuntimePredictor {
 public:
  // `prior_s`: the prediction before anything has finished.
  explicit RuntimePredictor(double prior_s = 3600.0) : prior_s_(prior_s) {}

  void Observe(const JobTraits& job, double runtime_s);
  RuntimePrediction Predict(const JobTraits& job) const;
  // The simulator's form: queue and GPU count only.
  void Observe(const std::string& queue, int gpus, double runtime_s);
  double Predict(const std::string& queue, int gpus) const;
  int64_t observed() const { return all_.count; }

 private:
  struct Mean {
    int64_t count = 0;
    double sum = 0;
    double value() const { return sum / static_cast<double>(count); }
  };
  // A class needs this many finished jobs before its mean is trusted over the fallbacks.
  static constexpr int64_t kMinSamples = 3;
  double prior_s_;
  std::map<std::tuple<std::string, std::string, int>, Mean> by_user_command_gpus_;
  std::map<std::pair<std::string, std::string>, Mean> by_user_name_;
  std::map<std::tuple<std::string, std::string, int>, Mean> by_user_queue_gpus_;
  std::map<std::pair<std::string, int>, Mean> by_queue_gpus_;
  std::map<std::string, Mean> by_queue_;
  std::map<int, Mean> by_gpus_;
  Mean all_;
};

}  // namespace gpufleet::sched
