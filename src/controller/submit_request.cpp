#include "controller/submit_request.h"

#include <set>
#include <stdexcept>
#include <string>

#include "core/gpu_catalog.h"
#include "core/job.h"
#include "core/node.h"
#include "core/text.h"
#include "net/json_input.h"

namespace gpufleet::controller {
namespace {

using nlohmann::json;

// The kernel refuses to exec with one argument or environment string of MAX_ARG_STRLEN (32 pages,
// 128 KiB) or more, NUL included: such a job would pass here and fail at its launch.
constexpr std::size_t kMaxExecString = 128 * 1024;
// What one job's argv, and its env, may take in all.
constexpr std::size_t kMaxArgvBytes = 256 * 1024;
constexpr std::size_t kMaxEnvBytes = 256 * 1024;

// Thrown inside the parser for an error that names its field; caught once below.
struct FieldError : std::runtime_error {
  FieldError(std::string f, const std::string& why)
      : std::runtime_error(f + ": " + why), field(std::move(f)) {}
  std::string field;
};

// Runs one field's checked read, naming the field on failure.
template <typename Read>
auto Take(const char* field, Read read) {
  try {
    return read();
  } catch (const FieldError&) {
    throw;
  } catch (const std::exception& e) {
    std::string why = e.what();
    const std::string prefix = std::string(field) + ": ";
    if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
    throw FieldError(field, why);
  }
}

void Fill(const json& j, store::JobRecord& job) {
  static const std::set<std::string> kKnown = {
      "name",         "argv",        "gpus",  "gpu_share",  "gpu_type",
      "nodes",        "priority",    "queue", "env",        "workdir",
      "client_token", "restartable", "cpus",  "memory_mib", "time_limit_s",
      "image",        "mounts",      "min_gpus"};
  for (const auto& [key, value] : j.items()) {
    if (!kKnown.count(key)) {
      std::string shown = key.substr(0, 64);
      for (char& c : shown) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
      }
      throw FieldError(shown, "unknown field '" + shown + "'");
    }
  }
  auto argv = j.find("argv");
  if (argv == j.end() || !argv->is_array() || argv->empty()) {
    throw FieldError("argv", "must be a non-empty array of strings (the command to run)");
  }
  // Each string costs its bytes, its NUL and its pointer, as the kernel counts them for exec: so
  // 300,000 empty arguments (a 1 MiB body, 10 MB once held) are refused like 256 KiB of text.
  constexpr std::size_t kPerString = 1 + sizeof(char*);
  std::size_t total = 0;
  for (const json& a : *argv) {
    job.argv.push_back(Take("argv", [&] { return net::CheckedString(a, "argv", 256 * 1024); }));
    total += job.argv.back().size() + kPerString;
    if (job.argv.back().size() >= kMaxExecString) {
      throw FieldError("argv", "each argument must be under 128 KiB (the kernel's limit for one)");
    }
    if (total > kMaxArgvBytes) {
      throw FieldError("argv", "longer than 256 KiB (each argument counts " +
                                   std::to_string(kPerString) + " bytes more, as exec counts it)");
    }
  }
  if (job.argv[0].empty()) throw FieldError("argv", "the program (argv[0]) must not be empty");
  job.name = Take("name", [&] { return net::CheckedString(j, "name", 200, ""); });
  if (job.name.empty()) job.name = core::TruncateUtf8(job.argv[0], 200);
  job.gpus = static_cast<int>(Take("gpus", [&] { return net::CheckedInt(j, "gpus", 1, 1024, 1); }));
  if (j.contains("gpu_share") && !j["gpu_share"].is_null()) {
    const double share =
        Take("gpu_share", [&] { return net::CheckedNumber(j["gpu_share"], "gpu_share", 0, 1); });
    if (!(share > 0)) throw FieldError("gpu_share", "must be a number in (0, 1]");
    if (job.gpus != 1) throw FieldError("gpu_share", "a GPU share needs gpus = 1");
    job.gpu_milli = std::max(1, static_cast<int>(share * 1000 + 0.5));
  }
  job.gpu_type = Take("gpu_type", [&] { return net::CheckedString(j, "gpu_type", 256, ""); });
  if (!job.gpu_type.empty()) {
    auto models = core::GpuCatalog::Builtin().ParseSpec(job.gpu_type);
    if (!models) throw FieldError("gpu_type", models.error());
  }
  job.nodes = static_cast<int>(
      Take("nodes", [&] { return net::CheckedInt(j, "nodes", 1, kMaxJobNodes, 1); }));
  job.min_gpus = static_cast<int>(
      Take("min_gpus", [&] { return net::CheckedInt(j, "min_gpus", 1, 1024, 0); }));
  if (job.min_gpus > 0) {
    if (job.min_gpus >= job.gpus) {
      throw FieldError("min_gpus", "an elastic job's fewest GPUs must be below its most (gpus)");
    }
    if (job.gpu_milli < core::kGpuMilli) {
      throw FieldError("min_gpus", "a GPU share cannot be elastic");
    }
    if (job.nodes > 1) throw FieldError("min_gpus", "an elastic job runs on one node (nodes 1)");
  }
  job.priority = static_cast<int>(Take("priority", [&] {
    return net::CheckedInt(j, "priority", -kMaxJobPriority, kMaxJobPriority, 0);
  }));
  if (j.contains("queue")) {
    job.queue = Take("queue", [&] { return net::CheckedString(j["queue"], "queue", 128); });
    if (job.queue.empty()) throw FieldError("queue", "must be a non-empty string");
  }
  if (j.contains("env")) {
    if (!j["env"].is_object()) throw FieldError("env", "must be an object of strings");
    std::size_t env_bytes = 0;
    for (const auto& [k, v] : j["env"].items()) {
      if (!v.is_string() || k.empty() || k.find('=') != std::string::npos ||
          k.find('\0') != std::string::npos || k.size() > 1024) {
        throw FieldError("env", "every entry must be NAME: \"value\", NAME without '=' or NUL");
      }
      if (!core::IsPortableVariableName(k)) {
        throw FieldError("env", "'" + core::TruncateUtf8(k, 64) +
                                    "' is not a variable name (letters, digits and _, not "
                                    "starting with a digit)");
      }
      if (core::IsGpufleetJobVariable(k)) {
        throw FieldError("env", k + " is set by gpufleet for every job (its GPUs, its id, the "
                                    "distributed-training variables) and cannot be given");
      }
      // Named, not captured: clang before 16 cannot capture a structured binding.
      const json& value = v;
      job.env.emplace_back(
          k, Take("env", [&] { return net::CheckedString(value, "env", 256 * 1024); }));
      env_bytes += k.size() + 1 + job.env.back().second.size() + kPerString;  // NAME=value
      if (k.size() + 1 + job.env.back().second.size() >= kMaxExecString) {
        throw FieldError("env", "each NAME=value must be under 128 KiB (the kernel's limit for one)");
      }
      if (env_bytes > kMaxEnvBytes) {
        throw FieldError("env", "larger than 256 KiB (each NAME=value counts " +
                                    std::to_string(kPerString) + " bytes more, as exec counts it)");
      }
    }
  }
  if (j.contains("cpus") && !j["cpus"].is_null()) {
    const double cpus =
        Take("cpus", [&] { return net::CheckedNumber(j["cpus"], "cpus", 0, 4096); });
    // The kernel's smallest CPU quota is 1 ms per 100 ms period: a hundredth of a core.
    if (!(cpus >= 0.01)) throw FieldError("cpus", "must be a number of cores in [0.01, 4096]");
    job.cpu_milli = std::max<int64_t>(1, static_cast<int64_t>(cpus * 1000 + 0.5));
  }
  job.memory_mib =
      Take("memory_mib", [&] { return net::CheckedInt(j, "memory_mib", 1, int64_t{1} << 32, 0); });
  job.time_limit_s =
      Take("time_limit_s", [&] { return net::CheckedInt(j, "time_limit_s", 1, 366 * 86400, 0); });
  job.restartable = Take("restartable", [&] { return net::CheckedBool(j, "restartable", false); });
  job.client_token =
      Take("client_token", [&] { return net::CheckedString(j, "client_token", 128, ""); });
  job.workdir = Take("workdir", [&] { return net::CheckedString(j, "workdir", 4096, ""); });
  if (!job.workdir.empty() && job.workdir[0] != '/') {
    throw FieldError("workdir", "must be an absolute path");
  }
  job.container.image = Take("image", [&] { return net::CheckedString(j, "image", 255, ""); });
  if (!job.container.image.empty()) {
    if (auto ok = core::CheckImageReference(job.container.image); !ok) {
      throw FieldError("image", ok.error());
    }
    // The job's variables reach the container through an env file, one NAME=value per line,
    // which the runtime reads with rules of its own: names of letters, digits and '_' only,
    // values without line breaks and under 64 KiB.
    for (const auto& [name, value] : job.env) {
      if (!core::ContainerEnvEntryOk(name, value)) {
        throw FieldError("env", name.substr(0, 64) +
                                    ": a container job's variable names are letters, digits and "
                                    "'_' (not starting with a digit), its values without line "
                                    "breaks, each NAME=value under 64 KiB");
      }
    }
    if (!job.workdir.empty()) {
      if (auto ok = core::CheckContainerWorkdir(job.workdir); !ok) {
        throw FieldError("workdir", ok.error());
      }
    }
  }
  if (j.contains("mounts") && !j["mounts"].is_null()) {
    const json& mounts = j["mounts"];
    if (!mounts.is_array() || mounts.size() > 64) {
      throw FieldError("mounts", "must be an array of at most 64 \"SRC:DST[:ro]\" strings");
    }
    for (const json& m : mounts) {
      if (!m.is_string()) throw FieldError("mounts", "every entry must be \"SRC:DST[:ro]\"");
      auto mount = core::ParseBindMount(m.get<std::string>());
      if (!mount) throw FieldError("mounts", mount.error());
      job.container.mounts.push_back(mount.value());
    }
    if (!job.container.mounts.empty() && job.container.image.empty()) {
      throw FieldError("mounts", "mounts need an image (--image): host jobs see the host's files");
    }
  }
}

}  // namespace

core::Result<store::JobRecord> ParseSubmitRequest(std::string_view body) {
  auto parsed = net::ParseJsonInput(body);
  if (!parsed) return core::Error{parsed.error(), core::ErrorCode::kInvalid, "body"};
  if (!parsed.value().is_object()) {
    return core::Error{"the body is not a JSON object", core::ErrorCode::kInvalid, "body"};
  }
  store::JobRecord job;
  try {
    Fill(parsed.value(), job);
  } catch (const FieldError& e) {
    return core::Error{e.what(), core::ErrorCode::kInvalid, e.field};
  }
  return job;
}

}  // namespace gpufleet::controller
