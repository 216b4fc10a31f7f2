#include "controller/event_hub.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "controller/fleet_json.h"

namespace gpufleet::controller {
namespace {

using nlohmann::json;

std::string Event(const char* kind, const json& data) {
  return std::string("event: ") + kind + "\ndata: " +
         data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

}  // namespace

EventHub::EventHub(Controller& controller, UiSessions* sessions)
    : controller_(controller), sessions_(sessions) {
  controller_.SetEvents(this);
  thread_ = std::thread([this] { Loop(); });
}

EventHub::~EventHub() {
  controller_.SetEvents(nullptr);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  for (Subscriber& s : subscribers_) s.stream->Close();
}

std::shared_ptr<net::EventStream> EventHub::Subscribe(const store::UserRecord& viewer,
                                                      const std::string& credential_sha256,
                                                      const std::string& session_key,
                                                      int64_t expires_ms) {
  auto stream = std::make_shared<net::EventStream>();
  // Browsers reconnect by themselves after a drop; 3 s is EventSource's usual pause.
  stream->Send("retry: 3000\n: gpufleet events for " + viewer.name + "\n\n");
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(subscribers_, [](const Subscriber& s) { return s.stream->closed(); });
  const auto own = [&](const Subscriber& s) { return s.viewer.name == viewer.name; };
  if (static_cast<std::size_t>(std::count_if(subscribers_.begin(), subscribers_.end(), own)) >=
      kMaxStreamsPerUser) {
    auto oldest = std::find_if(subscribers_.begin(), subscribers_.end(), own);
    oldest->stream->Close();
    subscribers_.erase(oldest);
  }
  if (subscribers_.size() >= kMaxStreams) return nullptr;
  subscribers_.push_back({stream, viewer, credential_sha256, session_key, expires_ms});
  return stream;
}

void EventHub::CloseSession(const std::string& session_key) {
  if (session_key.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Subscriber& s : subscribers_) {
    if (s.session_key == session_key) s.stream->Close();
  }
}

void EventHub::RecheckCredentials() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (subscribers_.empty()) return;
  recheck_ = true;
  wake_.notify_all();
}

std::size_t EventHub::streams() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return subscribers_.size();
}

void EventHub::JobChanged(int64_t id, store::JobState state, int64_t time_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (subscribers_.empty()) return;
  jobs_.push_back({id, state, time_ms});
  wake_.notify_all();
}

void EventHub::NodeReported(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (subscribers_.empty()) return;
  nodes_.insert(name);
}

void EventHub::LogGrew(int64_t id, int64_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (subscribers_.empty()) return;
  logs_.emplace_back(id, size);
  wake_.notify_all();
}

void EventHub::Loop() {
  auto last_ping = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    // Job and log changes wake the thread at once, node reports within a second; a tick then
    // gathers what else comes meanwhile.
    wake_.wait_for(lock, std::chrono::seconds(1),
                   [this] { return stop_ || recheck_ || !jobs_.empty() || !logs_.empty(); });
    if (stop_) break;
    lock.unlock();
    std::this_thread::sleep_for(kTick);
    lock.lock();
    if (stop_) break;
    std::vector<JobChange> jobs;
    std::set<std::string> nodes;
    std::vector<std::pair<int64_t, int64_t>> logs;
    jobs.swap(jobs_);
    nodes.swap(nodes_);
    logs.swap(logs_);
    const int64_t now_ms = NowMs();
    for (const Subscriber& s : subscribers_) {
      if (s.expires_ms > 0 && s.expires_ms <= now_ms) s.stream->Close();  // its token ended
    }
    std::erase_if(subscribers_, [](const Subscriber& s) { return s.stream->closed(); });
    const auto now = std::chrono::steady_clock::now();
    const bool ping = now - last_ping >= kPing;
    if (ping) last_ping = now;
    const bool recheck = ping || recheck_;
    recheck_ = false;
    if (recheck && !subscribers_.empty()) {
      lock.unlock();
      CloseRevoked();
      lock.lock();
      std::erase_if(subscribers_, [](const Subscriber& s) { return s.stream->closed(); });
    }
    if (subscribers_.empty() || (jobs.empty() && nodes.empty() && logs.empty() && !ping)) continue;
    lock.unlock();
    Publish(std::move(jobs), std::move(nodes), std::move(logs), ping);
    lock.lock();
  }
}

