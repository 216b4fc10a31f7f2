#include "core/container.h"

#include <gtest/gtest.h>

namespace gpufleet::core {
namespace {

TEST(BindMount, ParsesSourceTargetAndMode) {
  auto m = ParseBindMount("/data/set:/data:ro");
  ASSERT_TRUE(m) << m.error();
  EXPECT_EQ(m.value().source, "/data/set");
  EXPECT_EQ(m.value().target, "/data");
  EXPECT_TRUE(m.value().read_only);
  EXPECT_EQ(BindMountText(m.value()), "/data/set:/data:ro");
  auto rw = ParseBindMount("/scratch:/scratch");
  ASSERT_TRUE(rw);
  EXPECT_FALSE(rw.value().read_only);
  EXPECT_TRUE(ParseBindMount("/a:/b:rw"));
}

TEST(BindMount, RefusesWhatCouldEscapeOrConfuseTheRuntime) {
  for (const char* bad :
       {"data:/data", "/data", "/data:data", "/data/../etc:/x", "/data:/x:rx", "/data/./x:/x",
        "/da,ta:/x", "/data:/x/", "/data://x", "/data:/", "/data:/proc/x", "/data:/sys",
        "/data:/dev/shm", "/da\nta:/x", ":/x", "/data:/x:ro:ro",
        "/data:/var/run/nvidia-container-devices/all", "/data:/run/nvidia-container-devices/0",
        "/data:/var/run/nvidia-container-devicesall"}) {
    auto m = ParseBindMount(bad);
    EXPECT_FALSE(m) << bad;
    if (!m) {
      EXPECT_EQ(m.failure().field, "mounts") << bad;
    }
  }
}

TEST(ImageReference, AcceptsUsualNamesAndRefusesOthers) {
  for (const char* good : {"localhost/train:1", "nvcr.io/nvidia/pytorch:24.01-py3",
                           "busybox", "registry.example:5000/a/b@sha256:0123abcd"}) {
    EXPECT_TRUE(CheckImageReference(good)) << good;
  }
  for (const char* bad : {"", "-rm", "/abs", "a b", "a;b", "a/../b", "a//b", "a$(x)"}) {
    auto r = CheckImageReference(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_EQ(r.failure().field, "image");
    }
  }
  EXPECT_FALSE(CheckImageReference(std::string(256, 'a')));
}

TEST(ImageIsUnder, APrefixEndsAtAComponent) {
  EXPECT_TRUE(ImageIsUnder("nvcr.io/nvidia/pytorch:24.01", "nvcr.io/nvidia"));
  EXPECT_TRUE(ImageIsUnder("nvcr.io/nvidia/pytorch:24.01", "nvcr.io/nvidia/"));
  EXPECT_FALSE(ImageIsUnder("nvcr.io/nvidia-evil/x:1", "nvcr.io/nvidia"));
  EXPECT_FALSE(ImageIsUnder("localhost:5000/x", "localhost")) << "a port is another registry";
  EXPECT_TRUE(ImageIsUnder("localhost/train:1", "localhost"));
  EXPECT_TRUE(ImageIsUnder("localhost/train:1", "localhost/train"));
  EXPECT_TRUE(ImageIsUnder("localhost/train@sha256:00", "localhost/train"));
  EXPECT_FALSE(ImageIsUnder("localhost/trainer:1", "localhost/train"));
  EXPECT_FALSE(ImageIsUnder("x", ""));
}

TEST(ContainerWorkdir, IsNormalizedAndOutsideTheKernelsFilesystems) {
  EXPECT_TRUE(CheckContainerWorkdir("/workspace/run"));
  for (const char* bad : {"relative", "/a/../b", "/proc/self/fd/7", "/sys/x", "/dev", "/a//b",
                          "/a,b"}) {
    auto r = CheckContainerWorkdir(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_EQ(r.failure().field, "workdir");
    }
  }
}

TEST(PathIsUnder, MatchesWholeComponents) {
  EXPECT_TRUE(PathIsUnder("/data", "/data"));
  EXPECT_TRUE(PathIsUnder("/data/x", "/data"));
  EXPECT_TRUE(PathIsUnder("/data/x", "/data/"));
  EXPECT_FALSE(PathIsUnder("/database", "/data"));
  EXPECT_FALSE(PathIsUnder("/dat", "/data"));
  EXPECT_TRUE(PathIsUnder("/anything", "/"));
}

TEST(ContainerPolicy, RefusesImagesAndMountsOutsideTheAllowedPrefixesNamingTheField) {
  ContainerPolicy policy;
  ContainerSpec spec;
  EXPECT_TRUE(CheckContainerAgainstPolicy(spec, policy)) << "a host job needs no policy";
  spec.mounts.push_back({"/data", "/data", true});
  EXPECT_EQ(CheckContainerAgainstPolicy(spec, policy).failure().field, "mounts");
  spec.mounts.clear();
  spec.image = "localhost/train:1";
  auto off = CheckContainerAgainstPolicy(spec, policy);
  ASSERT_FALSE(off);
  EXPECT_EQ(off.failure().code, ErrorCode::kForbidden);
  EXPECT_EQ(off.failure().field, "image");
  policy.allowed_images = {"nvcr.io/nvidia/"};
  EXPECT_EQ(CheckContainerAgainstPolicy(spec, policy).failure().field, "image");
  policy.allowed_images.push_back("localhost/");
  EXPECT_TRUE(CheckContainerAgainstPolicy(spec, policy));
  spec.mounts.push_back({"/data/set", "/data", true});
  auto mount = CheckContainerAgainstPolicy(spec, policy);
  ASSERT_FALSE(mount);
  EXPECT_EQ(mount.failure().field, "mounts");
  EXPECT_EQ(mount.failure().code, ErrorCode::kForbidden);
  policy.allowed_mount_sources = {"/datasets", "/data"};
  EXPECT_TRUE(CheckContainerAgainstPolicy(spec, policy));
  spec.mounts.push_back({"/database", "/db", false});
  EXPECT_FALSE(CheckContainerAgainstPolicy(spec, policy)) << "/database is not under /data";
  spec.mounts.back() = {"/data/other", "/data", false};
  EXPECT_FALSE(CheckContainerAgainstPolicy(spec, policy)) << "two mounts on one target";
  spec.mounts.back() = {"/data/../etc", "/etc2", false};
  EXPECT_FALSE(CheckContainerAgainstPolicy(spec, policy)) << "not normalized";
}

TEST(PullPolicy, ParsesItsThreeNames) {
  for (PullPolicy p : {PullPolicy::kNever, PullPolicy::kIfMissing, PullPolicy::kAlways}) {
    auto parsed = ParsePullPolicy(PullPolicyName(p));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed.value(), p);
  }
  EXPECT_FALSE(ParsePullPolicy("sometimes"));
}

}  // namespace
}  // namespace gpufleet::core
