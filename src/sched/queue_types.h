#pragma once
// What the queueing layer of the scheduler works with: jobs waiting or running, where a job runs
// (one allocation per node of its gang), and the decisions `Schedule` returns. Plain data; no
// clocks (times are seconds on whatever clock the caller keeps, real or simulated).

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/node.h"

namespace gpufleet::sched {

using JobId = int64_t;

// A job of `total_gpus` whole GPUs (or a share of one GPU) that may span several nodes.
struct QueuedJob {
  JobId id = 0;
  // Per-GPU resources: CPU and memory are asked per GPU, so a gang slice of k GPUs asks k times
  // these. gpu_milli < 1000 only for a single shared GPU; gpu_models restricts the model.
  int64_t cpu_milli_per_gpu = 0;
  int64_t memory_mib_per_gpu = 0;
  int gpu_milli = core::kGpuMilli;
  core::ModelSet gpu_models = core::ModelSet::All();
  int total_gpus = 1;
  // An elastic job (0 < min_gpus < total_gpus; whole GPUs, `nodes` 0): it may run on any number
  // of GPUs from min_gpus to total_gpus, its most. It starts at the most that fits, grows into
  // GPUs no waiting job can use, and gives back GPUs above min_gpus before anyone is preempted
  // (see `Scheduler::Schedule`). 0: a rigid job of exactly total_gpus.
  int min_gpus = 0;
  // 0: any number of nodes (the fewest that fit). N > 1: exactly N nodes with total_gpus / N
  // whole GPUs each (a multi-node training job: one launcher per node).
  int nodes = 0;
  int64_t submit_s = 0;
  std::string queue;  // team / virtual cluster
  int priority = 0;
  double attained_gpu_s = 0;    // GPU-seconds of service received so far
  int64_t waiting_since_s = 0;  // when it last (re)entered the queue: arrival or preemption
  bool promoted = false;        // the starvation guard promoted it while it waited (see below)
  // It may be stopped and run again elsewhere, so an autoscaler may put it on spot nodes: it
  // counts on the nodes the fleet may grow by at spot prices (`Scheduler::SetGrowthNodes`).
  bool restartable = false;
  // Expected remaining run time in seconds, from the user or a predictor; NaN when unknown.
  // An oracle policy may be given the true value; the simulator says which.
  double estimate_s = std::nan("");
};

// Where one node's part of a job runs.
struct Allocation {
  int node = -1;
  core::GpuMask gpus = 0;
};

struct RunningJob {
  QueuedJob job;
  std::vector<Allocation> placement;
  int64_t started_s = 0;  // start of the current run (after the last preemption)
};

// kStart: a waiting job starts on `placement`. kPreempt: a running job stops and waits again.
// kResize: a running elastic job restarts (from its checkpoint) on `placement`, its whole new
// placement, with more GPUs (a grow) or fewer (a shrink).
struct Decision {
  enum class Kind { kStart, kPreempt, kResize };
  Kind kind = Kind::kStart;
  JobId job = 0;
  std::vector<Allocation> placement;  // for kStart and kResize
};

inline bool IsElastic(const QueuedJob& job) {
  return job.min_gpus > 0 && job.min_gpus < job.total_gpus;
}

// The fewest GPUs `job` can start on: an elastic job's min, else all it asks.
inline int FewestGpus(const QueuedJob& job) {
  return IsElastic(job) ? job.min_gpus : job.total_gpus;
}

// Whether `gpus` of `job` are more than any node of the cluster holds (`most_node_gpus`, its
// largest node's) while the job takes whole GPUs on no set number of nodes: the one case in which
// PlaceGang spreads a job over several nodes even when spreading is not allowed. NeverFits and
// the simulator's load check apply the same rule, so that they agree with PlaceGang.
inline bool LargerThanEveryNode(const QueuedJob& job, int gpus, int most_node_gpus) {
  return job.nodes <= 1 && job.gpu_milli >= core::kGpuMilli && gpus > most_node_gpus;
}

// The GPUs of a placement, over all its nodes.
inline int GpusOf(const std::vector<Allocation>& placement) {
  int n = 0;
  for (const Allocation& a : placement) n += core::GpuCount(a.gpus);
  return n;
}

// The expected *remaining* run time of a job whose whole run was estimated at `estimate_s` when it
// arrived, after `attained_gpu_s` GPU-seconds of service on `total_gpus` GPUs in earlier runs
// (preemption): what is left of the estimate; a job that already outlived it is expected to run
// about as long again (the longer a job has run, the longer it tends to go on). NaN stays NaN.
// The simulator and the live controller both give policies this.
inline double RemainingEstimate(double estimate_s, double attained_gpu_s, int total_gpus) {
  if (std::isnan(estimate_s) || !(attained_gpu_s > 0)) return estimate_s;
  const double ran_s = attained_gpu_s / (total_gpus > 0 ? total_gpus : 1);
  return ran_s < estimate_s ? estimate_s - ran_s : ran_s;
}

// The per-node resources of `job`'s slice with `gpus` GPUs on one node.
inline core::JobSpec SliceSpec(const QueuedJob& job, int gpus) {
  core::JobSpec spec;
  spec.cpu_milli = job.cpu_milli_per_gpu * gpus;
  spec.memory_mib = job.memory_mib_per_gpu * gpus;
  spec.num_gpu = gpus;
  spec.gpu_milli = job.gpu_milli;
  spec.gpu_models = job.gpu_models;
  spec.priority = job.priority;
  spec.queue = job.queue;
  return spec;
}

}  // namespace gpufleet::sched
