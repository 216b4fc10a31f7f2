#include "controller/api_common.h"

#include <gtest/gtest.h>

namespace gpufleet::controller::api {
namespace {

// A node's samples as agents send them: GPUs, each with its processes. Before, GET /v1/gpus
// passed every process through to every user, command line (secrets included) and job id too.
TEST(ApiCommonTest, AUserSeesOthersGpuProcessesWithoutCommandAccountOrJob) {
  json samples = json::parse(R"({"gpus":[{"index":0,"processes":[
      {"pid":31003,"uid":65534,"user":"nobody","command":"sh -c train --hf-token=SECRET",
       "job":"2","gpu_memory_mib":100,"sm_util_pct":50},
      {"pid":31004,"uid":1000,"user":"bob","command":"python mine.py","job":"7",
       "gpu_memory_mib":200,"sm_util_pct":10},
      {"pid":31005,"uid":0,"user":"root","command":"Xorg","job":"","gpu_memory_mib":5}]}]})");
  HideOthersProcesses(samples, {"7"});
  const json& p = samples["gpus"][0]["processes"];
  for (const char* field : {"command", "user", "uid", "job"}) {
    EXPECT_TRUE(p[0][field].is_null()) << field;
    EXPECT_TRUE(p[2][field].is_null()) << field;
  }
  EXPECT_EQ(p[0]["pid"], 31003);
  EXPECT_EQ(p[0]["gpu_memory_mib"], 100);
  EXPECT_EQ(p[0]["sm_util_pct"], 50);
  EXPECT_EQ(p[1]["command"], "python mine.py");  // the caller's own job, whole
  EXPECT_EQ(p[1]["job"], "7");
  EXPECT_EQ(samples.dump().find("SECRET"), std::string::npos);
}

}  // namespace
}  // namespace gpufleet::controller::api
