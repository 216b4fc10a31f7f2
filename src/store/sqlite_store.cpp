// The SQLite implementation of `Store`: one connection, serialized by a mutex; WAL journal with
// synchronous=FULL, so a commit is on disk before SubmitJob returns.
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "store/job_columns.h"
#include "store/store.h"
#include "store/submit_group.h"

namespace gpufleet::store {
namespace {

constexpr int kSchemaVersion = 15;

constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE jobs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  user TEXT NOT NULL, name TEXT NOT NULL, queue TEXT NOT NULL, priority INTEGER NOT NULL,
  gpus INTEGER NOT NULL, gpu_milli INTEGER NOT NULL, gpu_type TEXT NOT NULL, nodes INTEGER NOT NULL,
  argv TEXT NOT NULL, env TEXT NOT NULL, workdir TEXT NOT NULL,
  state TEXT NOT NULL, submit_ms INTEGER NOT NULL, start_ms INTEGER NOT NULL DEFAULT 0,
  end_ms INTEGER NOT NULL DEFAULT 0, exit_code INTEGER, node TEXT NOT NULL DEFAULT '',
  gpu_indices TEXT NOT NULL DEFAULT '[]', epoch INTEGER NOT NULL DEFAULT 0,
  reason TEXT NOT NULL DEFAULT '');
CREATE INDEX jobs_by_state ON jobs(state, id);
CREATE INDEX jobs_by_user ON jobs(user, id);
CREATE TABLE events(
  id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, time_ms INTEGER NOT NULL,
  what TEXT NOT NULL, detail TEXT NOT NULL);
CREATE INDEX events_by_job ON events(job_id, id);
CREATE TABLE users(name TEXT PRIMARY KEY, token_sha256 TEXT NOT NULL UNIQUE, admin INTEGER NOT NULL);
)sql";

// Version 2: where a running job's process is, so a restarted agent can re-adopt it.
constexpr const char* kSchemaV2 = R"sql(
ALTER TABLE jobs ADD COLUMN pid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN pid_start INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 3: a client's idempotency token, so a retried submit never creates a second job.
constexpr const char* kSchemaV3 = R"sql(
ALTER TABLE jobs ADD COLUMN client_token TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX jobs_by_client_token ON jobs(user, client_token) WHERE client_token != '';
)sql";

// Version 4: whether a job may run again after its node was lost; its CPU, memory and time
// limits; its GPU usage summary. The node registry.
constexpr const char* kSchemaV4 = R"sql(
ALTER TABLE jobs ADD COLUMN restartable INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN cpu_milli INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN memory_mib INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN time_limit_s INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN usage_samples INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN gpu_util_avg_pct REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN gpu_mem_peak_mib INTEGER NOT NULL DEFAULT 0;
CREATE TABLE nodes(name TEXT PRIMARY KEY, address TEXT NOT NULL, gpus INTEGER NOT NULL,
  gpu_model TEXT NOT NULL, simulated INTEGER NOT NULL, epoch INTEGER NOT NULL,
  first_seen_ms INTEGER NOT NULL, last_seen_ms INTEGER NOT NULL, state TEXT NOT NULL);
)sql";

// Version 5: preemption survives a restart: the service a job had in preempted runs, and whether
// it is being stopped for a higher-ranked job.
constexpr const char* kSchemaV5 = R"sql(
ALTER TABLE jobs ADD COLUMN attained_gpu_s REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN preempting INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 6: several credentials per user, node credentials and join tokens; who did what.
constexpr const char* kSchemaV6 = R"sql(
CREATE TABLE tokens(sha256 TEXT PRIMARY KEY, kind TEXT NOT NULL, user TEXT NOT NULL DEFAULT '',
  node TEXT NOT NULL DEFAULT '', created_ms INTEGER NOT NULL DEFAULT 0,
  expires_ms INTEGER NOT NULL DEFAULT 0, created_by TEXT NOT NULL DEFAULT '');
CREATE INDEX tokens_by_user ON tokens(user);
INSERT INTO tokens(sha256,kind,user) SELECT token_sha256,'user',name FROM users;
ALTER TABLE events ADD COLUMN actor TEXT NOT NULL DEFAULT '';
)sql";

// Version 7: what a job used of its nodes' hosts (core::HostUsage, in its text form).
constexpr const char* kSchemaV7 = R"sql(
ALTER TABLE jobs ADD COLUMN host_usage TEXT NOT NULL DEFAULT '';
)sql";

// Version 8: GPUs an admin drained, per node (JSON: [{"gpu", "reason", "by", "since_ms"}]).
constexpr const char* kSchemaV8 = R"sql(
ALTER TABLE nodes ADD COLUMN drains TEXT NOT NULL DEFAULT '[]';
)sql";

// Version 9: a placement is one row per rank (its node and GPUs), not a comma-joined node list
// beside a flat GPU list; MigrateRanks moves what the old columns held, then they go.
constexpr const char* kSchemaV9 = R"sql(
CREATE TABLE job_ranks(job_id INTEGER NOT NULL, rank INTEGER NOT NULL, node TEXT NOT NULL,
  gpus TEXT NOT NULL DEFAULT '[]', PRIMARY KEY(job_id, rank)) WITHOUT ROWID;
)sql";

// Version 10: each job's usage series and advice summary (advise/, issue 13), apart from the jobs
// table so that job listings never read them.
constexpr const char* kSchemaV10 = R"sql(
CREATE TABLE job_usage(job_id INTEGER PRIMARY KEY, series BLOB NOT NULL,
  findings TEXT NOT NULL DEFAULT '', gpu_model TEXT NOT NULL DEFAULT '',
  gpu_h_alloc REAL NOT NULL DEFAULT 0, gpu_h_used REAL NOT NULL DEFAULT 0,
  updated_ms INTEGER NOT NULL DEFAULT 0);
CREATE INDEX jobs_by_end ON jobs(end_ms) WHERE end_ms > 0;
)sql";

// Version 11: the autoscaler's nodes (scale/, issue 14), kept so that a restarted controller
// neither creates an instance twice nor leaves one orphaned.
constexpr const char* kSchemaV11 = R"sql(
CREATE TABLE scale_nodes(name TEXT PRIMARY KEY, grp TEXT NOT NULL, spot INTEGER NOT NULL,
  state TEXT NOT NULL, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
  join_token_id TEXT NOT NULL DEFAULT '', detail TEXT NOT NULL DEFAULT '');
)sql";

