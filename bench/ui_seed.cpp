// Fills the store of `gpufleet up --data-dir DIR` with ended jobs, for the dashboard's speed test
// (the jobs page with 100,000 jobs). Every job is SUCCEEDED, FAILED or CANCELLED, never live, so
// the scheduler has nothing to run when `up` starts on it. Writes go through the store's public
// API: `SubmitJob` from many threads at once (its group commit puts every queued submit in one
// transaction, so they share one fsync), then `TransitionAll` in time order, one transaction per
// 10 minutes of starts or ends (a batch's events carry one time, so each is at most 10 minutes
// late). Ids follow submit times, except that submits committed together may swap places.
// Deterministic for a given --seed, except for the wall-clock anchor of "the past 30 days".
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"

namespace {

using gpufleet::store::JobRecord;
using gpufleet::store::JobState;
using gpufleet::store::JobUpdate;
using gpufleet::store::RankPlacement;
using gpufleet::store::TransitionRequest;

constexpr const char* kUsage =
    "usage: ui_seed --data-dir DIR --jobs N [--users U] [--queues Q] [--seed S] [--threads T]\n"
    "\n"
    "Adds N ended jobs (about 70% SUCCEEDED, 18% FAILED, 12% CANCELLED; none PENDING or\n"
    "RUNNING) to DIR/gpufleet.db, the SQLite store of `gpufleet up --data-dir DIR`, creating it\n"
    "when needed. Jobs belong to user0..user(U-1) (default 20, a few users own most jobs), run in\n"
    "Q queues (default 4), ask 1 to 8 GPUs of a catalog model (A100-80GB, H100-80GB, V100M32, "
    "...)\n"
    "or of any model, and were submitted, started and ended over the past 30 days. Running it\n"
    "again adds N more. --seed (default 1) picks the jobs; --threads (default 128) is how many\n"
    "submits wait on one commit.\n"
    "\n"
    "Order: no set-up is needed before or after; `up` makes its admin (the user who runs it) and\n"
    "DIR/token on every start. Stop `gpufleet up` on DIR first (a live server does not look for\n"
    "jobs written behind its back, and one restarted mid-seed would find them PENDING), then\n"
    "  ui_seed --data-dir DIR --jobs 100000      # about 15 s here (2 cores, ext4)\n"
    "  gpufleet up --data-dir DIR &             # starts in about 2 s: it learns run times from\n"
    "                                           # every SUCCEEDED job\n"
    "  gpufleet jobs --all --data-dir DIR       # or GET /v1/jobs?user=*&limit=100 with DIR/token\n"
    "The seeded users have no accounts or tokens: an admin sees their jobs. If ui_seed is\n"
    "interrupted, jobs it submitted but had not ended yet stay PENDING and `up` would start them:\n"
    "remove DIR, or cancel them (gpufleet jobs --all --state PENDING, gpufleet cancel ID).\n";

struct Options {
  std::string data_dir;
  int64_t jobs = 0;
  int users = 20;
  int queues = 4;
  uint64_t seed = 1;
  int threads = 128;
};

bool ParseInt(const char* text, int64_t min, int64_t max, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < min || v > max) return false;
  *out = v;
  return true;
}

// Returns 0 when parsed, else the exit code (0 for --help).
int Parse(int argc, char** argv, Options* o, bool* help) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      *help = true;
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "ui_seed: %s needs a value\n%s", flag.c_str(), kUsage);
      return 2;
    }
    const char* value = argv[++i];
    int64_t n = 0;
    bool ok = true;
    if (flag == "--data-dir") {
      o->data_dir = value;
    } else if (flag == "--jobs") {
      ok = ParseInt(value, 1, 100'000'000, &n);
      o->jobs = n;
    } else if (flag == "--users") {
      ok = ParseInt(value, 1, 1'000'000, &n);
      o->users = static_cast<int>(n);
    } else if (flag == "--queues") {
      ok = ParseInt(value, 1, 1000, &n);
      o->queues = static_cast<int>(n);
    } else if (flag == "--seed") {
      ok = ParseInt(value, 0, INT64_MAX, &n);
      o->seed = static_cast<uint64_t>(n);
    } else if (flag == "--threads") {
      ok = ParseInt(value, 1, 1024, &n);
      o->threads = static_cast<int>(n);
    } else {
      std::fprintf(stderr, "ui_seed: unknown option %s\n%s", flag.c_str(), kUsage);
      return 2;
    }
    if (!ok) {
      std::fprintf(stderr, "ui_seed: %s: '%s' is not a number in range\n", flag.c_str(), value);
      return 2;
    }
  }
  if (o->data_dir.empty() || o->jobs == 0) {
    std::fprintf(stderr, "ui_seed: --data-dir and --jobs are required\n%s", kUsage);
    return 2;
  }
  return 0;
}

