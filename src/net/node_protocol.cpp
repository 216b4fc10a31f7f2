#include "net/node_protocol.h"

#include <array>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/node.h"
#include "core/text.h"
#include "net/host_usage_json.h"
#include "net/json_input.h"

namespace gpufleet::net {
namespace {

using nlohmann::json;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

const char* StateName(ReportedJob::State s) {
  switch (s) {
    case ReportedJob::State::kRunning:
      return "running";
    case ReportedJob::State::kExited:
      return "exited";
    case ReportedJob::State::kLost:
      return "lost";
  }
  return "?";
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Reads the whole document (depth-limited); a bad field becomes an error naming it.
template <typename T, typename Fill>
core::Result<T> Parse(const std::string& body, Fill fill) {
  auto parsed = ParseJsonInput(body);
  if (!parsed) return core::Error{parsed.error()};
  const json& j = parsed.value();
  if (!j.is_object()) return core::Error{"the body must be a JSON object"};
  try {
    T out;
    fill(j, out);
    return out;
  } catch (const InputFieldError& e) {
    return core::Error{e.what(), core::ErrorCode::kInvalid, e.field};
  } catch (const std::exception& e) {
    return core::Error{e.what()};
  }
}

constexpr int64_t kMaxId = std::numeric_limits<int64_t>::max();
constexpr std::size_t kMaxText = 64 * 1024;   // a reason, a path, a name
constexpr std::size_t kMaxArg = 256 * 1024;   // one argv element or env value
constexpr std::size_t kMaxLogData = 8 << 20;  // one heartbeat's log bytes of one job, base64

const json& Field(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end()) throw InputFieldError(key, "missing");
  return *it;
}

const json& Array(const json& object, const char* key, bool required) {
  static const json kEmpty = json::array();
  auto it = object.find(key);
  if (it == object.end() || (!required && it->is_null())) {
    if (required) throw InputFieldError(key, "missing");
    return kEmpty;
  }
  if (!it->is_array()) throw InputFieldError(key, "must be an array");
  return *it;
}

const json& Object(const json& value, const std::string& field) {
  if (!value.is_object()) throw InputFieldError(field, "must be an object");
  return value;
}

// Runs `read` on each element of the array `object[key]` (absent or null: none, unless
// `required`), each of which must be an object. A field a reader names bare ("t", from
// CheckedInt(f, "t", ...)) is named by its whole path ("figures[].t"), so that a node's operator
// can find it; a field already named from the array on ("figures[].index") is kept.
template <typename Read>
void ForEachElement(const json& object, const char* key, bool required, Read read) {
  const std::string path = std::string(key) + "[]";
  for (const json& element : Array(object, key, required)) {
    try {
      read(Object(element, path));
    } catch (const InputFieldError& e) {
      if (e.field.rfind(path, 0) == 0) throw;
      throw InputFieldError(path + "." + e.field, std::string(e.what()).substr(e.field.size() + 2));
    }
  }
}

EnvList ReadEnv(const json& object, const char* key) {
  EnvList out;
  for (const json& pair : Array(object, key, false)) {
    if (!pair.is_array() || pair.size() != 2) {
      throw InputFieldError(std::string(key) + "[]", "must be [NAME, value] pairs");
    }
    out.emplace_back(CheckedString(pair[0], key, kMaxText), CheckedString(pair[1], key, kMaxArg));
  }
  return out;
}

// One matrix of "gpu_links": rows of integers, at most kMaxGpusPerNode of either; the shape and
// ranges are checked afterwards, by core::MakeGpuLinks.
std::vector<std::vector<int>> ReadLinkMatrix(const json& links, const char* key) {
  const std::string field = std::string("gpu_links.") + key;
  auto it = links.find(key);
  if (it == links.end()) throw InputFieldError(field, "missing");
  if (!it->is_array() || it->size() > core::kMaxGpusPerNode) {
    throw InputFieldError(
        field, "must be an array of at most " + std::to_string(core::kMaxGpusPerNode) + " rows");
  }
  std::vector<std::vector<int>> m;
  for (const json& row : *it) {
    if (!row.is_array() || row.size() > core::kMaxGpusPerNode) {
      throw InputFieldError(field, "each row must be an array of at most " +
                                       std::to_string(core::kMaxGpusPerNode) + " integers");
    }
    std::vector<int>& out = m.emplace_back();
    for (const json& cell : row) out.push_back(static_cast<int>(CheckedInt(cell, field, 0, 255)));
  }
  return m;
}

core::GpuLinks ReadGpuLinks(const json& j, int gpus) {
  auto it = j.find("gpu_links");
  if (it == j.end() || it->is_null()) return {};
  Object(*it, "gpu_links");
  core::Result<core::GpuLinks> links =
      core::MakeGpuLinks(ReadLinkMatrix(*it, "nvlinks"), ReadLinkMatrix(*it, "pcie"), gpus);
  if (!links) throw InputFieldError("gpu_links", links.error());
  return std::move(links).value();
}

}  // namespace

std::string ToJson(const Heartbeat& b) {
  json jobs = json::array();
  for (const ReportedJob& r : b.jobs) {
    json j = {{"id", r.id},
              {"epoch", r.epoch},
              {"rank", r.rank},
              {"state", StateName(r.state)},
              {"exit_code", r.exit_code},
              {"stopped", r.stopped},
              {"pid", r.pid},
              {"pid_start", r.pid_start},
              {"reason", r.reason},
              {"log_size", r.log_size}};
    if (r.usage.measured()) j["usage"] = HostUsageJson(r.usage);
    if (r.log_from >= 0) {
      j["log_from"] = r.log_from;
      j["log_data"] = Base64Encode(r.log_data);
    }
    jobs.push_back(std::move(j));
  }
  json figures = json::array();
  for (const GpuFigure& f : b.figures) {
    json fig = {
        {"index", f.index}, {"t", f.sample_ms}, {"util", f.util_pct}, {"mem", f.mem_used_mib}};
    if (f.membw_pct >= 0) fig["membw"] = f.membw_pct;
    if (f.mem_total_mib >= 0) fig["memtot"] = f.mem_total_mib;
    if (f.pcie_mb_s >= 0) fig["pcie"] = f.pcie_mb_s;
    if (f.power_w >= 0) fig["pw"] = f.power_w;
    if (f.power_limit_w >= 0) fig["pwlim"] = f.power_limit_w;
    if (f.sm_clock_mhz >= 0) fig["clk"] = f.sm_clock_mhz;
    if (f.clock_reasons >= 0) fig["reasons"] = f.clock_reasons;
    if (!f.job_sm.empty()) {
      json per_job = json::array();
      for (const auto& [id, sm] : f.job_sm) per_job.push_back(json::array({id, sm}));
      fig["jobs"] = std::move(per_job);
    }
    if (!f.healthy) {
      fig["ok"] = false;
      fig["why"] = f.health_reason;
    }
    figures.push_back(std::move(fig));
  }
  json j = {{"node", b.node},
            {"figures", figures},
            {"address", b.address},
            {"node_epoch", b.node_epoch},
            {"gpus", b.gpus},
            {"gpu_model", b.gpu_model},
            {"cpu_milli", b.cpu_milli},
            {"memory_mib", b.memory_mib},
            {"simulated", b.simulated},
            {"limits", b.limits},
            {"limits_why", b.limits_why},
            {"wait_ms", b.wait_ms},
            {"jobs", jobs}};
  if (b.images) j["images"] = *b.images;
  if (!b.gpu_links.empty()) {
    j["gpu_links"] = {{"nvlinks", core::NvLinkMatrix(b.gpu_links)},
                      {"pcie", core::PcieMatrix(b.gpu_links)}};
  }
  if (!b.samples_json.empty()) {
    json samples = json::parse(b.samples_json, nullptr, /*allow_exceptions=*/false);
    if (!samples.is_discarded()) j["samples"] = std::move(samples);
  }
  return Dump(j);
}

std::string ToJson(const HeartbeatReply& r) {
  json assignments = json::array();
  for (const Assignment& a : r.assignments) {
    json mounts = json::array();
    for (const core::BindMount& m : a.container.mounts) mounts.push_back(core::BindMountText(m));
    assignments.push_back({{"id", a.id},
                           {"epoch", a.epoch},
                           {"rank", a.rank},
                           {"user", a.user},
                           {"argv", a.argv},
                           {"env", a.env},
                           {"launch_env", a.launch_env},
                           {"workdir", a.workdir},
                           {"gpu_indices", a.gpu_indices},
                           {"restartable", a.restartable},
                           {"cpu_milli", a.cpu_milli},
                           {"memory_mib", a.memory_mib},
                           {"image", a.container.image},
                           {"mounts", mounts},
                           {"pull", std::string(core::PullPolicyName(a.pull))},
                           {"started", a.started},
                           {"stop", a.stop},
                           {"grace_s", a.grace_s}});
  }
  json logs = json::array();
  for (const LogAck& l : r.logs) {
    logs.push_back({{"id", l.id}, {"rank", l.rank}, {"size", l.size}});
    if (l.held_back) logs.back()["held_back"] = true;
  }
  return Dump({{"node_epoch", r.node_epoch},
               {"store_id", r.store_id},
               {"lease_ms", r.lease_ms},
               {"assignments", assignments},
               {"logs", logs}});
}

core::Result<Heartbeat> ParseHeartbeat(const std::string& body) {
  auto parsed = Parse<Heartbeat>(body, [](const json& j, Heartbeat& b) {
    b.node = CheckedString(Field(j, "node"), "node", 64);
    b.address = core::Printable(CheckedString(j, "address", 255, ""));
    b.node_epoch = CheckedInt(j, "node_epoch", 0, kMaxId, 0);
    b.gpus = static_cast<int>(CheckedInt(Field(j, "gpus"), "gpus", 0, core::kMaxGpusPerNode));
    b.gpu_model = core::Printable(CheckedString(j, "gpu_model", 128, ""));
    b.cpu_milli = CheckedInt(j, "cpu_milli", 0, int64_t{1} << 40, 0);
    b.memory_mib = CheckedInt(j, "memory_mib", 0, int64_t{1} << 40, 0);
    b.simulated = CheckedBool(j, "simulated", false);
    b.limits = CheckedString(j, "limits", 16, "none");
    if (b.limits != "none" && b.limits != "cgroup-v1" && b.limits != "cgroup-v2" &&
        b.limits != "cgroup-v2-memory") {
      throw InputFieldError("limits", "must be none, cgroup-v1, cgroup-v2 or cgroup-v2-memory");
    }
    // Free text a node says, shown in `gpufleet nodes` and the controller's log: no control
    // characters (a line break would forge a log line; an escape sequence a terminal command).
    b.limits_why = core::Printable(CheckedString(j, "limits_why", 1024, ""));
    b.wait_ms = CheckedInt(j, "wait_ms", 0, 3600 * 1000, 0);
    if (j.contains("images")) {
      const json& images = j["images"];
      if (!images.is_array() || images.size() > kMaxNodeImages) {
        throw InputFieldError("images", "must be an array of at most " +
                                            std::to_string(kMaxNodeImages) + " image names");
      }
      b.images.emplace();
      for (const json& image : images) {
        const std::string name = CheckedString(image, "images[]", 255);
        if (!core::CheckImageReference(name, "images[]")) {
          throw InputFieldError("images[]", "not an image reference");
        }
        b.images->push_back(name);
      }
    }
    ForEachElement(j, "figures", false, [&](const json& f) {
      GpuFigure g;
      g.index = static_cast<int>(
          CheckedInt(Field(f, "index"), "figures[].index", 0, core::kMaxGpusPerNode - 1));
      g.sample_ms = CheckedInt(f, "t", 0, kMaxId, 0);
      g.util_pct = CheckedNumber(f, "util", -1, 100, -1);
      g.mem_used_mib = CheckedInt(f, "mem", -1, int64_t{1} << 40, -1);
      g.membw_pct = CheckedNumber(f, "membw", -1, 100, -1);
      g.mem_total_mib = CheckedInt(f, "memtot", -1, int64_t{1} << 40, -1);
      g.pcie_mb_s = CheckedNumber(f, "pcie", -1, 1e7, -1);
      g.power_w = CheckedNumber(f, "pw", -1, 1e5, -1);
      g.power_limit_w = CheckedNumber(f, "pwlim", -1, 1e5, -1);
      g.sm_clock_mhz = CheckedInt(f, "clk", -1, 100000, -1);
      g.clock_reasons = CheckedInt(f, "reasons", -1, int64_t{1} << 40, -1);
      for (const json& pair : Array(f, "jobs", false)) {
        if (!pair.is_array() || pair.size() != 2) {
          throw InputFieldError("figures[].jobs[]", "must be [job id, SM %]");
        }
        if (g.job_sm.size() >= GpuFigure::kMaxJobsPerFigure) {
          throw InputFieldError(
              "figures[].jobs",
              "more than " + std::to_string(GpuFigure::kMaxJobsPerFigure) + " jobs");
        }
        const int64_t id = CheckedInt(pair[0], "figures[].jobs[][0]", 1, kMaxId);
        g.job_sm.emplace_back(id, CheckedNumber(pair[1], "figures[].jobs[][1]", 0, 100));
      }
      g.healthy = CheckedBool(f, "ok", true);
      if (!g.healthy) g.health_reason = core::Printable(CheckedString(f, "why", 1024, ""));
      b.figures.push_back(g);
    });
    b.gpu_links = ReadGpuLinks(j, b.gpus);
    if (j.contains("samples")) b.samples_json = j.at("samples").dump();
    ForEachElement(j, "jobs", false, [&](const json& r) {
      ReportedJob job;
      job.id = CheckedInt(Field(r, "id"), "jobs[].id", 1, kMaxId);
      job.epoch = CheckedInt(Field(r, "epoch"), "jobs[].epoch", 0, kMaxId);
      job.rank = static_cast<int>(CheckedInt(r, "rank", 0, 1 << 20, 0));
      const std::string state = CheckedString(Field(r, "state"), "jobs[].state", 16);
      if (state == "running") {
        job.state = ReportedJob::State::kRunning;
      } else if (state == "exited") {
        job.state = ReportedJob::State::kExited;
      } else if (state == "lost") {
        job.state = ReportedJob::State::kLost;
      } else {
        throw InputFieldError("jobs[].state", "must be running, exited or lost");
      }
      job.exit_code = static_cast<int>(CheckedInt(r, "exit_code", -1, 255 + 128, 0));
      job.stopped = CheckedBool(r, "stopped", false);
      job.pid = CheckedInt(r, "pid", 0, std::numeric_limits<int32_t>::max(), 0);
      job.pid_start = static_cast<uint64_t>(CheckedInt(r, "pid_start", 0, kMaxId, 0));
      job.reason = core::Printable(CheckedString(r, "reason", kMaxText, ""));
      job.log_size = CheckedInt(r, "log_size", 0, kMaxId, 0);
      if (r.contains("usage")) job.usage = ParseHostUsageJson(r.at("usage"), "jobs[].usage");
      if (r.contains("log_from")) {
        job.log_from = CheckedInt(Field(r, "log_from"), "jobs[].log_from", 0, kMaxId);
        auto data =
            Base64Decode(CheckedString(Field(r, "log_data"), "jobs[].log_data", kMaxLogData));
        if (!data) throw InputFieldError("jobs[].log_data", data.error());
        job.log_data = std::move(data.value());
      }
      b.jobs.push_back(std::move(job));
    });
  });
  if (parsed && !IsNodeName(parsed.value().node)) {
    return core::Error{"node: must be 1-64 characters without commas, slashes or spaces",
                       core::ErrorCode::kInvalid, "node"};
  }
  return parsed;
}

bool IsNodeName(std::string_view name) {
  return !name.empty() && name.size() <= 64 && name.find_first_of(",/ ") == std::string::npos &&
         core::Printable(name) == name;
}

core::Result<HeartbeatReply> ParseHeartbeatReply(const std::string& body) {
  return Parse<HeartbeatReply>(body, [](const json& j, HeartbeatReply& r) {
    r.node_epoch = CheckedInt(Field(j, "node_epoch"), "node_epoch", 0, kMaxId);
    r.lease_ms = CheckedInt(Field(j, "lease_ms"), "lease_ms", 0, int64_t{86400} * 1000);
    // Informational: one the agent cannot read is ignored (as "" is), never a reason to refuse
    // the reply (and lose the node's lease over it).
    const auto store_id = j.find("store_id");
    if (store_id != j.end() && store_id->is_string() && store_id->size() <= 64) {
      r.store_id = store_id->get<std::string>();
      if (r.store_id.find_first_not_of("0123456789abcdef") != std::string::npos) r.store_id.clear();
    }
    ForEachElement(j, "assignments", true, [&](const json& a) {
      Assignment x;
      x.id = CheckedInt(Field(a, "id"), "assignments[].id", 1, kMaxId);
      x.epoch = CheckedInt(Field(a, "epoch"), "assignments[].epoch", 0, kMaxId);
      x.rank = static_cast<int>(CheckedInt(a, "rank", 0, 1 << 20, 0));
      x.user = CheckedString(a, "user", 256, "");
      for (const json& arg : Array(a, "argv", true)) {
        x.argv.push_back(CheckedString(arg, "assignments[].argv", kMaxArg));
      }
      if (x.argv.empty()) throw InputFieldError("assignments[].argv", "must not be empty");
      x.env = ReadEnv(a, "env");
      x.launch_env = ReadEnv(a, "launch_env");
      x.workdir = CheckedString(a, "workdir", 4096, "");
      for (const json& g : Array(a, "gpu_indices", false)) {
        x.gpu_indices.push_back(static_cast<int>(
            CheckedInt(g, "assignments[].gpu_indices", 0, core::kMaxGpusPerNode - 1)));
      }
      x.restartable = CheckedBool(a, "restartable", false);
      x.cpu_milli = CheckedInt(a, "cpu_milli", 0, int64_t{1} << 40, 0);
      x.memory_mib = CheckedInt(a, "memory_mib", 0, int64_t{1} << 40, 0);
      x.container.image = CheckedString(a, "image", 255, "");
      if (!x.container.image.empty()) {
        if (auto ok = core::CheckImageReference(x.container.image, "assignments[].image"); !ok) {
          throw InputFieldError("assignments[].image", ok.error());
        }
        // Checked again here, where it is used: a job stored before the check existed.
        if (!x.workdir.empty()) {
          if (auto ok = core::CheckContainerWorkdir(x.workdir, "assignments[].workdir"); !ok) {
            throw InputFieldError("assignments[].workdir", ok.error());
          }
        }
      }
      for (const json& m : Array(a, "mounts", false)) {
        auto mount = core::ParseBindMount(CheckedString(m, "assignments[].mounts", 8200),
                                          "assignments[].mounts");
        if (!mount) throw InputFieldError("assignments[].mounts", mount.error());
        x.container.mounts.push_back(mount.value());
      }
      if (auto pull = core::ParsePullPolicy(CheckedString(a, "pull", 16, "never")); pull) {
        x.pull = pull.value();
      } else {
        throw InputFieldError("assignments[].pull", pull.error());
      }
      x.started = CheckedBool(a, "started", false);
      x.stop = CheckedBool(a, "stop", false);
      x.grace_s = CheckedNumber(a, "grace_s", 0, 86400, 10.0);
      r.assignments.push_back(std::move(x));
    });
    ForEachElement(j, "logs", false, [&](const json& l) {
      r.logs.push_back({CheckedInt(Field(l, "id"), "logs[].id", 1, kMaxId),
                        static_cast<int>(CheckedInt(l, "rank", 0, 1 << 20, 0)),
                        CheckedInt(Field(l, "size"), "logs[].size", 0, kMaxId),
                        CheckedBool(l, "held_back", false)});
    });
  });
}

std::string Base64Encode(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint32_t(uint8_t(bytes[i])) << 16) |
                       (uint32_t(uint8_t(bytes[i + 1])) << 8) | uint8_t(bytes[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

core::Result<std::string> Base64Decode(const std::string& text) {
  std::array<int, 256> value;
  value.fill(-1);
  for (int k = 0; k < 64; ++k) value[uint8_t(kAlphabet[k])] = k;
  if (text.size() % 4 != 0) return core::Error{"base64 length is not a multiple of 4"};
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0 || value[uint8_t(c)] < 0) return core::Error{"invalid base64"};
      v[k] = value[uint8_t(c)];
    }
    const uint32_t w =
        (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    out += char(w >> 16);
    if (pad < 2) out += char((w >> 8) & 255);
    if (pad < 1) out += char(w & 255);
  }
  return out;
}

}  // namespace gpufleet::net
