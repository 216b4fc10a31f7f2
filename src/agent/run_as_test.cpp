#include "agent/run_as.h"

#include <gtest/gtest.h>

namespace gpufleet::agent {
namespace {

std::optional<UnixAccount> FakeAccounts(const std::string& name) {
  if (name == "root") return UnixAccount{"root", 0, 0, "/root"};
  if (name == "alice") return UnixAccount{"alice", 1001, 1001, "/home/alice"};
  if (name == "al") return UnixAccount{"al", 1002, 1002, "/home/al"};
  if (name == "operator") return UnixAccount{"operator", 11, 0, "/root"};
  if (name == "postgres") return UnixAccount{"postgres", 112, 120, "/var/lib/postgresql"};
  if (name == "svc") return UnixAccount{"svc", 999, 999, "/var/lib/svc"};
  return std::nullopt;
}

RunAsPolicy Policy() {
  RunAsPolicy p;
  p.node_name = "gpu-a";
  return p;
}

TEST(RunAsTest, RootAgentSwitchesToTheJobsAccount) {
  auto id = ResolveRunAs(Policy(), "alice", 0, FakeAccounts);
  ASSERT_TRUE(id.ok()) << id.error();
  EXPECT_TRUE(id.value().switch_user);
  EXPECT_EQ(id.value().account.uid, 1001U);
  EXPECT_EQ(id.value().account.home, "/home/alice");
}

TEST(RunAsTest, MissingAccountFailsNamingNodeAndUser) {
  auto id = ResolveRunAs(Policy(), "mallory", 0, FakeAccounts);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().find("'mallory'"), std::string::npos) << id.error();
  EXPECT_NE(id.error().find("gpu-a"), std::string::npos) << id.error();
  EXPECT_NE(id.error().find("--run-as-map"), std::string::npos) << id.error();
}

TEST(RunAsTest, EmptyUserIsRefused) {
  EXPECT_FALSE(ResolveRunAs(Policy(), "", 0, FakeAccounts).ok());
}

TEST(RunAsTest, MapNamesTheAccount) {
  RunAsPolicy p = Policy();
  p.user_map["alice@corp"] = "al";
  auto id = ResolveRunAs(p, "alice@corp", 0, FakeAccounts);
  ASSERT_TRUE(id.ok()) << id.error();
  EXPECT_EQ(id.value().account.name, "al");
  // A map to an account that does not exist names both.
  p.user_map["bob"] = "robert";
  auto missing = ResolveRunAs(p, "bob", 0, FakeAccounts);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("'robert'"), std::string::npos) << missing.error();
}

TEST(RunAsTest, RootNeedsExplicitConsentEvenThroughAMap) {
  EXPECT_FALSE(ResolveRunAs(Policy(), "root", 0, FakeAccounts).ok());
  RunAsPolicy mapped = Policy();
  mapped.user_map["alice"] = "root";
  auto refused = ResolveRunAs(mapped, "alice", 0, FakeAccounts);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("--allow-root-jobs"), std::string::npos) << refused.error();
  mapped.allow_root = true;
  auto allowed = ResolveRunAs(mapped, "alice", 0, FakeAccounts);
  ASSERT_TRUE(allowed.ok());
  EXPECT_FALSE(allowed.value().switch_user);  // root runs root's job as it is
}

// Found by a review: only uid 0 was refused, so an account whose primary group is root's (RHEL's
// `operator`) ran jobs with gid 0 on a node that refuses root jobs.
TEST(RunAsTest, RootsGroupNeedsExplicitConsentToo) {
  auto refused = ResolveRunAs(Policy(), "operator", 0, FakeAccounts);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("gid 0"), std::string::npos) << refused.error();
  RunAsPolicy allowed = Policy();
  allowed.allow_root = true;
  EXPECT_TRUE(ResolveRunAs(allowed, "operator", 0, FakeAccounts).ok());
}