// One seeded job: its record (as submitted) and how it ended.
struct SeedJob {
  JobRecord record;
  JobState end = JobState::kSucceeded;  // kCancelled with start_ms 0: cancelled while waiting
  int64_t start_ms = 0, end_ms = 0;
  int exit_code = 0;
  std::string reason;
  std::string node;
  std::vector<int> gpus;
  double util_pct = 0;
  int64_t mem_peak_mib = 0;
};

std::string QueueName(int i) {
  static const char* kNames[] = {"default", "research", "production", "interactive",
                                 "batch",   "vision",   "nlp",        "speech"};
  return i < 8 ? kNames[i] : "queue" + std::to_string(i);
}

class Generator {
 public:
  Generator(const Options& o, int64_t now_ms) : o_(o), now_ms_(now_ms), rng_(o.seed) {}

  // `count` jobs, in submit order.
  std::vector<SeedJob> Jobs(int64_t count) {
    constexpr int64_t kDayMs = 86'400'000;
    std::vector<int64_t> submits(static_cast<size_t>(count));
    std::uniform_int_distribution<int64_t> when(now_ms_ - 30 * kDayMs, now_ms_ - 60'000);
    for (int64_t& t : submits) t = when(rng_);
    std::sort(submits.begin(), submits.end());
    std::vector<SeedJob> jobs;
    jobs.reserve(submits.size());
    for (int64_t submit : submits) jobs.push_back(One(submit));
    return jobs;
  }

 private:
  // A few users own most jobs (Zipf-like, s = 1), as on a shared cluster.
  int User() {
    if (user_weights_.empty()) {
      for (int u = 0; u < o_.users; ++u) user_weights_.push_back(1.0 / (u + 1));
    }
    std::discrete_distribution<int> pick(user_weights_.begin(), user_weights_.end());
    return pick(rng_);
  }

  template <typename T>
  const T& Pick(const std::vector<T>& items) {
    return items[std::uniform_int_distribution<size_t>(0, items.size() - 1)(rng_)];
  }

  double Uniform() { return std::uniform_real_distribution<double>(0, 1)(rng_); }

  SeedJob One(int64_t submit_ms) {
    static const std::vector<std::string> kModels = {"resnet50", "bert-large", "gpt2-medium",
                                                     "vit-b16",  "llama-7b",   "t5-base",
                                                     "whisper",  "unet",       "yolov8"};
    static const std::vector<std::string> kTasks = {"train", "finetune", "eval", "sweep",
                                                    "pretrain"};
    // Catalog names, so that the controller reads them back as models; "" asks for any model.
    static const std::vector<std::string> kGpuTypes = {
        "A100-80GB", "A100-80GB", "H100-80GB", "H100-80GB", "V100M32", "A100-40GB",
        "L40S",      "T4",        "H200",      "",          "",        ""};
    static const std::vector<int> kGpuCounts = {1, 1, 1, 1, 1, 2, 2, 2, 4, 4, 8, 8, 3, 6};

    SeedJob j;
    JobRecord& r = j.record;
    const int user = User();
    r.user = "user" + std::to_string(user);
    const std::string model = Pick(kModels);
    const std::string task = Pick(kTasks);
    r.name = task + "-" + model + "-" + std::to_string(++serial_);
    r.queue = QueueName(std::uniform_int_distribution<int>(0, o_.queues - 1)(rng_));
    r.priority = Uniform() < 0.1 ? std::uniform_int_distribution<int>(-5, 5)(rng_) : 0;
    r.gpus = Pick(kGpuCounts);
    r.gpu_type = Pick(kGpuTypes);
    r.argv = {"python",   task + ".py",
              "--model",  model,
              "--epochs", std::to_string(std::uniform_int_distribution<int>(1, 90)(rng_))};
    r.env = {{"WANDB_PROJECT", model}};
    r.workdir = "/home/" + r.user + "/" + model;
    r.submit_ms = submit_ms;
    r.cpu_milli = 8000 * r.gpus;
    r.memory_mib = 65536 * r.gpus;
    r.time_limit_s = Uniform() < 0.3 ? 86'400 : 0;
    r.restartable = Uniform() < 0.5;

    // Waits grow with the GPUs asked; run times are log-normal (median 40 min, a long tail).
    const double wait_s = std::exponential_distribution<double>(1.0 / (120.0 * r.gpus))(rng_);
    double run_s = std::exp(std::normal_distribution<double>(std::log(2400.0), 1.6)(rng_));
    run_s = std::clamp(run_s, 5.0, 3 * 86'400.0);
    const double outcome = Uniform();
    j.start_ms = submit_ms + static_cast<int64_t>(wait_s * 1000) + 1;
    if (outcome < 0.06 || j.start_ms >= now_ms_) {
      j.end = JobState::kCancelled;  // while it waited
      j.start_ms = 0;
      j.end_ms = std::min(now_ms_, submit_ms + 1 + static_cast<int64_t>(wait_s * 500));
      j.reason = "cancelled while waiting";
      return j;
    }
    j.end_ms = std::min(now_ms_ - 1, j.start_ms + static_cast<int64_t>(run_s * 1000));
    if (outcome < 0.12) {
      j.end = JobState::kCancelled;
      j.exit_code = -15;
      j.reason = "cancelled while running";
    } else if (outcome < 0.30) {
      j.end = JobState::kFailed;
      // Failures come early more often than not.
      j.end_ms =
          j.start_ms + static_cast<int64_t>(static_cast<double>(j.end_ms - j.start_ms) * Uniform());
      const double why = Uniform();
      if (why < 0.15) {
        j.exit_code = 137;
        j.reason =
            "out of memory: the kernel's OOM killer ended 1 process at the job's memory "
            "limit of " +
            std::to_string(r.memory_mib) + " MiB (exit code 137)";
      } else if (why < 0.25 && r.time_limit_s > 0) {
        j.exit_code = -9;
        j.reason = "time limit of " + std::to_string(r.time_limit_s) + " s reached";
        j.end_ms = std::min(now_ms_ - 1, j.start_ms + r.time_limit_s * 1000);
      } else {
        j.exit_code = why < 0.9 ? 1 : 2;
        j.reason = "exit code " + std::to_string(j.exit_code);
      }
    } else {
      j.end = JobState::kSucceeded;
    }
    const int node = std::uniform_int_distribution<int>(0, 63)(rng_);
    std::string family = r.gpu_type.empty() ? "A100-80GB" : r.gpu_type;
    for (char& c : family) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    char name[64];
    std::snprintf(name, sizeof name, "%s-node-%02d", family.c_str(), node);
    j.node = name;
    const int first = r.gpus <= 8 ? std::uniform_int_distribution<int>(0, 8 - r.gpus)(rng_) : 0;
    for (int g = 0; g < r.gpus; ++g) j.gpus.push_back(first + g);
    j.util_pct = std::clamp(std::normal_distribution<double>(62, 22)(rng_), 1.0, 99.5);
    j.mem_peak_mib = std::uniform_int_distribution<int64_t>(2'000, 78'000)(rng_);
    return j;
  }

  const Options& o_;
  int64_t now_ms_;
  std::mt19937_64 rng_;
  std::vector<double> user_weights_;
  int64_t serial_ = 0;
};

// A transition and when the controller would have made it.
struct Timed {
  int64_t time_ms = 0;
  TransitionRequest request;
};

// The transitions that take a PENDING job to its end, as the controller makes them: into
// `starts` those made when it starts (or is cancelled waiting), into `ends` the one that ends it.
void AddTransitions(const SeedJob& j, int64_t id, std::vector<Timed>* starts,
                    std::vector<Timed>* ends) {
  if (j.start_ms == 0) {
    JobUpdate u;
    u.end_ms = j.end_ms;
    u.reason = j.reason;
    starts->push_back({j.end_ms, {id, JobState::kPending, JobState::kCancelled, u}});
    return;
  }
  JobUpdate placed;
  placed.placement = std::vector<RankPlacement>{{j.node, j.gpus}};
  placed.bump_epoch = true;
  starts->push_back({j.start_ms, {id, JobState::kPending, JobState::kScheduled, placed}});
  JobUpdate started;
  started.start_ms = j.start_ms;
  starts->push_back({j.start_ms, {id, JobState::kScheduled, JobState::kRunning, started}});
  JobUpdate ended;
  ended.end_ms = j.end_ms;
  ended.exit_code = j.exit_code;
  if (!j.reason.empty()) ended.reason = j.reason;
  ended.usage_samples = std::max<int64_t>(1, (j.end_ms - j.start_ms) / 1000);
  ended.gpu_util_avg_pct = j.util_pct;
  ended.gpu_mem_peak_mib = j.mem_peak_mib;
  ends->push_back({j.end_ms, {id, JobState::kRunning, j.end, ended}});
}

// Applies `timed` in time order, one transaction per 10 minutes of it (at most 5,000 each).
// `TransitionAll` stamps a whole transaction's events with one time, the latest in it, so an
// event is at most 10 minutes later than the job's own start or end time.
bool ApplyInTimeOrder(gpufleet::store::Store& store, std::vector<Timed> timed) {
  constexpr int64_t kBucketMs = 600'000;
  constexpr size_t kMaxPerTransaction = 5000;
  std::stable_sort(timed.begin(), timed.end(),
                   [](const Timed& a, const Timed& b) { return a.time_ms < b.time_ms; });
  std::vector<TransitionRequest> requests;
  for (size_t from = 0; from < timed.size();) {
    const int64_t bucket = timed[from].time_ms / kBucketMs;
    requests.clear();
    int64_t now_ms = 0;
    size_t to = from;
    for (; to < timed.size() && timed[to].time_ms / kBucketMs == bucket &&
           requests.size() < kMaxPerTransaction;
         ++to) {
      requests.push_back(timed[to].request);
      now_ms = timed[to].time_ms;
    }
    auto applied = store.TransitionAll(requests, now_ms);
    if (!applied) {
      std::fprintf(stderr, "ui_seed: transition: %s\n", applied.error().c_str());
      return false;
    }
    for (size_t k = 0; k < applied.value().size(); ++k) {
      if (!applied.value()[k]) {
        std::fprintf(stderr, "ui_seed: job %lld was not in %s (was something else writing?)\n",
                     static_cast<long long>(requests[k].id),
                     std::string(gpufleet::store::StateName(requests[k].from)).c_str());
        return false;
      }
    }
    from = to;
  }
  return true;
}

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool help = false;
  if (int rc = Parse(argc, argv, &o, &help); rc != 0 || help) {
    if (help) std::fputs(kUsage, stdout);
    return rc;
  }
  // As `gpufleet up` keeps it: the data directory and its files are the owner's only.
  ::umask(077);
  const auto t0 = std::chrono::steady_clock::now();
  auto opened = gpufleet::store::OpenSqliteStore(o.data_dir);
  if (!opened) {
    std::fprintf(stderr, "ui_seed: %s\n", opened.error().c_str());
    return 1;
  }
  if (::chmod(o.data_dir.c_str(), 0700) != 0) {
    std::fprintf(stderr, "ui_seed: chmod 0700 %s: %s\n", o.data_dir.c_str(), std::strerror(errno));
    return 1;
  }
  gpufleet::store::Store& store = *opened.value();
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  std::vector<SeedJob> jobs = Generator(o, now_ms).Jobs(o.jobs);
  const double generate_s = Since(t0);

  // Submits: `threads` submitters, so that each commit carries up to that many jobs.
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<int64_t> ids(jobs.size(), 0);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> submitters;
  for (int t = 0; t < o.threads; ++t) {
    submitters.emplace_back([&] {
      while (!failed) {
        const size_t i = next++;
        if (i >= jobs.size()) return;
        auto id = store.SubmitJob(jobs[i].record);
        if (!id) {
          if (!failed.exchange(true)) {
            std::fprintf(stderr, "ui_seed: submit: %s\n", id.error().c_str());
          }
          return;
        }
        ids[i] = id.value();
      }
    });
  }
  for (std::thread& t : submitters) t.join();
  if (failed) return 1;
  const double submit_s = Since(t1);

  // Transitions: every start before any end, so that each end finds its job RUNNING.
  const auto t2 = std::chrono::steady_clock::now();
  std::vector<Timed> starts, ends;
  for (size_t i = 0; i < jobs.size(); ++i) AddTransitions(jobs[i], ids[i], &starts, &ends);
  if (!ApplyInTimeOrder(store, std::move(starts)) || !ApplyInTimeOrder(store, std::move(ends))) {
    return 1;
  }
  const double transition_s = Since(t2);

  const auto [min_id, max_id] = std::minmax_element(ids.begin(), ids.end());
  int64_t by_state[3] = {0, 0, 0};
  for (const SeedJob& j : jobs) {
    by_state[j.end == JobState::kSucceeded ? 0 : j.end == JobState::kFailed ? 1 : 2]++;
  }
  std::printf(
      "ui_seed: %lld jobs (ids %lld..%lld: %lld SUCCEEDED, %lld FAILED, %lld CANCELLED) over "
      "%d users and %d queues into %s/gpufleet.db in %.1f s (generate %.2f s, submit %.1f s "
      "with %d threads, transitions %.1f s)\n",
      static_cast<long long>(jobs.size()), static_cast<long long>(*min_id),
      static_cast<long long>(*max_id), static_cast<long long>(by_state[0]),
      static_cast<long long>(by_state[1]), static_cast<long long>(by_state[2]), o.users, o.queues,
      o.data_dir.c_str(), Since(t0), generate_s, submit_s, o.threads, transition_s);
  return 0;
}
