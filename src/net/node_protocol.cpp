#include "net/node_protocol.h"

#include <array>
#include <nlohmann/json.hpp>

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

// Reads the whole document; nlohmann's exceptions become errors naming the field.
template <typename T, typename Fill>
core::Result<T> Parse(const std::string& body, Fill fill) {
  try {
    const json j = json::parse(body);
    if (!j.is_object()) return core::Error{"the body must be a JSON object"};
    T out;
    fill(j, out);
    return out;
  } catch (const json::parse_error& e) {
    return core::Error{std::string("malformed JSON: ") + e.what()};
  } catch (const std::exception& e) {
    return core::Error{std::string("bad field: ") + e.what()};
  }
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
    if (r.log_from >= 0) {
      j["log_from"] = r.log_from;
      j["log_data"] = Base64Encode(r.log_data);
    }
    jobs.push_back(std::move(j));
  }
  json figures = json::array();
  for (const GpuFigure& f : b.figures) {
    figures.push_back(
        {{"index", f.index}, {"t", f.sample_ms}, {"util", f.util_pct}, {"mem", f.mem_used_mib}});
  }
  json j = {{"node", b.node},
            {"figures", figures},
            {"address", b.address},
            {"node_epoch", b.node_epoch},
            {"gpus", b.gpus},
            {"gpu_model", b.gpu_model},
            {"simulated", b.simulated},
            {"wait_ms", b.wait_ms},
            {"jobs", jobs}};
  if (!b.samples_json.empty()) {
    json samples = json::parse(b.samples_json, nullptr, /*allow_exceptions=*/false);
    if (!samples.is_discarded()) j["samples"] = std::move(samples);
  }
  return Dump(j);
}

std::string ToJson(const HeartbeatReply& r) {
  json assignments = json::array();
  for (const Assignment& a : r.assignments) {
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
                           {"started", a.started},
                           {"stop", a.stop},
                           {"grace_s", a.grace_s}});
  }
  json logs = json::array();
  for (const LogAck& l : r.logs) logs.push_back({{"id", l.id}, {"rank", l.rank}, {"size", l.size}});
  return Dump({{"node_epoch", r.node_epoch},
               {"lease_ms", r.lease_ms},
               {"assignments", assignments},
               {"logs", logs}});
}

core::Result<Heartbeat> ParseHeartbeat(const std::string& body) {
  auto parsed = Parse<Heartbeat>(body, [](const json& j, Heartbeat& b) {
    b.node = j.at("node").get<std::string>();
    b.address = j.value("address", std::string());
    b.node_epoch = j.value("node_epoch", int64_t{0});
    b.gpus = j.at("gpus").get<int>();
    b.gpu_model = j.value("gpu_model", std::string());
    b.simulated = j.value("simulated", false);
    b.wait_ms = j.value("wait_ms", int64_t{0});
    for (const json& f : j.value("figures", json::array())) {
      GpuFigure g;
      g.index = f.at("index").get<int>();
      g.sample_ms = f.value("t", int64_t{0});
      g.util_pct = f.value("util", -1.0);
      g.mem_used_mib = f.value("mem", int64_t{-1});
      if (g.index < 0 || g.index >= 32)
        throw std::invalid_argument("figures[].index must be 0..31");
      b.figures.push_back(g);
    }
    if (j.contains("samples")) b.samples_json = j.at("samples").dump();
    for (const json& r : j.value("jobs", json::array())) {
      ReportedJob job;
      job.id = r.at("id").get<int64_t>();
      job.epoch = r.at("epoch").get<int64_t>();
      job.rank = r.value("rank", 0);
      const std::string state = r.at("state").get<std::string>();
      if (state == "running") {
        job.state = ReportedJob::State::kRunning;
      } else if (state == "exited") {
        job.state = ReportedJob::State::kExited;
      } else if (state == "lost") {
        job.state = ReportedJob::State::kLost;
      } else {
        throw std::invalid_argument("jobs[].state must be running, exited or lost");
      }
      job.exit_code = r.value("exit_code", 0);
      job.stopped = r.value("stopped", false);
      job.pid = r.value("pid", int64_t{0});
      job.pid_start = r.value("pid_start", uint64_t{0});
      job.reason = r.value("reason", std::string());
      job.log_size = r.value("log_size", int64_t{0});
      if (r.contains("log_from")) {
        job.log_from = r.at("log_from").get<int64_t>();
        auto data = Base64Decode(r.at("log_data").get<std::string>());
        if (!data) throw std::invalid_argument("jobs[].log_data: " + data.error());
        job.log_data = std::move(data.value());
      }
      b.jobs.push_back(std::move(job));
    }
  });
  if (parsed && (parsed.value().node.empty() || parsed.value().node.size() > 64 ||
                 parsed.value().node.find_first_of(",/ \t\n") != std::string::npos)) {
    return core::Error{"node: must be 1-64 characters without commas, slashes or spaces"};
  }
  if (parsed && (parsed.value().gpus < 0 || parsed.value().gpus > 32)) {
    return core::Error{"gpus: must be 0..32"};
  }
  return parsed;
}

core::Result<HeartbeatReply> ParseHeartbeatReply(const std::string& body) {
  return Parse<HeartbeatReply>(body, [](const json& j, HeartbeatReply& r) {
    r.node_epoch = j.at("node_epoch").get<int64_t>();
    r.lease_ms = j.at("lease_ms").get<int64_t>();
    for (const json& a : j.at("assignments")) {
      Assignment x;
      x.id = a.at("id").get<int64_t>();
      x.epoch = a.at("epoch").get<int64_t>();
      x.rank = a.value("rank", 0);
      x.user = a.value("user", std::string());
      x.argv = a.at("argv").get<std::vector<std::string>>();
      x.env = a.value("env", EnvList{});
      x.launch_env = a.value("launch_env", EnvList{});
      x.workdir = a.value("workdir", std::string());
      x.gpu_indices = a.value("gpu_indices", std::vector<int>{});
      x.restartable = a.value("restartable", false);
      x.cpu_milli = a.value("cpu_milli", int64_t{0});
      x.memory_mib = a.value("memory_mib", int64_t{0});
      x.started = a.value("started", false);
      x.stop = a.value("stop", false);
      x.grace_s = a.value("grace_s", 10.0);
      r.assignments.push_back(std::move(x));
    }
    for (const json& l : j.value("logs", json::array())) {
      r.logs.push_back(
          {l.at("id").get<int64_t>(), l.value("rank", 0), l.at("size").get<int64_t>()});
    }
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
