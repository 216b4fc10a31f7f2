#include "cli/client_commands.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "cli/advise_commands.h"
#include "cli/client_http.h"
#include "core/duration.h"
#include "core/text.h"
#include "net/failover_client.h"
#include "net/http_client.h"

namespace gpufleet::cli {
namespace {

using nlohmann::json;


void (*https_handoff)() = nullptr;

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Whether `url`'s host is this machine (localhost, 127.x, [::1]).
bool LoopbackUrl(const std::string& url) {
  const std::size_t scheme = url.find("://");
  const std::string rest = scheme == std::string::npos ? url : url.substr(scheme + 3);
  if (rest.rfind("[::1]", 0) == 0) return true;
  return core::IsLoopbackHost(rest.substr(0, rest.find_first_of(":/")));
}

// `url`'s scheme and port ("http:7000"; the port "" when it names none), which tell this
// machine's servers apart whatever name of the machine a URL uses.
std::string SchemeAndPort(const std::string& url) {
  const std::size_t scheme = url.find("://");
  if (scheme == std::string::npos) return {};
  const std::string authority = url.substr(scheme + 3, url.find('/', scheme + 3) - scheme - 3);
  const std::size_t colon = authority.rfind(':');
  const std::size_t bracket = authority.rfind(']');
  const bool has_port =
      colon != std::string::npos && (bracket == std::string::npos || colon > bracket);
  return url.substr(0, scheme) + ":" + (has_port ? authority.substr(colon + 1) : "");
}

}  // namespace

bool TokenFileMayGoTo(const std::string& urls, const std::string& own_urls) {
  auto to = net::FailoverHttpClient::ForUrls(urls);
  if (!to) return false;
  auto own = own_urls.empty() ? core::Result<net::FailoverHttpClient>(core::Error{"none"})
                              : net::FailoverHttpClient::ForUrls(own_urls);
  for (std::size_t i = 0; i < to.value().size(); ++i) {
    const std::string& url = to.value().url(i);
    const bool listed = own && own.value().Find(url) < own.value().size();
    // This machine under another name (localhost for 127.0.0.1) at the port of an own URL: the
    // same server. Another port of this machine is another local account's server as likely.
    bool same_local_server = false;
    for (std::size_t k = 0; own && LoopbackUrl(url) && k < own.value().size(); ++k) {
      same_local_server =
          same_local_server || (LoopbackUrl(own.value().url(k)) &&
                                SchemeAndPort(own.value().url(k)) == SchemeAndPort(url));
    }
    if (!listed && !same_local_server) return false;
  }
  return true;
}

std::optional<Connection> Connect(const ClientOptions& o) {
  Connection c;
  const std::string data_dir = DataDir(o.data_dir);
  c.url = o.server;
  if (c.url.empty()) {
    if (const char* env = std::getenv("GPUFLEET_SERVER"); env != nullptr) c.url = env;
  }
  const std::string own_url = FirstLine(data_dir + "/server");
  if (c.url.empty()) c.url = own_url;
  if (c.url.empty()) {
    std::fprintf(stderr,
                 "gpufleet: no server: pass --server URL, set GPUFLEET_SERVER, or start "
                 "`gpufleet up` (it writes %s/server)\n",
                 data_dir.c_str());
    return std::nullopt;
  }
  auto http = net::FailoverHttpClient::ForUrls(c.url);
  if (!http) {
    std::fprintf(stderr, "gpufleet: bad server URL %s\n", http.error().c_str());
    return std::nullopt;
  }
  {
    net::FailoverPolicy policy;
    policy.on_rate_limited = [](int64_t seconds) {
      std::fprintf(stderr,
                   "gpufleet: the server takes no more writing requests from you for now "
                   "(--user-write-rate); sending again in %lld s\n",
                   static_cast<long long>(seconds));
    };
    http.value().SetPolicy(policy);
  }
  if (const char* env = std::getenv("GPUFLEET_TOKEN"); env != nullptr) c.token = env;
  if (c.token.empty()) {
    std::string file_token = FirstLine(data_dir + "/token");
    if (TokenFileMayGoTo(c.url, own_url)) {
      c.token = std::move(file_token);
    } else if (!file_token.empty()) {
      std::fprintf(stderr,
                   "gpufleet: not sending %s/token to %s: it is the credential of that data "
                   "directory's own server (%s); set GPUFLEET_TOKEN for this one\n",
                   data_dir.c_str(), c.url.c_str(), own_url.empty() ? "none" : own_url.c_str());
    }
  }
  c.http.emplace(std::move(http).value());
  if (c.http->tls() && !net::HttpsAvailable() && https_handoff != nullptr) https_handoff();
  if (c.http->tls()) {
    std::string ca = o.ca_file;
    if (const char* env = std::getenv("GPUFLEET_CA"); ca.empty() && env != nullptr) ca = env;
    if (ca.empty() && ::access((data_dir + "/tls/ca.pem").c_str(), R_OK) == 0) {
      ca = data_dir + "/tls/ca.pem";
    }
    c.http->SetTrust(net::TlsTrust{ca, ""});
  }
  c.http->SetTimeouts(5000, 30000);
  if (!c.token.empty()) c.http->SetBearerToken(c.token);
  return c;
}

std::optional<json> Check(const core::Result<net::HttpReply>& r, const Connection& c,
                          const char* what) {
  if (!r && c.http && c.http->size() > 1) {
    // The error names each server and what it said (standbys' words made printable there).
    std::fprintf(stderr, "gpufleet: %s: %s\n", what, Printable(r.error()).c_str());
    return std::nullopt;
  }
  if (!r) {
    std::fprintf(stderr,
                 "gpufleet: %s: no answer from the server at %s (%s): is `gpufleet up` running?\n",
                 what, Printable(c.url).c_str(), Printable(r.error()).c_str());
    return std::nullopt;
  }
  const net::HttpReply& reply = r.value();
  json body = json::parse(reply.body, nullptr, false);
  if (reply.status >= 400) {
    const std::string message =
        body.is_object() && body.contains("error") && Field(body, "error").is_string()
            ? Field(body, "error").get<std::string>()
            : reply.body.substr(0, 4096);
    std::fprintf(stderr, "gpufleet: %s failed (%d): %s\n", what, reply.status,
                 Printable(message).c_str());
    if (reply.status == 401) {
      std::fprintf(stderr,
                   "gpufleet: set GPUFLEET_TOKEN, or run on the machine where `gpufleet "
                   "up` keeps its data directory\n");
    }
    return std::nullopt;
  }
  if (body.is_discarded()) {
    std::fprintf(stderr, "gpufleet: %s: the server's answer is not JSON\n", what);
    return std::nullopt;
  }
  return body;
}

std::string QueryValue(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

const json& Field(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string Cell(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>().empty() ? "-" : Printable(v.get<std::string>());
  return Printable(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

namespace {
using nlohmann::json;
}  // namespace

void SetHttpsHandoff(void (*handoff)()) { https_handoff = handoff; }

std::string DataDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("GPUFLEET_DATA_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.gpufleet";
}

int RunSubmit(const SubmitOptions& o) {
  if (o.command.empty()) {
    std::fprintf(stderr,
                 "gpufleet submit: no command: put it after --, e.g. "
                 "`gpufleet submit --gpus 1 -- python train.py`\n");
    return 2;
  }
  auto c = Connect(o.client);
  if (!c) return 1;
  // --gpus N, or MIN..MAX (elastic).
  int min_gpus = 0, max_gpus = 0;
  {
    const std::string& text = o.gpus;
    const std::size_t dots = text.find("..");
    auto number = [](const std::string& s, int* out) {
      if (s.empty() || s.size() > 4 || s.find_first_not_of("0123456789") != std::string::npos) {
        return false;
      }
      *out = std::stoi(s);
      return *out >= 1;
    };
    const bool ok = dots == std::string::npos
                        ? number(text, &max_gpus)
                        : number(text.substr(0, dots), &min_gpus) &&
                              number(text.substr(dots + 2), &max_gpus) && min_gpus <= max_gpus;
    if (!ok) {
      std::fprintf(stderr,
                   "gpufleet submit: --gpus: '%s' is not a number of GPUs (N) or a range "
                   "MIN..MAX with 1 <= MIN <= MAX\n",
                   text.substr(0, 32).c_str());
      return 2;
    }
    if (min_gpus == max_gpus) min_gpus = 0;  // 4..4 is just 4
  }
  json body = {{"argv", o.command}, {"gpus", max_gpus}, {"nodes", o.nodes}, {"priority", o.priority}};
  if (min_gpus > 0) body["min_gpus"] = min_gpus;
  if (!o.name.empty()) body["name"] = o.name;
  if (!o.queue.empty()) body["queue"] = o.queue;
  if (!o.gpu_type.empty()) body["gpu_type"] = o.gpu_type;
  if (o.gpu_share > 0) body["gpu_share"] = o.gpu_share;
  if (o.restartable) body["restartable"] = true;
  if (o.cpus > 0) body["cpus"] = o.cpus;
  if (!o.time_limit.empty()) {
    const auto seconds = core::ParseDurationSeconds(o.time_limit);
    if (!seconds) {
      std::fprintf(stderr,
                   "gpufleet submit: --time-limit '%s': give seconds, 90m, 2h, 1d or H:MM:SS\n",
                   o.time_limit.c_str());
      return 2;
    }
    body["time_limit_s"] = *seconds;
  }
  if (!o.memory.empty()) {
    const auto mib = core::ParseMemoryMib(o.memory);
    if (!mib) {
      std::fprintf(stderr, "gpufleet submit: --memory '%s': give MiB, or a size like 512M, 16G\n",
                   o.memory.c_str());
      return 2;
    }
    body["memory_mib"] = *mib;
  }
  if (!o.image.empty()) {
    // In a container the working directory is the image's unless one is asked for: the
    // submitter's current directory need not exist there.
    body["image"] = o.image;
    if (!o.mounts.empty()) body["mounts"] = o.mounts;
    if (!o.workdir.empty()) body["workdir"] = o.workdir;
  } else {
    if (!o.mounts.empty()) {
      std::fprintf(stderr, "gpufleet submit: --mount needs --image (host jobs see the host's "
                           "files)\n");
      return 2;
    }
    body["workdir"] = o.workdir.empty() ? std::filesystem::current_path().string() : o.workdir;
  }
  json env = json::object();
  for (const std::string& kv : o.env) {
    const std::size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "gpufleet submit: --env '%s': expected NAME=value\n", kv.c_str());
      return 2;
    }
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  body["env"] = env;
  // An idempotency token: a retry after a lost answer returns the same job, never a second one.
  char token[33];
  std::snprintf(token, sizeof token, "%08x%08x%08x%08x", static_cast<unsigned>(getpid()),
                static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()),
                static_cast<unsigned>(std::random_device{}()),
                static_cast<unsigned>(std::random_device{}()));
  body["client_token"] = token;
  std::string request;
  try {
    request = body.dump();
  } catch (const json::type_error&) {  // 316: a string that is not UTF-8
    std::fprintf(stderr,
                 "gpufleet submit: the command, --name, --queue, --workdir or an --env value is "
                 "not valid UTF-8\n");
    return 2;
  }
  // Repeatable thanks to the token: after a lost answer the next controller tried (or the same
  // one) returns the job the first one made. Several servers: the client follows the leader and
  // retries until its deadline itself, so only a busy leader's 503 is retried here.
  const bool one_server = c->http->size() == 1;
  auto r = c->http->Post("/v1/jobs", request, "application/json", net::Repeatable::kYes);
  for (int retry = 0; retry < 5 && ((!r && one_server) || (r && r.value().status == 503));
       ++retry) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200 << retry));
    r = c->http->Post("/v1/jobs", request, "application/json", net::Repeatable::kYes);
  }
  auto answer = Check(r, *c, "submit");
  if (!answer) return 1;
  if (o.client.json) {
    std::printf("%s\n", answer->dump().c_str());
  } else {
    std::printf("submitted job %lld\n", static_cast<long long>((*answer)["id"].get<int64_t>()));
  }
  return 0;
}

