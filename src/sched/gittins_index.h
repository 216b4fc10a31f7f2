#pragma once
// `GittinsIndex`: the Gittins index of a job that has attained some GPU-service, computed from the
// distribution of total GPU-service that finished jobs needed, learned online. The index of a job
// with attained service `a` is the best, over how much more service `d` to give it, of
//     P(S <= a + d | S > a) / E[min(S - a, d) | S > a]
// (the chance it finishes within `d` per GPU-second spent on it); serving the highest index
// first minimizes mean completion time on one server (Gittins; Tiresias uses it with an oracle
// distribution). Heavy-tailed service makes the index fall as a job runs (least attained service
// first); narrow service makes it rise (finish what was started). Nothing here is tuned to a
// trace: the distribution is the workload's own. Pure data; no clock.
//
// Service is kept in log-spaced bins (4 per doubling, from one GPU-minute); the index is
// computed at each bin's lower edge when `Rebuild` is called, so `Index` is a table lookup.
// Before any job has finished a weak log-uniform prior (decreasing hazard: least attained
// service first) stands in; each finished job outweighs it quickly.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpufleet::sched {

class GittinsIndex {
 public:
  GittinsIndex();

  // One finished job that needed `service_gpu_s` GPU-seconds in all (ignored unless > 0).
  void Observe(double service_gpu_s);
  // Recomputes the table from what has been observed.
  void Rebuild();
  int64_t observed() const { return observed_; }
  // How many of them the table was last built from (`Rebuild`): what `Index` and `Class` reflect.
  int64_t built_from() const { return built_from_; }

  // The index (per GPU-second) of a job that has attained `attained_gpu_s`, from the last
  // `Rebuild`; larger means serve sooner.
  double Index(double attained_gpu_s) const;
  // Index classes on one absolute scale, so that tables learned from different jobs compare:
  // class c holds indexes in (2^-(c+1), 2^-c] per GPU-second (class 0 also everything above).
  // A job of a strictly lower class (higher number) may be preempted by one of a higher class.
  int Class(double attained_gpu_s) const;
  // The attained service beyond `attained_gpu_s` at which `Class` changes next (infinity: never).
  double NextClassChange(double attained_gpu_s) const;

 private:
  size_t BinOf(double gpu_s) const;

  std::vector<double> lower_edge_;   // bin k holds service in [lower_edge_[k], lower_edge_[k+1])
  std::vector<double> count_;        // observations per bin (with the prior's weight)
  std::vector<double> sum_;          // their total service
  std::vector<double> index_;        // per bin, at its lower edge
  std::vector<int> class_;           // per bin
  std::vector<double> next_change_;  // per bin: where the class changes next
  int64_t observed_ = 0;
  int64_t built_from_ = 0;
};

}  // namespace gpufleet::sched
