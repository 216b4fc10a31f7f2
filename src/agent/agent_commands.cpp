#include "agent/agent_commands.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "agent/agent_server.h"
#include "agent/http_controller_link.h"
#include "agent/node_agent.h"
#include "agent/sample_json.h"
#include "agent/top_view.h"
#include "core/node.h"
#include "gpu/gpu_probe.h"
#include "gpu/sampler.h"
#include "gpu/topology_links.h"
#include "net/failover_client.h"
#include "net/http_client.h"
#include "net/private_file.h"
#include "net/tls.h"

namespace gpufleet::agent {
namespace {

std::string HostName(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr && *node != '\0') return node;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

struct OpenedNode {
  gpu::OpenedProbe opened;
  HostInfo host;
};

OpenedNode OpenNode(const ProbeFlags& flags) {
  gpu::ProbeOptions options;
  options.simulated_gpus = flags.simulated_gpus;
  options.simulated_model = flags.simulated_model;
  options.nvml_library = flags.nvml_library;
  OpenedNode node;
  node.opened = gpu::OpenProbe(options);
  node.host.hostname = HostName(flags.hostname);
  node.host.backend = node.opened.probe->BackendName();
  node.host.driver_version = node.opened.probe->DriverVersion();
  node.host.notice = node.opened.notice;
  return node;
}

gpu::SamplerOptions SamplerOptionsFor(const ProbeFlags& flags) {
  gpu::SamplerOptions options;
  options.interval_s = flags.interval_s;
  return options;
}

}  // namespace

namespace {

// The CA an https controller is trusted by: --ca, else the one a pinned join saved.
net::TlsTrust ControllerTrust(const AgentOptions& options) {
  if (!options.ca_file.empty()) return net::TlsTrust{options.ca_file, ""};
  const std::string saved =
      (std::filesystem::path(options.data_dir) / "controller-ca.pem").string();
  std::error_code ec;
  if (std::filesystem::exists(saved, ec)) return net::TlsTrust{saved, ""};
  return {};
}

// This node's credential: `<data_dir>/node-token` when an earlier join left one, else a new one
// from the controller in exchange for the join token (saved 0600 for the next start). A join
// token "<secret>.<sha256>" pins the controller's CA: the agent verifies the server against it
// before the secret leaves, and keeps the CA as <data_dir>/controller-ca.pem.
core::Result<std::string> NodeCredential(const AgentOptions& options, const std::string& node,
                                         net::TlsTrust& trust) {
  const std::string& data_dir = options.data_dir;
  const std::string path = (std::filesystem::path(data_dir) / "node-token").string();
  {
    std::ifstream in(path);
    std::string saved;
    if (in && std::getline(in, saved) && !saved.empty()) return saved;
  }
  std::string secret = options.join_token;
  std::string pin;
  if (const std::size_t dot = secret.find('.'); dot != std::string::npos) {
    pin = secret.substr(dot + 1);
    secret.resize(dot);
    if (!net::NormalizePin(pin)) {
      return core::Error{
          "--join-token: what follows the '.' must be the 64 hex digits of the "
          "controller's CA hash, as `gpufleet token create --join` printed it"};
    }
  }
  // Several controllers: the join goes to the leader (never re-sent once the outcome is unknown:
  // the join token is good for one join).
  auto client = net::FailoverHttpClient::ForUrls(options.controller_url);
  if (!client) return core::Error{"--controller: " + client.error()};
  if (!client.value().tls() && !pin.empty()) {
    return core::Error{
        "--controller: the join token pins an https controller's CA, but the URL is http://: "
        "the token would cross the network in the clear (anyone who saw it could join in this "
        "node's place); give the controller's https:// URL"};
  }
  if (client.value().tls()) {
    if (!pin.empty() && !trust.ca_file.empty()) {
      // The CA given (--ca) or saved by an earlier join (of another cluster, say) must be the one
      // this token pins: the secret goes only to a server the token's own CA vouches for.
      std::ifstream in(trust.ca_file);
      std::stringstream pem;
      pem << in.rdbuf();
      auto saved = net::CertificateSha256(pem.str());
      if (!saved || saved.value() != pin) {
        return core::Error{
            "--join-token: its CA hash is not that of " + trust.ca_file +
            (options.ca_file.empty()
                 ? ", which an earlier join saved: remove that file if this node now joins "
                   "another cluster"
                 : " (--ca): give the CA of the cluster that made the token, or no --ca")};
      }
    }
    if (trust.empty()) trust.pin_sha256 = pin;
    if (trust.empty()) {
      return core::Error{
          "the controller speaks https, but the join token carries no CA hash and "
          "no --ca was given: use the token exactly as `token create --join` "
          "printed it"};
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  client.value().SetTrust(trust);
  client.value().SetTimeouts(5000, 10000);
  client.value().SetBearerToken(secret);
  // A controller that is not listening yet (a node booting before its controller is back from a
  // restart, say) is waited for, up to a minute: a refused connection carried nothing, so the
  // join is sent again; any other failure is final (the token is good for one join).
  auto res = client.value().Post("/v1/agent/join", nlohmann::json{{"node", node}}.dump());
  for (int waited_ms = 0, step_ms = 250;
       !res && res.error().find("cannot connect to ") != std::string::npos && waited_ms < 60000;
       waited_ms += step_ms, step_ms = std::min(step_ms * 2, 2000)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
    res = client.value().Post("/v1/agent/join", nlohmann::json{{"node", node}}.dump());
  }
  if (!res) {
    return core::Error{"cannot join the controller at " + options.controller_url + ": " +
                       res.error()};
  }
  const auto body = nlohmann::json::parse(res.value().body, nullptr, false);
  if (res.value().status != 201 || !body.is_object() || !body.contains("token") ||
      !body["token"].is_string()) {
    const std::string why = body.is_object() && body.contains("error") && body["error"].is_string()
                                ? body["error"].get<std::string>()
                                : "HTTP " + std::to_string(res.value().status);
    return core::Error{"the controller refused the join token: " + why};
  }
  if (client.value().tls() && !trust.pin_sha256.empty()) {
    // Later starts trust the CA the pin verified, without the join token.
    const std::string ca_path = (std::filesystem::path(data_dir) / "controller-ca.pem").string();
    if (auto r = net::WritePrivateFile(ca_path, client.value().VerifiedCaPem()); !r) {
      return core::Error{"joined, but " + r.error() +
                         ": the join token is spent; ask for a new one"};
    }
    trust = net::TlsTrust{ca_path, ""};
  }
  const std::string token = body["token"].get<std::string>();
  if (auto r = net::WritePrivateFile(path, token + "\n"); !r) {
    return core::Error{"joined, but cannot save the node credential: " + r.error() +
                       ": the join token is spent; ask for a new one"};
  }
  return token;
}

}  // namespace

int RunAgent(const AgentOptions& options) {
  auto address = net::ParseListenAddress(options.listen);
  if (!address.ok()) {
    std::fprintf(stderr, "gpufleet agent: %s\n", address.error().c_str());
    return 2;
  }
  if (!(options.probe.interval_s >= 0.01)) {
    std::fprintf(stderr, "gpufleet agent: --interval must be at least 0.01 seconds\n");
    return 2;
  }
  const sigset_t stop_signals = net::BlockStopSignals();  // before any thread starts
  // Held jobs' records and logs are their users' only: files 0600, folders 0700 (jobs get the
  // usual umask back in the Runner), in a data directory of this account's own.
  ::umask(077);
  if (!options.controller_url.empty()) {
    if (auto prepared = net::PrepareOwnDirectory(options.data_dir); !prepared) {
      std::fprintf(stderr, "gpufleet agent: --data-dir: %s\n", prepared.error().c_str());
      return 2;
    }
    // Held for the life of the process: two agents on one data directory would share its
    // credential and each adopt, and stop, the other's jobs.
    if (auto lock = net::LockDirectory(options.data_dir); !lock) {
      std::fprintf(stderr, "gpufleet agent: --data-dir: %s\n", lock.error().c_str());
      return 1;
    }
  }

  OpenedNode node = OpenNode(options.probe);
  if (!node.host.notice.empty())
    std::fprintf(stderr, "gpufleet agent: %s\n", node.host.notice.c_str());
  gpu::GpuProbe& probe = *node.opened.probe;
  if (options.print_symbols) {
    for (const std::string& line : probe.SymbolReport()) std::printf("symbol %s\n", line.c_str());
  }
  gpu::Sampler sampler(probe, SamplerOptionsFor(options.probe));
  AgentServer server(sampler, node.host);
  server.http().AllowHosts(options.allowed_hosts);
  auto port = server.Bind(address.value());
  if (!port.ok()) {
    std::fprintf(stderr, "gpufleet agent: %s\n", port.error().c_str());
    return 1;
  }
  // A join token buys this node's own credential once; later starts reuse the saved one.
  std::string token = options.token;
  net::TlsTrust trust = ControllerTrust(options);
  if (!options.controller_url.empty() && token.empty() && !options.join_token.empty()) {
    auto joined = NodeCredential(options, node.host.hostname, trust);
    if (!joined) {
      std::fprintf(stderr, "gpufleet agent: %s\n", joined.error().c_str());
      return 1;
    }
    token = joined.value();
  }
  // Joining a controller: recover held jobs first, so none is started twice.
  std::unique_ptr<NodeAgent> node_agent;
  if (!options.controller_url.empty()) {
    NodeAgentOptions n;
    n.node_name = node.host.hostname;
    n.address = options.advertise.empty() ? node.host.hostname : options.advertise;
    n.data_dir = options.data_dir;
    n.gpus = probe.DeviceCount();
    if (n.gpus > core::kMaxGpusPerNode) {
      std::fprintf(stderr,
                   "gpufleet agent: this node has %d GPUs; a controller schedules at most %d "
                   "per node\n",
                   n.gpus, core::kMaxGpusPerNode);
      return 2;
    }
    if (n.gpus > 0) n.gpu_model = probe.Sample(0, 0).name;
    if (n.gpu_model.rfind("SIMULATED ", 0) == 0) n.gpu_model = n.gpu_model.substr(10);
    n.simulated = probe.IsSimulated();
    // Simulated GPUs have a made-up topology: placement must not be steered by it.
    if (!n.simulated) n.gpu_links = gpu::LinksFromTopology(probe.Topology());
    for (int g = 0; g < n.gpus && !n.simulated; ++g) {
      n.gpu_device_nodes.push_back(probe.DeviceNode(g));
    }
    n.long_poll_ms = static_cast<int64_t>(options.heartbeat_s * 1000);
    n.run_as = options.run_as;
    n.log_limit_bytes = options.log_limit_mib * (int64_t{1} << 20);
    n.container_runtime = options.container_runtime;
    const HostInfo host = node.host;
    node_agent = std::make_unique<NodeAgent>(
        n,
        std::make_unique<HttpControllerLink>(options.controller_url, token, trust,
                                             n.long_poll_ms),
        [&sampler, host] { return GpusToJson(host, sampler.Latest()); },
        [&sampler] { return FiguresOf(sampler.Latest()); });
    if (auto r = node_agent->Recover(); !r) {
      std::fprintf(stderr, "gpufleet agent: %s\n", r.error().c_str());
      return 1;
    }
  }
  sampler.Start();
  std::atomic<bool> stop_beats{false};
  std::thread beats;
  if (node_agent) {
    beats = std::thread([&] {
      const auto period =
          std::chrono::milliseconds(static_cast<int64_t>(options.heartbeat_s * 1000));
      while (!stop_beats.load()) {
        const auto started = std::chrono::steady_clock::now();
        const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
        // The controller holds each heartbeat up to one period (long poll) and answers as soon
        // as it has work here; after a launch or a stop, report at once. Failures are reported
        // once per outage and retried every period.
        auto changed = node_agent->Beat(now_ms);
        if (changed.ok() && changed.value()) continue;
        const auto next = started + period;
        while (!stop_beats.load() && std::chrono::steady_clock::now() < next) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
    });
    std::printf("gpufleet agent: node %s joins %s (heartbeat every %.1f s; jobs in %s)\n",
                node.host.hostname.c_str(), options.controller_url.c_str(), options.heartbeat_s,
                options.data_dir.c_str());
  }
  std::printf("gpufleet agent: %d %s GPU%s (%s), serving http://%s:%d/metrics\n",
              probe.DeviceCount(), probe.IsSimulated() ? "SIMULATED" : "NVML",
              probe.DeviceCount() == 1 ? "" : "s",
              probe.IsSimulated() ? "no driver" : ("driver " + probe.DriverVersion()).c_str(),
              address.value().host.c_str(), port.value());
  std::fflush(stdout);

  const bool clean = net::ServeUntilStopSignal(server.http(), stop_signals);
  stop_beats = true;
  if (node_agent) node_agent->Interrupt();  // a beat launching many jobs stops launching
  if (beats.joinable()) beats.join();  // jobs keep running: a restarted agent re-adopts them
  sampler.Stop();
  if (!clean) {
    std::fprintf(stderr, "gpufleet agent: the HTTP listener failed; exiting with an error\n");
    return 1;
  }
  std::fprintf(stderr, "gpufleet agent: stopped\n");
  return 0;
}

namespace {

// Puts the terminal in raw, no-echo mode with the alternate screen, and restores it on exit.
class RawTerminal {
 public:
  RawTerminal() {
    if (tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      tcsetattr(STDIN_FILENO, TCSANOW, &raw);
      restore_ = true;
    }
    std::fputs("\x1b[?1049h\x1b[?25l", stdout);
  }
  ~RawTerminal() {
    std::fputs("\x1b[?25h\x1b[?1049l", stdout);
    std::fflush(stdout);
    if (restore_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  termios saved_{};
  bool restore_ = false;
};

volatile sig_atomic_t g_top_interrupted = 0;
void OnTopInterrupt(int) { g_top_interrupted = 1; }

void TerminalSize(int& width, int& height) {
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    width = size.ws_col;
    height = size.ws_row;
  } else {
    const char* columns = std::getenv("COLUMNS");
    width = columns != nullptr ? std::atoi(columns) : 120;
    height = 0;
  }
}

std::string ClockText() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &local);
  return text;
}

TopModel ModelOf(const HostInfo& host, const gpu::Sampler& sampler, ProcessSort sort,
                 double history_s) {
  TopModel model;
  model.host = host;
  model.samples = sampler.Latest();
  model.sort = sort;
  model.clock_text = ClockText();
  for (std::size_t i = 0; i < model.samples.size(); ++i) {
    std::vector<float> util;
    for (const gpu::HistoryPoint& p : sampler.History(static_cast<int>(i), history_s)) {
      util.push_back(p.gpu_util_pct);
    }
    model.util_history.push_back(std::move(util));
  }
  return model;
}

}  // namespace

int RunTop(const TopOptions& options) {
  ProcessSort sort = ProcessSort::kGpuMemory;
  if (options.sort.size() != 1 || !SortForKey(options.sort[0], sort)) {
    std::fprintf(stderr,
                 "gpufleet top: --sort '%s': expected m (memory), s (SM%%), p (pid) or u (user)\n",
                 options.sort.c_str());
    return 2;
  }
  if (!(options.probe.interval_s >= 0.05)) {
    std::fprintf(stderr, "gpufleet top: --interval must be at least 0.05 seconds\n");
    return 2;
  }
  OpenedNode node = OpenNode(options.probe);
  gpu::Sampler sampler(*node.opened.probe, SamplerOptionsFor(options.probe));
  if (options.once || options.json || !isatty(STDOUT_FILENO)) {
    if (!options.once && !options.json) {
      std::fprintf(stderr,
                   "gpufleet top: stdout is not a terminal; printing one snapshot "
                   "(use --once to say so, --json for scripts)\n");
    }
    sampler.SampleOnce();
    if (options.json) {
      std::printf("%s\n", GpusToJson(node.host, sampler.Latest(), 2).c_str());
      return 0;
    }
    int width = 0, height = 0;
    TerminalSize(width, height);
    for (const std::string& line :
         RenderTop(ModelOf(node.host, sampler, sort, 60), width, /*height=*/0)) {
      std::printf("%s\n", line.c_str());
    }
    return 0;
  }

  struct sigaction action {};
  action.sa_handler = OnTopInterrupt;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &action, nullptr);
  sampler.Start();
  RawTerminal terminal;
  const auto frame = std::chrono::milliseconds(
      static_cast<int>(std::lround(std::min(options.probe.interval_s, 1.0) * 1000)));
  std::uint64_t shown_round = ~0ULL;
  int shown_width = -1, shown_height = -1;
  ProcessSort shown_sort = sort;
  bool input_open = true;
  while (g_top_interrupted == 0) {
    int width = 0, height = 0;
    TerminalSize(width, height);
    // Redraw on a new sample, a resize or a key; otherwise just wait for input.
    if (sampler.rounds() != shown_round || width != shown_width || height != shown_height ||
        sort != shown_sort) {
      std::string screen = "\x1b[H";
      const std::vector<std::string> lines =
          RenderTop(ModelOf(node.host, sampler, sort, 3600), width, height);
      for (std::size_t i = 0; i < lines.size(); ++i) {
        screen += lines[i];
        screen += "\x1b[K";
        // No newline after the last line: on a full screen it would scroll the header away.
        if (i + 1 < lines.size()) screen += "\r\n";
      }
      screen += "\x1b[J";
      std::fwrite(screen.data(), 1, screen.size(), stdout);
      std::fflush(stdout);
      shown_round = sampler.rounds();
      shown_width = width;
      shown_height = height;
      shown_sort = sort;
    }
    const int wait_ms = static_cast<int>(std::min<long>(frame.count(), 250));
    if (!input_open) {
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
      continue;
    }
    pollfd input{STDIN_FILENO, POLLIN, 0};
    if (poll(&input, 1, wait_ms) > 0) {
      char key = 0;
      const ssize_t n = read(STDIN_FILENO, &key, 1);
      if (n == 1) {
        if (key == 'q' || key == 'Q' || key == 27 || key == 3) break;
        SortForKey(key, sort);
      } else if (n == 0 || errno != EINTR) {
        input_open = false;  // end of input: keep drawing, stop polling (it would spin)
      }
    }
  }
  return 0;
}

}  // namespace gpufleet::agent
