#include "controller/autoscaler.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "controller/auth.h"
#include "core/gpu_catalog.h"
#include "sched/policy_registry.h"

namespace gpufleet::controller {
namespace {

constexpr int64_t kFirstBackoffMs = 30'000;
constexpr int64_t kMaxBackoffMs = 10 * 60'000;
constexpr size_t kEventsKept = 100;

// `gf-<group>-<8 hex digits>`: chosen before the provider is asked, unique by chance (2^32 per
// group), and valid as a node, host and instance name.
std::string NewInstanceName(const std::string& group) {
  std::random_device rd;
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(rd()));
  return "gf-" + group + "-" + hex;
}

// Whether `name` is `gf-<group>-<8 hex digits>` (NewInstanceName) for a group of `config`.
bool IsInstanceNameOf(const scale::AutoscaleConfig& config, const std::string& name) {
  for (const scale::NodeGroup& g : config.groups) {
    const std::string prefix = "gf-" + g.name + "-";
    if (name.size() == prefix.size() + 8 && name.rfind(prefix, 0) == 0 &&
        name.find_first_not_of("0123456789abcdef", prefix.size()) == std::string::npos) {
      return true;
    }
  }
  return false;
}

int64_t BackoffMs(int failures) {
  int64_t ms = kFirstBackoffMs;
  for (int i = 1; i < failures && ms < kMaxBackoffMs; ++i) ms *= 2;
  return std::min(ms, kMaxBackoffMs);
}

}  // namespace

Autoscaler::Autoscaler(store::Store& store, Controller& controller,
                       std::unique_ptr<cloud::Provider> provider, AutoscalerOptions options)
    : store_(store),
      controller_(controller),
      provider_(std::move(provider)),
      options_(std::move(options)),
      // The estimate packs as the scheduler's default placement does.
      placement_(sched::MakePlacementPolicy(controller.options().placement_policy)) {
  if (!placement_) placement_ = sched::MakePlacementPolicy("bestfit");
  status_.provider = std::string(provider_->Kind());
  for (const scale::NodeGroup& g : options_.config.groups) {
    GroupStatus gs;
    gs.name = g.name;
    status_.groups.push_back(gs);
  }
  spot_out_until_ms_.assign(options_.config.groups.size(), 0);
}

Autoscaler::~Autoscaler() { Stop(); }

int64_t Autoscaler::Now() const { return options_.clock ? options_.clock() : NowMs(); }

