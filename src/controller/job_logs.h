#pragma once
// `JobLogs`: where the controller keeps each rank's log of each job, as its agent ships it in
// chunks: `<data_dir>/logs/<id>.log` for rank 0 (what `gpufleet logs` shows),
// `<id>.rank<k>.log` for the others, and `<id>.log.attempt<epoch>` for the runs before a
// requeue. Knows files only; which chunk is next is the caller's (the agent and controller agree
// on offsets through the heartbeat).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

  // One job's files here (every rank's log, earlier attempts included) and their bytes.
  struct Held {
    int64_t job_id = 0;
    int64_t bytes = 0;
    std::vector<std::string> files;
  };
  // Every job with a log here, in id order. Files not named as this class names them are left
  // out (and never removed).
  std::vector<Held> Scan() const;
  // Job `id`'s files here, for removing one job: each of its `ranks` ranks' logs, and those of
  // its runs before placement `epoch` (KeepEarlierAttempt's), looked up by name (no folder scan).
  Held Of(int64_t id, int ranks, int64_t epoch) const;
  // Removes `held`'s files, first writing `note` (one line: why and when) where `gpufleet logs`
  // finds it (RemovedNote) while the job has no log file. Only for jobs that take no more chunks
  // (the controller appends only to live jobs'). False when the note or a file could not be
  // written or removed.
  bool Remove(const Held& held, std::string_view note) const;
  // Removes `held`'s files and any removal note of its job: for a job the store no longer
  // holds (job history retention), of which nothing is to stay. False when one could not be
  // removed.
  bool Erase(const Held& held) const;
  // Why job `id`'s log was removed; none while it is kept.
  std::optional<std::string> RemovedNote(int64_t id) const;

 private:
  std::string dir_;
};

}  // namespace gpufleet::controller