int RunJobs(const JobsOptions& o) {
  auto c = Connect(o.client);
  if (!c) return 1;
  std::string path = "/v1/jobs?limit=" + std::to_string(o.limit);
  if (o.after > 0) path += "&after=" + std::to_string(o.after);
  if (o.all_users) path += "&user=all";
  if (!o.state.empty()) path += "&state=" + QueryValue(o.state);
  const auto reply = c->http->Get(path);
  auto answer = Check(reply, *c, "jobs");
  if (!answer) return 1;
  // The server cuts a list that would pass 16 MiB (jobs with very long commands).
  if (reply.ok() && reply.value().Header("X-Truncated") == "true" && answer->is_array() &&
      !answer->empty()) {
    std::fprintf(stderr,
                 "gpufleet jobs: the list was cut at %zu jobs (16 MiB); the next ones follow "
                 "--after %lld\n",
                 answer->size(), static_cast<long long>(answer->back()["id"].get<int64_t>()));
  }
  if (o.client.json) {
    std::printf("%s\n", answer->dump(2).c_str());
    return 0;
  }
  std::printf("%-8s %-10s %-12s %-5s %-10s %s\n", "ID", "STATE", "USER", "GPUS", "NODE", "NAME");
  for (const json& j : *answer) {
    // GPUs per node, times the nodes of a multi-node job.
    std::string gpus = std::to_string(Field(j, "gpus").get<int>());
    if (j.contains("min_gpus") && Field(j, "min_gpus").is_number_integer()) {
      gpus = std::to_string(Field(j, "min_gpus").get<int>()) + ".." + gpus;
    }
    if (j.value("nodes", 1) > 1) gpus += "x" + std::to_string(Field(j, "nodes").get<int>());
    if (j.contains("gpu_share") && Field(j, "gpu_share").is_number()) {
      char share[16];
      std::snprintf(share, sizeof share, "%.2f", Field(j, "gpu_share").get<double>());
      gpus = share;
    }
    std::printf("%-8lld %-10s %-12s %-5s %-10s %s\n",
                static_cast<long long>(Field(j, "id").get<int64_t>()),
                Cell(Field(j, "state")).c_str(), Cell(Field(j, "user")).c_str(), gpus.c_str(),
                Cell(Field(j, "node")).c_str(), Cell(Field(j, "name")).c_str());
  }
  return 0;
}