void Autoscaler::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Autoscaler::Stop() {
  stopping_ = true;
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Autoscaler::Loop() {
  const auto interval = std::chrono::seconds(options_.config.policy.scan_interval_s);
  std::unique_lock<std::mutex> lock(wake_mutex_);
  while (!stop_) {
    lock.unlock();
    RunOnce(Now());
    lock.lock();
    wake_.wait_for(lock, interval, [this] { return stop_; });
  }
}

void Autoscaler::EventLocked(int64_t now_ms, const std::string& what, const std::string& detail) {
  status_.events.push_back({now_ms, what, detail});
  while (status_.events.size() > kEventsKept) status_.events.pop_front();
  (void)store_.Audit(0, "autoscaler", what, detail, now_ms);
}

void Autoscaler::Fail(int group, bool spot, const std::string& what, const std::string& error,
                      int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++status_.provider_errors;
  std::string detail = error;
  if (group >= 0) {
    GroupStatus& gs = status_.groups[group];
    ++gs.failures;
    const int64_t wait = BackoffMs(gs.failures);
    gs.backoff_until_ms = now_ms + wait;
    gs.last_error = error;
    if (spot) spot_out_until_ms_[group] = now_ms + wait;
    detail += "; group " + gs.name + " backs off for " + std::to_string(wait / 1000) + " s" +
              (spot ? " (its spot capacity counts as unavailable meanwhile)" : "");
  } else {
    const int64_t wait = BackoffMs(++list_failures_);
    list_backoff_until_ms_ = now_ms + wait;
    detail += "; the next pass in " + std::to_string(wait / 1000) + " s";
  }
  EventLocked(now_ms, what + " failed", detail);
}

bool Autoscaler::Put(store::ScaleNodeRecord record, int64_t now_ms) {
  record.updated_ms = now_ms;
  auto r = store_.PutScaleNode(record);
  if (!r) {
    std::lock_guard<std::mutex> lock(mutex_);
    EventLocked(now_ms, "store error", "node " + record.name + ": " + r.error());
    return false;
  }
  return true;
}

bool Autoscaler::Reconcile(int64_t now_ms, const Controller::ScaleView& view) {
  auto listed = provider_->List();
  if (!listed) {
    Fail(-1, false, "provider list", listed.error(), now_ms);
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    list_failures_ = 0;
  }
  auto records = store_.ScaleNodes();
  if (!records) {
    std::lock_guard<std::mutex> lock(mutex_);
    EventLocked(now_ms, "store error", records.error());
    return false;
  }
  std::map<std::string, const cloud::Instance*> instances;
  for (const cloud::Instance& i : listed.value()) instances[i.name] = &i;
  std::map<std::string, int> node_index;
  for (size_t k = 0; k < view.names.size(); ++k) node_index[view.names[k]] = static_cast<int>(k);
  const scale::AutoscaleConfig& config = options_.config;
  std::erase_if(evacuation_retrying_, [&](const std::string& name) {  // records gone since
    return std::none_of(records.value().begin(), records.value().end(),
                        [&](const store::ScaleNodeRecord& r) { return r.name == name; });
  });
  for (store::ScaleNodeRecord rec : records.value()) {
    auto inst = instances.find(rec.name);
    const bool present = inst != instances.end();
    const cloud::Instance* listed_as = present ? inst->second : nullptr;
    if (present) instances.erase(inst);  // what is left after the loop are orphans
    const int g = config.FindGroup(rec.group);
    if (rec.state == "retiring") {  // a delete that failed or was cut short: again
      RetireNode(rec, now_ms);
      continue;
    }
    if (!present) {
      if (rec.state == "creating" &&
          now_ms - rec.updated_ms <= config.provider.timeout_s * 1000 + 5000) {
        continue;  // a create may still be on its way (the provider's timeout has not passed)
      }
      // A node missing from one list may be the provider's list lagging (clouds list new
      // instances late): dropping its record at once made it an orphan, deleted with its jobs
      // at the next list that showed it. It is dropped only once missing for kMissingGraceMs.
      if (rec.state != "creating") {
        const int64_t since = missing_since_ms_.emplace(rec.name, now_ms).first->second;
        if (now_ms - since < kMissingGraceMs) continue;
      }
      missing_since_ms_.erase(rec.name);
      (void)store_.DeleteScaleNode(rec.name);
      (void)store_.RevokeNodeTokens(rec.name);  // every join token made for its name
      std::lock_guard<std::mutex> lock(mutex_);
      EventLocked(now_ms, rec.state == "creating" ? "create never completed" : "instance gone",
                  "node " + rec.name + " (" + rec.state +
                      ") is not in the provider's list; its record is dropped");
      continue;
    }
    missing_since_ms_.erase(rec.name);
    const cloud::Instance& i = *listed_as;
    auto at = node_index.find(rec.name);
    const bool joined = at != node_index.end() && view.alive[at->second];
    if (rec.state == "creating") {  // the create went (part of the way) through: adopt it
      rec.state = "booting";
      Put(rec, now_ms);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        EventLocked(now_ms, "adopted", "node " + rec.name + " was created before a restart");
      }
      // The create may have been cut short after the instance appeared but before it was
      // launched: asking again (idempotent by name) finishes it.
      if (!joined && g >= 0 && !FinishCreate(rec, g, now_ms)) continue;
    }
    if (rec.state == "booting" && joined) {
      rec.state = "ready";
      rec.detail.clear();
      Put(rec, now_ms);
      std::lock_guard<std::mutex> lock(mutex_);
      if (g >= 0) {  // a node of its group works: its back-off starts afresh
        status_.groups[g].failures = 0;
        status_.groups[g].last_error.clear();
      }
      EventLocked(now_ms, "joined", "node " + rec.name + " of group " + rec.group);
    }
    // A node whose agent went silent (the controller's lease already lost it and requeued its
    // restartable jobs) is given the join timeout to come back, then deleted: it costs money.
    // Draining and interrupted nodes too: they wait for an agent that may never beat again.
    if ((rec.state == "ready" || rec.state == "draining" || rec.state == "interrupted") &&
        !joined) {
      const int64_t since = silent_since_ms_.emplace(rec.name, now_ms).first->second;
      if (now_ms - since > options_.join_timeout_ms) {
        silent_since_ms_.erase(rec.name);
        if (rec.state == "ready") {
          GiveUp(rec, g, "agent of " + rec.name, "agent silent", now_ms);
        } else {
          // On its way out already (scaled down, or reclaimed by the provider): not a failure of
          // its group, whose growth must not back off for it.
          {
            std::lock_guard<std::mutex> lock(mutex_);
            EventLocked(now_ms, "agent silent",
                        "node " + rec.name + " (" + rec.state + "): deleting it");
          }
          rec.state = "retiring";
          rec.detail = "agent silent";
          Put(rec, now_ms);
          RetireNode(rec, now_ms);
        }
        continue;
      }
    } else {
      silent_since_ms_.erase(rec.name);
    }
    if (rec.state == "booting" && g >= 0 &&
        now_ms - rec.created_ms > config.groups[g].boot_s * 1000 + options_.join_timeout_ms) {
      GiveUp(rec, g, "join of " + rec.name, "did not join", now_ms);
      continue;
    }
    if (i.interruption_at_s > 0 && rec.state != "interrupted") {
      auto moved = controller_.Evacuate(rec.name, "spot interruption notice: the provider takes "
                                                  "the node at " +
                                                      std::to_string(i.interruption_at_s));
      if (!moved && moved.failure().code == core::ErrorCode::kUnavailable) {
        // Not recorded: the node stays as it is, so the next tick tries again (said once).
        if (evacuation_retrying_.insert(rec.name).second) {
          std::lock_guard<std::mutex> lock(mutex_);
          EventLocked(now_ms, "spot interruption",
                      "node " + rec.name + ": " + moved.error() + "; trying again");
        }
        continue;
      }
      evacuation_retrying_.erase(rec.name);
      rec.state = "interrupted";
      rec.detail = "spot notice for " + std::to_string(i.interruption_at_s);
      Put(rec, now_ms);
      std::lock_guard<std::mutex> lock(mutex_);
      ++status_.interruptions;
      EventLocked(now_ms, "spot interruption",
                  "node " + rec.name + ": " +
                      (moved ? std::to_string(moved.value()) + " restartable job(s) requeued"
                             : moved.error()));
    } else if ((rec.state == "interrupted" || rec.state == "draining") && joined &&
               view.idle_since_ms[at->second] >= 0) {
      RetireNode(rec, now_ms);  // empty now: no need to wait for the unneeded time
    }
  }
  std::erase_if(orphan_since_ms_,
                [&instances](const auto& o) { return !instances.contains(o.first); });
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(strangers_,
                  [&instances](const std::string& n) { return !instances.contains(n); });
  }
  for (const auto& [name, inst] : instances) {  // never recorded, or given up on: orphans
    if (!IsInstanceNameOf(options_.config, name)) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (strangers_.insert(name).second) {
        EventLocked(now_ms, "instance left alone",
                    "instance " + name +
                        " has no record and no name this fleet's groups "
                        "give (gf-<group>-<8 hex>): another fleet's? (check the provider's tags)");
      }
      continue;
    }
    const int64_t since = orphan_since_ms_.try_emplace(name, now_ms).first->second;
    if (now_ms - since < kMissingGraceMs) continue;  // a record may be on its way
    if (!MayAct()) return false;
    auto deleted = provider_->Delete(name);
    std::lock_guard<std::mutex> lock(mutex_);
    if (deleted) {
      orphan_since_ms_.erase(name);
      ++status_.orphans_deleted;
      EventLocked(now_ms, "orphan deleted",
                  "instance " + name + " had no record for " +
                      std::to_string(kMissingGraceMs / 1000) + " s");
    } else {
      ++status_.provider_errors;
      EventLocked(now_ms, "orphan delete failed", "instance " + name + ": " + deleted.error());
    }
  }
  return true;
}

