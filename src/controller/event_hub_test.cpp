// EventHub's stream limits: one user cannot hold every live event stream.
#include "controller/event_hub.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "controller/controller.h"
#include "store/store.h"

namespace gpufleet::controller {
namespace {

// A controller on a store of its own, for a hub to register with.
class EventHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpufleet-event-hub-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    auto store = store::OpenSqliteStore(dir_.string());
    ASSERT_TRUE(store.ok()) << store.error();
    store_ = std::move(store).value();
    ControllerOptions options;
    options.data_dir = dir_.string();
    auto controller = Controller::Create(*store_, options);
    ASSERT_TRUE(controller.ok()) << controller.error();
    controller_ = std::move(controller).value();
  }
  void TearDown() override {
    controller_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Controller> controller_;
};

TEST_F(EventHubTest, AUsersOldestStreamClosesForTheirNewOneAndOthersStillSubscribe) {
  {
    EventHub hub(*controller_);
    const store::UserRecord mallory{"mallory", false}, bob{"bob", false};
    std::vector<std::shared_ptr<net::EventStream>> streams;
    for (std::size_t i = 0; i < EventHub::kMaxStreamsPerUser; ++i) {
      streams.push_back(hub.Subscribe(mallory, "m"));
      ASSERT_NE(streams.back(), nullptr);
    }
    EXPECT_FALSE(streams.front()->closed());
    auto one_more = hub.Subscribe(mallory, "m");
    ASSERT_NE(one_more, nullptr);
    EXPECT_TRUE(streams.front()->closed()) << "her oldest stream made room";
    EXPECT_FALSE(streams[1]->closed());
    EXPECT_EQ(hub.streams(), EventHub::kMaxStreamsPerUser);
    auto bobs = hub.Subscribe(bob, "b");
    ASSERT_NE(bobs, nullptr);
    EXPECT_EQ(hub.streams(), EventHub::kMaxStreamsPerUser + 1);
  }
}

// Found by a review: a stream opened with a token that then ended went on until the next ping
// (15 s) looked at the token again.
TEST_F(EventHubTest, AStreamClosesWithinASecondOfItsTokensEnd) {
  {
    EventHub hub(*controller_);
    const store::UserRecord erin{"erin", false};
    const int64_t ends_ms = NowMs() + 300;
    auto ending = hub.Subscribe(erin, "e1", "", ends_ms);
    auto lasting = hub.Subscribe(erin, "e2");
    ASSERT_NE(ending, nullptr);
    ASSERT_NE(lasting, nullptr);
    const auto start = std::chrono::steady_clock::now();
    while (!ending->closed() &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(ending->closed());
    EXPECT_GE(NowMs(), ends_ms) << "closed before its end";
    EXPECT_LT(NowMs() - ends_ms, 3000) << "the hub looks at least once a second (2 s of slack)";
    EXPECT_FALSE(lasting->closed());
  }
}

// A revoked token's stream went on until the next ping (15 s) looked at it again; the admin routes
// now ask the hub to look at once.
TEST_F(EventHubTest, ARevokedTokensStreamClosesWithinATickOfTheRecheck) {
  store::TokenRecord franks;
  franks.sha256 = std::string(64, 'f');
  franks.created_ms = NowMs();
  ASSERT_TRUE(store_->AddUser("frank", false, franks).ok());
  store::TokenRecord grace;
  grace.sha256 = std::string(64, 'a');
  grace.created_ms = NowMs();
  ASSERT_TRUE(store_->AddUser("grace", false, grace).ok());
  {
    EventHub hub(*controller_);
    auto revoked = hub.Subscribe({"frank", false}, franks.sha256);
    auto kept = hub.Subscribe({"grace", false}, grace.sha256);
    ASSERT_NE(revoked, nullptr);
    ASSERT_NE(kept, nullptr);
    auto gone = store_->RevokeToken(store::TokenId(franks.sha256));
    ASSERT_TRUE(gone.ok() && gone.value());
    const auto start = std::chrono::steady_clock::now();
    hub.RecheckCredentials();
    while (!revoked->closed() &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(revoked->closed());
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3))
        << "closed by the recheck, not by the 15 s ping";
    EXPECT_FALSE(kept->closed());
  }
}

}  // namespace
}  // namespace gpufleet::controller
