#pragma once
// Test support: a node agent as the controller sees one, driven by hand (controller and
// autoscaler unit tests).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "controller/controller.h"

namespace gpufleet::controller {

// A node agent as the controller sees one: it beats when told, runs what it is given until the
// test ends a job, and stops a job at once when asked.
class FakeAgent {
 public:
  explicit FakeAgent(std::string name, int gpus = 4) : name_(std::move(name)), gpus_(gpus) {}

  // One heartbeat at `now_ms`; the reply's new assignments start, jobs marked stop end stopped
  // (exit 143), and jobs not listed any more are dropped (fenced, or settled).
  core::Result<net::HeartbeatReply> Beat(Controller& ctl, int64_t now_ms,
                                         bool in_process = false) {
    net::Heartbeat beat;
    beat.node = name_;
    beat.gpus = gpus_;
    beat.gpu_model = "G2";
    beat.memory_mib = memory_mib;  // 0: not said
    beat.node_epoch = node_epoch_;
    beat.gpu_links = links;
    if (sm_pct >= 0) {
      for (int g = 0; g < gpus_; ++g) {
        net::GpuFigure f;
        f.index = g;
        f.sample_ms = now_ms;
        f.util_pct = sm_pct;
        f.mem_used_mib = 100;
        f.mem_total_mib = 80000;
        f.job_sm = job_sm;
        f.healthy = unhealthy_reason.empty();
        f.health_reason = unhealthy_reason;
        beat.figures.push_back(f);
      }
    }
    for (const auto& [id, job] : jobs_) {
      net::ReportedJob r;
      r.id = id;
      r.epoch = job.epoch;
      r.state = job.ended ? net::ReportedJob::State::kExited : net::ReportedJob::State::kRunning;
      r.exit_code = job.exit_code;
      r.stopped = job.stopped;
      r.pid = 100 + id;
      r.rank = job.rank;
      if (auto l = logs_.find(id); l != logs_.end()) {
        r.log_size = static_cast<int64_t>(l->second.text.size());
        if (l->second.acked < r.log_size) {
          r.log_from = l->second.acked;
          r.log_data = l->second.text.substr(static_cast<std::size_t>(l->second.acked));
        }
      }
      beat.jobs.push_back(r);
    }
    auto reply = ctl.Heartbeat(beat, now_ms, in_process);
    if (!reply) return reply;
    node_epoch_ = reply.value().node_epoch;
    for (const net::LogAck& ack : reply.value().logs) {
      if (auto l = logs_.find(ack.id); l != logs_.end()) {
        l->second.acked = ack.size;
        l->second.held_back = ack.held_back;
      }
    }
    std::map<int64_t, Job> listed;
    for (const net::Assignment& a : reply.value().assignments) {
      auto held = jobs_.find(a.id);
      Job job = held != jobs_.end() && held->second.epoch == a.epoch ? held->second : Job{a.epoch};
      if (a.stop && !job.ended) job = Job{a.epoch, true, true, 143};
      job.rank = a.rank;
      listed[a.id] = job;
    }
    jobs_ = std::move(listed);
    return reply;
  }
  // The job ends with `code` (reported at the next beat).
  void End(int64_t id, int code) {
    jobs_.at(id) = Job{jobs_.at(id).epoch, true, false, code, jobs_.at(id).rank};
  }
  // Job `id`'s log grows by `text` (sent from the last acknowledged offset at each beat).
  void Log(int64_t id, const std::string& text) { logs_[id].text += text; }
  // Bytes of job `id`'s log the controller acknowledged.
  int64_t LogAcked(int64_t id) const { return logs_.count(id) ? logs_.at(id).acked : 0; }
  // Whether the controller's last ack of job `id`'s log said it held the chunk back.
  bool LogHeldBack(int64_t id) const { return logs_.count(id) && logs_.at(id).held_back; }
  bool Runs(int64_t id) const { return jobs_.count(id) > 0 && !jobs_.at(id).ended; }
  bool Holds(int64_t id) const { return jobs_.count(id) > 0; }
  // Reports (job, epoch) as running, as an agent still holding an older placement would.
  void Pretend(int64_t id, int64_t epoch) { jobs_[id] = Job{epoch}; }
  core::GpuLinks links;  // sent with each beat (empty: none)
  double sm_pct = -1;     // every GPU's SM utilization sent with each beat (-1: no figures)
  std::string unhealthy_reason;  // with figures: every GPU unhealthy for this reason ("": healthy)
  std::vector<std::pair<int64_t, double>> job_sm;  // per-job SM sent with each GPU's figure
  int64_t memory_mib = 0;                          // the node's memory it reports (0: none)

 private:
  struct Job {
    int64_t epoch = 0;
    bool ended = false;
    bool stopped = false;
    int exit_code = 0;
    int rank = 0;  // which of the job's nodes this is
  };
  std::string name_;
  int gpus_;
  int64_t node_epoch_ = 0;
  std::map<int64_t, Job> jobs_;
  struct JobLog {
    std::string text;
    int64_t acked = 0;
    bool held_back = false;
  };
  std::map<int64_t, JobLog> logs_;
};

}  // namespace gpufleet::controller