void Autoscaler::GiveUp(store::ScaleNodeRecord rec, int group, const std::string& what,
                        const std::string& why, int64_t now_ms) {
  Fail(group, rec.spot, what,
       why + " within " + std::to_string(options_.join_timeout_ms / 1000) + " s; deleting it",
       now_ms);
  rec.state = "retiring";
  rec.detail = why;
  Put(rec, now_ms);
  RetireNode(rec, now_ms);
}

bool Autoscaler::FinishCreate(store::ScaleNodeRecord& rec, int group, int64_t now_ms) {
  const scale::NodeGroup& g = options_.config.groups[group];
  auto grant = MakeJoinGrant(rec.name, g, now_ms);
  if (!grant) {
    Fail(group, rec.spot, "create " + rec.name + " again", grant.error(), now_ms);
    return false;
  }
  if (auto added = store_.AddToken(grant.value().token); !added) {
    Fail(group, rec.spot, "create " + rec.name + " again", "join token: " + added.error(),
         now_ms);
    return false;
  }
  // The earlier join token stays valid (an agent launched before the restart may hold it): a
  // join spends one, and retiring the node revokes every credential it has.
  rec.join_token_id = store::TokenId(grant.value().token.sha256);
  Put(rec, now_ms);
  if (!MayAct()) return false;
  if (auto created = provider_->Create(g, rec.name, rec.spot, grant.value().join); !created) {
    Fail(group, rec.spot, "create " + rec.name + " again", created.error(), now_ms);
    return false;  // still "booting": it joins, or the join timeout gives it up
  }
  return true;
}

