#include "testing/builders.h"

#include <unistd.h>

#include <atomic>
#include <fstream>

#include "core/check.h"
#include "core/gpu_catalog.h"

namespace gpufleet::test {

namespace fs = std::filesystem;

core::ModelId Model(std::string_view name) {
  auto id = core::GpuCatalog::Builtin().Find(name);
  GPUFLEET_CHECK(id.has_value());
  return *id;
}

core::ModelSet Models(std::string_view spec) {
  auto set = core::GpuCatalog::Builtin().ParseSpec(spec);
  GPUFLEET_CHECK(set.ok());
  return set.value();
}

Node::Node(std::string name) {
  spec_.name = std::move(name);
  spec_.cpu_milli = 32000;
  spec_.memory_mib = 131072;
  spec_.model = Model("G2");
}
Node& Node::Cpu(int64_t milli) {
  spec_.cpu_milli = milli;
  return *this;
}
Node& Node::Memory(int64_t mib) {
  spec_.memory_mib = mib;
  return *this;
}
Node& Node::Gpus(int count, std::string_view model) {
  spec_.num_gpus = count;
  spec_.model = Model(model);
  return *this;
}

Job::Job(std::string name) {
  spec_.name = std::move(name);
  spec_.cpu_milli = 1000;
  spec_.memory_mib = 1024;
}
Job& Job::Cpu(int64_t milli) {
  spec_.cpu_milli = milli;
  return *this;
}
Job& Job::Memory(int64_t mib) {
  spec_.memory_mib = mib;
  return *this;
}
Job& Job::Gpus(int count) {
  spec_.num_gpu = count;
  spec_.gpu_milli = count == 0 ? 0 : core::kGpuMilli;
  return *this;
}
Job& Job::Share(int milli) {
  spec_.num_gpu = 1;
  spec_.gpu_milli = milli;
  return *this;
}
Job& Job::Models(std::string_view spec) {
  spec_.gpu_models = test::Models(spec);
  return *this;
}

core::ClusterSnapshot SmallCluster(const std::vector<core::NodeSpec>& nodes) {
  return core::ClusterSnapshot(nodes);
}

std::vector<core::NodeSpec> Replicate(const core::NodeSpec& node, int count) {
  std::vector<core::NodeSpec> out(count, node);
  for (int i = 0; i < count; ++i) out[i].name = node.name + "-" + std::to_string(i);
  return out;
}

TempFile::TempFile(std::string_view stem, std::string_view contents) {
  static std::atomic<int> counter{0};
  path_ = (fs::temp_directory_path() / ("gpufleet-test-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(counter++) + "-" + std::string(stem)))
              .string();
  std::ofstream out(path_, std::ios::binary);
  out << contents;
  out.close();
  GPUFLEET_CHECK(static_cast<bool>(out));
}

TempFile::~TempFile() {
  std::error_code ec;
  fs::remove(path_, ec);
}

std::optional<fs::path> SharedTracesDir() {
  const fs::path dir = fs::path(GPUFLEET_SOURCE_DIR) / ".." / "shared" / "traces";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  return dir.lexically_normal();
}

std::optional<fs::path> OpenbTracesDir() {
  auto shared = SharedTracesDir();
  if (!shared) return std::nullopt;
  const fs::path dir = *shared / "alibaba-openb-2023";
  std::error_code ec;
  if (!fs::exists(dir / "openb_node_list_gpu_node.csv", ec)) return std::nullopt;
  return dir;
}

std::string MissingTracesMessage() {
  const fs::path want =
      (fs::path(GPUFLEET_SOURCE_DIR) / ".." / "shared" / "traces").lexically_normal();
  return "../shared/traces not found: " + (want / "alibaba-openb-2023").string() +
         " is absent, so the comparison with the published openb results is skipped";
}

}  // namespace gpufleet::test
