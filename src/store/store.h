#pragma once
// `Store`: the controller's durable state. Jobs and their state machine, an event (audit) log,
// users with hashed API tokens. Every write is one transaction: `SubmitJob` returns only after
// the job is committed, so an acknowledged submit survives any crash. The interface speaks only
// in core types and plain records, so that a PostgreSQL implementation can stand beside SQLite.
//
// Job states: PENDING -> SCHEDULED -> RUNNING -> SUCCEEDED | FAILED; CANCELLED from any live
// state; PREEMPTED and LOST from SCHEDULED or RUNNING, and back to PENDING when requeued.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/container.h"
#include "core/host_usage.h"
#include "core/job_state.h"
#include "core/result.h"

namespace gpufleet::store {

// The job state machine lives in core/job_state.h; the store's names for it:
using core::IsTerminal;
using core::JobState;
using core::ParseState;
using core::StateName;
using core::TransitionAllowed;

// One rank of a placed job: its node and the GPUs it holds there.
struct RankPlacement {
  std::string node;
  std::vector<int> gpus;
  bool operator==(const RankPlacement&) const = default;
};

struct JobRecord {
  int64_t id = 0;
  std::string user;
  std::string name;
  std::string queue = "default";
  int priority = 0;
  int gpus = 1;          // whole GPUs (0: CPU only); an elastic job's most
  int min_gpus = 0;      // an elastic job's fewest (1..gpus-1, one node); 0: rigid
  // Read back only: the bytes the store counted for it at its submit (columns::ArgsBytes then;
  // argv and env only for rows stored before that counted more). Store::JobArgsBytesOf sums them.
  int64_t args_bytes = 0;
  int gpu_milli = 1000;  // below 1000: a share of one GPU
  std::string gpu_type;  // "" : any model
  int nodes = 1;
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  std::string workdir;
  JobState state = JobState::kPending;
  int64_t submit_ms = 0;
  int64_t start_ms = 0;  // 0: not started
  int64_t end_ms = 0;    // 0: not ended
  std::optional<int> exit_code;
  // Where it was placed: one entry per rank (one node's part of the job), in rank order; empty
  // while it is not placed. Kept as one row per rank.
  std::vector<RankPlacement> placement;
  // Views of `placement` the store fills when it reads a job: the ranks' node names joined by
  // commas, and every rank's GPUs in rank order.
  std::string node;
  std::vector<int> gpu_indices;
  int64_t epoch = 0;             // bumped at each placement; stale agent reports are ignored
  std::string reason;            // why it ended or failed to start
  int64_t pid = 0;               // the running job's process (its runner's shim), 0 if none
  uint64_t pid_start = 0;        // that process's start time, to tell it from a reused pid
  std::string client_token;      // the submitter's idempotency token, or ""
  bool restartable = false;      // requeued (not left LOST) when its node is lost
  int64_t cpu_milli = 0;         // CPU limit in thousandths of a core (0: none)
  int64_t memory_mib = 0;        // memory limit (0: none)
  int64_t time_limit_s = 0;      // stopped (FAILED) after running this long; 0: none
  // Usage summary, recorded when the job ends (usage_samples 0: none measured): its GPUs'
  // utilization averaged over GPU-samples, and the peak GPU memory in use on any one node.
  int64_t usage_samples = 0;
  double gpu_util_avg_pct = 0;
  int64_t gpu_mem_peak_mib = 0;
  // What it used of its nodes' hosts (CPU, memory, I/O, stalls), recorded when it ends.
  core::HostUsage host_usage;
  // Preemption: GPU-seconds of service in runs that were preempted (what Tiresias and LAS rank
  // by), and whether it is being stopped for a higher-ranked job right now.
  double attained_gpu_s = 0;
  bool preempting = false;
  // Its image and bind mounts when it runs in a container (empty: a host process).
  core::ContainerSpec container;
  // The part of each GPU slot it holds: gpu_milli / 1000 for a GPU-share job, else 1.
  double GpuShare() const { return gpu_milli > 0 && gpu_milli < 1000 ? gpu_milli / 1000.0 : 1.0; }
  // The GPUs it asks for in all, a share counted as its part of one GPU (0 for CPU only).
  double GpusAsked() const { return gpus * GpuShare() * (nodes > 1 ? nodes : 1); }
  // The GPUs its placement holds (its last one, once ended: an elastic job's size then), a share
  // counted as its part; its ask when it was never placed.
  double GpusPlaced() const {
    std::size_t placed = 0;
    for (const RankPlacement& r : placement) placed += r.gpus.size();
    return placed > 0 ? static_cast<double>(placed) * GpuShare() : GpusAsked();
  }
};

// What a transition changes besides the state; unset fields stay as they are.
struct JobUpdate {
  std::optional<int64_t> start_ms, end_ms;
  std::optional<int> exit_code;
  std::optional<std::vector<RankPlacement>> placement;  // replaces the job's (empty: unplaced)
  bool bump_epoch = false;
  std::optional<std::string> reason;
  std::optional<int64_t> pid;  // with pid_start
  uint64_t pid_start = 0;
  std::optional<int64_t> usage_samples;  // with the two below
  double gpu_util_avg_pct = 0;
  int64_t gpu_mem_peak_mib = 0;
  std::optional<core::HostUsage> host_usage;
  std::optional<double> attained_gpu_s;
  std::optional<bool> preempting;
};

struct TransitionRequest {
  int64_t id = 0;
  JobState from = JobState::kPending;
  JobState to = JobState::kPending;
  JobUpdate update;
};

// An error naming the first request whose transition the state machine does not allow; what
// every store's TransitionAll checks before it writes anything.
core::Result<bool> CheckTransitions(const std::vector<TransitionRequest>& requests);

// Which jobs ListJobs and CountJobs take, and in which order.
struct JobFilter {
  std::string user;  // "" : every user
  std::optional<JobState> state;
  std::string queue;     // "" : every queue
  std::string gpu_type;  // "" : any
  int64_t after_id = 0;  // pagination: ids greater than this
  // The order: kId by default; ties are broken by id, in the same direction.
  enum class SortKey { kId, kSubmit, kStart, kEnd, kGpus, kUser, kState, kQueue, kPriority };
  SortKey sort = SortKey::kId;
  bool descending = false;
  int64_t offset = 0;  // skips this many, after the order (paging by page number)
  int limit = 100;     // 1..10000
  // ListJobs leaves each job's env out (empty): a list that does not show it need not read up to
  // 512 KiB of it per job.
  bool without_env = false;
};
// The sort key named `name` (id, submit, start, end, gpus, user, state, queue, priority).
std::optional<JobFilter::SortKey> ParseSortKey(std::string_view name);

// A job's usage series (advise/usage_series.h, its stored bytes) and, once advised, a summary of
// its findings, kept after the job ends for `advise` and `report`.
struct JobUsageRecord {
  int64_t job_id = 0;
  std::string series;       // advise::EncodeUsage bytes
  std::string findings;     // "kind:severity:waste_gpu_h" joined by ',' ("" : not advised yet)
  std::string gpu_model;    // the model of its (first node's) GPUs
  double gpu_h_alloc = 0;   // GPU-hours allocated so far
  double gpu_h_used = 0;    // of those, GPU-hours of SM activity (allocated x mean SM)
  int64_t updated_ms = 0;
};

// Whose a job is and where it stands, without its row (argv and env may be large): what the
// controller's log retention decides by.
struct JobOwner {
  int64_t id = 0;
  std::string user;
  JobState state = JobState::kPending;
  int64_t end_ms = 0;  // 0: not ended
};

// One ended job for the fleet report: its identity and its usage summary (no series).
struct JobReportRow {
  int64_t id = 0;
  std::string user, queue, gpu_model;
  JobState state = JobState::kPending;
  int64_t end_ms = 0;
  std::string reason;
  double gpu_h_alloc = 0, gpu_h_used = 0;
  std::string findings;
};

struct JobEvent {
  int64_t job_id = 0;  // 0: an admin action, not about one job (the audit log)
  int64_t id = 0;      // its place among all events (rises with each event added)
  int64_t time_ms = 0;
  std::string what;  // "submitted", "PENDING->SCHEDULED", "user added", ...
  std::string detail;
  std::string actor;  // who did it: a user, "node:NAME", or "" for the controller itself
};

// A GPU an admin drained: nothing new is placed on it until it is undrained.
struct GpuDrain {
  int gpu = 0;
  std::string reason;
  std::string by;  // the admin
  int64_t since_ms = 0;
};

// A node as the controller last registered it (the node registry).
struct NodeRecord {
  std::string name;
  std::string address;
  int gpus = 0;
  std::string gpu_model;
  bool simulated = false;
  int64_t epoch = 0;
  int64_t first_seen_ms = 0;
  int64_t last_seen_ms = 0;
  std::string state;  // READY, LOST or RETIRED, when recorded
  std::vector<GpuDrain> drains;  // by GPU index
};

// A node the autoscaler holds (or is creating or retiring), by instance name: written before
// the provider is asked to create it, so that a controller killed meanwhile finds it again.
struct ScaleNodeRecord {
  std::string name;
  std::string group;
  bool spot = false;
  // "creating" (asked of the provider), "booting" (the provider accepted it), "ready" (its agent
  // joined), "retiring" (drained, being deleted), "interrupted" (a spot notice came), "draining"
  // (consolidation: its jobs are being moved; retired once empty).
  std::string state;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
  std::string join_token_id;  // TokenId of its join token ("" : none)
  std::string detail;         // the last provider error, or why it is retiring
};

struct UserRecord {
  std::string name;
  bool admin = false;
};

struct UserInfo {
  std::string name;
  bool admin = false;
  int tokens = 0;  // user tokens that act as this user
};

// An API credential, stored only as the SHA-256 of the token. Its id (TokenId: the first 12 hex
// digits of the hash) names it in listings and revocations without revealing it.
enum class TokenKind {
  kUser,  // acts as `user`
  kNode,  // acts only as agent `node`: its own heartbeats, nothing else
  kJoin,  // exchanged once, before `expires_ms`, for a node credential (agent --join-token)
};
std::string_view TokenKindName(TokenKind kind);  // "user", "node", "join"
std::string TokenId(const std::string& sha256);
struct TokenRecord {
  std::string sha256;
  TokenKind kind = TokenKind::kUser;
  std::string user;  // kUser: whose
  std::string node;  // kNode: which node
  int64_t created_ms = 0;
  int64_t expires_ms = 0;  // 0: never
  std::string created_by;
};

// What AddJob did: the job's id, and whether it is new (false: a retry, whose client token
// named a job added before).
struct AddedJob {
  int64_t id = 0;
  bool added = false;
};

// Whose a token is, as TokenBySha256 then UserByToken read it: a user's (`user`), another
// kind's (`token`), or nobody's (neither: unknown, revoked, expired, or its user removed).
struct Credential {
  std::optional<UserRecord> user;
  std::optional<TokenRecord> token;
  int64_t expires_ms = 0;  // when the token stops working (0: never)
};

// Who leads the controllers that share a store (see Store::TryLead).
struct LeaderInfo {
  std::string holder;  // the leading controller's id ("" : nobody ever led)
  std::string url;     // where it serves its API
  int64_t epoch = 0;   // bumped at each change of leader; fences the former one
  int64_t expires_in_ms = 0;  // its lease runs out this long from now (<= 0: expired)
};

class Store {
 public:
  virtual ~Store() = default;