core::Result<Autoscaler::JoinGrant> Autoscaler::MakeJoinGrant(const std::string& name,
                                                              const scale::NodeGroup& g,
                                                              int64_t now_ms) const {
  auto secret = NewToken();
  if (!secret) return secret.failure();
  JoinGrant grant;
  grant.token.sha256 = Sha256Hex(secret.value());
  grant.token.kind = store::TokenKind::kJoin;
  grant.token.node = name;  // good for this node name only
  grant.token.created_ms = now_ms;
  grant.token.expires_ms = now_ms + g.boot_s * 1000 + options_.join_timeout_ms;
  grant.token.created_by = "autoscaler";
  grant.join.controller_url = options_.controller_url;
  grant.join.join_token =
      secret.value() + (options_.ca_sha256.empty() ? std::string() : "." + options_.ca_sha256);
  grant.join.ca_file = options_.ca_file;
  return grant;
}

void Autoscaler::CreateNode(int group, bool spot, int64_t now_ms) {
  const scale::NodeGroup& g = options_.config.groups[group];
  const std::string name = NewInstanceName(g.name);
  auto grant = MakeJoinGrant(name, g, now_ms);
  if (!grant) {
    Fail(group, spot, "create " + name, grant.error(), now_ms);
    return;
  }
  store::ScaleNodeRecord rec;
  rec.name = name;
  rec.group = g.name;
  rec.spot = spot;
  rec.state = "creating";
  rec.created_ms = now_ms;
  rec.join_token_id = store::TokenId(grant.value().token.sha256);
  // The record first: whatever happens after, a restarted controller knows this name.
  if (!Put(rec, now_ms)) return;
  if (auto added = store_.AddToken(grant.value().token); !added) {
    (void)store_.DeleteScaleNode(name);
    Fail(group, spot, "create " + name, "join token: " + added.error(), now_ms);
    return;
  }
  if (!MayAct()) return;  // the record stays "creating": the next leader finds no instance
  auto created = provider_->Create(g, name, spot, grant.value().join);
  if (!created) {
    Fail(group, spot, std::string("create ") + (spot ? "spot " : "") + name, created.error(),
         now_ms);
    (void)provider_->Delete(name);  // whatever part of it may exist
    (void)store_.DeleteScaleNode(name);
    (void)store_.RevokeToken(rec.join_token_id);
    return;
  }
  // The event first, then the record's new state: a controller killed in between still finds
  // the record "creating" and logs the node adopted, so the audit log names every node bought.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++status_.created;  // (its group's failures are forgiven once a node of it joins)
    EventLocked(now_ms, "created",
                "node " + name + " of group " + g.name + (spot ? " (spot)" : " (on-demand)"));
  }
  rec.state = "booting";
  Put(rec, Now());
}