namespace {

// A figure of a job's host usage in its unit ("-" when not measured).
std::string UsageFigureText(const json& usage, const char* key) {
  const json v = usage.value(key, json(nullptr));
  if (!v.is_number_integer()) return "-";
  const double x = static_cast<double>(v.get<int64_t>());
  char text[32];
  const std::string name = key;
  if (name.size() > 3 && name.compare(name.size() - 3, 3, "_us") == 0) {
    std::snprintf(text, sizeof text, "%.1f s", x / 1e6);
  } else if (name.size() > 6 && name.compare(name.size() - 6, 6, "_bytes") == 0) {
    std::snprintf(text, sizeof text, "%.1f MiB", x / (1 << 20));
  } else {
    std::snprintf(text, sizeof text, "%.0f", x);
  }
  return text;
}

void PrintHostUsage(const json& u) {
  const auto f = [&u](const char* key) { return UsageFigureText(u, key); };
  std::printf("%-12s from %s\n", "host_usage", Cell(u.value("source", json(""))).c_str());
  std::printf("  cpu        %s used; throttled in %s periods (%s); waited %s for a CPU\n",
              f("cpu_usage_us").c_str(), f("cpu_throttled_periods").c_str(),
              f("cpu_throttled_us").c_str(), f("cpu_wait_us").c_str());
  std::printf("  memory     peak %s, last %s; OOM kills %s\n", f("memory_peak_bytes").c_str(),
              f("memory_current_bytes").c_str(), f("oom_kills").c_str());
  std::printf("  io         read %s, written %s\n", f("io_read_bytes").c_str(),
              f("io_write_bytes").c_str());
  std::printf("  stalls     cpu %s, io %s, memory %s (PSI some)\n", f("cpu_pressure_some_us").c_str(),
              f("io_pressure_some_us").c_str(), f("memory_pressure_some_us").c_str());
  if (u.contains("missing") && Field(u, "missing").is_array() && !Field(u, "missing").empty()) {
    std::string names;
    for (const json& m : Field(u, "missing")) names += (names.empty() ? "" : ", ") + Cell(m);
    std::printf("  not measured on this node: %s\n", names.c_str());
  }
}

}  // namespace

