#include "controller/submit_request.h"

#include <gtest/gtest.h>

#include <string>

namespace gpufleet::controller {
namespace {

// A submit body with `n` tiny strings in its argv ("argv") or env ("env").
std::string ManyStrings(int n, const std::string& where) {
  std::string body = where == "argv" ? R"({"argv":["x")" : R"({"argv":["x"],"env":{)";
  for (int k = 0; k < n; ++k) {
    if (where == "argv") {
      body += R"(,"")";
    } else {
      body += (k ? "," : "") + std::string("\"V") + std::to_string(k) + "\":\"\"";
    }
  }
  return body + (where == "argv" ? "]}" : "}}");
}

// Table of bodies that must be refused, each with the field the error must name. Rows marked
// "finding 10" were accepted (and stored wrong, or hit undefined behaviour) before.
TEST(SubmitRequestTest, RefusesBadFieldsNamingThem) {
  struct Row {
    std::string body;
    std::string field;
  };
  const Row rows[] = {
      {R"({"argv":["x"],"nodes":2147483648})", "nodes"},  // finding 10: stored negative
      {R"({"argv":["x"],"nodes":100000})", "nodes"},      // finding 9: absurd gang
      {R"({"argv":["x"],"priority":18446744073709551615})", "priority"},  // finding 10: -1
      {R"({"argv":["x"],"priority":-9223372036854775808})", "priority"},  // finding 10: abs() UB
      {R"({"argv":["x"],"priority":1.5})", "priority"},
      {R"({"argv":["x"],"gpus":1e300})", "gpus"},
      {R"({"argv":["x"],"gpus":"2"})", "gpus"},
      {R"({"argv":["x"],"gpus":4,"min_gpus":4})", "min_gpus"},  // elastic: fewest below most
      {R"({"argv":["x"],"gpus":4,"min_gpus":0})", "min_gpus"},
      {R"({"argv":["x"],"gpus":4,"min_gpus":-1})", "min_gpus"},
      {R"({"argv":["x"],"gpus":4,"min_gpus":"1"})", "min_gpus"},
      {R"({"argv":["x"],"gpus":4,"min_gpus":1,"nodes":2})", "min_gpus"},
      {R"({"argv":["x"],"gpus":1,"gpu_share":0.5,"min_gpus":1})", "min_gpus"},
      {R"({"argv":["x"],"time_limit_s":1e300})", "time_limit_s"},
      {R"({"argv":["x"],"cpus":-1})", "cpus"},
      // Below the kernel's smallest CPU quota: the cgroup refused it and the job ran unlimited.
      {R"({"argv":["x"],"cpus":0.001})", "cpus"},
      {R"({"argv":["x"],"cpus":0.0099})", "cpus"},
      // gpufleet's own variables, and names no shell can read.
      {R"({"argv":["x"],"env":{"GPUFLEET_NNODES":"8"}})", "env"},
      {R"({"argv":["x"],"env":{"LOCAL_RANK":"7"}})", "env"},
      {R"({"argv":["x"],"env":{"NVIDIA_VISIBLE_DEVICES":"all"}})", "env"},
      {R"({"argv":["x"],"env":{"CUDA_VISIBLE_DEVICES":"0,1,2,3"}})", "env"},
      {R"({"argv":["x"],"env":{"bad name!":"x"}})", "env"},
      {R"({"argv":["x"],"env":{"1X":"x"}})", "env"},
      {R"({"argv":["x"],"env":{"A\nB":"x"}})", "env"},
      {R"({"argv":["x"],"memory_mib":0})", "memory_mib"},
      {R"({"argv":["a\u0000b"]})", "argv"},                          // finding 10: NUL truncated
      {R"({"argv":["x"],"workdir":"/tmp\u0000/evil"})", "workdir"},  // finding 10: NUL truncated
      {R"({"argv":["x"],"workdir":"relative"})", "workdir"},
      {R"({"argv":["x"],"env":{"A=B":"c"}})", "env"},
      {R"({"argv":["x"],"env":{"A":"c\u0000d"}})", "env"},
      {R"({"argv":["x"],"name":"n\u0000"})", "name"},
      {R"({"argv":[]})", "argv"},
      {R"({"argv":[""]})", "argv"},
      {R"({"argv":"ls"})", "argv"},
      {R"({"argv":["x"],"gpu_share":0})", "gpu_share"},
      {R"({"argv":["x"],"gpus":2,"gpu_share":0.5})", "gpu_share"},
      {R"({"argv":["x"],"queue":""})", "queue"},
      {R"({"argv":["x"],"restartable":1})", "restartable"},
      {R"({"argv":["x"],"gpu_type":"no-such-gpu"})", "gpu_type"},
      {R"({"argv":["x"],"bogus":1})", "bogus"},
      {R"([1,2])", "body"},
      {R"({"argv":["x"])", "body"},
      {std::string(100, '[') + std::string(100, ']'), "body"},  // finding 6: depth
      // Accepted, then failed at exec (E2BIG) before: one string of 128 KiB or more.
      {R"({"argv":["x",")" + std::string(128 * 1024, 'a') + R"("]})", "argv"},
      {R"({"argv":["x"],"env":{"A":")" + std::string(128 * 1024 - 2, 'a') + R"("}})", "env"},
      // Found by a review: counted by bytes alone, 300,000 empty arguments (or one-letter
      // variables) fit a 1 MiB body and took about 10 MB of the controller's memory per job.
      {ManyStrings(30000, "argv"), "argv"},
      {ManyStrings(30000, "env"), "env"},
      // Containers (issue 17): the image's and the mounts' syntax; the admin's policy is the
      // controller's (Controller::Unrunnable).
      {R"({"argv":["x"],"image":"-v"})", "image"},
      {R"({"argv":["x"],"image":"a b"})", "image"},
      {R"({"argv":["x"],"image":7})", "image"},
      {R"({"argv":["x"],"image":"i","mounts":"/a:/b"})", "mounts"},
      {R"({"argv":["x"],"image":"i","mounts":["/a/../etc:/b"]})", "mounts"},
      {R"({"argv":["x"],"image":"i","mounts":["/a:/proc/x"]})", "mounts"},
      {R"({"argv":["x"],"image":"i","mounts":[1]})", "mounts"},
      {R"({"argv":["x"],"mounts":["/a:/b"]})", "mounts"},
      {R"({"argv":["x"],"image":"i","env":{"A":"two\nlines"}})", "env"},
      {R"({"argv":["x"],"image":"i","env":{"#A":"b"}})", "env"},
      {R"({"argv":["x"],"image":"i","env":{"A":"b\r"}})", "env"},
      {R"({"argv":["x"],"image":"i","workdir":"/proc/self/fd/3"})", "workdir"},
      {R"({"argv":["x"],"image":"i","workdir":"/a/../b"})", "workdir"},
  };
  for (const Row& row : rows) {
    auto job = ParseSubmitRequest(row.body);
    ASSERT_FALSE(job.ok()) << row.body;
    EXPECT_EQ(job.failure().field, row.field) << row.body << " -> " << job.error();
    EXPECT_EQ(job.failure().code, core::ErrorCode::kInvalid);
  }
}

TEST(SubmitRequestTest, TakesManyShortStringsWithinTheExecBudget) {
  // 20,000 arguments of 9 bytes each (their NUL and pointer) fit 256 KiB; so do 10,000
  // variables of about 16.
  auto argv = ParseSubmitRequest(ManyStrings(20000, "argv"));
  ASSERT_TRUE(argv.ok()) << argv.error();
  EXPECT_EQ(argv.value().argv.size(), 20001U);
  auto env = ParseSubmitRequest(ManyStrings(10000, "env"));
  ASSERT_TRUE(env.ok()) << env.error();
  EXPECT_EQ(env.value().env.size(), 10000U);
}

TEST(SubmitRequestTest, TakesAnElasticJobsRange) {
  auto job = ParseSubmitRequest(R"({"argv":["x"],"gpus":8,"min_gpus":2})");
  ASSERT_TRUE(job.ok()) << job.error();
  EXPECT_EQ(job.value().gpus, 8);
  EXPECT_EQ(job.value().min_gpus, 2);
  auto rigid = ParseSubmitRequest(R"({"argv":["x"],"gpus":8})");
  ASSERT_TRUE(rigid.ok());
  EXPECT_EQ(rigid.value().min_gpus, 0);
}

TEST(SubmitRequestTest, TakesAContainersImageAndMounts) {
  auto job = ParseSubmitRequest(
      R"({"argv":["python","train.py"],"image":"localhost/train:1",)"
      R"("mounts":["/data/set:/data:ro","/scratch:/out"]})");
  ASSERT_TRUE(job.ok()) << job.error();
  EXPECT_EQ(job.value().container.image, "localhost/train:1");
  ASSERT_EQ(job.value().container.mounts.size(), 2U);
  EXPECT_EQ(job.value().container.mounts[0], (core::BindMount{"/data/set", "/data", true}));
  EXPECT_EQ(job.value().container.mounts[1], (core::BindMount{"/scratch", "/out", false}));
  auto host = ParseSubmitRequest(R"({"argv":["x"],"env":{"A":"two\nlines"}})");
  EXPECT_TRUE(host.ok()) << "a host job may have a newline in a value";
  EXPECT_TRUE(host.value().container.empty());
}

TEST(SubmitRequestTest, AcceptsAFullRequest) {
  auto job = ParseSubmitRequest(
      R"({"argv":["python","train.py"],"name":"t","gpus":2,"nodes":2,"priority":-5,)"
      R"("queue":"team","env":{"A":"1"},"workdir":"/w","client_token":"k","restartable":true,)"
      R"("cpus":2.5,"memory_mib":1024,"time_limit_s":60})");
  ASSERT_TRUE(job.ok()) << job.error();
  const store::JobRecord& j = job.value();
  EXPECT_EQ(j.argv.size(), 2U);
  EXPECT_EQ(j.gpus, 2);
  EXPECT_EQ(j.nodes, 2);
  EXPECT_EQ(j.priority, -5);
  EXPECT_EQ(j.cpu_milli, 2500);
  EXPECT_EQ(j.memory_mib, 1024);
  EXPECT_EQ(j.time_limit_s, 60);
  EXPECT_TRUE(j.restartable);
  EXPECT_EQ(j.env.at(0).first, "A");
}

TEST(SubmitRequestTest, TakesTheLongestStringsTheKernelExecs) {
  auto job = ParseSubmitRequest(R"({"argv":["x",")" + std::string(128 * 1024 - 1, 'a') +
                                R"("],"env":{"A":")" + std::string(128 * 1024 - 3, 'a') + R"("}})");
  ASSERT_TRUE(job.ok()) << job.error();
}