void Autoscaler::RetireNode(const store::ScaleNodeRecord& record, int64_t now_ms) {
  store::ScaleNodeRecord rec = record;
  if (rec.state != "retiring") {
    auto begun = controller_.BeginRetire(rec.name);
    if (begun && !begun.value()) return;  // a job started there meanwhile: keep it
    // Not known to the controller (never joined): nothing to drain.
    rec.state = "retiring";
    if (rec.detail.empty()) rec.detail = "idle past the unneeded time";
    if (!Put(rec, now_ms)) {
      controller_.AbortRetire(rec.name);
      return;
    }
  }
  const int g = options_.config.FindGroup(rec.group);
  if (!MayAct()) return;  // still "retiring": the leader deletes it
  auto deleted = provider_->Delete(rec.name);
  if (!deleted) {
    Fail(g, false, "delete " + rec.name, deleted.error(), now_ms);
    return;  // still "retiring": the next pass tries again
  }
  controller_.FinishRetire(rec.name, now_ms);
  (void)store_.DeleteScaleNode(rec.name);
  // Every join token made for its name (a re-issued create makes a second one); FinishRetire
  // revoked nothing if the node never joined.
  (void)store_.RevokeNodeTokens(rec.name);
  std::lock_guard<std::mutex> lock(mutex_);
  ++status_.retired;
  EventLocked(now_ms, "retired", "node " + rec.name + " of group " + rec.group + ": " + rec.detail);
}

bool Autoscaler::MayAct() const {
  return !stopping_.load() && (!options_.may_act || options_.may_act());
}

namespace {

std::string ModelNameOf(core::ModelId id) {
  const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
  return static_cast<int>(id) < catalog.size() ? catalog.model(id).name : "?";
}

}  // namespace