int RunShow(const ShowOptions& options) {
  const ClientOptions& client = options.client;
  const int64_t id = options.id;
  auto c = Connect(client);
  if (!c) return 1;
  std::string query;
  if (options.events_limit > 0) query += "events_limit=" + std::to_string(options.events_limit);
  if (options.events_before > 0) {
    query += (query.empty() ? "" : "&") + std::string("events_before=") +
             std::to_string(options.events_before);
  }
  auto answer =
      Check(c->http->Get("/v1/jobs/" + std::to_string(id) + (query.empty() ? "" : "?" + query)), *c,
            "show");
  if (!answer) return 1;
  if (client.json) {
    std::printf("%s\n", answer->dump(2).c_str());
    return 0;
  }
  for (const auto& [key, value] : answer->items()) {
    if (key == "events" || key == "events_older_before") continue;
    if (key == "host_usage" && value.is_object()) {
      PrintHostUsage(value);
      continue;
    }
    std::printf("%-12s %s\n", Printable(key).c_str(), Cell(value).c_str());
  }
  // What the advisor says of it (a server without the advisor answers 404: nothing shown).
  if (auto advice = c->http->Get("/v1/jobs/" + std::to_string(id) + "/advice");
      advice && advice.value().status == 200) {
    const json body = json::parse(advice.value().body, nullptr, false);
    if (body.is_object()) PrintFindings(body);
  }
  if (answer->contains("events") && (*answer)["events"].is_array()) {
    std::printf("history\n");
    for (const json& e : (*answer)["events"]) {
      const std::time_t t = static_cast<std::time_t>(e.value("time_ms", int64_t{0}) / 1000);
      char when[32];
      std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
      std::printf("  %s  %-22s %s\n", when, Cell(e.value("what", json(""))).c_str(),
                  Cell(e.value("detail", json(""))).c_str());
    }
    if (answer->contains("events_older_before") &&
        (*answer)["events_older_before"].is_number_integer()) {
      std::printf("  (older events: gpufleet show %lld --events-before %lld)\n",
                  static_cast<long long>(id),
                  static_cast<long long>((*answer)["events_older_before"].get<int64_t>()));
    }
  }
  return 0;
}