  // Leadership among controllers that share this store: a lease kept in the store itself, timed
  // by the store's clock, so controllers' clocks need not agree.
  // `TryLead` takes the lease for `lease_ms` when nobody holds an unexpired one and returns the
  // new epoch (one more than the last); it returns nullopt when another controller holds it.
  // From then on every write of this Store checks, in its own transaction, that the lease's epoch
  // is still this one, and fails with ErrorCode::kUnavailable ("fenced") when it is not: a
  // paused former leader that wakes up cannot write. `RenewLead` extends the lease of `epoch`
  // (false: the lease has passed to another epoch, and writes are fenced from now on);
  // `ResignLead` lets it expire now, so a standby takes over at once. `Leader` says who holds it.
  // A SQLite store is one machine's: it has a single controller, which always leads (epoch 1).
  virtual core::Result<std::optional<int64_t>> TryLead(const std::string& holder,
                                                       const std::string& url,
                                                       int64_t lease_ms) = 0;
  virtual core::Result<bool> RenewLead(int64_t epoch, int64_t lease_ms) = 0;
  virtual core::Result<bool> ResignLead(int64_t epoch) = 0;
  virtual core::Result<LeaderInfo> Leader() = 0;

  // Records a new PENDING job and returns its id, after the commit. A job whose non-empty
  // `client_token` the same user already used is not added again: its existing id is returned,
  // with `added` false.
  virtual core::Result<AddedJob> AddJob(const JobRecord& job) = 0;
  // AddJob's id alone.
  core::Result<int64_t> SubmitJob(const JobRecord& job);
  virtual core::Result<std::optional<JobRecord>> GetJob(int64_t id) = 0;
  // In id order.
  virtual core::Result<std::vector<JobRecord>> ListJobs(const JobFilter& filter) = 0;
  // How many jobs the filter takes (its order, offset and limit aside).
  virtual core::Result<int64_t> CountJobs(const JobFilter& filter) = 0;
  // Jobs in any of the live states (PENDING, SCHEDULED, RUNNING), in id order: what a restarted
  // controller rebuilds its queue from.
  virtual core::Result<std::vector<JobRecord>> LiveJobs() = 0;
  // The ids of `user`'s jobs in the live states, ascending: what a user may see named of the
  // queue, read without the jobs' rows (their argv and env may be large).
  virtual core::Result<std::vector<int64_t>> LiveJobIdsOf(const std::string& user) = 0;
  // The bytes of the argv and env texts of every job of `user` the store holds, live or ended
  // (columns::ArgsBytes of each, kept beside the job): what
  // ControllerOptions::max_job_bytes_per_user caps. It reads an index entry per job of the user.
  virtual core::Result<int64_t> JobArgsBytesOf(const std::string& user) = 0;
  // A random id (32 hex digits) made with the store, at its first open by a gpufleet that knows
  // it, and never changed: it tells this store from one made anew in its place, which numbers
  // jobs from 1 again (a node's agent keeps jobs of the store they came from apart by it).
  virtual core::Result<std::string> StoreId() = 0;
  // The id of `user`'s job submitted with `client_token` (non-empty), whatever its state, or
  // nothing: whether a submit is a retry of one already added.
  virtual core::Result<std::optional<int64_t>> JobIdByClientToken(
      const std::string& user, const std::string& client_token) = 0;
  // The owner, state and end of each job of `ids` that exists, in id order (ids not found are
  // left out).
  virtual core::Result<std::vector<JobOwner>> JobOwners(const std::vector<int64_t>& ids) = 0;
  // Job history retention. `EndedJobIds`: up to `limit` (1..10000) jobs that ended (SUCCEEDED,
  // FAILED, CANCELLED, or LOST and not requeued) before `ended_before_ms`, the longest-ended first.
  // `RemoveEndedJobs` removes those of `ids` that have ended, with their events, ranks and usage,
  // in one transaction; how many. Job ids are never reused, so a removed job's id names no later
  // job.
  virtual core::Result<std::vector<int64_t>> EndedJobIds(int64_t ended_before_ms, int limit) = 0;
  virtual core::Result<int64_t> RemoveEndedJobs(const std::vector<int64_t>& ids) = 0;
  // Compare-and-set: moves job `id` from `from` to `to` with `update` and records an event.
  // Returns false (changing nothing) when the job is not in `from`; an error when the transition
  // is not allowed or the store fails. (One TransitionAll of one request, for every store.)
  core::Result<bool> Transition(int64_t id, JobState from, JobState to, const JobUpdate& update,
                                int64_t now_ms);
  // Several transitions in one transaction (one commit, so one sync to disk): each is a
  // compare-and-set as in Transition, and the result says which applied. An error, applying
  // none, when one is not allowed or the store fails.
  virtual core::Result<std::vector<bool>> TransitionAll(
      const std::vector<TransitionRequest>& requests, int64_t now_ms) = 0;
  virtual core::Result<std::vector<JobEvent>> Events(int64_t job_id) = 0;
  // The latest `limit` events of `job_id` whose id is below `before_id` (0: any), oldest first:
  // a page of a long history (the audit log is job 0), the next older one before its first id.
  core::Result<std::vector<JobEvent>> EventsPage(int64_t job_id, int64_t before_id, int64_t limit) {
    return EventRange(job_id, before_id > 0 ? before_id : std::numeric_limits<int64_t>::max(),
                      limit, /*newer=*/false);
  }
  // The first `limit` events of `job_id` whose id is above `after_id`, oldest first: what came
  // since a reader's last event, the next ones after its last id.
  core::Result<std::vector<JobEvent>> EventsAfter(int64_t job_id, int64_t after_id, int64_t limit) {
    return EventRange(job_id, after_id, limit, /*newer=*/true);
  }
  // Up to `limit` events of `job_id` next to event `from` (excluded): the earliest ones newer
  // than it, or the latest ones older than it; oldest first either way.
  virtual core::Result<std::vector<JobEvent>> EventRange(int64_t job_id, int64_t from,
                                                         int64_t limit, bool newer) = 0;
  // Usage series: `PutJobUsage` adds or replaces each record by job id, in one transaction;
  // `GetJobUsage` reads one (none: never measured). `ReportRows` lists the jobs that ended at or
  // after `since_ms` with a usage record, in id order: `user`'s only ("" : every user's), chosen
  // by the query, so that a user's report never reads the whole fleet's rows; those with ids
  // above `after_id`, at most `limit` of them (0: all), so that a long report is read in pages.
  virtual core::Result<bool> PutJobUsage(const std::vector<JobUsageRecord>& records) = 0;
  virtual core::Result<std::optional<JobUsageRecord>> GetJobUsage(int64_t job_id) = 0;
  virtual core::Result<std::vector<JobReportRow>> ReportRows(int64_t since_ms,
                                                             const std::string& user = "",
                                                             int64_t after_id = 0,
                                                             int64_t limit = 0) = 0;
  // The node registry: `PutNode` adds or replaces a node by name (keeping its first_seen_ms);
  // `Nodes` lists them by name.
  virtual core::Result<bool> PutNode(const NodeRecord& node) = 0;
  virtual core::Result<std::vector<NodeRecord>> Nodes() = 0;
  // The autoscaler's nodes: `PutScaleNode` adds or replaces one by name; `DeleteScaleNode`
  // removes it (false: there was none); `ScaleNodes` lists them by name.
  virtual core::Result<bool> PutScaleNode(const ScaleNodeRecord& node) = 0;
  virtual core::Result<bool> DeleteScaleNode(const std::string& name) = 0;
  virtual core::Result<std::vector<ScaleNodeRecord>> ScaleNodes() = 0;
  // Users and their API tokens, stored as SHA-256 hashes.
  virtual core::Result<bool> PutUser(const std::string& name, const std::string& token_sha256,
                                     bool admin) = 0;
  virtual core::Result<std::optional<UserRecord>> UserByToken(const std::string& token_sha256) = 0;