std::vector<scale::NodeGroup> Autoscaler::EffectiveGroupsLocked(
    const Controller::ScaleView& view, const std::map<std::string, int>& node_index,
    const std::vector<store::ScaleNodeRecord>& records, int64_t now_ms) {
  const scale::AutoscaleConfig& config = options_.config;
  // Per group, the largest of its alive joined nodes (one degraded node, a GPU off the bus,
  // does not shrink the group) and whether they all have one GPU model.
  struct Joined {
    bool any = false;
    core::NodeSpec largest;
    std::string example;  // a node's name, for the event
    bool one_model = true;
  };
  std::vector<Joined> joined(config.groups.size());
  for (const store::ScaleNodeRecord& rec : records) {
    const int g = config.FindGroup(rec.group);
    if (g < 0 || rec.state != "ready") continue;
    const auto at = node_index.find(rec.name);
    if (at == node_index.end() || !view.alive[at->second]) continue;
    const core::NodeSpec& spec = view.cluster.spec(at->second);
    Joined& j = joined[static_cast<std::size_t>(g)];
    if (!j.any) {
      j.any = true;
      j.largest = spec;
      j.example = rec.name;
      continue;
    }
    j.one_model = j.one_model && spec.model == j.largest.model;
    if (spec.num_gpus > j.largest.num_gpus) j.example = rec.name;
    j.largest.cpu_milli = std::max(j.largest.cpu_milli, spec.cpu_milli);
    j.largest.memory_mib = std::max(j.largest.memory_mib, spec.memory_mib);
    j.largest.num_gpus = std::max(j.largest.num_gpus, spec.num_gpus);
  }
  std::vector<scale::NodeGroup> groups = config.groups;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const Joined& j = joined[g];
    if (!j.any) continue;
    const scale::NodeGroup& said = config.groups[g];
    scale::NodeGroup& eff = groups[g];
    // 0 in the config: no size said (any job's ask fits there).
    const auto least = [](int64_t configured, int64_t node) {
      return configured > 0 ? std::min(configured, node) : configured;
    };
    eff.cpu_milli = least(said.cpu_milli, j.largest.cpu_milli);
    eff.memory_mib = least(said.memory_mib, j.largest.memory_mib);
    eff.gpus = std::min(said.gpus, j.largest.num_gpus);
    if (j.one_model && j.largest.num_gpus > 0) eff.model = j.largest.model;
    const bool smaller = eff.cpu_milli < said.cpu_milli || eff.memory_mib < said.memory_mib ||
                         eff.gpus < said.gpus || eff.model != said.model;
    if (smaller && undersized_groups_.insert(static_cast<int>(g)).second) {
      EventLocked(now_ms, "group smaller than configured",
                  "group " + said.name + ": its largest node (" + j.example + ") has " +
                      std::to_string(eff.gpus) + " GPUs (" + ModelNameOf(eff.model) + "), " +
                      std::to_string(j.largest.cpu_milli / 1000) + " CPUs and " +
                      std::to_string(j.largest.memory_mib >> 10) + " GiB; the config says " +
                      std::to_string(said.gpus) + " (" + said.model_name + "), " +
                      std::to_string(said.cpu_milli / 1000) + " and " +
                      std::to_string(said.memory_mib >> 10) +
                      ": the group is planned as its nodes are (fix its size in the config)");
    }
  }
  return groups;
}