// Version 12: the dashboard's jobs list (issue 15) filters by queue and GPU model and sorts by
// submit time over 100,000 jobs; these keep a page from sorting the whole table.
constexpr const char* kSchemaV12 = R"sql(
CREATE INDEX jobs_by_queue ON jobs(queue, id);
CREATE INDEX jobs_by_gpu_type ON jobs(gpu_type, id);
CREATE INDEX jobs_by_submit ON jobs(submit_ms, id);
)sql";

// Version 13: a container job's image and mounts (JSON; '' for a host job), issue 17.
constexpr const char* kSchemaV13 = R"sql(
ALTER TABLE jobs ADD COLUMN container TEXT NOT NULL DEFAULT '';
)sql";

// Version 14: an elastic job's fewest GPUs (0: rigid), issue 18.
constexpr const char* kSchemaV14 = R"sql(
ALTER TABLE jobs ADD COLUMN min_gpus INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 15: the bytes of each job's argv and env texts, indexed by user so that a user's sum
// reads the index alone (Store::JobArgsBytesOf; before, it read every row's texts).
constexpr const char* kSchemaV15 = R"sql(
ALTER TABLE jobs ADD COLUMN args_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET args_bytes=length(CAST(argv AS BLOB))+length(CAST(env AS BLOB));
CREATE INDEX jobs_by_user_args ON jobs(user, args_bytes);
)sql";

constexpr const char* kJobColumns =
    "id,user,name,queue,priority,gpus,gpu_milli,gpu_type,nodes,argv,env,workdir,state,submit_ms,"
    "start_ms,end_ms,exit_code,"
    "(SELECT json_group_array(json_array(rank,node,json(gpus))) FROM job_ranks "
    "WHERE job_id=jobs.id),"
    "epoch,reason,pid,pid_start,client_token,"
    "restartable,cpu_milli,memory_mib,time_limit_s,usage_samples,gpu_util_avg_pct,"
    "gpu_mem_peak_mib,attained_gpu_s,preempting,host_usage,container,min_gpus,args_bytes";

// kJobColumns with each job's env read as an empty list (JobFilter::without_env).
const char* JobColumnsWithoutEnv() {
  static const std::string columns = columns::WithEmptyEnv(kJobColumns);
  return columns.c_str();
}

// The prepared statements of one connection, by SQL text, kept for reuse: parsing the SQL again
// for each submit cost more than running it. Used only under the store's connection mutex.
class StatementCache {
 public:
  explicit StatementCache(sqlite3* db) : db_(db) {}
  ~StatementCache() { Clear(); }
  void Clear() {
    for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
    statements_.clear();
  }
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;
  // The statement for `sql`, prepared on first use; nullptr (and `rc`) when it does not prepare.
  sqlite3_stmt* Get(const char* sql, int& rc) {
    auto it = statements_.find(sql);
    if (it != statements_.end()) {
      rc = SQLITE_OK;
      return it->second;
    }
    sqlite3_stmt* stmt = nullptr;
    rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return nullptr;
    statements_.emplace(sql, stmt);
    return stmt;
  }

 private:
  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

// A prepared statement: its own (finalized at the end of its scope), or one of the cache's
// (reset and unbound at the end of its scope, for the next use).
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  Statement(StatementCache& cache, const char* sql) : cached_(true) { stmt_ = cache.Get(sql, rc_); }
  Statement(StatementCache& cache, const std::string& sql) : Statement(cache, sql.c_str()) {}
  ~Statement() {
    if (!cached_) {
      sqlite3_finalize(stmt_);
    } else if (stmt_ != nullptr) {
      sqlite3_reset(stmt_);
      sqlite3_clear_bindings(stmt_);
    }
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void BindDouble(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void BindNull(int i) { sqlite3_bind_null(stmt_, i); }
  void BindBlob(int i, const std::string& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  std::string Blob(int col) {
    const void* p = sqlite3_column_blob(stmt_, col);
    const int n = sqlite3_column_bytes(stmt_, col);
    return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), n);
  }
  int Step() { return sqlite3_step(stmt_); }
  int64_t Int(int col) { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p));
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
  bool cached_ = false;
};


class SqliteStore final : public Store {
 public:
  SqliteStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteStore() override {
    cache_.Clear();  // its statements are finalized before the connection closes
    sqlite3_close(db_);
  }