void EventHub::CloseRevoked() {
  std::vector<Subscriber> subscribers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    subscribers = subscribers_;
  }
  // Each credential once, however many streams it opened (each lookup may be a database read).
  std::map<std::string, std::optional<store::UserRecord>> standing;
  const int64_t now_ms = NowMs();
  for (const Subscriber& s : subscribers) {
    if (!s.session_key.empty() && sessions_ != nullptr &&
        !sessions_->Alive(s.session_key, now_ms)) {
      s.stream->Close();
      continue;
    }
    auto it = standing.find(s.credential_sha256);
    if (it == standing.end()) {
      auto credential = controller_.store().CredentialOf(s.credential_sha256, now_ms);
      if (!credential) continue;  // the store failed: the next ping looks again
      it = standing.emplace(s.credential_sha256, credential.value().user).first;
    }
    const std::optional<store::UserRecord>& user = it->second;
    if (!user || user->name != s.viewer.name || user->admin != s.viewer.admin) s.stream->Close();
  }
}

void EventHub::Publish(std::vector<JobChange> jobs, std::set<std::string> nodes,
                       std::vector<std::pair<int64_t, int64_t>> logs, bool ping) {
  std::vector<Subscriber> subscribers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    subscribers = subscribers_;
  }
  // Whose job each is, and its queue (one store read per job, once per tick).
  struct Owner {
    std::string user, queue;
  };
  std::map<int64_t, Owner> owners;
  auto owner = [&](int64_t id) -> const Owner* {
    auto it = owners.find(id);
    if (it == owners.end()) {
      auto job = controller_.store().GetJob(id);
      Owner o;
      if (job && job.value()) o = {job.value()->user, job.value()->queue};
      it = owners.emplace(id, std::move(o)).first;
    }
    return it->second.user.empty() ? nullptr : &it->second;
  };
  // What each viewer gets: the node events differ by viewer (whose job ids show).
  std::vector<NodeView> views;
  if (!nodes.empty()) {
    for (NodeView& v : controller_.Nodes()) {
      if (nodes.count(v.name) > 0) views.push_back(std::move(v));
    }
  }
  std::map<std::pair<std::string, bool>, std::string> by_viewer;
  for (const Subscriber& s : subscribers) {
    const auto key = std::make_pair(s.viewer.name, s.viewer.admin);
    auto it = by_viewer.find(key);
    if (it == by_viewer.end()) {
      std::string text;
      for (const JobChange& j : jobs) {
        const Owner* o = owner(j.id);
        if (o == nullptr || (!s.viewer.admin && o->user != s.viewer.name)) continue;
        text += Event("job", {{"id", j.id},
                              {"state", std::string(store::StateName(j.state))},
                              {"user", o->user},
                              {"queue", o->queue},
                              {"time_ms", j.time_ms}});
      }
      for (const auto& [id, size] : logs) {
        const Owner* o = owner(id);
        if (o == nullptr || (!s.viewer.admin && o->user != s.viewer.name)) continue;
        text += Event("log", {{"id", id}, {"size", size}});
      }
      for (const NodeView& v : views) text += Event("node", FleetNodeJson(v, s.viewer));
      if (ping && text.empty()) text = ": ping\n\n";
      it = by_viewer.emplace(key, std::move(text)).first;
    }
    if (!it->second.empty()) s.stream->Send(it->second);
  }
}

}  // namespace gpufleet::controller
