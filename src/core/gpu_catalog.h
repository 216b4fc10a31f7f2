#pragma once
// The GPU model catalog: every GPU model gpufleet knows, with memory, relative training speed and
// an hourly price. The built-in catalog is compiled from data/gpu_catalog.csv; `Parse` reads the
// same format from text, so sites can load their own.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpufleet::core {

using ModelId = uint8_t;
inline constexpr int kMaxModels = 64;

// A set of GPU models as a bit mask over catalog ids. The empty spec "any model" is `All()`.
class ModelSet {
 public:
  constexpr ModelSet() = default;
  static constexpr ModelSet All() { return ModelSet(~uint64_t{0}); }
  static constexpr ModelSet Of(ModelId id) { return ModelSet(uint64_t{1} << id); }
  constexpr bool Contains(ModelId id) const { return (bits_ >> id) & 1u; }
  constexpr void Add(ModelId id) { bits_ |= uint64_t{1} << id; }
  constexpr bool IsAll() const { return bits_ == ~uint64_t{0}; }
  constexpr uint64_t bits() const { return bits_; }
  constexpr bool operator==(const ModelSet&) const = default;

 private:
  constexpr explicit ModelSet(uint64_t bits) : bits_(bits) {}
  uint64_t bits_ = 0;
};

struct GpuModel {
  std::string name;                  // canonical name, the first of the aliases
  std::vector<std::string> aliases;  // every accepted name, canonical first
  double memory_gib = 0;
  double relative_speed = 1.0;  // training throughput relative to V100
  double hourly_price_usd = 0;
};

class GpuCatalog {
 public:
  // The catalog compiled into gpufleet from data/gpu_catalog.csv.
  static const GpuCatalog& Builtin();
  // Parses the CSV format of data/gpu_catalog.csv; errors name the line.
  static Result<GpuCatalog> Parse(std::string_view text);

  std::optional<ModelId> Find(std::string_view name) const;
  const GpuModel& model(ModelId id) const { return models_.at(id); }
  int size() const { return static_cast<int>(models_.size()); }
  // Parses a '|'-separated list of model names; empty text means any model.
  Result<ModelSet> ParseSpec(std::string_view spec) const;
  // The canonical names of `set`, joined with '|'; "" for any model.
  std::string FormatSpec(ModelSet set) const;

 private:
  std::vector<GpuModel> models_;
};

}  // namespace gpufleet::core
