#include "core/container.h"

#include <set>

namespace gpufleet::core {
namespace {

// Why `path` is not an absolute normalized path fit for a mount's command line, or "".
std::string PathProblem(std::string_view path) {
  if (path.empty() || path[0] != '/') return "must be an absolute path";
  if (path.size() > 4096) return "is longer than 4096 characters";
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "holds a control character";
    if (c == ',' || c == ':') return "holds a ',' or ':' (the runtime's separators)";
  }
  if (path.size() > 1 && path.back() == '/') return "ends with '/'";
  for (std::size_t start = 1; start <= path.size();) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() && path.size() > 1) return "has an empty component ('//')";
    if (part == "." || part == "..") return "has a '.' or '..' component";
    start = end + 1;
  }
  return "";
}

}  // namespace

std::string_view PullPolicyName(PullPolicy p) {
  switch (p) {
    case PullPolicy::kNever:
      return "never";
    case PullPolicy::kIfMissing:
      return "if-missing";
    case PullPolicy::kAlways:
      return "always";
  }
  return "never";
}

Result<PullPolicy> ParsePullPolicy(std::string_view text) {
  for (PullPolicy p : {PullPolicy::kNever, PullPolicy::kIfMissing, PullPolicy::kAlways}) {
    if (text == PullPolicyName(p)) return p;
  }
  return Error{"pull policy must be never, if-missing or always, not '" +
                   std::string(text.substr(0, 40)) + "'",
               ErrorCode::kInvalid, "pull"};
}

bool PathIsUnder(std::string_view path, std::string_view prefix) {
  while (prefix.size() > 1 && prefix.back() == '/') prefix.remove_suffix(1);
  if (prefix == "/") return !path.empty() && path[0] == '/';
  if (path.rfind(prefix, 0) != 0) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

bool ContainerEnvEntryOk(std::string_view name, std::string_view value) {
  bool plain = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
  for (char c : name) {
    plain = plain && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '_');
  }
  return plain && value.find_first_of("\r\n") == std::string_view::npos &&
         name.size() + value.size() + 2 <= 64 * 1024;
}

bool ImageIsUnder(std::string_view image, std::string_view prefix) {
  if (prefix.empty() || image.rfind(prefix, 0) != 0) return false;
  if (image.size() == prefix.size() || prefix.back() == '/') return true;
  const char next = image[prefix.size()];
  // A ':' starts a tag only when no '/' follows it; otherwise it is a registry's port
  // ("localhost:5000/x" is another registry than "localhost").
  if (next == ':') return image.find('/', prefix.size()) == std::string_view::npos;
  return next == '/' || next == '@';
}

Result<bool> CheckContainerWorkdir(std::string_view path, const std::string& field) {
  std::string why = PathProblem(path);
  for (const char* system : {"/proc", "/sys", "/dev"}) {
    if (why.empty() && PathIsUnder(path, system)) why = std::string("may not be under ") + system;
  }
  if (why.empty()) return true;
  return Error{"working directory '" + std::string(path.substr(0, 80)) + "' " + why,
               ErrorCode::kInvalid, field};
}

Result<BindMount> ParseBindMount(std::string_view text, const std::string& field) {
  const auto fail = [&](const std::string& why) {
    return Error{"mount '" + std::string(text.substr(0, 80)) + "' " + why, ErrorCode::kInvalid,
                 field};
  };
  BindMount m;
  const std::size_t first = text.find(':');
  if (first == std::string_view::npos) return fail("must be SRC:DST[:ro]");
  const std::size_t second = text.find(':', first + 1);
  m.source = std::string(text.substr(0, first));
  m.target = std::string(text.substr(
      first + 1, second == std::string_view::npos ? std::string_view::npos : second - first - 1));
  if (second != std::string_view::npos) {
    const std::string_view mode = text.substr(second + 1);
    if (mode == "ro") {
      m.read_only = true;
    } else if (mode != "rw") {
      return fail("has mode '" + std::string(mode.substr(0, 20)) + "': ro or rw");
    }
  }
  if (const std::string why = PathProblem(m.source); !why.empty()) return fail("source " + why);
  if (const std::string why = PathProblem(m.target); !why.empty()) return fail("target " + why);
  if (m.target == "/") return fail("target may not be the container's root");
  for (const char* system : {"/proc", "/sys", "/dev"}) {
    if (PathIsUnder(m.target, system)) {
      return fail(std::string("target may not be under ") + system);
    }
  }
  // Where the NVIDIA container toolkit, set to accept visible devices as volume mounts, reads
  // which GPUs to give the container (a mount at .../all would give every GPU of the node); it
  // compares the start of the string, not path components.
  for (const char* toolkit :
       {"/var/run/nvidia-container-devices", "/run/nvidia-container-devices"}) {
    if (m.target.rfind(toolkit, 0) == 0) {
      return fail(std::string("target may not start with ") + toolkit);
    }
  }
  return m;
}