// Found by a review: a gpufleet user named like a service's account (postgres, www-data) ran its
// jobs as that account, able to read the service's data and keys.
TEST(RunAsTest, SystemAccountsAreRefusedBelowTheMinimumUid) {
  for (const char* user : {"postgres", "svc"}) {
    auto refused = ResolveRunAs(Policy(), user, 0, FakeAccounts);
    ASSERT_FALSE(refused.ok()) << user;
    EXPECT_NE(refused.error().find("--min-job-uid 1000"), std::string::npos) << refused.error();
    EXPECT_NE(refused.error().find("system account"), std::string::npos) << refused.error();
  }
  RunAsPolicy mapped = Policy();
  mapped.user_map["alice"] = "postgres";
  EXPECT_FALSE(ResolveRunAs(mapped, "alice", 0, FakeAccounts).ok()) << "a map does not bypass it";
  RunAsPolicy lowered = Policy();
  lowered.min_uid = 100;
  EXPECT_TRUE(ResolveRunAs(lowered, "postgres", 0, FakeAccounts).ok());
  EXPECT_FALSE(ResolveRunAs(lowered, "operator", 0, FakeAccounts).ok()) << "uid 11, and gid 0";
  RunAsPolicy root_allowed = Policy();
  root_allowed.allow_root = true;
  EXPECT_TRUE(ResolveRunAs(root_allowed, "svc", 0, FakeAccounts).ok())
      << "where root may run jobs, so may accounts with less";
  EXPECT_TRUE(ResolveRunAs(Policy(), "svc", 999, FakeAccounts).ok())
      << "an agent that is not root runs its own account's jobs, whatever its uid";
}

TEST(RunAsTest, NonRootAgentRunsOnlyItsOwnAccountsJobs) {
  auto own = ResolveRunAs(Policy(), "alice", 1001, FakeAccounts);
  ASSERT_TRUE(own.ok()) << own.error();
  EXPECT_FALSE(own.value().switch_user);
  auto other = ResolveRunAs(Policy(), "al", 1001, FakeAccounts);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().find("uid 1001"), std::string::npos) << other.error();
}

// Found by a review: a non-root agent ran another user's jobs as its own account when an admin
// mapped them onto it, so those jobs could read the agent's credentials (under `up`, the admin's
// token file).
TEST(RunAsTest, NonRootAgentRefusesOtherUsersMappedOntoItsAccount) {
  RunAsPolicy mapped = Policy();
  mapped.user_map["bob"] = "alice";
  auto refused = ResolveRunAs(mapped, "bob", 1001, FakeAccounts);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("would run as the agent itself"), std::string::npos)
      << refused.error();
  EXPECT_TRUE(ResolveRunAs(mapped, "alice", 1001, FakeAccounts).ok()) << "alice herself still runs";
  auto at_start = CheckRunAsMapForAgent(mapped, 1001, FakeAccounts);
  ASSERT_FALSE(at_start.ok());
  EXPECT_EQ(at_start.failure().field, "--run-as-map");
  EXPECT_NE(at_start.error().find("'bob'"), std::string::npos) << at_start.error();
  EXPECT_TRUE(CheckRunAsMapForAgent(mapped, 0, FakeAccounts).ok()) << "a root agent switches";
  RunAsPolicy elsewhere = Policy();
  elsewhere.user_map["bob"] = "al";  // refused at launch for its uid, not as a self-mapping
  EXPECT_TRUE(CheckRunAsMapForAgent(elsewhere, 1001, FakeAccounts).ok());
  // A root agent still switches bob to alice's account.
  auto root = ResolveRunAs(mapped, "bob", 0, FakeAccounts);
  ASSERT_TRUE(root.ok()) << root.error();
  EXPECT_TRUE(root.value().switch_user);
}

TEST(RunAsTest, ParsesMaps) {
  std::map<std::string, std::string> map;
  ASSERT_TRUE(ParseRunAsMap("alice=al,bob=robert", map).ok());
  EXPECT_EQ(map.at("alice"), "al");
  EXPECT_EQ(map.at("bob"), "robert");
  for (const char* bad : {"", "alice", "=al", "alice=", "a=b=c", "a=b,"}) {
    std::map<std::string, std::string> m;
    EXPECT_FALSE(ParseRunAsMap(bad, m).ok()) << bad;
  }
}

}  // namespace
}  // namespace gpufleet::agent