  // Accounts and credentials (admin actions; the API records who did each in the audit log).
  // AddUser fails (ErrorCode::kInvalid, field "name") when the user exists; `token` is its
  // first user token.
  virtual core::Result<bool> AddUser(const std::string& name, bool admin,
                                     const TokenRecord& token) = 0;
  // Removes the user and every token of theirs; false when there was no such user. Their jobs
  // stay (and keep running): an admin cancels them if they should stop.
  virtual core::Result<bool> RemoveUser(const std::string& name) = 0;
  virtual core::Result<std::vector<UserInfo>> Users() = 0;
  virtual core::Result<bool> AddToken(const TokenRecord& token) = 0;
  virtual core::Result<std::optional<TokenRecord>> TokenBySha256(const std::string& sha256) = 0;
  virtual core::Result<std::vector<TokenRecord>> Tokens() = 0;
  // Revokes the token whose TokenId is `id`; false when none has it.
  virtual core::Result<bool> RevokeToken(const std::string& id) = 0;
  // Revokes every credential of node `node` (its node token and any join token made for its
  // name); how many there were.
  virtual core::Result<int> RevokeNodeTokens(const std::string& node) = 0;
  // Deletes every token (of any kind) that expired before `expired_before_ms`; how many. Tokens
  // that never expire stay. (Each autoscaled node leaves an expired join token, and every
  // credential check may read the whole table: they must not pile up.)
  virtual core::Result<int64_t> RemoveExpiredTokens(int64_t expired_before_ms) = 0;
  // In one transaction: when `join_sha256` is an unexpired join token, deletes it (it is good
  // for one node) and adds `node_token`; false otherwise, changing nothing. An error
  // (ErrorCode::kForbidden) when that node has a credential already: a join never takes over a
  // node that has one.
  virtual core::Result<bool> ExchangeJoinToken(const std::string& join_sha256,
                                               const TokenRecord& node_token, int64_t now_ms) = 0;
  // Adds an event by `actor` (job 0: an admin action, listed by Events(0)).
  virtual core::Result<bool> Audit(int64_t job_id, const std::string& actor,
                                   const std::string& what, const std::string& detail,
                                   int64_t now_ms) = 0;

