#include "sim/cluster_spec.h"

#include <gtest/gtest.h>

namespace gpufleet::sim {
namespace {

const core::GpuCatalog& Catalog() { return core::GpuCatalog::Builtin(); }

TEST(ClusterSpec, HeterogeneousGroups) {
  auto spec = ParseClusterToml(R"(
name = "lab"
[[nodes]]
count = 2
name = "big"
gpus = 8
gpu_model = "A100-80GB"
cpu_cores = 96
memory_gib = 1024
[[nodes]]
count = 3
gpus = 4
gpu_model = "T4"
)",
                               "lab.toml", Catalog());
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec.value().name, "lab");
  ASSERT_EQ(spec.value().nodes.size(), 5U);
  EXPECT_EQ(spec.value().nodes[0].name, "big-0");
  EXPECT_EQ(spec.value().nodes[0].cpu_milli, 96000);
  EXPECT_EQ(spec.value().nodes[0].memory_mib, 1024 * 1024);
  EXPECT_EQ(spec.value().nodes[0].model, *Catalog().Find("A100-80GB"));
  EXPECT_EQ(spec.value().nodes[4].name, "node-4");
  EXPECT_EQ(spec.value().nodes[4].num_gpus, 4);
  EXPECT_EQ(spec.value().nodes[4].cpu_milli, 32000) << "default: 8 cores per GPU";
}

TEST(ClusterSpec, ErrorsNameTheLineAndKey) {
  struct Case {
    const char* text;
    const char* expected;
  };
  for (const Case& c : {
           Case{"[[nodes]\ngpus = 2\n", "x.toml:1:9: malformed TOML"},
           Case{"[[nodes]]\ngpus = 2\ngpu_modle = \"T4\"\n", "x.toml:3: gpu_modle: unknown key"},
           Case{"[[nodes]]\ngpus = 2\ngpu_model = \"Z9\"\n", "unknown GPU model 'Z9'"},
           Case{"[[nodes]]\ngpus = 40\ngpu_model = \"T4\"\n", "gpus: 40 is out of range [0, 32]"},
           Case{"[[nodes]]\ngpus = \"8\"\ngpu_model = \"T4\"\n", "gpus: expected an integer"},
           Case{"[[nodes]]\ngpus = 2\n", "missing key 'gpu_model'"},
           Case{"[[nodes]]\ncount = 0\ngpus = 2\ngpu_model = \"T4\"\n", "count: 0 is out of range"},
           Case{"name = \"x\"\n", "no [[nodes]] tables"},
           Case{"size = 3\n[[nodes]]\ngpus = 1\ngpu_model = \"T4\"\n", "size: unknown key"},
           // Found by fuzz/cluster_spec_fuzz: this reached __builtin_unreachable() in toml++ 3.3.
           Case{"[[nodes]]\ngpus = 1\nname = \xc5\x9a\n", "x.toml:3:8: non-ASCII character"},
           Case{"# caf\xc3\xa9\n", "x.toml:1:6: non-ASCII character"},
           // Found by fuzz/cluster_spec_fuzz: toml++ cast 6e40 to int64_t (UB) for a float.
           Case{"[[nodes]]\ngpus = 1\ngpu_model = \"T4\"\ncpu_cores = 6e40\n",
                "x.toml:4: cpu_cores: expected an integer"},
           Case{"[[nodes]]\ngpus = 2.0\ngpu_model = \"T4\"\n", "gpus: expected an integer"},
       }) {
    auto spec = ParseClusterToml(c.text, "x.toml", Catalog());
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_NE(spec.error().find(c.expected), std::string::npos) << spec.error();
  }
}

TEST(ClusterSpec, ResolvesNamesAndFiles) {
  EXPECT_TRUE(ResolveCluster("philly-512", Catalog()).ok());
  auto missing = ResolveCluster("/nonexistent/cluster.toml", Catalog());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("cannot read"), std::string::npos);
  EXPECT_FALSE(ResolveCluster("philly-1024", Catalog()).ok());
}

}  // namespace
}  // namespace gpufleet::sim
