#include "controller/api_common.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "store/store.h"

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

// Carried from a review: a job's view listed every event it ever had (a job requeued for months
// has a history too long for one answer). Pages, newest first, each oldest first.
TEST(ApiCommonTest, AJobsEventsComeInPagesAndBadPageParametersAreRefusedNamingThem) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("gpufleet-api-common-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto opened = store::OpenSqliteStore(dir.string());
  ASSERT_TRUE(opened.ok()) << opened.error();
  store::Store& store = *opened.value();
  for (int k = 0; k < 5; ++k) ASSERT_TRUE(store.Audit(7, "ada", "note", std::to_string(k), k).ok());
  httplib::Request req;
  httplib::Response res;
  req.params.emplace("events_limit", "2");
  auto asked =
      ParseEventPage(req, res, "events_limit", "events_before", "events_after", 1000, 10000);
  ASSERT_TRUE(asked);
  bool older = false;
  auto page = ReadEventPage(store, 7, *asked, older);
  ASSERT_TRUE(page.ok()) << page.error();
  ASSERT_EQ(page.value().size(), 2U);
  EXPECT_EQ(page.value()[0].detail, "3");
  EXPECT_EQ(page.value()[1].detail, "4");
  EXPECT_TRUE(older);
  asked->before = page.value()[0].id;
  asked->limit = 3;
  page = ReadEventPage(store, 7, *asked, older);
  ASSERT_TRUE(page.ok()) << page.error();
  ASSERT_EQ(page.value().size(), 3U);
  EXPECT_EQ(page.value()[0].detail, "0");
  EXPECT_FALSE(older) << "the first page reached";
  for (const char* bad : {"0", "10001", "-1", "x"}) {
    httplib::Request wrong;
    httplib::Response refused;
    wrong.params.emplace("events_limit", bad);
    EXPECT_FALSE(ParseEventPage(wrong, refused, "events_limit", "events_before", "events_after",
                                1000, 10000));
    EXPECT_EQ(refused.status, 400) << bad;
    EXPECT_NE(refused.body.find("\"field\":\"events_limit\""), std::string::npos) << refused.body;
  }
  httplib::Request wrong;
  httplib::Response refused;
  wrong.params.emplace("events_before", "0");
  EXPECT_FALSE(
      ParseEventPage(wrong, refused, "events_limit", "events_before", "events_after", 1000, 10000));
  EXPECT_NE(refused.body.find("events_before"), std::string::npos) << refused.body;
  // Forward from a reader's last event: the next ones, oldest first, and whether more follow.
  const int64_t first_id = page.value()[0].id;
  httplib::Request forward;
  httplib::Response answered;
  forward.params.emplace("events_limit", "2");
  forward.params.emplace("events_after", std::to_string(first_id));
  auto after = ParseEventPage(forward, answered, "events_limit", "events_before", "events_after",
                              1000, 10000);
  ASSERT_TRUE(after);
  bool newer = false;
  page = ReadEventPage(store, 7, *after, newer);
  ASSERT_TRUE(page.ok()) << page.error();
  ASSERT_EQ(page.value().size(), 2U);
  EXPECT_EQ(page.value()[0].detail, "1");
  EXPECT_EQ(page.value()[1].detail, "2");
  EXPECT_TRUE(newer) << "3 and 4 follow";
  after->after = page.value()[1].id;
  page = ReadEventPage(store, 7, *after, newer);
  ASSERT_TRUE(page.ok()) << page.error();
  ASSERT_EQ(page.value().size(), 2U);
  EXPECT_EQ(page.value()[1].detail, "4");
  EXPECT_FALSE(newer) << "the latest reached";
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"events_after", "-1"}, {"events_after", "x"}}) {
    httplib::Request bad;
    httplib::Response no;
    bad.params.emplace(key, value);
    EXPECT_FALSE(
        ParseEventPage(bad, no, "events_limit", "events_before", "events_after", 1000, 10000));
    EXPECT_NE(no.body.find("\"field\":\"events_after\""), std::string::npos) << no.body;
  }
  httplib::Request both;
  httplib::Response no;
  both.params.emplace("events_before", "5");
  both.params.emplace("events_after", "2");
  EXPECT_FALSE(
      ParseEventPage(both, no, "events_limit", "events_before", "events_after", 1000, 10000));
  EXPECT_EQ(no.status, 400);
  EXPECT_NE(no.body.find("opposite directions"), std::string::npos) << no.body;
  opened.value().reset();
  std::filesystem::remove_all(dir);
}

// Found by a review: /v1/nodes gave every user each node's whole image list, images other users
// pulled from private registries included, while /v1/jobs hides others' jobs' images.
TEST(ImagesShownToUsers, OnlyThoseAJobMayName) {
  core::ContainerPolicy policy;
  policy.allowed_images = {"localhost/", "nvcr.io/nvidia"};
  const std::vector<std::string> held = {"localhost/train:1", "registry.corp/team-x/secret:2",
                                         "nvcr.io/nvidia/pytorch:24", "nvcr.io/nvidia-evil/x:1"};
  EXPECT_EQ(ImagesShownToUsers(held, policy),
            (std::vector<std::string>{"localhost/train:1", "nvcr.io/nvidia/pytorch:24"}));
  EXPECT_TRUE(ImagesShownToUsers(held, core::ContainerPolicy{}).empty())
      << "no container jobs allowed: none to name";
}

}  // namespace
}  // namespace gpufleet::controller::api
