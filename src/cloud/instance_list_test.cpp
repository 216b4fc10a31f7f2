#include "cloud/instance_list.h"

#include <gtest/gtest.h>

#include <string>

namespace gpufleet::cloud {
namespace {

TEST(InstanceListTest, ParsesEveryField) {
  auto list = ParseInstanceList(R"({"instances": [
      {"name": "a100-8-1", "group": "a100-8", "spot": true, "state": "running",
       "interruption_at": 1767225600},
      {"name": "a100-8-2", "group": "a100-8", "spot": false, "state": "pending",
       "interruption_at": null}]})");
  ASSERT_TRUE(list.ok()) << list.error();
  ASSERT_EQ(list.value().size(), 2u);
  const Instance& a = list.value()[0];
  EXPECT_EQ(a.name, "a100-8-1");
  EXPECT_EQ(a.group, "a100-8");
  EXPECT_TRUE(a.spot);
  EXPECT_EQ(a.state, "running");
  EXPECT_EQ(a.interruption_at_s, 1767225600);
  EXPECT_EQ(list.value()[1].interruption_at_s, 0);
  EXPECT_FALSE(list.value()[1].spot);
}

TEST(InstanceListTest, EmptyListIsFine) {
  auto list = ParseInstanceList(R"({"instances": []})");
  ASSERT_TRUE(list.ok()) << list.error();
  EXPECT_TRUE(list.value().empty());
}

// One row per malformed reply: the error names the field at fault.
TEST(InstanceListTest, RejectsMalformedRepliesNamingTheField) {
  const std::string ok_rest = R"("group": "g", "spot": false, "state": "running")";
  struct Case {
    std::string json;
    std::string field;
  } cases[] = {
      {R"([])", "instances"},
      {R"({})", "instances"},
      {R"({"instances": {}})", "instances"},
      {R"({"instances": [], "extra": 1})", "extra"},
      {R"({"instances": [7]})", "instances[0]"},
      {R"({"instances": [{"group": "g", "spot": false, "state": "running"}]})",
       "instances[0].name"},
      {R"({"instances": [{"name": "Upper", )" + ok_rest + "}]}", "instances[0].name"},
      {R"({"instances": [{"name": "-lead", )" + ok_rest + "}]}", "instances[0].name"},
      {R"({"instances": [{"name": 5, )" + ok_rest + "}]}", "instances[0].name"},
      {R"({"instances": [{"name": ")" + std::string(64, 'a') + R"(", )" + ok_rest + "}]}",
       "instances[0].name"},
      {R"({"instances": [{"name": "a", "group": "g/h", "spot": false, "state": "running"}]})",
       "instances[0].group"},
      {R"({"instances": [{"name": "a", "group": "g", "spot": "yes", "state": "running"}]})",
       "instances[0].spot"},
      {R"({"instances": [{"name": "a", "group": "g", "state": "running"}]})", "instances[0].spot"},
      {R"({"instances": [{"name": "a", "group": "g", "spot": false, "state": "booting"}]})",
       "instances[0].state"},
      {R"({"instances": [{"name": "a", )" + ok_rest + R"(, "interruption_at": 1.5}]})",
       "instances[0].interruption_at"},
      {R"({"instances": [{"name": "a", )" + ok_rest + R"(, "interruption_at": -1}]})",
       "instances[0].interruption_at"},
      {R"({"instances": [{"name": "a", )" + ok_rest + R"(, "interruption_at": "soon"}]})",
       "instances[0].interruption_at"},
      {R"({"instances": [{"name": "a", )" + ok_rest + R"(, "interuption_at": 5}]})",
       "instances[0].interuption_at"},
      {R"({"instances": [{"name": "a", )" + ok_rest + R"(}, {"name": "a", )" + ok_rest + "}]}",
       "instances[1].name"},
  };
  for (const Case& c : cases) {
    auto list = ParseInstanceList(c.json);
    ASSERT_FALSE(list.ok()) << c.json;
    EXPECT_EQ(list.failure().field, c.field) << c.json << " -> " << list.error();
    EXPECT_NE(list.error().find(c.field), std::string::npos) << list.error();
  }
}

TEST(InstanceListTest, RejectsBrokenAndDeepJson) {
  EXPECT_FALSE(ParseInstanceList("").ok());
  EXPECT_FALSE(ParseInstanceList("{\"instances\": [").ok());
  auto deep = ParseInstanceList(std::string(1000, '[') + std::string(1000, ']'));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().find("nested"), std::string::npos);
}

TEST(InstanceListTest, CreateReplyIsEmptyOrTheName) {
  EXPECT_TRUE(CheckCreateReply("", "node-1").ok());
  EXPECT_TRUE(CheckCreateReply(" \n", "node-1").ok());
  EXPECT_TRUE(CheckCreateReply(R"({"name": "node-1"})", "node-1").ok());
  auto other = CheckCreateReply(R"({"name": "node-2"})", "node-1");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.failure().field, "name");
  EXPECT_FALSE(CheckCreateReply("created", "node-1").ok());
  EXPECT_FALSE(CheckCreateReply(R"({"name": "node-1", "id": "i-123"})", "node-1").ok());
}

TEST(InstanceListTest, ValidNames) {
  EXPECT_TRUE(ValidInstanceName("a"));
  EXPECT_TRUE(ValidInstanceName("a100-8-0"));
  EXPECT_TRUE(ValidInstanceName(std::string(63, 'z')));
  EXPECT_FALSE(ValidInstanceName(""));
  EXPECT_FALSE(ValidInstanceName(std::string(64, 'z')));
  EXPECT_FALSE(ValidInstanceName("-a"));
  EXPECT_FALSE(ValidInstanceName("a_b"));
  EXPECT_FALSE(ValidInstanceName("a b"));
  EXPECT_FALSE(ValidInstanceName("A"));
}

}  // namespace
}  // namespace gpufleet::cloud