TEST(SubmitRequestTest, DefaultsNameToTheProgramAndShareToThousandths) {
  auto job = ParseSubmitRequest(R"({"argv":["sleep","1"],"gpu_share":0.25})");
  ASSERT_TRUE(job.ok()) << job.error();
  EXPECT_EQ(job.value().name, "sleep");
  EXPECT_EQ(job.value().gpu_milli, 250);
  EXPECT_EQ(job.value().nodes, 1);
  // A long program name is cut on a character boundary: the name stays valid UTF-8 (PostgreSQL
  // refused the submit when the cut fell inside an "é").
  std::string program = "/opt/xy";
  for (int i = 0; i < 100; ++i) program += "\xc3\xa9";
  auto accented = ParseSubmitRequest(R"({"argv":[")" + program + R"("]})");
  ASSERT_TRUE(accented.ok()) << accented.error();
  const std::string& name = accented.value().name;
  EXPECT_LE(name.size(), 200U);
  EXPECT_EQ(name.substr(name.size() - 5), "\xc3\xa9...") << name;
}

TEST(SubmitRequestTest, TakesTheSmallestCpuQuotaAndPortableVariableNames) {
  auto job = ParseSubmitRequest(
      R"({"argv":["x"],"cpus":0.01,"env":{"_a1":"x","NCCL_SOCKET_IFNAME":"eth1","HOME":"/h",)"
      R"("GPUFLEET_SERVER":"https://c:9500","GPUFLEET_TOKEN":"t","NVIDIA_DRIVER_CAPABILITIES":"all"}})");
  ASSERT_TRUE(job.ok()) << job.error();
  EXPECT_EQ(job.value().cpu_milli, 10);
}

TEST(SubmitRequestTest, UnknownFieldNamesAreNotEchoedWithControlCharacters) {
  auto job = ParseSubmitRequest("{\"argv\":[\"x\"],\"a\\u001b[2Jb\":1}");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.error().find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace gpufleet::controller