  core::Result<bool> Exec(const char* sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      std::string why = message != nullptr ? message : sqlite3_errmsg(db_);
      sqlite3_free(message);
      return Error(why);
    }
    return true;
  }
  core::Error Error(const std::string& what) const {
    std::string hint;
    const int code = sqlite3_extended_errcode(db_) & 0xff;
    if (code == SQLITE_FULL) hint = " (the disk is full: free space and retry)";
    if (code == SQLITE_READONLY || code == SQLITE_CANTOPEN || code == SQLITE_PERM) {
      hint = " (the data directory is not writable)";
    }
    return core::Error{"store " + path_ + ": " + what + hint, core::ErrorCode::kUnavailable};
  }

  core::Result<bool> Migrate() {
    if (auto r = Exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)"); !r) {
      return r;
    }
    int version = 0;
    {
      Statement s(db_, "SELECT value FROM meta WHERE key='schema_version'");
      if (!s.ok()) return Error(sqlite3_errmsg(db_));
      if (s.Step() == SQLITE_ROW) version = std::atoi(s.Text(0).c_str());
    }
    if (version > kSchemaVersion) {
      return core::Error{"store " + path_ + ": schema version " + std::to_string(version) +
                         " was written by a newer gpufleet; upgrade gpufleet"};
    }
    // Each step runs in its own transaction and records its version, so an interrupted upgrade
    // resumes where it stopped.
    const char* steps[] = {kSchemaV1,  kSchemaV2,  kSchemaV3,  kSchemaV4,  kSchemaV5,
                           kSchemaV6,  kSchemaV7,  kSchemaV8,  kSchemaV9,  kSchemaV10,
                           kSchemaV11, kSchemaV12, kSchemaV13, kSchemaV14, kSchemaV15};
    for (int v = version; v < kSchemaVersion; ++v) {
      if (auto r = Exec("BEGIN IMMEDIATE"); !r) return r;
      const std::string record =
          "INSERT OR REPLACE INTO meta VALUES('schema_version','" + std::to_string(v + 1) + "')";
      if (auto r = Exec(steps[v]); !r) {
        Exec("ROLLBACK");
        return r;
      }
      if (v + 1 == 9) {
        if (auto r = MigrateRanks(); !r) {
          Exec("ROLLBACK");
          return r;
        }
      }
      if (auto r = Exec(record.c_str()); !r) {
        Exec("ROLLBACK");
        return r;
      }
      if (auto r = Exec("COMMIT"); !r) return r;
    }
    // Made once (not a schema step: a store of any version gets it at its first open by a
    // gpufleet that knows it).
    return Exec("INSERT OR IGNORE INTO meta VALUES('store_id', lower(hex(randomblob(16))))");
  }

  core::Result<std::string> StoreId() override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_, "SELECT value FROM meta WHERE key='store_id'");
    if (s.Step() != SQLITE_ROW) return Error(sqlite3_errmsg(db_));
    return s.Text(0);
  }

  // Schema 9: the placements the old columns held (node "n1,n2" and a flat GPU list, split evenly
  // between the nodes) become rows of job_ranks; then the old columns go.
  core::Result<bool> MigrateRanks() {
    std::vector<std::tuple<int64_t, std::string, std::string>> placed;
    {
      Statement s(db_, "SELECT id,node,gpu_indices FROM jobs WHERE node != ''");
      if (!s.ok()) return Error(sqlite3_errmsg(db_));
      while (s.Step() == SQLITE_ROW) placed.emplace_back(s.Int(0), s.Text(1), s.Text(2));
    }
    for (const auto& [id, nodes, gpu_text] : placed) {
      std::vector<std::string> names;
      for (std::size_t start = 0; start <= nodes.size();) {
        const std::size_t comma = std::min(nodes.find(',', start), nodes.size());
        if (comma > start) names.push_back(nodes.substr(start, comma - start));
        start = comma + 1;
      }
      const nlohmann::json gpus = nlohmann::json::parse(gpu_text, nullptr, false);
      const std::size_t count = gpus.is_array() ? gpus.size() : 0;
      const std::size_t per_node = names.empty() ? 0 : count / names.size();
      for (std::size_t k = 0; k < names.size(); ++k) {
        nlohmann::json mine = nlohmann::json::array();
        for (std::size_t g = k * per_node; g < (k + 1) * per_node && g < count; ++g) {
          mine.push_back(gpus[g]);
        }
        Statement insert(db_, "INSERT INTO job_ranks(job_id,rank,node,gpus) VALUES(?,?,?,?)");
        insert.Bind(1, id);
        insert.Bind(2, static_cast<int64_t>(k));
        insert.Bind(3, names[k]);
        insert.Bind(4, mine.dump());
        if (insert.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
      }
    }
    if (auto r = Exec("ALTER TABLE jobs DROP COLUMN node"); !r) return r;
    return Exec("ALTER TABLE jobs DROP COLUMN gpu_indices");
  }

  // One machine's store has one controller: it always leads, and nothing fences it.
  core::Result<std::optional<int64_t>> TryLead(const std::string& holder, const std::string& url,
                                               int64_t) override {
    std::lock_guard<std::mutex> lock(lead_mutex_);
    leader_ = LeaderInfo{holder, url, 1, 0};
    return std::optional<int64_t>(1);
  }
  core::Result<bool> RenewLead(int64_t epoch, int64_t) override { return epoch == 1; }
  core::Result<bool> ResignLead(int64_t) override { return true; }
  core::Result<LeaderInfo> Leader() override {
    std::lock_guard<std::mutex> lock(lead_mutex_);
    return leader_;
  }

  // Group commit: concurrent submits wait in a queue; one of them (the leader) writes every
  // queued job in a single transaction, so many submits share one fsync. Each caller returns
  // only after the transaction holding its job has committed, and a failed transaction fails
  // every job in it (none of them was committed).
  core::Result<AddedJob> AddJob(const JobRecord& job) override {
    return submits_.Add(job);
  }

  core::Result<std::optional<JobRecord>> GetJob(int64_t id) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_, (std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id=?").c_str());
    s.Bind(1, id);
    const int rc = s.Step();
    if (rc == SQLITE_ROW) return std::optional<JobRecord>(columns::ReadJob(s));
    if (rc == SQLITE_DONE) return std::optional<JobRecord>();
    return Error(sqlite3_errmsg(db_));
  }

  core::Result<std::vector<JobRecord>> ListJobs(const JobFilter& f) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const char* column = SortColumn(f.sort);
    const char* dir = f.descending ? " DESC" : " ASC";
    std::string sql = std::string("SELECT ") +
                      (f.without_env ? JobColumnsWithoutEnv() : kJobColumns) + " FROM jobs" +
                      FilterWhere(f) + " ORDER BY " + column + dir;
    if (f.sort != JobFilter::SortKey::kId) sql += std::string(", id") + dir;
    sql += " LIMIT ? OFFSET ?";
    Statement s(cache_, sql.c_str());
    const int i = BindFilter(s, f);
    s.Bind(i, std::max(1, std::min(f.limit, 10000)));
    s.Bind(i + 1, std::max<int64_t>(0, f.offset));
    return Rows(s);
  }

  core::Result<int64_t> CountJobs(const JobFilter& f) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_, ("SELECT COUNT(*) FROM jobs" + FilterWhere(f)).c_str());
    BindFilter(s, f);
    if (s.Step() != SQLITE_ROW) return Error(sqlite3_errmsg(db_));
    return s.Int(0);
  }

  static const char* SortColumn(JobFilter::SortKey key) {
    switch (key) {
      case JobFilter::SortKey::kId: return "id";
      case JobFilter::SortKey::kSubmit: return "submit_ms";
      case JobFilter::SortKey::kStart: return "start_ms";
      case JobFilter::SortKey::kEnd: return "end_ms";
      case JobFilter::SortKey::kGpus: return "gpus";
      case JobFilter::SortKey::kUser: return "user";
      case JobFilter::SortKey::kState: return "state";
      case JobFilter::SortKey::kQueue: return "queue";
      case JobFilter::SortKey::kPriority: return "priority";
    }
    return "id";
  }
  static std::string FilterWhere(const JobFilter& f) {
    std::string sql = " WHERE id > ?";
    if (!f.user.empty()) sql += " AND user = ?";
    if (f.state) sql += " AND state = ?";
    if (!f.queue.empty()) sql += " AND queue = ?";
    if (!f.gpu_type.empty()) sql += " AND gpu_type = ?";
    return sql;
  }
  // Binds FilterWhere's parameters; returns the next parameter's index.
  static int BindFilter(Statement& s, const JobFilter& f) {
    int i = 1;
    s.Bind(i++, f.after_id);
    if (!f.user.empty()) s.Bind(i++, f.user);
    if (f.state) s.Bind(i++, std::string(StateName(*f.state)));
    if (!f.queue.empty()) s.Bind(i++, f.queue);
    if (!f.gpu_type.empty()) s.Bind(i++, f.gpu_type);
    return i;
  }

  core::Result<std::vector<JobRecord>> LiveJobs() override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_, (std::string("SELECT ") + kJobColumns +
                         " FROM jobs WHERE state IN ('PENDING','SCHEDULED','RUNNING') ORDER BY id")
                            .c_str());
    return Rows(s);
  }

  core::Result<std::vector<int64_t>> LiveJobIdsOf(const std::string& user) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_,
                "SELECT id FROM jobs WHERE user=? AND "
                "state IN ('PENDING','SCHEDULED','RUNNING') ORDER BY id");
    s.Bind(1, user);
    std::vector<int64_t> ids;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) ids.push_back(s.Int(0));
    if (rc != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return ids;
  }

  core::Result<int64_t> JobArgsBytesOf(const std::string& user) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_, "SELECT COALESCE(SUM(args_bytes),0) FROM jobs WHERE user=?");
    s.Bind(1, user);
    if (s.Step() != SQLITE_ROW) return Error(sqlite3_errmsg(db_));
    return s.Int(0);
  }

  core::Result<std::optional<int64_t>> JobIdByClientToken(
      const std::string& user, const std::string& client_token) override {
    if (client_token.empty()) return std::optional<int64_t>();
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_, "SELECT id FROM jobs WHERE user=? AND client_token=? AND client_token!=''");
    s.Bind(1, user);
    s.Bind(2, client_token);
    const int rc = s.Step();
    if (rc == SQLITE_ROW) return std::optional<int64_t>(s.Int(0));
    if (rc == SQLITE_DONE) return std::optional<int64_t>();
    return Error(sqlite3_errmsg(db_));
  }

  core::Result<std::vector<int64_t>> EndedJobIds(int64_t ended_before_ms, int limit) override {
    if (limit < 1 || limit > 10000) {
      return core::Error{"limit: expected 1..10000", core::ErrorCode::kInvalid, "limit"};
    }
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_,
                "SELECT id FROM jobs WHERE end_ms > 0 AND end_ms < ? AND state IN "
                "('SUCCEEDED','FAILED','CANCELLED','LOST') ORDER BY end_ms, id LIMIT ?");
    s.Bind(1, ended_before_ms);
    s.Bind(2, static_cast<int64_t>(limit));
    std::vector<int64_t> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) out.push_back(s.Int(0));
    if (rc != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return out;
  }

  core::Result<int64_t> RemoveEndedJobs(const std::vector<int64_t>& ids) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto r = Exec("BEGIN IMMEDIATE"); !r)
      return core::Error{r.error(), core::ErrorCode::kUnavailable};
    int64_t removed = 0;
    for (int64_t id : ids) {
      Statement job(
          cache_,
          "DELETE FROM jobs WHERE id=? AND state IN ('SUCCEEDED','FAILED','CANCELLED','LOST')");
      job.Bind(1, id);
      if (job.Step() != SQLITE_DONE) {
        Exec("ROLLBACK");
        return Error(sqlite3_errmsg(db_));
      }
      if (sqlite3_changes(db_) == 0) continue;  // not there, or not ended
      ++removed;
      for (const char* sql :
           {"DELETE FROM events WHERE job_id=?", "DELETE FROM job_ranks WHERE job_id=?",
            "DELETE FROM job_usage WHERE job_id=?"}) {
        Statement rest(cache_, sql);
        rest.Bind(1, id);
        if (rest.Step() != SQLITE_DONE) {
          Exec("ROLLBACK");
          return Error(sqlite3_errmsg(db_));
        }
      }
    }
    if (auto r = Exec("COMMIT"); !r) return core::Error{r.error(), core::ErrorCode::kUnavailable};
    return removed;
  }

  core::Result<std::vector<JobOwner>> JobOwners(const std::vector<int64_t>& ids) override {
    // One cached statement of kBatch placeholders; a short batch repeats its last id.
    constexpr std::size_t kBatch = 128;
    static const std::string sql = [] {
      std::string text = "SELECT id,user,state,end_ms FROM jobs WHERE id IN (?";
      for (std::size_t k = 1; k < kBatch; ++k) text += ",?";
      return text + ") ORDER BY id";
    }();
    std::vector<int64_t> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::vector<JobOwner> out;
    for (std::size_t from = 0; from < sorted.size(); from += kBatch) {
      // Locked a batch at a time: a sweep of many logs never holds the controller's writes back.
      std::lock_guard<std::mutex> lock(mutex_);
      Statement s(cache_, sql);
      for (std::size_t k = 0; k < kBatch; ++k) {
        s.Bind(static_cast<int>(k) + 1, sorted[std::min(from + k, sorted.size() - 1)]);
      }
      int rc;
      while ((rc = s.Step()) == SQLITE_ROW) {
        out.push_back(
            {s.Int(0), s.Text(1), ParseState(s.Text(2)).value_or(JobState::kFailed), s.Int(3)});
      }
      if (rc != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    }
    return out;
  }

  core::Result<std::vector<bool>> TransitionAll(const std::vector<TransitionRequest>& requests,
                                                int64_t now_ms) override {
    if (auto checked = CheckTransitions(requests); !checked) return checked.failure();
    std::vector<bool> applied;
    if (requests.empty()) return applied;
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto r = Exec("BEGIN IMMEDIATE"); !r)
      return core::Error{r.error(), core::ErrorCode::kUnavailable};
    for (const TransitionRequest& r : requests) {
      auto one = ApplyTransition(r, now_ms);
      if (!one) {
        Exec("ROLLBACK");
        return one.failure();
      }
      applied.push_back(one.value());
    }
    if (auto r = Exec("COMMIT"); !r) {
      Exec("ROLLBACK");
      return core::Error{r.error(), core::ErrorCode::kUnavailable};
    }
    return applied;
  }

  core::Result<std::vector<JobEvent>> Events(int64_t job_id) override {
    return EventsPage(job_id, 0, std::numeric_limits<int64_t>::max());
  }

  core::Result<std::vector<JobEvent>> EventRange(int64_t job_id, int64_t from, int64_t limit,
                                                 bool newer) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_, newer ? "SELECT job_id,id,time_ms,what,detail,actor FROM events WHERE "
                                "job_id=? AND id>? ORDER BY id LIMIT ?"
                              : "SELECT job_id,id,time_ms,what,detail,actor FROM events WHERE "
                                "job_id=? AND id<? ORDER BY id DESC LIMIT ?");
    s.Bind(1, job_id);
    s.Bind(2, from);
    s.Bind(3, limit);
    std::vector<JobEvent> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      out.push_back({s.Int(0), s.Int(1), s.Int(2), s.Text(3), s.Text(4), s.Text(5)});
    }
    if (rc != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    if (!newer) std::reverse(out.begin(), out.end());
    return out;
  }

  core::Result<bool> PutJobUsage(const std::vector<JobUsageRecord>& records) override {
    if (records.empty()) return true;
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto r = Exec("BEGIN IMMEDIATE"); !r) {
      return core::Error{r.error(), core::ErrorCode::kUnavailable};
    }
    for (const JobUsageRecord& u : records) {
      Statement s(cache_,
                  "INSERT OR REPLACE INTO job_usage(job_id,series,findings,gpu_model,gpu_h_alloc,"
                  "gpu_h_used,updated_ms) VALUES(?,?,?,?,?,?,?)");
      s.Bind(1, u.job_id);
      s.BindBlob(2, u.series);
      s.Bind(3, u.findings);
      s.Bind(4, u.gpu_model);
      s.BindDouble(5, u.gpu_h_alloc);
      s.BindDouble(6, u.gpu_h_used);
      s.Bind(7, u.updated_ms);
      if (s.Step() != SQLITE_DONE) {
        auto e = Error(sqlite3_errmsg(db_));
        Exec("ROLLBACK");
        return e;
      }
    }
    if (auto r = Exec("COMMIT"); !r) return core::Error{r.error(), core::ErrorCode::kUnavailable};
    return true;
  }

  core::Result<std::optional<JobUsageRecord>> GetJobUsage(int64_t job_id) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_,
                "SELECT job_id,series,findings,gpu_model,gpu_h_alloc,gpu_h_used,updated_ms "
                "FROM job_usage WHERE job_id=?");
    s.Bind(1, job_id);
    const int rc = s.Step();
    if (rc == SQLITE_DONE) return std::optional<JobUsageRecord>();
    if (rc != SQLITE_ROW) return Error(sqlite3_errmsg(db_));
    JobUsageRecord u;
    u.job_id = s.Int(0);
    u.series = s.Blob(1);
    u.findings = s.Text(2);
    u.gpu_model = s.Text(3);
    u.gpu_h_alloc = s.Double(4);
    u.gpu_h_used = s.Double(5);
    u.updated_ms = s.Int(6);
    return std::optional<JobUsageRecord>(std::move(u));
  }

  core::Result<std::vector<JobReportRow>> ReportRows(int64_t since_ms, const std::string& user,
                                                     int64_t after_id, int64_t limit) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_,
                "SELECT j.id,j.user,j.queue,u.gpu_model,j.state,j.end_ms,j.reason,u.gpu_h_alloc,"
                "u.gpu_h_used,u.findings FROM jobs j JOIN job_usage u ON u.job_id=j.id "
                "WHERE j.end_ms>0 AND j.end_ms>=? AND (?='' OR j.user=?) AND j.id>? "
                "ORDER BY j.id LIMIT ?");
    s.Bind(1, since_ms);
    s.Bind(2, user);
    s.Bind(3, user);
    s.Bind(4, after_id);
    s.Bind(5, limit > 0 ? limit : std::numeric_limits<int64_t>::max());
    std::vector<JobReportRow> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      JobReportRow r;
      r.id = s.Int(0);
      r.user = s.Text(1);
      r.queue = s.Text(2);
      r.gpu_model = s.Text(3);
      r.state = ParseState(s.Text(4)).value_or(JobState::kFailed);
      r.end_ms = s.Int(5);
      r.reason = s.Text(6);
      r.gpu_h_alloc = s.Double(7);
      r.gpu_h_used = s.Double(8);
      r.findings = s.Text(9);
      out.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return out;
  }

  core::Result<bool> PutUser(const std::string& name, const std::string& token_sha256,
                             bool admin) override {
    const CredentialWrite forget(*this);
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_,
                "INSERT INTO users(name,token_sha256,admin) VALUES(?,?,?) ON CONFLICT(name) "
                "DO UPDATE SET token_sha256=excluded.token_sha256, admin=excluded.admin");
    s.Bind(1, name);
    s.Bind(2, token_sha256);
    s.Bind(3, admin ? 1 : 0);
    if (s.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    Statement t(cache_, "INSERT OR IGNORE INTO tokens(sha256,kind,user) VALUES(?,'user',?)");
    t.Bind(1, token_sha256);
    t.Bind(2, name);
    if (t.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return true;
  }

  core::Result<bool> AddUser(const std::string& name, bool admin,
                             const TokenRecord& token) override {
    const CredentialWrite forget(*this);
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto r = Exec("BEGIN IMMEDIATE"); !r)
      return core::Error{r.error(), core::ErrorCode::kUnavailable};
    auto fail = [&](core::Error e) {
      Exec("ROLLBACK");
      return core::Result<bool>(std::move(e));
    };
    {
      Statement exists(cache_, "SELECT 1 FROM users WHERE name=?");
      exists.Bind(1, name);
      if (exists.Step() == SQLITE_ROW) {
        return fail(
            core::Error{"user '" + name + "' exists already", core::ErrorCode::kInvalid, "name"});
      }
    }
    Statement s(cache_, "INSERT INTO users(name,token_sha256,admin) VALUES(?,?,?)");
    s.Bind(1, name);
    s.Bind(2, token.sha256);
    s.Bind(3, admin ? 1 : 0);
    if (s.Step() != SQLITE_DONE) return fail(Error(sqlite3_errmsg(db_)));
    TokenRecord first = token;
    first.kind = TokenKind::kUser;
    first.user = name;
    if (auto r = InsertToken(first); !r)
      return fail(core::Error{r.error(), core::ErrorCode::kUnavailable});
    if (auto r = Exec("COMMIT"); !r)
      return fail(core::Error{r.error(), core::ErrorCode::kUnavailable});
    return true;
  }

  core::Result<bool> RemoveUser(const std::string& name) override {
    const CredentialWrite forget(*this);
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto r = Exec("BEGIN IMMEDIATE"); !r)
      return core::Error{r.error(), core::ErrorCode::kUnavailable};
    Statement s(cache_, "DELETE FROM users WHERE name=?");
    s.Bind(1, name);
    if (s.Step() != SQLITE_DONE) {
      Exec("ROLLBACK");
      return Error(sqlite3_errmsg(db_));
    }
    const bool removed = sqlite3_changes(db_) > 0;
    Statement t(cache_, "DELETE FROM tokens WHERE kind='user' AND user=?");
    t.Bind(1, name);
    if (t.Step() != SQLITE_DONE) {
      Exec("ROLLBACK");
      return Error(sqlite3_errmsg(db_));
    }
    if (auto r = Exec("COMMIT"); !r) return core::Error{r.error(), core::ErrorCode::kUnavailable};
    return removed;
  }

  core::Result<std::vector<UserInfo>> Users() override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_,
                "SELECT u.name,u.admin,(SELECT COUNT(*) FROM tokens t WHERE t.kind='user' AND "
                "t.user=u.name) FROM users u ORDER BY u.name");
    std::vector<UserInfo> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      out.push_back({s.Text(0), s.Int(1) != 0, static_cast<int>(s.Int(2))});
    }
    if (rc != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return out;
  }

  core::Result<bool> AddToken(const TokenRecord& token) override {
    const CredentialWrite forget(*this);
    std::lock_guard<std::mutex> lock(mutex_);
    return InsertToken(token);
  }

  core::Result<std::optional<TokenRecord>> TokenBySha256(const std::string& sha256) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_,
                "SELECT sha256,kind,user,node,created_ms,expires_ms,created_by FROM tokens "
                "WHERE sha256=?");
    s.Bind(1, sha256);
    const int rc = s.Step();
    if (rc == SQLITE_ROW) return std::optional<TokenRecord>(columns::ReadToken(s));
    if (rc == SQLITE_DONE) return std::optional<TokenRecord>();
    return Error(sqlite3_errmsg(db_));
  }

  core::Result<std::vector<TokenRecord>> Tokens() override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_,
                "SELECT sha256,kind,user,node,created_ms,expires_ms,created_by FROM tokens "
                "ORDER BY created_ms, sha256");
    std::vector<TokenRecord> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) out.push_back(columns::ReadToken(s));
    if (rc != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return out;
  }

  core::Result<bool> RevokeToken(const std::string& id) override {
    const CredentialWrite forget(*this);
    if (id.size() != 12 || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return core::Error{"token id '" + id + "': expected the 12 hex digits `token list` shows",
                         core::ErrorCode::kInvalid, "id"};
    }
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_, "DELETE FROM tokens WHERE substr(sha256,1,12)=?");
    s.Bind(1, id);
    if (s.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return sqlite3_changes(db_) > 0;
  }

  core::Result<int64_t> RemoveExpiredTokens(int64_t expired_before_ms) override {
    const CredentialWrite forget(*this);
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_, "DELETE FROM tokens WHERE expires_ms > 0 AND expires_ms < ?");
    s.Bind(1, expired_before_ms);
    if (s.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return static_cast<int64_t>(sqlite3_changes(db_));
  }

  core::Result<int> RevokeNodeTokens(const std::string& node) override {
    const CredentialWrite forget(*this);
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_, "DELETE FROM tokens WHERE kind IN ('node','join') AND node=?");
    s.Bind(1, node);
    if (s.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return sqlite3_changes(db_);
  }

  core::Result<bool> ExchangeJoinToken(const std::string& join_sha256,
                                       const TokenRecord& node_token, int64_t now_ms) override {
    const CredentialWrite forget(*this);
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto r = Exec("BEGIN IMMEDIATE"); !r)
      return core::Error{r.error(), core::ErrorCode::kUnavailable};
    {
      // One credential per node: a join must not take over a node that has one.
      Statement held(cache_, "SELECT 1 FROM tokens WHERE kind='node' AND node=?");
      held.Bind(1, node_token.node);
      if (held.Step() == SQLITE_ROW) {
        Exec("ROLLBACK");
        return core::Error{"node '" + node_token.node +
                               "' has a credential already (an admin revokes it first: "
                               "`gpufleet nodes revoke " +
                               node_token.node + "`)",
                           core::ErrorCode::kForbidden, "node"};
      }
    }
    Statement s(cache_,
                "DELETE FROM tokens WHERE sha256=? AND kind='join' AND (expires_ms=0 OR "
                "expires_ms>?)");
    s.Bind(1, join_sha256);
    s.Bind(2, now_ms);
    if (s.Step() != SQLITE_DONE) {
      Exec("ROLLBACK");
      return Error(sqlite3_errmsg(db_));
    }
    if (sqlite3_changes(db_) == 0) {
      Exec("ROLLBACK");
      return false;
    }
    if (auto r = InsertToken(node_token); !r) {
      Exec("ROLLBACK");
      return r;
    }
    if (auto r = Exec("COMMIT"); !r) return core::Error{r.error(), core::ErrorCode::kUnavailable};
    return true;
  }

  core::Result<bool> Audit(int64_t job_id, const std::string& actor, const std::string& what,
                           const std::string& detail, int64_t now_ms) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return AddEvent(job_id, now_ms, what, detail, actor);
  }

  core::Result<bool> PutNode(const NodeRecord& n) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_,
                "INSERT INTO nodes(name,address,gpus,gpu_model,simulated,epoch,first_seen_ms,"
                "last_seen_ms,state,drains) VALUES(?,?,?,?,?,?,?,?,?,?) ON CONFLICT(name) DO UPDATE "
                "SET address=excluded.address, gpus=excluded.gpus, gpu_model=excluded.gpu_model, "
                "simulated=excluded.simulated, epoch=excluded.epoch, "
                "last_seen_ms=excluded.last_seen_ms, state=excluded.state, drains=excluded.drains");
    s.Bind(1, n.name);
    s.Bind(2, n.address);
    s.Bind(3, n.gpus);
    s.Bind(4, n.gpu_model);
    s.Bind(5, n.simulated ? 1 : 0);
    s.Bind(6, n.epoch);
    s.Bind(7, n.first_seen_ms);
    s.Bind(8, n.last_seen_ms);
    s.Bind(9, n.state);
    nlohmann::json drains = nlohmann::json::array();
    for (const GpuDrain& d : n.drains) {
      drains.push_back({{"gpu", d.gpu}, {"reason", d.reason}, {"by", d.by}, {"since_ms", d.since_ms}});
    }
    s.Bind(10, drains.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (s.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return true;
  }

  core::Result<std::vector<NodeRecord>> Nodes() override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_,
                "SELECT name,address,gpus,gpu_model,simulated,epoch,first_seen_ms,last_seen_ms,"
                "state,drains FROM nodes ORDER BY name");
    std::vector<NodeRecord> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      NodeRecord n;
      n.name = s.Text(0);
      n.address = s.Text(1);
      n.gpus = static_cast<int>(s.Int(2));
      n.gpu_model = s.Text(3);
      n.simulated = s.Int(4) != 0;
      n.epoch = s.Int(5);
      n.first_seen_ms = s.Int(6);
      n.last_seen_ms = s.Int(7);
      n.state = s.Text(8);
      // Written by PutNode above; an unreadable value loses the drains, not the node.
      const nlohmann::json drains = nlohmann::json::parse(s.Text(9), nullptr, false);
      if (drains.is_array()) {
        for (const nlohmann::json& d : drains) {
          if (!d.is_object()) continue;
          GpuDrain g;
          g.gpu = d.value("gpu", -1);
          g.reason = d.value("reason", std::string());
          g.by = d.value("by", std::string());
          g.since_ms = d.value("since_ms", int64_t{0});
          if (g.gpu >= 0) n.drains.push_back(std::move(g));
        }
      }
      out.push_back(std::move(n));
    }
    if (rc != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return out;
  }

  core::Result<bool> PutScaleNode(const ScaleNodeRecord& n) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_,
                "INSERT OR REPLACE INTO scale_nodes(name,grp,spot,state,created_ms,updated_ms,"
                "join_token_id,detail) VALUES(?,?,?,?,?,?,?,?)");
    s.Bind(1, n.name);
    s.Bind(2, n.group);
    s.Bind(3, n.spot ? 1 : 0);
    s.Bind(4, n.state);
    s.Bind(5, n.created_ms);
    s.Bind(6, n.updated_ms);
    s.Bind(7, n.join_token_id);
    s.Bind(8, n.detail);
    if (s.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return true;
  }

  core::Result<bool> DeleteScaleNode(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_, "DELETE FROM scale_nodes WHERE name=?");
    s.Bind(1, name);
    if (s.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return sqlite3_changes(db_) > 0;
  }

  core::Result<std::vector<ScaleNodeRecord>> ScaleNodes() override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_,
                "SELECT name,grp,spot,state,created_ms,updated_ms,join_token_id,detail FROM "
                "scale_nodes ORDER BY name");
    std::vector<ScaleNodeRecord> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      ScaleNodeRecord n;
      n.name = s.Text(0);
      n.group = s.Text(1);
      n.spot = s.Int(2) != 0;
      n.state = s.Text(3);
      n.created_ms = s.Int(4);
      n.updated_ms = s.Int(5);
      n.join_token_id = s.Text(6);
      n.detail = s.Text(7);
      out.push_back(std::move(n));
    }
    if (rc != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return out;
  }

  core::Result<std::optional<UserRecord>> UserByToken(const std::string& token_sha256) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement s(cache_,
                "SELECT u.name,u.admin FROM tokens t JOIN users u ON u.name=t.user WHERE "
                "t.sha256=? AND t.kind='user'");
    s.Bind(1, token_sha256);
    const int rc = s.Step();
    if (rc == SQLITE_ROW) return std::optional<UserRecord>(UserRecord{s.Text(0), s.Int(1) != 0});
    if (rc == SQLITE_DONE) return std::optional<UserRecord>();
    return Error(sqlite3_errmsg(db_));
  }

 private:
  core::Result<std::vector<JobRecord>> Rows(Statement& s) {
    std::vector<JobRecord> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) out.push_back(columns::ReadJob(s));
    if (rc != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return out;
  }
  core::Result<bool> AddEvent(int64_t job_id, int64_t time_ms, const std::string& what,
                              const std::string& detail, const std::string& actor = "") {
    Statement s(cache_, "INSERT INTO events(job_id,time_ms,what,detail,actor) VALUES(?,?,?,?,?)");
    s.Bind(1, job_id);
    s.Bind(2, time_ms);
    s.Bind(3, what);
    s.Bind(4, detail);
    s.Bind(5, actor);
    if (s.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return true;
  }
  core::Result<bool> InsertToken(const TokenRecord& t) {
    Statement s(cache_,
                "INSERT INTO tokens(sha256,kind,user,node,created_ms,expires_ms,created_by) "
                "VALUES(?,?,?,?,?,?,?)");
    s.Bind(1, t.sha256);
    s.Bind(2, std::string(TokenKindName(t.kind)));
    s.Bind(3, t.user);
    s.Bind(4, t.node);
    s.Bind(5, t.created_ms);
    s.Bind(6, t.expires_ms);
    s.Bind(7, t.created_by);
    if (s.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    return true;
  }

  // One compare-and-set transition and its event, inside the caller's transaction: false when
  // the job is not in `r.from`.
  core::Result<bool> ApplyTransition(const TransitionRequest& r, int64_t now_ms) {
    const JobUpdate& u = r.update;
    std::string sql = "UPDATE jobs SET state=?";
    if (u.start_ms) sql += ",start_ms=?";
    if (u.end_ms) sql += ",end_ms=?";
    if (u.exit_code) sql += ",exit_code=?";
    if (u.reason) sql += ",reason=?";
    if (u.pid) sql += ",pid=?,pid_start=?";
    if (u.usage_samples) sql += ",usage_samples=?,gpu_util_avg_pct=?,gpu_mem_peak_mib=?";
    if (u.host_usage) sql += ",host_usage=?";
    if (u.attained_gpu_s) sql += ",attained_gpu_s=?";
    if (u.preempting) sql += ",preempting=?";
    if (u.bump_epoch) sql += ",epoch=epoch+1";
    sql += " WHERE id=? AND state=?";
    Statement s(cache_, sql.c_str());
    int i = 1;
    s.Bind(i++, std::string(StateName(r.to)));
    if (u.start_ms) s.Bind(i++, *u.start_ms);
    if (u.end_ms) s.Bind(i++, *u.end_ms);
    if (u.exit_code) s.Bind(i++, *u.exit_code);
    if (u.reason) s.Bind(i++, *u.reason);
    if (u.pid) {
      s.Bind(i++, *u.pid);
      s.Bind(i++, static_cast<int64_t>(u.pid_start));
    }
    if (u.usage_samples) {
      s.Bind(i++, *u.usage_samples);
      s.BindDouble(i++, u.gpu_util_avg_pct);
      s.Bind(i++, u.gpu_mem_peak_mib);
    }
    if (u.host_usage) s.Bind(i++, core::HostUsageToText(*u.host_usage));
    if (u.attained_gpu_s) s.BindDouble(i++, *u.attained_gpu_s);
    if (u.preempting) s.Bind(i++, int64_t{*u.preempting ? 1 : 0});
    s.Bind(i++, r.id);
    s.Bind(i, std::string(StateName(r.from)));
    if (s.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    if (sqlite3_changes(db_) == 0) return false;
    if (u.placement) {
      Statement clear(cache_, "DELETE FROM job_ranks WHERE job_id=?");
      clear.Bind(1, r.id);
      if (clear.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
      for (std::size_t k = 0; k < u.placement->size(); ++k) {
        const RankPlacement& rank = (*u.placement)[k];
        Statement insert(cache_, "INSERT INTO job_ranks(job_id,rank,node,gpus) VALUES(?,?,?,?)");
        insert.Bind(1, r.id);
        insert.Bind(2, static_cast<int64_t>(k));
        insert.Bind(3, rank.node);
        insert.Bind(4, nlohmann::json(rank.gpus).dump());
        if (insert.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
      }
    }
    // A change within one state (a running job marked for preemption) is logged by its reason.
    const std::string what =
        r.from == r.to ? std::string(StateName(r.to))
                       : std::string(StateName(r.from)) + "->" + std::string(StateName(r.to));
    if (auto e = AddEvent(r.id, now_ms, what, u.reason.value_or("")); !e) return e;
    return true;
  }

  // Writes one job inside the open transaction; its id, or the error.
  core::Result<AddedJob> InsertJob(const JobRecord& job) {
    if (!job.client_token.empty()) {
      // A retry of a submit that was committed but not acknowledged: the same job, not a new one.
      // `client_token != ''` lets SQLite use the partial index jobs_by_client_token; without it
      // the lookup scanned every job of the user (6 ms per submit with 30,000 jobs).
      Statement existing(
          cache_, "SELECT id FROM jobs WHERE user=? AND client_token=? AND client_token!=''");
      existing.Bind(1, job.user);
      existing.Bind(2, job.client_token);
      if (existing.Step() == SQLITE_ROW) return AddedJob{existing.Int(0), false};
    }
    Statement s(cache_,
                "INSERT INTO jobs(user,name,queue,priority,gpus,gpu_milli,gpu_type,nodes,argv,env,"
                "workdir,state,submit_ms,client_token,restartable,cpu_milli,memory_mib,"
                "time_limit_s,container,min_gpus,args_bytes) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    const std::string argv_text = nlohmann::json(job.argv).dump();
    const std::string env_text = nlohmann::json(job.env).dump();
    s.Bind(1, job.user);
    s.Bind(2, job.name);
    s.Bind(3, job.queue);
    s.Bind(4, job.priority);
    s.Bind(5, job.gpus);
    s.Bind(6, job.gpu_milli);
    s.Bind(7, job.gpu_type);
    s.Bind(8, job.nodes);
    s.Bind(9, argv_text);
    s.Bind(10, env_text);
    s.Bind(11, job.workdir);
    s.Bind(12, std::string(StateName(JobState::kPending)));
    s.Bind(13, job.submit_ms);
    s.Bind(14, job.client_token);
    s.Bind(15, job.restartable ? 1 : 0);
    s.Bind(16, job.cpu_milli);
    s.Bind(17, job.memory_mib);
    s.Bind(18, job.time_limit_s);
    s.Bind(19, columns::ContainerToJson(job.container));
    s.Bind(20, job.min_gpus);
    s.Bind(21, columns::ArgsBytes(job));
    if (s.Step() != SQLITE_DONE) return Error(sqlite3_errmsg(db_));
    const int64_t id = sqlite3_last_insert_rowid(db_);
    if (auto r = AddEvent(id, job.submit_ms, "submitted", job.user, job.user); !r) {
      return core::Error{r.error(), core::ErrorCode::kUnavailable};
    }
    return AddedJob{id, true};
  }

  // One transaction for `batch`: each job's result, in order. A failed transaction fails every
  // job in it (none of them was committed).
  std::vector<core::Result<AddedJob>> CommitBatch(const std::vector<const JobRecord*>& batch) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto fail_all = [&](const std::string& why) {
      return std::vector<core::Result<AddedJob>>(
          batch.size(), core::Result<AddedJob>(core::Error{why, core::ErrorCode::kUnavailable}));
    };
    if (auto r = Exec("BEGIN IMMEDIATE"); !r) return fail_all(r.error());
    std::vector<core::Result<AddedJob>> results;
    results.reserve(batch.size());
    for (const JobRecord* job : batch) {
      auto id = InsertJob(*job);
      if (!id) {
        Exec("ROLLBACK");
        return fail_all(id.error());
      }
      results.emplace_back(id.value());
    }
    if (auto r = Exec("COMMIT"); !r) {
      Exec("ROLLBACK");
      return fail_all(r.error());
    }
    return results;
  }

  sqlite3* db_;
  std::string path_;
  std::mutex mutex_;           // the connection and its statement cache
  StatementCache cache_{db_};  // after db_, which it uses
  // Every queued job at once.
  SubmitGroup submits_{std::numeric_limits<std::size_t>::max(),
                       [this](const std::vector<const JobRecord*>& batch) {
                         return CommitBatch(batch);
                       }};
  std::mutex lead_mutex_;
  LeaderInfo leader_;
};

}  // namespace

std::string_view TokenKindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::kUser:
      return "user";
    case TokenKind::kNode:
      return "node";
    case TokenKind::kJoin:
      return "join";
  }
  return "?";
}

std::string TokenId(const std::string& sha256) { return sha256.substr(0, 12); }

std::optional<JobFilter::SortKey> ParseSortKey(std::string_view name) {
  using K = JobFilter::SortKey;
  static const std::pair<std::string_view, K> kKeys[] = {
      {"id", K::kId},       {"submit", K::kSubmit}, {"start", K::kStart},
      {"end", K::kEnd},     {"gpus", K::kGpus},     {"user", K::kUser},
      {"state", K::kState}, {"queue", K::kQueue},   {"priority", K::kPriority}};
  for (const auto& [text, key] : kKeys) {
    if (text == name) return key;
  }
  return std::nullopt;
}

core::Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& data_dir) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) {
    return core::Error{"cannot create data directory " + data_dir + ": " + ec.message()};
  }
  const std::string path = (std::filesystem::path(data_dir) / "gpufleet.db").string();
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string why = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return core::Error{"cannot open " + path + ": " + why + " (is the data directory writable?)"};
  }
  auto store = std::make_unique<SqliteStore>(db, path);
  sqlite3_busy_timeout(db, 5000);
  for (const char* pragma :
       {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON"}) {
    if (auto r = store->Exec(pragma); !r)
      return core::Error{r.error(), core::ErrorCode::kUnavailable};
  }
  if (auto r = store->Migrate(); !r) return core::Error{r.error(), core::ErrorCode::kUnavailable};
  // Jobs' argv and environment are their users' secrets: the database is its owner's only (also
  // when an older version left it 0644).
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::string file = path + suffix;
    if (::chmod(file.c_str(), 0600) != 0 && errno != ENOENT) {
      return core::Error{"cannot make " + file + " private (chmod 0600): " + std::strerror(errno)};
    }
  }
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace gpufleet::store
