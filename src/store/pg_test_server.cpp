#include "store/pg_test_server.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

extern char** environ;

namespace gpufleet::store {
namespace {

constexpr const char* kInstallHint = "bash scripts/setup.sh --tests installs it";

bool IsExecutable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The first directory on PATH holding `name`, as a full path, or "".
std::string OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (IsExecutable(candidate)) return candidate;
  }
  return "";
}

struct Binaries {
  std::string bin_dir;  // holds initdb and pg_ctl
  std::string psql;
};

// initdb and pg_ctl side by side: on PATH, else in the newest /usr/lib/postgresql/<v>/bin.
std::optional<Binaries> FindBinaries() {
  Binaries found;
  const std::string initdb = OnPath("initdb");
  if (!initdb.empty()) {
    const std::string dir = initdb.substr(0, initdb.rfind('/'));
    if (IsExecutable(dir + "/pg_ctl")) found.bin_dir = dir;
  }
  if (found.bin_dir.empty()) {
    double best = -1;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
      const std::string version = entry.path().filename().string();
      char* end = nullptr;
      const double v = std::strtod(version.c_str(), &end);
      if (end == version.c_str()) continue;
      const std::string dir = entry.path().string() + "/bin";
      if (v > best && IsExecutable(dir + "/initdb") && IsExecutable(dir + "/pg_ctl")) {
        best = v;
        found.bin_dir = dir;
      }
    }
  }
  if (found.bin_dir.empty()) return std::nullopt;
  found.psql = IsExecutable(found.bin_dir + "/psql") ? found.bin_dir + "/psql" : OnPath("psql");
  return found;
}

// As root, the user the server runs as: postgres, else nobody.
const struct passwd* ServerUser() {
  if (const struct passwd* pw = ::getpwnam("postgres")) return pw;
  return ::getpwnam("nobody");
}

std::string Tail(const std::string& text, size_t max_chars) {
  std::string tail = text.size() > max_chars ? "..." + text.substr(text.size() - max_chars) : text;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  return tail;
}

std::string Join(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

void SetError(std::string* error, const std::string& text) {
  if (error != nullptr) *error = text;
}

}  // namespace

PgTestServer::PgTestServer() : PgTestServer(Options{}) {}
PgTestServer::PgTestServer(Options options) : options_(std::move(options)) {}

PgTestServer::~PgTestServer() {
  if (running_) Stop(/*immediate=*/true);
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::optional<std::string> PgTestServer::Unavailable() {
  static const std::optional<std::string> why = []() -> std::optional<std::string> {
    const std::optional<Binaries> bins = FindBinaries();
    if (!bins) {
      return std::string("PostgreSQL 15 is not installed (initdb and pg_ctl not found on PATH "
                         "or in /usr/lib/postgresql/*/bin): ") +
             kInstallHint;
    }
    if (bins->psql.empty()) {
      return "PostgreSQL's client psql is not installed (found the server in " + bins->bin_dir +
             "): " + kInstallHint;
    }
    if (::geteuid() == 0 && ServerUser() == nullptr) {
      return std::string("running as root, and there is neither a `postgres` nor a `nobody` "
                         "user to run PostgreSQL as (initdb refuses root)");
    }
    return std::nullopt;
  }();
  return why;
}

bool PgTestServer::Run(const std::vector<std::string>& argv, bool as_server_user,
                       std::string* output, int timeout_s) {
  // Everything the child needs is prepared before fork: after it, the child only calls
  // async-signal-safe functions.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    // PGDATA, PGPORT, PGHOST, PGOPTIONS... would change what the commands do; LC_ALL is set.
    if (entry.rfind("PG", 0) == 0 || entry.rfind("LC_ALL=", 0) == 0) continue;
    env_strings.emplace_back(entry);
  }
  env_strings.emplace_back("LC_ALL=C");
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  const std::string workdir = dir_.empty() ? "/tmp" : dir_;
  const bool switch_user = as_server_user && as_other_user_;
  const uid_t uid = run_uid_;
  const gid_t gid = run_gid_;

  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    if (output) *output = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    if (devnull >= 0) ::close(devnull);
    if (output) *output = std::string("fork: ") + std::strerror(err);
    return false;
  }
  if (pid == 0) {
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    // No descriptor of the test process (its stores' sockets, its listeners) may live on in
    // the server that pg_ctl starts.
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
#endif
    {
      const long max_fd = ::sysconf(_SC_OPEN_MAX);
      for (long fd = 3; fd < (max_fd > 0 && max_fd < 65536 ? max_fd : 65536); ++fd) ::close(fd);
    }
    if (switch_user) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) {
        static const char msg[] = "cannot switch to the server's user\n";
        (void)!::write(2, msg, sizeof msg - 1);
        ::_exit(126);
      }
    }
    if (::chdir(workdir.c_str()) != 0) (void)!::chdir("/");
    ::execve(args[0], args.data(), envp.data());
    static const char msg[] = "cannot execute the command\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(pipefd[1]);
  if (devnull >= 0) ::close(devnull);

  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  char buf[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    struct pollfd p {pipefd[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(pipefd[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) out += "\n(killed after " + std::to_string(timeout_s) + " s)";
  if (output) *output = out;
  return !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string PgTestServer::LogTail() const {
  std::ifstream in(log_path());
  if (!in) return "(no log at " + log_path() + ")";
  std::stringstream text;
  text << in.rdbuf();
  return "its log " + log_path() + " ends with:\n" + Tail(text.str(), 3000);
}

void PgTestServer::RemoveAbandoned() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/tmp", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("gfpg-", 0) != 0 || name.size() != 11) continue;
    std::ifstream owner(entry.path() / "owner");
    long pid = 0;
    if (!(owner >> pid) || pid <= 0) continue;  // not ours, or being made right now
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still alive
    const std::string data = entry.path().string() + "/data";
    if (std::filesystem::exists(data + "/postmaster.pid", ec)) {
      Run({bin_dir_ + "/pg_ctl", "-D", data, "-m", "immediate", "-w", "-t", "30", "stop"},
          /*as_server_user=*/true, nullptr, 60);
    }
    std::filesystem::remove_all(entry.path(), ec);
  }
}

bool PgTestServer::Init(std::string* error) {
  if (auto why = Unavailable()) {
    SetError(error, *why);
    return false;
  }
  const Binaries bins = *FindBinaries();
  bin_dir_ = bins.bin_dir;
  psql_ = bins.psql;
  if (::geteuid() == 0) {
    const struct passwd* pw = ServerUser();
    as_other_user_ = true;
    run_uid_ = pw->pw_uid;
    run_gid_ = pw->pw_gid;
  }
  RemoveAbandoned();
  // Short, so that the socket's path stays far below the 107 characters a Unix socket allows.
  char tmpl[] = "/tmp/gfpg-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    SetError(error, std::string("cannot make a temporary directory in /tmp: ") +
                        std::strerror(errno));
    return false;
  }
  dir_ = tmpl;
  // Which process this server is for: a later one removes it once that process is gone.
  std::ofstream(dir_ + "/owner") << ::getpid() << "\n";
  if (as_other_user_ && ::chown(dir_.c_str(), run_uid_, run_gid_) != 0) {
    SetError(error, "cannot give " + dir_ + " to the server's user: " + std::strerror(errno));
    return false;
  }
  std::vector<std::string> initdb = {bin_dir_ + "/initdb", "-D", data_dir(), "-A", "trust",
                                     "-U", "gpufleet", "-E", "UTF8", "--locale=C"};
  if (!options_.fsync) initdb.push_back("--no-sync");
  std::string out;
  if (!Run(initdb, /*as_server_user=*/true, &out)) {
    SetError(error, "initdb failed (" + Join(initdb) + "):\n" + Tail(out, 3000));
    return false;
  }
  std::ofstream conf(data_dir() + "/postgresql.conf", std::ios::app);
  conf << "\n# PgTestServer\n"
       << "listen_addresses = ''\n"
       << "unix_socket_directories = '" << dir_ << "'\n"
       << "port = " << port() << "\n"
       << "max_connections = " << options_.max_connections << "\n"
       << "fsync = " << (options_.fsync ? "on" : "off") << "\n";
  for (const auto& [name, value] : options_.settings) conf << name << " = " << value << "\n";
  conf.close();
  if (!conf) {
    SetError(error, "cannot write " + data_dir() + "/postgresql.conf");
    return false;
  }
  initialized_ = true;
  return true;
}