void Autoscaler::RunOnce(int64_t now_ms) {
  if (!MayAct()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (now_ms < list_backoff_until_ms_) return;  // the provider failed lately
    ++status_.passes;
    status_.last_pass_ms = now_ms;
  }
  Controller::ScaleView view = controller_.ScaleSnapshot(now_ms);
  if (!Reconcile(now_ms, view)) return;
  auto records = store_.ScaleNodes();
  if (!records) return;
  const scale::AutoscaleConfig& config = options_.config;
  std::map<std::string, int> node_index;
  for (size_t k = 0; k < view.names.size(); ++k) node_index[view.names[k]] = static_cast<int>(k);
  std::vector<scale::NodeGroup> groups;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    groups = EffectiveGroupsLocked(view, node_index, records.value(), now_ms);
  }
  scale::PlanInput in;
  in.groups = &groups;
  in.policy = config.policy;
  in.cluster = &view.cluster;
  in.now = now_ms / 1000;
  in.waiting = std::move(view.waiting);
  if (config.policy.consolidation) in.running = std::move(view.running);
  std::vector<int64_t> backoff_until(config.groups.size(), 0);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    in.spot_unavailable.assign(config.groups.size(), 0);
    for (size_t g = 0; g < config.groups.size(); ++g) {
      in.spot_unavailable[g] = spot_out_until_ms_[g] > now_ms;
      backoff_until[g] = status_.groups[g].backoff_until_ms;
    }
  }
  for (const store::ScaleNodeRecord& rec : records.value()) {
    scale::ManagedNode m;
    m.name = rec.name;
    m.group = config.FindGroup(rec.group);
    m.spot = rec.spot;
    m.leaving = rec.state == "retiring" || rec.state == "interrupted" || rec.state == "draining";
    auto at = node_index.find(rec.name);
    if (rec.state == "ready" && at != node_index.end() && view.alive[at->second]) {
      m.ready = true;
      m.cluster_index = at->second;
      const int64_t idle = view.idle_since_ms[at->second];
      m.idle_since_s = idle >= 0 ? idle / 1000 : -1;
    } else if (rec.state == "ready") {
      m.leaving = true;  // joined once, silent now: the controller's lease decides its fate
    }
    in.nodes.push_back(std::move(m));
  }
  const scale::Plan plan = scale::PlanScaling(in, *placement_, rng_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    status_.unservable = plan.unservable;
    status_.capped = plan.capped;
  }
  for (const std::string& name : plan.retire) {
    for (const store::ScaleNodeRecord& rec : records.value()) {
      if (rec.name == name) RetireNode(rec, now_ms);
    }
  }
  // Consolidation: the node's jobs (all restartable) are stopped with their grace period and
  // requeued; the next passes retire it once it is empty.
  for (const scale::Plan::Consolidation& c : plan.consolidate) {
    for (store::ScaleNodeRecord rec : records.value()) {
      if (rec.name != c.node || rec.state != "ready") continue;
      auto moved = controller_.Evacuate(
          rec.name, "consolidation: its jobs fit on other nodes; it is retired once empty");
      if (!moved) {
        std::lock_guard<std::mutex> lock(mutex_);
        EventLocked(now_ms, "consolidation failed", "node " + rec.name + ": " + moved.error());
        continue;
      }
      rec.state = "draining";
      rec.detail = "consolidation: " + std::to_string(moved.value()) + " job(s) moved";
      Put(rec, now_ms);
      std::lock_guard<std::mutex> lock(mutex_);
      ++status_.consolidations;
      EventLocked(now_ms, "consolidating", "node " + rec.name + ": " + rec.detail);
    }
  }
  for (const scale::CreateOrder& order : plan.create) {
    if (backoff_until[order.group] > now_ms) continue;  // failing lately: wait
    for (int k = 0; k < order.count; ++k) {
      // Each create at its own time (a slow provider makes a pass of many creates long: a node
      // stamped with the pass's start looked overdue for its join at once), and none once one
      // of them has failed (the group backs off).
      const int64_t at = Now();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (status_.groups[order.group].backoff_until_ms > at) break;
      }
      CreateNode(order.group, order.spot, at);
    }
  }
  // What the status shows: the records as they are now.
  auto after = store_.ScaleNodes();
  std::lock_guard<std::mutex> lock(mutex_);
  if (after) status_.nodes = after.value();
  status_.spend_per_hour = 0;
  for (GroupStatus& gs : status_.groups) gs.creating = gs.booting = gs.ready = gs.retiring = 0;
  for (const store::ScaleNodeRecord& rec : status_.nodes) {
    const int g = config.FindGroup(rec.group);
    if (g < 0) continue;
    status_.spend_per_hour += config.groups[g].Price(rec.spot);
    GroupStatus& gs = status_.groups[g];
    if (rec.state == "creating") ++gs.creating;
    if (rec.state == "booting") ++gs.booting;
    if (rec.state == "ready") ++gs.ready;
    if (rec.state == "retiring" || rec.state == "interrupted" || rec.state == "draining") {
      ++gs.retiring;
    }
  }
}

Autoscaler::Status Autoscaler::GetStatus() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

std::optional<Autoscaler::NodeInfo> Autoscaler::Managed(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const store::ScaleNodeRecord& rec : status_.nodes) {
    if (rec.name != name) continue;
    const int g = options_.config.FindGroup(rec.group);
    if (g < 0) return std::nullopt;
    return NodeInfo{rec.group, rec.spot, options_.config.groups[g].Price(rec.spot)};
  }
  return std::nullopt;
}

}  // namespace gpufleet::controller
