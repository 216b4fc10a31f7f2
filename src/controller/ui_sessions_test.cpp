#include "controller/ui_sessions.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpufleet::controller {
namespace {

// Found by a review: one user logging in 10,000 times ended every other user's dashboard session
// (the table's cap dropped whichever session expired first, whoever's it was).
TEST(UiSessionsTest, OneTokensLoginsEndOnlyItsOwnSessions) {
  UiSessions sessions;
  const int64_t t0 = 1'000'000;
  auto alice = sessions.Open("alice-token", t0);
  ASSERT_TRUE(alice.ok());
  std::vector<std::string> bobs;
  for (std::size_t k = 0; k < UiSessions::kMaxSessions + 5; ++k) {
    auto bob = sessions.Open("bob-token", t0 + 1 + static_cast<int64_t>(k));
    ASSERT_TRUE(bob.ok());
    bobs.push_back(bob.value().id);
  }
  const int64_t now = t0 + 20'000;
  ASSERT_TRUE(sessions.Find(alice.value().id, now).has_value()) << "alice was logged out by bob";
  EXPECT_EQ(sessions.Find(alice.value().id, now)->token, "alice-token");
  // Bob keeps his newest kMaxSessionsPerToken sessions; his older ones ended.
  int live = 0;
  for (const std::string& id : bobs) live += sessions.Find(id, now).has_value();
  EXPECT_EQ(live, static_cast<int>(UiSessions::kMaxSessionsPerToken));
  EXPECT_TRUE(sessions.Find(bobs.back(), now).has_value());
  EXPECT_FALSE(sessions.Find(bobs.front(), now).has_value());
}

// Found by a review: with the table full (many tokens' logins), a new login ended whichever
// session expired first, another user's. It is refused instead.
TEST(UiSessionsTest, AFullTableRefusesANewLoginAndEndsNoOneElses) {
  UiSessions sessions;
  auto alice = sessions.Open("alice-token", 0);
  ASSERT_TRUE(alice.ok());
  for (std::size_t k = 1; k < UiSessions::kMaxSessions; ++k) {
    ASSERT_TRUE(sessions.Open("token-" + std::to_string(k / 16), 1 + static_cast<int64_t>(k)).ok());
  }
  auto refused = sessions.Open("mallory-token", 20'000);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.failure().code, core::ErrorCode::kUnavailable);
  EXPECT_TRUE(sessions.Find(alice.value().id, 20'000).has_value()) << "alice's session stays";
  // Once sessions expire, logins work again.
  EXPECT_TRUE(sessions.Open("mallory-token", UiSessions::kLifetimeMs + 20'000).ok());
}

TEST(UiSessionsTest, ALoginBodyIsBoundedAndNestingIsRefusedBeforeParsing) {
  EXPECT_TRUE(ParseLoginRequest(R"({"token": "abc"})").ok());
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  auto nested = ParseLoginRequest(R"({"x": )" + deep + R"(, "token": "abc"})");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.error().find("nested deeper"), std::string::npos) << nested.error();
  auto big = ParseLoginRequest(R"({"token": "abc", "pad": ")" + std::string(5000, 'x') + R"("})");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.failure().field, "token");
}

TEST(UiSessionsTest, SessionsExpireAndEnd) {
  UiSessions sessions;
  auto s = sessions.Open("t", 0);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(sessions.Find(s.value().id, UiSessions::kLifetimeMs - 1).has_value());
  EXPECT_FALSE(sessions.Find(s.value().id, UiSessions::kLifetimeMs).has_value());
  auto t = sessions.Open("t", 0);
  ASSERT_TRUE(t.ok());
  const std::string key = UiSessions::KeyOf(t.value().id);
  EXPECT_NE(key, t.value().id) << "the key does not give the cookie away";
  EXPECT_TRUE(sessions.Alive(key, 1));
  EXPECT_FALSE(sessions.Alive(key, UiSessions::kLifetimeMs)) << "expired";
  sessions.End(t.value().id);
  EXPECT_FALSE(sessions.Find(t.value().id, 1).has_value());
  EXPECT_FALSE(sessions.Alive(key, 1)) << "ended";
}

}  // namespace
}  // namespace gpufleet::controller
