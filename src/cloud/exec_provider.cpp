#include "cloud/exec_provider.h"

#include <utility>

#include "cloud/instance_list.h"

namespace gpufleet::cloud {
namespace {

// An environment value must reach the script whole: a NUL byte would cut it short.
core::Result<bool> CheckEnvValue(const std::string& value, const char* field) {
  if (value.find('\0') != std::string::npos) {
    return core::Error{std::string(field) + ": contains a NUL byte", core::ErrorCode::kInvalid,
                       field};
  }
  return true;
}

core::Result<bool> CheckName(const std::string& name, const char* field) {
  if (!ValidInstanceName(name)) {
    return core::Error{std::string(field) + ": '" + FirstLines(name, 1, 80) +
                           "' must be 1 to 63 of a-z, 0-9 and '-', not starting with '-'",
                       core::ErrorCode::kInvalid, field};
  }
  return true;
}

}  // namespace

ExecProvider::ExecProvider(std::string script, int64_t timeout_s)
    : script_(std::move(script)), timeout_s_(timeout_s) {}

core::Result<std::string> ExecProvider::Call(const std::vector<std::string>& args,
                                             const std::vector<std::string>& extra_env) {
  ProgramRun run;
  run.argv.push_back(script_);
  run.argv.insert(run.argv.end(), args.begin(), args.end());
  run.env = InheritedEnvironment("GPUFLEET_");
  run.env.insert(run.env.end(), extra_env.begin(), extra_env.end());
  run.timeout_s = timeout_s_;
  run.kill_grace_ms = kill_grace_ms_;
  const std::string what = "provider script " + script_ + " " + args.front();
  auto outcome = RunProgram(run);
  if (!outcome) return core::Error{what + ": " + outcome.error(), outcome.failure().code};
  const ProgramOutcome& o = outcome.value();
  if (o.timed_out) {
    return core::Error{
        what + ": timed out after " + std::to_string(timeout_s_) +
            " s (killed with its process group; [provider] timeout_s sets the limit)",
        core::ErrorCode::kUnavailable};
  }
  if (!o.Succeeded()) {
    const std::string how = o.signal != 0 ? "killed by signal " + std::to_string(o.signal)
                                          : "exited with status " + std::to_string(o.exit_code);
    const std::string said = FirstLines(o.err);
    return core::Error{what + ": " + how + (said.empty() ? " (no stderr)" : ": " + said),
                       core::ErrorCode::kUnavailable};
  }
  return o.out;
}

core::Result<bool> ExecProvider::Create(const scale::NodeGroup& group, const std::string& name,
                                        bool spot, const JoinInfo& join) {
  if (auto ok = CheckName(name, "name"); !ok) return ok;
  if (auto ok = CheckName(group.name, "group"); !ok) return ok;
  for (const auto& [value, field] :
       {std::pair{&join.controller_url, "controller_url"},
        std::pair{&join.join_token, "join_token"}, std::pair{&join.ca_file, "ca_file"},
        std::pair{&group.model_name, "gpu_model"}}) {
    if (auto ok = CheckEnvValue(*value, field); !ok) return ok;
  }
  std::vector<std::string> args = {"create", "--group", group.name, "--name", name};
  if (spot) args.push_back("--spot");
  const std::vector<std::string> env = {
      "GPUFLEET_CONTROLLER_URL=" + join.controller_url,
      "GPUFLEET_JOIN_TOKEN=" + join.join_token,
      "GPUFLEET_CA_FILE=" + join.ca_file,
      "GPUFLEET_GROUP=" + group.name,
      "GPUFLEET_GPU_MODEL=" + group.model_name,
      "GPUFLEET_GPUS=" + std::to_string(group.gpus),
  };
  auto out = Call(args, env);
  if (!out) return out.failure();
  if (auto checked = CheckCreateReply(out.value(), name); !checked) {
    return core::Error{"provider script " + script_ + " create: its reply: " + checked.error(),
                       core::ErrorCode::kInvalid, checked.failure().field};
  }
  return true;
}

core::Result<bool> ExecProvider::Delete(const std::string& name) {
  if (auto ok = CheckName(name, "name"); !ok) return ok;
  auto out = Call({"delete", "--name", name}, {});
  if (!out) return out.failure();
  return true;
}

core::Result<std::vector<Instance>> ExecProvider::List() {
  auto out = Call({"list"}, {});
  if (!out) return out.failure();
  auto instances = ParseInstanceList(out.value());
  if (!instances) {
    return core::Error{"provider script " + script_ + " list: its reply: " + instances.error(),
                       core::ErrorCode::kInvalid, instances.failure().field};
  }
  return instances;
}

}  // namespace gpufleet::cloud