bool PgTestServer::Start(std::string* error) {
  if (running_) return true;
  if (!initialized_ && !Init(error)) return false;
  const std::vector<std::string> start = {bin_dir_ + "/pg_ctl", "-D", data_dir(), "-l",
                                          log_path(), "-w", "-t", "60", "start"};
  std::string out;
  if (!Run(start, /*as_server_user=*/true, &out, 90)) {
    SetError(error, "PostgreSQL did not start (" + Join(start) + ": " + Tail(out, 1000) + "); " +
                        LogTail());
    // pg_ctl may have given up waiting on a server that still came up: do not leave it behind.
    Run({bin_dir_ + "/pg_ctl", "-D", data_dir(), "-m", "immediate", "-w", "stop"}, true,
        nullptr, 30);
    return false;
  }
  running_ = true;
  return true;
}

bool PgTestServer::Stop(bool immediate, std::string* error) {
  if (!running_) return true;
  const std::vector<std::string> stop = {bin_dir_ + "/pg_ctl", "-D", data_dir(), "-m",
                                         immediate ? "immediate" : "fast", "-w", "-t", "60",
                                         "stop"};
  std::string out;
  if (!Run(stop, /*as_server_user=*/true, &out, 90)) {
    SetError(error, "PostgreSQL did not stop (" + Join(stop) + ": " + Tail(out, 1000) + "); " +
                        LogTail());
    return false;
  }
  running_ = false;
  return true;
}

bool PgTestServer::Restart(std::string* error) {
  return Stop(/*immediate=*/false, error) && Start(error);
}

std::string PgTestServer::ConnInfo(const std::string& dbname) const {
  return "host=" + dir_ + " port=" + std::to_string(port()) + " user=gpufleet dbname=" + dbname;
}

bool PgTestServer::CreateDatabase(const std::string& name, std::string* error) {
  const bool valid = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
  });
  if (!valid) {
    SetError(error, "not a database name for CreateDatabase: '" + name + "'");
    return false;
  }
  std::string out;
  if (!Psql("CREATE DATABASE \"" + name + "\"", "postgres", &out)) {
    SetError(error, "CREATE DATABASE " + name + " failed: " + out);
    return false;
  }
  return true;
}

bool PgTestServer::Psql(const std::string& sql, const std::string& dbname, std::string* output) {
  if (!running_ || psql_.empty()) {
    if (output) *output = "the server is not running";
    return false;
  }
  const std::vector<std::string> argv = {psql_, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                                         "-h", dir_, "-p", std::to_string(port()), "-U",
                                         "gpufleet", "-d", dbname, "-c", sql};
  std::string out;
  const bool ok = Run(argv, /*as_server_user=*/false, &out, 120);
  if (output) *output = ok ? out : Tail(out, 3000);
  return ok;
}

}  // namespace gpufleet::store