int RunCancel(const ClientOptions& client, int64_t id) {
  auto c = Connect(client);
  if (!c) return 1;
  auto answer = Check(c->http->Post("/v1/jobs/" + std::to_string(id) + "/cancel"), *c, "cancel");
  if (!answer) return 1;
  if (client.json) {
    std::printf("%s\n", answer->dump().c_str());
  } else {
    std::printf("job %lld: %s\n", static_cast<long long>(id), Cell((*answer)["state"]).c_str());
  }
  return 0;
}

int RunRemove(const ClientOptions& client, int64_t id) {
  auto c = Connect(client);
  if (!c) return 1;
  auto answer = Check(c->http->Send("DELETE", "/v1/jobs/" + std::to_string(id), "", ""), *c, "rm");
  if (!answer) return 1;
  if (client.json) {
    std::printf("%s\n", answer->dump().c_str());
  } else {
    std::printf("job %lld: %s\n", static_cast<long long>(id),
                (*answer)["removed"] == true ? "removed" : "already gone");
  }
  return 0;
}

int RunLogs(const ClientOptions& client, int64_t id, bool follow, bool raw) {
  auto c = Connect(client);
  if (!c) return 1;
  // On a terminal, a log's escape sequences are shown, not obeyed (core::PrintableOutput): any
  // job's output could otherwise set the clipboard of whoever reads it (an admin), or rewrite
  // their screen. Into a pipe or file, or with --raw, it goes as it is.
  const bool escape = !raw && ::isatty(STDOUT_FILENO) == 1;
  std::string held;  // a character cut at the end of the last piece, when escaping
  int64_t offset = 0;
  int64_t end = -1;  // without --follow: the log's size at the first answer
  for (;;) {
    auto r =
        c->http->Get("/v1/jobs/" + std::to_string(id) + "/logs?offset=" + std::to_string(offset));
    if (!r || r.value().status >= 400) {
      Check(r, *c, "logs");
      return 1;
    }
    const net::HttpReply& reply = r.value();
    if (reply.Header("X-Log-Removed") == "1" && offset > 0) {
      // Retention removed it while it was read (controller/log_retention.h).
      std::fprintf(stderr,
                   "\ngpufleet logs: the rest of job %lld's log was removed meanwhile; "
                   "`gpufleet logs %lld` says why\n",
                   static_cast<long long>(id), static_cast<long long>(id));
      return 1;
    }
    if (escape) {
      held += reply.body;
      const std::size_t whole = core::WholeUtf8Prefix(held);
      const std::string shown = core::PrintableOutput(std::string_view(held).substr(0, whole));
      std::fwrite(shown.data(), 1, shown.size(), stdout);
      held.erase(0, whole);
    } else {
      std::fwrite(reply.body.data(), 1, reply.body.size(), stdout);
    }
    std::fflush(stdout);
    offset += static_cast<int64_t>(reply.body.size());
    const std::string state = reply.Header("X-Job-State");
    const bool live = state == "PENDING" || state == "SCHEDULED" || state == "RUNNING";
    // The server answers at most a chunk (4 MiB) at a time: without --follow, the whole log as
    // it is now, chunk after chunk (before, only the first chunk, silently).
    // At the end, a character cut there (a log cut at its limit) is shown as its bytes.
    const auto done = [&held] {
      const std::string rest = core::PrintableOutput(held);
      std::fwrite(rest.data(), 1, rest.size(), stdout);
      return 0;
    };
    if (!follow) {
      if (end < 0) end = std::strtoll(reply.Header("X-Log-Size").c_str(), nullptr, 10);
      if (reply.body.empty() || offset >= end) return done();
      continue;
    }
    if (!live && reply.body.empty()) return done();  // ended, and everything it wrote was shown
    if (reply.body.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int RunNodes(const ClientOptions& client) {
  auto c = Connect(client);
  if (!c) return 1;
  auto answer = Check(c->http->Get("/v1/nodes"), *c, "nodes");
  if (!answer) return 1;
  if (client.json) {
    std::printf("%s\n", answer->dump(2).c_str());
    return 0;
  }
  // Group and price: nodes the autoscaler holds; idle since: ready nodes running nothing.
  std::printf("%-12s %-7s %-5s %-5s %-28s %-16s %-5s %-16s %-8s %s\n", "NODE", "STATE", "GPUS",
              "FREE", "MODEL", "LIMITS", "JOBS", "GROUP", "PRICE/H", "IDLE SINCE (UTC)");
  for (const json& n : *answer) {
    const json price = n.value("price_per_hour", json(nullptr));
    char price_text[32] = "-";
    if (price.is_number()) std::snprintf(price_text, sizeof price_text, "%.2f", price.get<double>());
    std::string idle = "-";
    if (const int64_t ms = n.value("idle_since_ms", int64_t{0}); ms > 0) {
      const std::time_t t = static_cast<std::time_t>(ms / 1000);
      std::tm tm{};
      gmtime_r(&t, &tm);
      char text[32];
      std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
      idle = text;
    }
    std::printf("%-12s %-7s %-5d %-5d %-28s %-16s %-5d %-16s %-8s %s%s\n",
                Cell(Field(n, "name")).c_str(), Cell(Field(n, "state")).c_str(),
                Field(n, "gpus").get<int>(), Field(n, "free_gpus").get<int>(),
                Cell(Field(n, "gpu_model")).c_str(), Cell(n.value("limits", json("none"))).c_str(),
                Field(n, "running_jobs").get<int>(), Cell(n.value("group", json(nullptr))).c_str(),
                price_text, idle.c_str(),
                Field(n, "simulated").get<bool>() ? "  (SIMULATED GPUs)" : "");
    if (n.contains("drained") && Field(n, "drained").is_array()) {
      for (const json& d : Field(n, "drained")) {
        std::printf("%-12s GPU %s drained (%s%s): %s\n", "", Cell(Field(d, "gpu")).c_str(),
                    Cell(Field(d, "cause")).c_str(),
                    d.value("by", "").empty() ? "" : (", by " + Cell(Field(d, "by"))).c_str(),
                    Cell(Field(d, "reason")).c_str());
      }
    }
    if (n.value("limits", "none") == "none" && !n.value("limits_why", "").empty()) {
      std::printf("%-12s no job limits (usage from /proc): %s\n", "",
                  Cell(Field(n, "limits_why")).c_str());
    } else if (n.value("limits", "") == "cgroup-v2-memory" && !n.value("limits_why", "").empty()) {
      std::printf("%-12s memory limits only: %s\n", "", Cell(Field(n, "limits_why")).c_str());
    }
    if (n.contains("images") && Field(n, "images").is_array() && !Field(n, "images").empty()) {
      std::string list;
      for (const json& image : Field(n, "images")) list += (list.empty() ? "" : ", ") + Cell(image);
      std::printf("%-12s container images here: %s\n", "", list.c_str());
    }
    if (n.value("state", "") == "LOST") {
      std::printf("%-12s missed its lease: its jobs were stopped or requeued\n", "");
    }
  }
  return 0;
}

namespace {

// A token's end as local time, or "never" (expires_ms 0 or absent).
std::string ExpiryText(const json& token) {
  if (!token.contains("expires_ms") || !Field(token, "expires_ms").is_number_integer() ||
      Field(token, "expires_ms").get<int64_t>() <= 0) {
    return "never";
  }
  const std::time_t when =
      static_cast<std::time_t>(Field(token, "expires_ms").get<int64_t>() / 1000);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", std::localtime(&when));
  return text;
}

// Puts --ttl into a token request's body as ttl_s; false after saying why on stderr.
bool AddTtl(const std::string& ttl, const char* command, json& body) {
  if (ttl.empty()) return true;
  const auto seconds = core::ParseDurationSeconds(ttl);
  if (!seconds || *seconds < 1) {
    std::fprintf(stderr,
                 "gpufleet %s: --ttl '%s': give a duration like 15m, 1h, 90d (366d at most)\n",
                 command, ttl.c_str());
    return false;
  }
  body["ttl_s"] = *seconds;
  return true;
}

}  // namespace

int RunUsersAdd(const AdminOptions& o) {
  json body{{"name", o.name}, {"admin", o.admin}, {"reclaim", o.reclaim}};
  if (!AddTtl(o.ttl, "users add", body)) return 2;
  auto c = Connect(o.client);
  if (!c) return 1;
  auto answer = Check(c->http->Post("/v1/users", body.dump()), *c, "users add");
  if (!answer) return 1;
  if (o.client.json) {
    std::printf("%s\n", json{{"user", (*answer)["user"]},
                             {"token", (*answer)["token"]},
                             {"expires_ms", answer->value("expires_ms", int64_t{0})}}
                            .dump()
                            .c_str());
    return 0;
  }
  std::printf(
      "user %s added%s; their token (shown only now; give it to them as GPUFLEET_TOKEN; works "
      "until: %s):\n%s\n",
      Cell((*answer)["user"]).c_str(), o.admin ? " (admin)" : "", ExpiryText(*answer).c_str(),
      Cell((*answer)["token"]).c_str());
  return 0;
}

int RunUsersList(const ClientOptions& client) {
  auto c = Connect(client);
  if (!c) return 1;
  auto answer = Check(c->http->Get("/v1/users"), *c, "users list");
  if (!answer) return 1;
  if (client.json) {
    std::printf("%s\n", answer->dump(2).c_str());
    return 0;
  }
  std::printf("%-24s %-6s %s\n", "USER", "ADMIN", "TOKENS");
  for (const json& u : *answer) {
    std::printf("%-24s %-6s %s\n", Cell(Field(u, "name")).c_str(),
                u.value("admin", false) ? "yes" : "no", Cell(Field(u, "tokens")).c_str());
  }
  return 0;
}

int RunUsersRemove(const AdminOptions& o) {
  auto c = Connect(o.client);
  if (!c) return 1;
  auto answer =
      Check(c->http->Send("DELETE", "/v1/users/" + QueryValue(o.name), "", ""), *c, "users remove");
  if (!answer) return 1;
  std::printf("user %s removed (their jobs stay; cancel them if they should stop)\n",
              Printable(o.name).c_str());
  return 0;
}

int RunTokenCreate(const AdminOptions& o) {
  json body = json::object();
  if (!AddTtl(o.ttl, "token create", body)) return 2;
  if (o.join) {
    body["join"] = true;
    if (!o.node.empty()) body["node"] = o.node;
  } else if (!o.user.empty()) {
    body["user"] = o.user;
  }
  auto c = Connect(o.client);
  if (!c) return 1;
  auto answer = Check(c->http->Post("/v1/tokens", body.dump()), *c, "token create");
  if (!answer) return 1;
  if (o.client.json) {
    std::printf("%s\n", answer->dump().c_str());
    return 0;
  }
  if (o.join) {
    std::printf(
        "join token %s (one node, until it expires; shown only now):\n%s\n"
        "on the new node: gpufleet agent --controller URL --join-token TOKEN\n",
        Cell((*answer)["id"]).c_str(), Cell((*answer)["token"]).c_str());
  } else {
    std::printf("token %s for %s (shown only now; works until: %s):\n%s\n",
                Cell((*answer)["id"]).c_str(), Cell((*answer)["user"]).c_str(),
                ExpiryText(*answer).c_str(), Cell((*answer)["token"]).c_str());
  }
  return 0;
}

int RunTokenList(const ClientOptions& client) {
  auto c = Connect(client);
  if (!c) return 1;
  auto answer = Check(c->http->Get("/v1/tokens"), *c, "token list");
  if (!answer) return 1;
  if (client.json) {
    std::printf("%s\n", answer->dump(2).c_str());
    return 0;
  }
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  std::printf("%-12s %-5s %-20s %-14s %s\n", "ID", "KIND", "USER/NODE", "CREATED BY", "EXPIRES");
  for (const json& t : *answer) {
    const std::string kind = t.value("kind", "");
    const json& owner = kind == "node" ? Field(t, "node") : Field(t, "user");
    std::string expires = ExpiryText(t);
    if (expires != "never" && Field(t, "expires_ms").get<int64_t>() <= now_ms)
      expires += " (expired)";
    std::printf("%-12s %-5s %-20s %-14s %s\n", Cell(Field(t, "id")).c_str(),
                Printable(kind).c_str(), Cell(owner).c_str(), Cell(Field(t, "created_by")).c_str(),
                expires.c_str());
  }
  return 0;
}

int RunTokenRevoke(const AdminOptions& o) {
  auto c = Connect(o.client);
  if (!c) return 1;
  auto answer =
      Check(c->http->Send("DELETE", "/v1/tokens/" + QueryValue(o.id), "", ""), *c, "token revoke");
  if (!answer) return 1;
  std::printf("token %s revoked\n", Printable(o.id).c_str());
  return 0;
}

int RunDrain(const AdminOptions& o, bool drain) {
  // NODE or NODE:GPU (node names hold no ':').
  std::string node = o.name;
  json body = json::object();
  if (const std::size_t colon = o.name.rfind(':'); colon != std::string::npos) {
    node = o.name.substr(0, colon);
    const std::string gpu = o.name.substr(colon + 1);
    char* end = nullptr;
    const long index = std::strtol(gpu.c_str(), &end, 10);
    if (gpu.empty() || *end != '\0' || index < 0 || index > 1023) {
      std::fprintf(stderr, "gpufleet: %s: expected NODE or NODE:GPU (a GPU index)\n",
                   Printable(o.name).c_str());
      return 2;
    }
    body["gpu"] = index;
  }
  if (node.empty()) {
    std::fprintf(stderr, "gpufleet: expected NODE or NODE:GPU\n");
    return 2;
  }
  if (drain) body["reason"] = o.reason;
  auto c = Connect(o.client);
  if (!c) return 1;
  const char* what = drain ? "drain" : "undrain";
  auto answer = Check(c->http->Post("/v1/nodes/" + QueryValue(node) + "/" + what, body.dump()), *c,
                      what);
  if (!answer) return 1;
  if (o.client.json) {
    std::printf("%s\n", answer->dump().c_str());
    return 0;
  }
  std::printf("node %s: GPUs %s %s\n", Printable(node).c_str(), Cell((*answer)["gpus"]).c_str(),
              drain ? "drained: nothing new is placed on them; running jobs finish"
                    : "undrained: jobs may be placed on them again");
  return 0;
}

int RunNodeRevoke(const AdminOptions& o) {
  auto c = Connect(o.client);
  if (!c) return 1;
  auto answer =
      Check(c->http->Post("/v1/nodes/" + QueryValue(o.name) + "/revoke"), *c, "nodes revoke");
  if (!answer) return 1;
  std::printf(
      "node %s: %s credential(s) revoked; it is LOST after its lease unless it joins "
      "again with a new join token\n",
      Printable(o.name).c_str(), Cell((*answer)["revoked"]).c_str());
  return 0;
}

}  // namespace gpufleet::cli