  // Whose token `sha256` is, answered from memory for up to kCredentialMemory after it was read
  // from the store, unless this Store object changed a user or token since (each backend calls
  // CredentialsChanged in every such write): the API checks a token on every request without a
  // round trip to the database. A change made through another process sharing the store (a
  // former leader) is seen here within kCredentialMemory. Unknown tokens are not remembered one by
  // one. A token whose expires_ms is at or before `now_ms` is nobody's, to the millisecond,
  // remembered or not.
  //
  // A token the store does not hold costs no lookup of its own: CredentialOf keeps the hashes of
  // every stored token, read whole (Tokens) when a token outside them is asked for and they are
  // older than kCredentialMemory or this Store object changed a token since, so that a stream of
  // made-up tokens, from any number of clients, costs at most one read of the tokens table per
  // kCredentialMemory. (Past kMaxKnownHashes stored tokens it looks each one up instead, and reads
  // the table again only a minute later.)
  core::Result<Credential> CredentialOf(const std::string& sha256, int64_t now_ms);
  static constexpr std::chrono::milliseconds kCredentialMemory{2000};
  static constexpr std::size_t kMaxKnownHashes = 100000;
  // Reads of the store CredentialOf has made (a token's, or every token's hash), for metrics.
  int64_t CredentialReads() const { return credential_reads_.load(); }

