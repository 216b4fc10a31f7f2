#pragma once
// `JobLogs`: where the controller keeps each rank's log of each job, as its agent ships it in
// chunks: `<data_dir>/logs/<id>.log` for rank 0 (what `gpufleet logs` shows),
// `<id>.rank<k>.log` for the others, and `<id>.log.attempt<epoch>` for the runs before a
// requeue. Knows files only; which chunk is next is the caller's (the agent and controller agree
// on offsets through the heartbeat).
#include <cstdint>
#include <string>
#include <string_view>

namespace gpufleet::controller {

class JobLogs {
 public:
  explicit JobLogs(std::string data_dir);
  // The file of rank `rank`'s log of job `id`.
  std::string Path(int64_t id, int rank) const;
  // Bytes held of it (0 when there is no file).
  int64_t Size(int64_t id, int rank) const;
  // Appends `data` (the bytes from offset Size()); false, writing nothing usable, when the file
  // cannot be written.
  bool Append(int64_t id, int rank, std::string_view data) const;
  // Before job `id` runs again (its placement `epoch`): each of its `ranks` logs of the run before
  // is kept aside as `.attempt<epoch - 1>`, so the new run's logs start empty.
  void KeepEarlierAttempt(int64_t id, int ranks, int64_t epoch) const;

 private:
  std::string dir_;
};

}  // namespace gpufleet::controller