std::string BindMountText(const BindMount& m) {
  return m.source + ":" + m.target + (m.read_only ? ":ro" : "");
}

Result<bool> CheckImageReference(std::string_view image, const std::string& field) {
  const auto fail = [&](const std::string& why) {
    return Error{"image '" + std::string(image.substr(0, 80)) + "' " + why, ErrorCode::kInvalid,
                 field};
  };
  if (image.empty() || image.size() > 255) return fail("must be 1 to 255 characters");
  for (char c : image) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '/' || c == ':' || c == '@' || c == '-';
    if (!ok) return fail("may hold only letters, digits and . _ / : @ -");
  }
  if (image[0] == '-' || image[0] == '/') return fail("may not start with '-' or '/'");
  if (image.find("..") != std::string_view::npos || image.find("//") != std::string_view::npos) {
    return fail("may not hold '..' or '//'");
  }
  return true;
}

namespace {

// `error` with its field named first in the message ("mounts: ..."), as every API error reads.
Error Named(Error error) {
  if (!error.field.empty()) error.message = error.field + ": " + error.message;
  return error;
}

Result<bool> CheckAgainstPolicy(const ContainerSpec& spec, const ContainerPolicy& policy);

}  // namespace

Result<bool> CheckContainerAgainstPolicy(const ContainerSpec& spec, const ContainerPolicy& policy) {
  auto checked = CheckAgainstPolicy(spec, policy);
  if (!checked) return Named(checked.failure());
  return checked;
}

namespace {

Result<bool> CheckAgainstPolicy(const ContainerSpec& spec, const ContainerPolicy& policy) {
  if (spec.empty()) {
    if (!spec.mounts.empty()) {
      return Error{"mounts need an image (host jobs see the host's files)", ErrorCode::kInvalid,
                   "mounts"};
    }
    return true;
  }
  if (auto r = CheckImageReference(spec.image); !r) return r;
  if (policy.allowed_images.empty()) {
    return Error{"container jobs are not enabled here: the admin allows no images "
                 "(--container-allow-image)",
                 ErrorCode::kForbidden, "image"};
  }
  bool allowed = false;
  for (const std::string& prefix : policy.allowed_images) {
    allowed = allowed || ImageIsUnder(spec.image, prefix);
  }
  if (!allowed) {
    return Error{"image '" + spec.image + "' is not allowed here (allowed prefixes: " +
                     [&] {
                       std::string list;
                       for (const std::string& p : policy.allowed_images) {
                         list += (list.empty() ? "" : ", ") + p;
                       }
                       return list;
                     }() +
                     ")",
                 ErrorCode::kForbidden, "image"};
  }
  if (spec.mounts.size() > 64) {
    return Error{"at most 64 mounts", ErrorCode::kInvalid, "mounts"};
  }
  std::set<std::string> targets;
  for (const BindMount& m : spec.mounts) {
    // Re-checked here: a mount may come from a store or a request, not only ParseBindMount.
    if (auto r = ParseBindMount(BindMountText(m)); !r) return r.failure();
    if (!targets.insert(m.target).second) {
      return Error{"two mounts share the target " + m.target, ErrorCode::kInvalid, "mounts"};
    }
    bool under = false;
    for (const std::string& prefix : policy.allowed_mount_sources) {
      under = under || (!prefix.empty() && prefix[0] == '/' && PathIsUnder(m.source, prefix));
    }
    if (!under) {
      return Error{"mount source " + m.source +
                       " is not under a directory the admin allows (--container-allow-mount)",
                   ErrorCode::kForbidden, "mounts"};
    }
  }
  return true;
}

}  // namespace
}  // namespace gpufleet::core