 protected:
  // Forgets every remembered credential (CredentialOf) when it goes out of scope: each write of
  // users or tokens declares one first, so that this happens after the write has committed (a
  // read racing the write then cannot remember what it replaced).
  class CredentialWrite {
   public:
    explicit CredentialWrite(Store& store) : store_(store) {}
    ~CredentialWrite() { store_.CredentialsChanged(); }
    CredentialWrite(const CredentialWrite&) = delete;
    CredentialWrite& operator=(const CredentialWrite&) = delete;

   private:
    Store& store_;
  };
  void CredentialsChanged();

 private:
  struct RememberedCredential {
    Credential credential;
    std::chrono::steady_clock::time_point read_at;
  };
  static constexpr std::size_t kMaxRemembered = 4096;
  std::mutex credentials_mutex_;
  std::unordered_map<std::string, RememberedCredential> credentials_;
  uint64_t credentials_version_ = 0;  // bumped by CredentialsChanged
  // Every stored token's hash, as read at known_read_at_ under credentials_version_
  // known_version_ (none read yet, or too many to hold: known_valid_ false). Under
  // credentials_mutex_.
  std::unordered_set<std::string> known_hashes_;
  bool known_valid_ = false;  // known_hashes_ holds every stored token's
  bool known_read_ = false;
  bool known_failed_ = false;  // the last read failed
  uint64_t known_version_ = 0;
  std::chrono::steady_clock::time_point known_read_at_;
  std::mutex known_refresh_mutex_;  // one read of every hash at a time
  std::atomic<int64_t> credential_reads_{0};
  // Whether `sha256` is certainly not a stored token: false when it may be (it is among the
  // hashes, or they could not be read).
  bool CertainlyUnknown(const std::string& sha256);
};

// Opens (creating when needed) `<data_dir>/gpufleet.db`: WAL mode, full sync on commit, schema
// migrated to the current version. Errors name the path and what to do.
core::Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& data_dir);

