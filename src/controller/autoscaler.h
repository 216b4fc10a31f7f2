#pragma once
// `Autoscaler`: the controller's shell around the pure planner (scale/planner.h). On its own
// thread, every `scan_interval_s`, it reconciles its nodes with the provider's list, plans from
// the controller's view (waiting jobs, idle nodes) and carries the plan out through the provider
// (cloud/provider.h), off the controller's lock.
//
// Crash safety: every node it asks for is recorded in the store ("creating") before the provider
// is asked, under a name chosen beforehand; creating is idempotent by name. A restarted
// controller therefore finds each instance by name in the provider's list: one it recorded is
// adopted (and asked for again, with a new join token, which finishes a create that was cut
// short after the instance appeared), one it did not (or gave up on) is deleted as an orphan, and a record whose instance
// never appeared is dropped once the provider's timeout has passed. The spend cap counts every
// recorded node, booting ones included.
//
// Failures: a provider call that fails or times out is an event (the store's audit log, by
// "autoscaler", and `Status`), counts in the metrics, and backs its group off (30 s, doubling
// to 10 min); a failed spot request makes that group's spot capacity unavailable for as long,
// so restartable jobs wait for it until their fallback wait, then take on-demand nodes. No job
// is touched by a provider failure: it stays queued.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cloud/provider.h"
#include "controller/controller.h"
#include "scale/autoscale_config.h"
#include "store/store.h"

namespace gpufleet::controller {

struct AutoscalerOptions {
  scale::AutoscaleConfig config;
  std::string controller_url;  // what new instances' agents join
  std::string ca_file;         // given to them ("" : plain http)
  std::string ca_sha256;       // pinned by their join token ("" : plain http)
  // A booting instance whose agent has not joined this long after its boot time is deleted.
  int64_t join_timeout_ms = 10 * 60'000;
  std::function<int64_t()> clock;  // empty: the system clock (tests drive RunOnce)
  // Whether this controller still leads (empty: always). Checked at the start of each pass and
  // right before each call that buys or deletes an instance: a controller whose lease ran out
  // does neither (its store writes are fenced, but the provider's API is not).
  std::function<bool()> may_act;
};

class Autoscaler {
 public:
  Autoscaler(store::Store& store, Controller& controller, std::unique_ptr<cloud::Provider> provider,
             AutoscalerOptions options);
  ~Autoscaler();
  Autoscaler(const Autoscaler&) = delete;
  Autoscaler& operator=(const Autoscaler&) = delete;

  void Start();  // the scanning thread
  void Stop();
  // One pass on the caller's thread: reconcile, plan, act.
  void RunOnce(int64_t now_ms);

  struct Event {
    int64_t time_ms = 0;
    std::string what;
    std::string detail;
  };
  struct GroupStatus {
    std::string name;
    int creating = 0, booting = 0, ready = 0, retiring = 0;
    int64_t backoff_until_ms = 0;
    int failures = 0;
    std::string last_error;
  };
  struct Status {
    std::string provider;
    int64_t passes = 0;
    int64_t last_pass_ms = 0;
    double spend_per_hour = 0;  // of every recorded node
    int64_t created = 0, retired = 0, orphans_deleted = 0, provider_errors = 0, interruptions = 0;
    int64_t consolidations = 0;  // nodes emptied to be retired (their jobs fit elsewhere)
    std::vector<GroupStatus> groups;
    std::vector<store::ScaleNodeRecord> nodes;
    std::vector<std::pair<int64_t, std::string>> unservable;  // job, why
    std::vector<int64_t> capped;                              // jobs waiting on max or the cap
    std::deque<Event> events;                                 // the latest, oldest first
  };
  Status GetStatus() const;
  const scale::AutoscaleConfig& config() const { return options_.config; }
  // Node `name`'s group and price per hour when the autoscaler holds it.
  struct NodeInfo {
    std::string group;
    bool spot = false;
    double price_per_hour = 0;
  };
  std::optional<NodeInfo> Managed(const std::string& name) const;

