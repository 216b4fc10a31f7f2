#include "agent/runner.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace gpufleet::agent {
namespace {

std::string Join(const std::vector<int>& values) {
  std::string out;
  for (int v : values) {
    if (!out.empty()) out += ',';
    out += std::to_string(v);
  }
  return out;
}

// The child's environment: the agent's own, overridden by the job's, then by gpufleet's.
std::vector<std::string> Environment(const LaunchSpec& spec) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : spec.env) env[k] = v;
  env["CUDA_VISIBLE_DEVICES"] = Join(spec.gpu_indices);
  env["GPUFLEET_JOB_ID"] = std::to_string(spec.job_id);
  env["MASTER_ADDR"] = "127.0.0.1";
  env["MASTER_PORT"] = std::to_string(29500 + spec.job_id % 1000);
  env["WORLD_SIZE"] = "1";
  env["RANK"] = "0";
  env["NODE_RANK"] = "0";
  env["LOCAL_WORLD_SIZE"] = std::to_string(std::max<std::size_t>(1, spec.gpu_indices.size()));
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

Runner::~Runner() {
  for (const auto& [id, child] : jobs_) {
    kill(-child.pid, SIGKILL);
    waitpid(child.pid, nullptr, 0);
  }
}

core::Result<pid_t> Runner::Launch(const LaunchSpec& spec) {
  if (spec.argv.empty()) return core::Error{"job " + std::to_string(spec.job_id) + ": empty argv"};
  if (jobs_.count(spec.job_id)) {
    return core::Error{"job " + std::to_string(spec.job_id) + " is already running here"};
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(spec.log_path).parent_path(), ec);
  const int log = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (log < 0) {
    return core::Error{"cannot open log " + spec.log_path + ": " + std::strerror(errno)};
  }
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  const std::vector<std::string> env_strings = Environment(spec);
  std::vector<char*> envp;
  for (const std::string& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string workdir = spec.workdir.empty()
                                  ? std::filesystem::path(spec.log_path).parent_path().string()
                                  : spec.workdir;
  uid_t uid = 0;
  gid_t gid = 0;
  bool switch_user = false;
  std::string user_name = spec.user;
  if (geteuid() == 0 && !spec.user.empty() && spec.user != "root") {
    if (passwd* pw = getpwnam(spec.user.c_str())) {
      uid = pw->pw_uid;
      gid = pw->pw_gid;
      switch_user = true;
    }
  }
  // Exec failures travel back over a close-on-exec pipe: an empty read means exec succeeded.
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    close(log);
    return core::Error{std::string("pipe: ") + std::strerror(errno)};
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(log);
    close(status_pipe[0]);
    close(status_pipe[1]);
    return core::Error{std::string("fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    setpgid(0, 0);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // the agent blocks SIGTERM; the job must not
    int step = 0;                              // 1 chdir, 2 setuid, 3 exec
    if (chdir(workdir.c_str()) != 0) step = 1;
    if (step == 0 && switch_user &&
        (initgroups(user_name.c_str(), gid) != 0 || setgid(gid) != 0 || setuid(uid) != 0)) {
      step = 2;
    }
    if (step == 0) {
      execvpe(argv[0], argv.data(), envp.data());
      step = 3;
    }
    const int report[2] = {step, errno};
    (void)!write(status_pipe[1], report, sizeof report);
    _exit(127);
  }
  close(status_pipe[1]);
  close(log);
  setpgid(pid, pid);  // also from the parent, so Stop never races the child's own call
  int report[2] = {0, 0};
  ssize_t n;
  do {
    n = read(status_pipe[0], report, sizeof report);
  } while (n < 0 && errno == EINTR);
  close(status_pipe[0]);
  if (n > 0) {
    waitpid(pid, nullptr, 0);
    std::string what = report[0] == 1   ? "cannot enter the working directory " + workdir
                       : report[0] == 2 ? "cannot switch to user " + spec.user
                                        : "cannot run '" + spec.argv[0] + "'";
    return core::Error{"job " + std::to_string(spec.job_id) + ": " + what + ": " +
                       std::strerror(report[1])};
  }
  jobs_[spec.job_id] = Child{pid, false, {}};
  return pid;
}

bool Runner::Stop(int64_t job_id, double grace_s) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return false;
  Child& child = it->second;
  if (!child.stopping) {
    child.stopping = true;
    child.kill_at = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(std::max(0.0, grace_s)));
    kill(-child.pid, SIGTERM);
  }
  return true;
}

std::vector<JobExit> Runner::Reap() {
  std::vector<JobExit> exits;
  const auto now = std::chrono::steady_clock::now();
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    Child& child = it->second;
    int status = 0;
    const pid_t r = waitpid(child.pid, &status, WNOHANG);
    if (r == child.pid || (r < 0 && errno == ECHILD)) {
      JobExit e;
      e.job_id = it->first;
      e.stopped = child.stopping;
      if (r == child.pid && WIFEXITED(status)) {
        e.exit_code = WEXITSTATUS(status);
      } else if (r == child.pid && WIFSIGNALED(status)) {
        e.signal = WTERMSIG(status);
        e.exit_code = 128 + e.signal;
      } else {
        e.exit_code = -1;
      }
      // The leader is gone; make sure nothing of the job's group outlives it after a stop.
      if (child.stopping) kill(-child.pid, SIGKILL);
      exits.push_back(e);
      it = jobs_.erase(it);
      continue;
    }
    if (child.stopping && now >= child.kill_at) kill(-child.pid, SIGKILL);
    ++it;
  }
  return exits;
}

}  // namespace gpufleet::agent
