#include "cloud/instance_list.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>

namespace gpufleet::cloud {
namespace {

using nlohmann::json;

// Deeper documents are refused before parsing (a reply is two levels deep; a deep one could
// exhaust the stack of whoever copies it). Brackets inside strings do not count.
constexpr int kMaxDepth = 8;
// 2^40 s is about 35,000 years: room for any real date, none for an overflow when added to.
constexpr int64_t kMaxUnixSeconds = int64_t{1} << 40;

bool TooDeep(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

core::Result<json> ParseJson(std::string_view text) {
  if (TooDeep(text)) {
    return core::Error{"malformed JSON: nested deeper than " + std::to_string(kMaxDepth)};
  }
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return core::Error{std::string("malformed JSON: ") + e.what()};
  }
}

core::Error FieldError(const std::string& field, const std::string& why) {
  return core::Error{field + ": " + why, core::ErrorCode::kInvalid, field};
}

// `object[key]` as a valid name; `field` names it in errors.
core::Result<std::string> NameField(const json& object, const char* key, const std::string& field) {
  const auto it = object.find(key);
  if (it == object.end()) return FieldError(field, "missing");
  if (!it->is_string()) return FieldError(field, "must be a string");
  const std::string& value = it->get_ref<const std::string&>();
  if (!ValidInstanceName(value)) {
    return FieldError(field, "must be 1 to 63 of a-z, 0-9 and '-', not starting with '-'");
  }
  return value;
}

core::Result<Instance> ParseInstance(const json& item, const std::string& at) {
  if (!item.is_object()) return FieldError(at, "must be an object");
  for (const auto& [key, value] : item.items()) {
    if (key != "name" && key != "group" && key != "spot" && key != "state" &&
        key != "interruption_at") {
      return FieldError(at + "." + key,
                        "unknown key (expected name, group, spot, state, interruption_at)");
    }
  }
  Instance instance;
  auto name = NameField(item, "name", at + ".name");
  if (!name) return name.failure();
  instance.name = std::move(name).value();
  auto group = NameField(item, "group", at + ".group");
  if (!group) return group.failure();
  instance.group = std::move(group).value();

  const auto spot = item.find("spot");
  if (spot == item.end()) return FieldError(at + ".spot", "missing");
  if (!spot->is_boolean()) return FieldError(at + ".spot", "must be true or false");
  instance.spot = spot->get<bool>();

  const auto state = item.find("state");
  if (state == item.end()) return FieldError(at + ".state", "missing");
  if (!state->is_string()) return FieldError(at + ".state", "must be a string");
  instance.state = state->get<std::string>();
  if (instance.state != "pending" && instance.state != "running" && instance.state != "stopping") {
    return FieldError(at + ".state", "must be \"pending\", \"running\" or \"stopping\"");
  }

  const auto when = item.find("interruption_at");
  if (when != item.end() && !when->is_null()) {
    const std::string field = at + ".interruption_at";
    if (when->is_number_unsigned()) {
      const uint64_t v = when->get<uint64_t>();
      if (v > static_cast<uint64_t>(kMaxUnixSeconds)) return FieldError(field, "out of range");
      instance.interruption_at_s = static_cast<int64_t>(v);
    } else if (when->is_number_integer()) {
      return FieldError(field, "must not be negative");
    } else {
      return FieldError(field, "must be an integer (Unix seconds)");
    }
  }
  return instance;
}

}  // namespace

bool ValidInstanceName(std::string_view name) {
  if (name.empty() || name.size() > 63 || name.front() == '-') return false;
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

core::Result<std::vector<Instance>> ParseInstanceList(std::string_view text) {
  auto parsed = ParseJson(text);
  if (!parsed) return parsed.failure();
  const json& doc = parsed.value();
  if (!doc.is_object()) return FieldError("instances", "the reply must be a JSON object");
  for (const auto& [key, value] : doc.items()) {
    if (key != "instances") return FieldError(key, "unknown key (expected instances)");
  }
  const auto list = doc.find("instances");
  if (list == doc.end()) return FieldError("instances", "missing");
  if (!list->is_array()) return FieldError("instances", "must be an array");
  if (list->size() > kMaxInstances) {
    return FieldError("instances", "more than " + std::to_string(kMaxInstances) + " instances");
  }
  std::vector<Instance> instances;
  instances.reserve(list->size());
  std::set<std::string> names;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string at = "instances[" + std::to_string(i) + "]";
    auto instance = ParseInstance((*list)[i], at);
    if (!instance) return instance.failure();
    if (!names.insert(instance.value().name).second) {
      return FieldError(at + ".name", "'" + instance.value().name + "' is listed twice");
    }
    instances.push_back(std::move(instance).value());
  }
  return instances;
}

core::Result<bool> CheckCreateReply(std::string_view reply, const std::string& name) {
  if (reply.find_first_not_of(" \t\r\n") == std::string_view::npos) return true;
  auto parsed = ParseJson(reply);
  if (!parsed) return parsed.failure();
  const json& doc = parsed.value();
  if (!doc.is_object()) return FieldError("name", "the reply must be empty or a JSON object");
  for (const auto& [key, value] : doc.items()) {
    if (key != "name") return FieldError(key, "unknown key (expected name)");
  }
  auto replied = NameField(doc, "name", "name");
  if (!replied) return replied.failure();
  if (replied.value() != name) {
    return FieldError("name", "the script created '" + replied.value() + "', not '" + name + "'");
  }
  return true;
}

}  // namespace gpufleet::cloud
