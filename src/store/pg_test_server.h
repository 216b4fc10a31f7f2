#pragma once
// `PgTestServer`: a throwaway PostgreSQL server for tests and benchmarks. It runs `initdb` in a
// fresh temporary directory (/tmp/gfpg-XXXXXX) and starts the server with `pg_ctl`, listening
// only on a Unix socket in that directory (no TCP port), with trust authentication for the
// superuser `gpufleet`. The destructor stops the server and removes the directory.
//
// PostgreSQL's binaries are found on PATH (initdb) or in /usr/lib/postgresql/<newest>/bin.
// initdb and the server refuse to run as root: as root, they run as the `postgres` user (or
// `nobody` where there is none), which then owns the directory. Depends on std and POSIX only;
// SQL is run with the `psql` client. Start, Stop and Restart are for one thread; ConnInfo,
// CreateDatabase and Psql may be called from several at once while the server runs.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpufleet::store {

class PgTestServer {
 public:
  struct Options {
    // On: commits are synced to disk, as in production (what a benchmark should measure). Off:
    // initdb --no-sync and fsync=off: commits are written but not synced (a server crash loses
    // nothing, a machine crash may): faster tests.
    bool fsync = true;
    int max_connections = 100;
    // More postgresql.conf settings, name and value as the file spells it ("'8MB'" or "8MB").
    std::vector<std::pair<std::string, std::string>> settings;
  };

  PgTestServer();
  explicit PgTestServer(Options options);
  ~PgTestServer();
  PgTestServer(const PgTestServer&) = delete;
  PgTestServer& operator=(const PgTestServer&) = delete;

  // Why PostgreSQL cannot be used on this machine (its binaries are missing, say), or nullopt.
  static std::optional<std::string> Unavailable();

  // The first call makes the directory, runs initdb and starts the server; after Stop, a call
  // starts it again on the same data. Returns false with `error` (naming the log) on failure.
  bool Start(std::string* error = nullptr);
  // pg_ctl stop: -m fast (sessions end, a checkpoint is written), or -m immediate (every process
  // quits at once, as in a crash: the next start recovers from the WAL).
  bool Stop(bool immediate = false, std::string* error = nullptr);
  // Stops (fast) when running, then starts again on the same data.
  bool Restart(std::string* error = nullptr);
  bool running() const { return running_; }

  // A libpq key=value connection string for database `dbname` as `gpufleet`.
  std::string ConnInfo(const std::string& dbname = "postgres") const;
  // CREATE DATABASE `name` (letters, digits and '_' only).
  bool CreateDatabase(const std::string& name, std::string* error = nullptr);
  // Runs `sql` with psql in `dbname` (stopping at the first error); `output` gets psql's
  // unaligned, tuples-only output (or its error messages on failure).
  bool Psql(const std::string& sql, const std::string& dbname = "postgres",
            std::string* output = nullptr);

  const std::string& dir() const { return dir_; }                // the temporary directory
  std::string socket_dir() const { return dir_; }                // host= in ConnInfo
  std::string log_path() const { return dir_ + "/server.log"; }  // the server's log
  std::string data_dir() const { return dir_ + "/data"; }
  int port() const { return 5432; }  // names the socket file; no TCP port is opened

 private:
  // Runs argv[0] (a full path) with the rest; as the server's user when `as_server_user`.
  // `output` gets stdout and stderr together. False when it could not run or exited non-zero.
  bool Run(const std::vector<std::string>& argv, bool as_server_user, std::string* output,
           int timeout_s = 120);
  bool Init(std::string* error);
  // Stops and removes the servers of test processes that died without stopping theirs (killed
  // by a timeout, say): each directory names its process in the file `owner`.
  void RemoveAbandoned();
  std::string LogTail() const;

  Options options_;
  std::string bin_dir_;
  std::string psql_;
  std::string dir_;
  bool initialized_ = false;
  bool running_ = false;
  bool as_other_user_ = false;  // running as root: the server's commands run as run_uid_
  unsigned run_uid_ = 0;
  unsigned run_gid_ = 0;
};

}  // namespace gpufleet::store
