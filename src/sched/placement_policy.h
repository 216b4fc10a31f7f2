#pragma once
// The placement framework's extension point. A placement has three stages:
//  1. Filter: the framework keeps the nodes where the job fits (`NodeState::Fits`: CPU, memory,
//     GPU model, GPU count or share).
//  2. Score: the policy scores each feasible node; the highest score wins and ties go to the node
//     with the smallest tie-break rank.
//  3. GPU selection: the policy picks the GPUs on the winning node.
// Policies are pure: they read the node and the job and return a number or a GPU mask. Any
// randomness comes through the `Rng&` they are given.

#include <memory>
#include <span>
#include <string_view>

#include "core/job.h"
#include "core/node.h"
#include "core/rng.h"
#include "sched/workload_profile.h"

namespace gpufleet::sched {

// GPU selections shared by several policies.
// The `count` lowest-index GPUs with at least `milli` free.
core::GpuMask LowestIndexGpus(const core::NodeState& node, int count, int32_t milli);
// For a GPU-sharing job: the GPU with the least free milli that still holds `milli`, lowest index
// on ties. Otherwise the lowest-index GPUs. This is the published policies' default selection.
core::GpuMask DefaultGpuPick(const core::NodeState& node, const core::JobSpec& job);

// A policy may keep caches behind its const methods (FGD memoizes fragmentation): one policy
// object serves one thread at a time; parallel runs make one each.
class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;

  // The policy's registered name, as given on the command line.
  virtual std::string_view Name() const = 0;

  // Called once before any placement with the workload the cluster expects. Policies that do not
  // look at the workload ignore it.
  virtual void Prepare(const WorkloadProfile& /*profile*/) {}

  // Called with the cluster's nodes before any placement and again whenever they change. Policies
  // that do not look at the cluster's make-up ignore it.
  virtual void PrepareCluster(std::span<const core::NodeSpec> /*nodes*/) {}

  // True when `Score` depends on nothing but the node's state and the job's resources, so the
  // framework may reuse a score until the node changes. False for policies that draw randomness.
  virtual bool ScoreIsPure() const { return true; }

  // The score of placing `job` on `node`, which the job fits. Higher is better.
  virtual double Score(const core::NodeState& node, const core::JobSpec& job,
                       core::Rng& rng) const = 0;

  // Optional, for pure policies whose score needs a figure of the node's state alone (FGD: the
  // node's fragmentation before the placement). When `HasStateTerm`, the framework computes
  // `StateTerm` once per distinct node state and scores with `ScoreWithStateTerm`, which must
  // equal `Score` given that figure.
  virtual bool HasStateTerm() const { return false; }
  virtual double StateTerm(const core::NodeState& /*node*/) const { return 0; }
  virtual double ScoreWithStateTerm(const core::NodeState& node, const core::JobSpec& job,
                                    core::Rng& rng, double /*state_term*/) const {
    return Score(node, job, rng);
  }

  // Optional, for pure policies whose scores are whole numbers from 0 to `ScoreLevels() - 1` on
  // the clusters they are made for (the published openb policies: 0..100): the framework then
  // ranks nodes in buckets, one per score, rather than in a heap. A hint, not a promise: a shape
  // that meets a score outside it (a node larger than the policy's scale) is ranked in a heap
  // from then on, with the same decisions. 0 (the default) means any double.
  virtual int ScoreLevels() const { return 0; }

  // The GPUs of `node` that `job` takes: exactly `job.num_gpu` of them, each with at least
  // `job.gpu_milli` free; 0 for a CPU-only job. `DefaultGpuPick` unless the policy says otherwise.
  virtual core::GpuMask PickGpus(const core::NodeState& node, const core::JobSpec& job,
                                 core::Rng& /*rng*/) const {
    return DefaultGpuPick(node, job);
  }
};

}  // namespace gpufleet::sched