// Connects to PostgreSQL (`conninfo`: a postgresql:// URI or a libpq key=value string) and
// migrates its schema to the current version. Errors name the server and what to do, never the
// password. A broken connection is re-established on a later call: each call that meets it fails
// with ErrorCode::kUnavailable, and a write whose commit was not confirmed is reported as failed
// (callers retry with their idempotency token).
core::Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& conninfo);

// Whether `text` (of --store) names a PostgreSQL database rather than a SQLite data directory.
bool IsPostgresUri(std::string_view text);

// Overwrites with '*' each password written in `conninfo` (a URI's or a key=value string's), in
// place and at the same length, so that a command line holding it (/proc/PID/cmdline, readable
// by every local account) no longer shows it. Whether there was one.
bool MaskConnectionPassword(char* conninfo);
// What to tell the operator about a PostgreSQL connection to `host` (as libpq names it: a name,
// an address, or a socket directory) that `ssl_in_use` or not, under `sslmode`: a server on
// another machine reached without TLS, or without checking its certificate (anything short of
// verify-ca or verify-full), lets whoever is on the path read and rewrite the fleet's users,
// tokens and jobs. Nothing when the connection stays on this machine or is verified.
std::optional<std::string> PostgresTransportWarning(const std::string& host, bool ssl_in_use,
                                                    const std::string& sslmode);

}  // namespace gpufleet::store
