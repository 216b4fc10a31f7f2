#pragma once
// `EventHub`: the live stream of `GET /v1/events` (Server-Sent Events). The controller tells it
// of job, node and log changes (ControllerEvents: it only records them, under the controller's
// lock); its own thread turns them into events (job and log changes within `kTick`, node
// reports about once a second), and sends each open stream
// what its viewer may see: an admin everything, a user their own jobs and logs and every node
// with other users' jobs unnamed. A node reporting many times within a tick is one event; with
// no stream open, nothing is built. A `: ping` comment every `kPing` keeps idle streams open
// through proxies and finds departed clients. At each ping every stream's credential is looked up
// again: a stream whose token was revoked, whose user was removed or whose admin right was taken
// away, or whose dashboard session ended, is closed, as its next request would be refused: within
// a tick of RecheckCredentials (which this controller's admin routes call at each revocation and
// removal), at once at a logout, and within kPing otherwise (a revocation made through another
// controller of the fleet).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "controller/controller.h"
#include "controller/ui_sessions.h"
#include "net/event_stream.h"
#include "store/store.h"

namespace gpufleet::controller {

class EventHub final : public ControllerEvents {
 public:
  static constexpr std::chrono::milliseconds kTick{250};
  static constexpr std::chrono::seconds kPing{15};
  static constexpr std::size_t kMaxStreams = 2000;
  // One user's open streams at most: their oldest closes for a new one, so that no user can take
  // every stream and lock the others' dashboards out (a tab reconnects by itself).
  static constexpr std::size_t kMaxStreamsPerUser = 64;

  // Registers with `controller` (SetEvents) and starts the thread. `sessions`: the dashboard's,
  // whose streams end with their session (null: none).
  explicit EventHub(Controller& controller, UiSessions* sessions = nullptr);
  // Unregisters, stops the thread and closes every stream.
  ~EventHub() override;
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // A new stream for `viewer`, who authenticated with the token whose SHA-256 is
  // `credential_sha256`, through the dashboard session `session_key` (UiSessions::KeyOf; "": a
  // bearer token); null when kMaxStreams are open. The viewer's oldest stream is closed when they
  // already have kMaxStreamsPerUser. A stream whose credential ends (`expires_ms`, wall-clock
  // ms; 0: never) is closed within a second of its end.
  std::shared_ptr<net::EventStream> Subscribe(const store::UserRecord& viewer,
                                              const std::string& credential_sha256,
                                              const std::string& session_key = "",
                                              int64_t expires_ms = 0);
  // Closes the streams opened through session `session_key` at once (its logout).
  void CloseSession(const std::string& session_key);
  // Looks every stream's credential up again within a tick, on the hub's thread: a credential was
  // revoked or a user removed. Returns at once.
  void RecheckCredentials();
  std::size_t streams() const;

  void JobChanged(int64_t id, store::JobState state, int64_t time_ms) override;
  void NodeReported(const std::string& name) override;
  void LogGrew(int64_t id, int64_t size) override;

 private:
  struct Subscriber {
    std::shared_ptr<net::EventStream> stream;
    store::UserRecord viewer;
    std::string credential_sha256;
    std::string session_key;  // "": opened with a bearer token
    int64_t expires_ms = 0;   // its credential's end (0: none)
  };
  // Closes the streams whose credential no longer stands for their viewer, or whose dashboard
  // session ended or expired (store errors spare them: the next ping looks again).
  void CloseRevoked();
  struct JobChange {
    int64_t id;
    store::JobState state;
    int64_t time_ms;
  };
  void Loop();
  void Publish(std::vector<JobChange> jobs, std::set<std::string> nodes,
               std::vector<std::pair<int64_t, int64_t>> logs, bool ping);

  Controller& controller_;
  UiSessions* sessions_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool recheck_ = false;  // RecheckCredentials asked for a look before the next ping
  std::vector<Subscriber> subscribers_;
  std::vector<JobChange> jobs_;
  std::set<std::string> nodes_;
  std::vector<std::pair<int64_t, int64_t>> logs_;  // (job, size)
  std::thread thread_;
};

}  // namespace gpufleet::controller