 private:
  bool MayAct() const;  // options_.may_act, or true
  int64_t Now() const;
  void Loop();
  void EventLocked(int64_t now_ms, const std::string& what, const std::string& detail);
  void Fail(int group, bool spot, const std::string& what, const std::string& error, int64_t now_ms);
  // Brings the store's records and the provider's instances into agreement; false when the
  // provider could not be listed (nothing else is done this pass).
  bool Reconcile(int64_t now_ms, const Controller::ScaleView& view);
  void CreateNode(int group, bool spot, int64_t now_ms);
  // A new join token for node `name` (not yet stored) and what its instance is given.
  struct JoinGrant {
    store::TokenRecord token;
    cloud::JoinInfo join;
  };
  core::Result<JoinGrant> MakeJoinGrant(const std::string& name, const scale::NodeGroup& g,
                                        int64_t now_ms) const;
  // Asks the provider again for adopted node `rec` (creating is idempotent by name), with a new
  // join token, so that a create cut short by a restart is finished; false (after an event and
  // a backoff) when that failed. `rec` records the new token.
  bool FinishCreate(store::ScaleNodeRecord& rec, int group, int64_t now_ms);
  void RetireNode(const store::ScaleNodeRecord& record, int64_t now_ms);
  // A node that did not join, or whose agent fell silent, past the join timeout: an event, a
  // backoff for its group, and its deletion (it costs money and serves nothing).
  void GiveUp(store::ScaleNodeRecord record, int group, const std::string& what,
              const std::string& why, int64_t now_ms);
  bool Put(store::ScaleNodeRecord record, int64_t now_ms);

  store::Store& store_;
  Controller& controller_;
  std::unique_ptr<cloud::Provider> provider_;
  AutoscalerOptions options_;
  std::unique_ptr<sched::PlacementPolicy> placement_;
  core::Rng rng_{7};

  mutable std::mutex mutex_;  // guards status_ and the backoffs; never held over a provider call
  Status status_;
  std::vector<int64_t> spot_out_until_ms_;  // by group
  std::map<std::string, int64_t> silent_since_ms_;  // nodes whose agent is not alive
  // Records of nodes the provider's list no longer shows, since when (Reconcile).
  std::map<std::string, int64_t> missing_since_ms_;
  static constexpr int64_t kMissingGraceMs = 120'000;
  // Listed instances without a record, since when: deleted as orphans only once listed so for
  // kMissingGraceMs, and only under a name this fleet's groups would give (NewInstanceName),
  // so that another fleet's instances in the same account, or a record written by another
  // controller a moment ago, are never deleted. `strangers_` are the others, said once each.
  std::map<std::string, int64_t> orphan_since_ms_;
  std::set<std::string> strangers_;
  std::set<std::string> evacuation_retrying_;  // spot-noticed nodes whose evacuation failed
  // Groups whose joined nodes were found smaller than the config says (said once each).
  std::set<int> undersized_groups_;
  // `config`'s groups as their joined nodes are: each size the least of the config's and every
  // alive joined node's of the group (an instance type's usable memory, CPUs the kernel keeps),
  // its GPU model theirs. Planned on the config's sizes, a job only they would hold was
  // served by node after node that could not hold it, each retired idle later, until the cap.
  // `node_index`: each node's index in `view` by name.
  std::vector<scale::NodeGroup> EffectiveGroupsLocked(
      const Controller::ScaleView& view, const std::map<std::string, int>& node_index,
      const std::vector<store::ScaleNodeRecord>& records, int64_t now_ms);
  int list_failures_ = 0;                    // the provider's list, failing in a row
  int64_t list_backoff_until_ms_ = 0;

  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  // Set by Stop before it waits for the pass: MayAct says no from then on, so a pass of many
  // slow provider calls ends after the one in flight, and the controller's lease (which a
  // standby waits for) is given up without waiting for the rest.
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace gpufleet::controller
