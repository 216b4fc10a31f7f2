#include "agent/top_view.h"

#include <gtest/gtest.h>

namespace gpufleet::agent {
namespace {

gpu::GpuSample Gpu(int index, unsigned util) {
  gpu::GpuSample s;
  s.index = index;
  s.name = "NVIDIA A100-SXM4-80GB";
  s.pci_bus_id = "00000000:07:00.0";
  s.gpu_util_pct.Set(util);
  s.fb_total_bytes.Set(80ULL << 30);
  s.fb_used_bytes.Set(20ULL << 30);
  s.temperature_c.Set(55);
  s.power_mw.Set(250'000);
  s.power_limit_mw.Set(400'000);
  s.processes.Set({});
  return s;
}

gpu::GpuProcess Process(unsigned pid, const std::string& user, unsigned long long mib,
                        unsigned sm) {
  gpu::GpuProcess p;
  p.pid = pid;
  p.user = user;
  p.command = "python train.py";
  p.used_memory_bytes.Set(mib << 20);
  p.sm_util_pct.Set(sm);
  return p;
}

// The display width of a line: every UTF-8 lead byte or ASCII byte counts once.
int Columns(const std::string& line) {
  int n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

TopModel Model() {
  TopModel model;
  model.host = {"node-a", "nvml", "550.54", ""};
  model.samples = {Gpu(0, 50), Gpu(1, 100)};
  model.samples[0].processes.value = {Process(100, "alice", 4000, 10),
                                      Process(200, "bob", 9000, 80)};
  model.samples[1].processes.value = {Process(300, "carol", 100, 95)};
  model.util_history = {{0, 25, 50, 75, 100}, {100, 100}};
  return model;
}

std::size_t Find(const std::vector<std::string>& lines, const std::string& text) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(text) != std::string::npos) return i;
  }
  return std::string::npos;
}

TEST(TopView, ShowsGpusBarsAndProcesses) {
  const auto lines = RenderTop(Model(), 100, 0);
  EXPECT_NE(lines[0].find("NVML driver 550.54"), std::string::npos);
  EXPECT_NE(Find(lines, "NVIDIA A100-SXM4-80GB"), std::string::npos);
  EXPECT_NE(Find(lines, " 50%"), std::string::npos);
  EXPECT_NE(Find(lines, "20.0/80.0 GiB"), std::string::npos);
  EXPECT_NE(Find(lines, "250W / 400W"), std::string::npos);
  EXPECT_NE(Find(lines, "\u2581\u2583\u2585\u2586\u2588"), std::string::npos) << "sparkline";
  // Sorted by GPU memory: bob (9000) before alice (4000) before carol (100).
  EXPECT_LT(Find(lines, "bob"), Find(lines, "alice"));
  EXPECT_LT(Find(lines, "alice"), Find(lines, "carol"));
}

TEST(TopView, SortKeysReorderProcesses) {
  TopModel model = Model();
  ASSERT_TRUE(SortForKey('s', model.sort));
  auto lines = RenderTop(model, 100, 0);
  EXPECT_LT(Find(lines, "carol"), Find(lines, "bob"));
  ASSERT_TRUE(SortForKey('u', model.sort));
  lines = RenderTop(model, 100, 0);
  EXPECT_LT(Find(lines, "alice"), Find(lines, "bob"));
  ProcessSort unchanged = ProcessSort::kPid;
  EXPECT_FALSE(SortForKey('x', unchanged));
  EXPECT_EQ(unchanged, ProcessSort::kPid);
}

TEST(TopView, FitsTheTerminal) {
  for (int width : {40, 80, 200}) {
    for (const std::string& line : RenderTop(Model(), width, 0)) {
      EXPECT_LE(Columns(line), width) << line;
    }
  }
  // Too short for every process: the rest is summarized in the last line.
  const auto lines = RenderTop(Model(), 100, 10);
  ASSERT_EQ(lines.size(), 10U);
  EXPECT_NE(lines.back().find("more processes"), std::string::npos);
}

TEST(TopView, SimulatedLostAndUnhealthyAreSaid) {
  TopModel model = Model();
  model.host.backend = "simulated";
  model.host.notice = "no NVIDIA driver";
  model.samples[1].lost = true;
  model.samples[1].health = {false, {"GPU is lost"}};
  const auto lines = RenderTop(model, 120, 0);
  EXPECT_NE(lines[0].find("SIMULATED"), std::string::npos);
  EXPECT_NE(Find(lines, "no NVIDIA driver"), std::string::npos);
  EXPECT_NE(Find(lines, "LOST"), std::string::npos);
  EXPECT_NE(Find(lines, "UNHEALTHY: GPU is lost"), std::string::npos);
}

}  // namespace
}  // namespace gpufleet::agent
