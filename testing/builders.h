#pragma once
// Test helpers: terse builders for `NodeSpec`, `JobSpec` and small clusters, scratch files, and
// the location of the shared traces. Models are looked up in the built-in GPU catalog by name.
// The namespace is `gpufleet::test`, not `testing`, so that GoogleTest's `::testing` never
// becomes ambiguous inside `gpufleet`.
//
//   core::ClusterSnapshot c = SmallCluster({Node("a").Cpu(8000).Gpus(2, "T4"), Node("b")});
//   c.Allocate(0, Job().Cpu(1000).Share(300), 0b01);

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/node.h"

namespace gpufleet::test {

// The id of a built-in catalog model; a test bug (abort) when the name is unknown.
core::ModelId Model(std::string_view name);
// The set a '|'-separated spec names in the built-in catalog ("" = any model).
core::ModelSet Models(std::string_view spec);

// A node with 32 cores, 128 GiB, and no GPUs until `Gpus` says so (default model G2).
class Node {
 public:
  explicit Node(std::string name = "node");
  Node& Cpu(int64_t milli);
  Node& Memory(int64_t mib);
  Node& Gpus(int count, std::string_view model = "G2");
  core::NodeSpec Build() const { return spec_; }
  operator core::NodeSpec() const { return spec_; }  // NOLINT: implicit for brevity in tests

 private:
  core::NodeSpec spec_;
};

// A job asking 1 core and 1 GiB, no GPU, any model, until told otherwise.
class Job {
 public:
  explicit Job(std::string name = "job");
  Job& Cpu(int64_t milli);
  Job& Memory(int64_t mib);
  Job& Gpus(int count);   // whole GPUs
  Job& Share(int milli);  // one GPU, `milli` of it
  Job& Models(std::string_view spec);
  core::JobSpec Build() const { return spec_; }
  operator core::JobSpec() const { return spec_; }  // NOLINT: implicit for brevity in tests

 private:
  core::JobSpec spec_;
};

core::ClusterSnapshot SmallCluster(const std::vector<core::NodeSpec>& nodes);
// `count` copies of `node`, named NAME-0, NAME-1, ...
std::vector<core::NodeSpec> Replicate(const core::NodeSpec& node, int count);

// A file in the system temporary folder with the given contents, removed when this goes away.
// Names are unique per process and call, so parallel test processes do not collide.
class TempFile {
 public:
  TempFile(std::string_view stem, std::string_view contents);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// `../shared/traces` next to the source tree, or nothing when it is absent.
std::optional<std::filesystem::path> SharedTracesDir();
// `../shared/traces/alibaba-openb-2023` when it holds the node list, or nothing.
std::optional<std::filesystem::path> OpenbTracesDir();
// The reason to give GTEST_SKIP() when the traces are absent, naming the path looked at.
std::string MissingTracesMessage();

}  // namespace gpufleet::test
