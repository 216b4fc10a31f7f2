#pragma once
// What a container job asks for (its image and bind mounts) and what an admin allows (image and
// mount-source prefixes, the pull policy). Pure: no file, process or clock. The controller checks
// a submit against the policy (errors name the field: "image" or "mounts"); the agent builds the
// runtime's command line from the same types (agent/container_command.h).
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpufleet::core {

struct BindMount {
  std::string source;  // an absolute, normalized host path
  std::string target;  // an absolute, normalized path in the container
  bool read_only = false;
  bool operator==(const BindMount&) const = default;
};

struct ContainerSpec {
  std::string image;  // "" : the job runs as a host process
  std::vector<BindMount> mounts;
  bool empty() const { return image.empty(); }
  bool operator==(const ContainerSpec&) const = default;
};

enum class PullPolicy { kNever, kIfMissing, kAlways };
std::string_view PullPolicyName(PullPolicy p);  // "never", "if-missing", "always"
Result<PullPolicy> ParsePullPolicy(std::string_view text);

struct ContainerPolicy {
  // Image references a job may name: each entry is a prefix ("localhost/", "nvcr.io/nvidia/");
  // none: container jobs are refused.
  std::vector<std::string> allowed_images;
  // Host directories a job may bind-mount: a source must be one of them or below one (whole path
  // components); none: no mounts.
  std::vector<std::string> allowed_mount_sources;
  PullPolicy pull = PullPolicy::kNever;
};

// Parses `SRC:DST[:ro|:rw]`. Both paths absolute, without "." or ".." components, empty
// components, commas, colons or control characters; DST not "/" and not under /proc, /sys or
// /dev. Errors name `field`.
Result<BindMount> ParseBindMount(std::string_view text, const std::string& field = "mounts");
// The mount back in ParseBindMount's form.
std::string BindMountText(const BindMount& m);
// An image reference: 1-255 characters of [A-Za-z0-9._/:@-], not starting with '-' or '/', no
// "..", no "//". Errors name `field`.
Result<bool> CheckImageReference(std::string_view image, const std::string& field = "image");
// A container's working directory: absolute and normalized as a mount target is, and not under
// /proc, /sys or /dev. Errors name `field`.
Result<bool> CheckContainerWorkdir(std::string_view path, const std::string& field = "workdir");
// Whether `image` is allowed by `prefix`: it starts with it, and the prefix ends at a boundary
// (the prefix ends in '/', or the image goes on with '/', ':' or '@', or is the prefix itself):
// "nvcr.io/nvidia" allows "nvcr.io/nvidia/pytorch:1", not "nvcr.io/nvidia-evil/x".
bool ImageIsUnder(std::string_view image, std::string_view prefix);
// Whether a variable can travel to a container through the runtimes' env files: a name of
// letters, digits and '_' not starting with a digit, a value without line breaks, and the
// NAME=value line under 64 KiB.
bool ContainerEnvEntryOk(std::string_view name, std::string_view value);
// Whether `path` is `prefix` or below it, by whole components ("/data" holds "/data/x", not
// "/database").
bool PathIsUnder(std::string_view path, std::string_view prefix);
// The submit check: the image's syntax and prefix, each mount's syntax and source prefix, and
// distinct mount targets. kForbidden (naming the field) when the policy refuses.
Result<bool> CheckContainerAgainstPolicy(const ContainerSpec& spec, const ContainerPolicy& policy);

}  // namespace gpufleet::core
