#include "cli/client_http.h"

#include <gtest/gtest.h>

namespace gpufleet::cli {
namespace {

// Found by a review: the data directory's admin token went to whatever --server named, so a
// user who pointed their CLI at a colleague's cluster handed that cluster's operator their own
// cluster's admin token (in the clear over http://).
TEST(TokenFile, GoesOnlyToItsOwnServerOrToThisMachine) {
  const std::string own = "https://ctl-a.example:9500,https://ctl-b.example:9500";
  EXPECT_TRUE(TokenFileMayGoTo("https://ctl-b.example:9500", own));
  EXPECT_TRUE(TokenFileMayGoTo(own, own));
  EXPECT_TRUE(TokenFileMayGoTo("http://127.0.0.1:9500", ""));
  EXPECT_TRUE(TokenFileMayGoTo("http://localhost:9500", ""));
  EXPECT_TRUE(TokenFileMayGoTo("http://[::1]:9500", ""));
  EXPECT_FALSE(TokenFileMayGoTo("https://other.example:9500", own));
  EXPECT_FALSE(TokenFileMayGoTo("https://ctl-a.example:9501", own)) << "another port";
  EXPECT_FALSE(TokenFileMayGoTo("http://ctl-a.example:9500", own)) << "another scheme";
  EXPECT_FALSE(TokenFileMayGoTo("https://ctl-a.example:9500,https://other.example:9500", own))
      << "every URL must be ours";
  EXPECT_FALSE(TokenFileMayGoTo("https://127.0.0.1.other.example:9500", ""));
  EXPECT_FALSE(TokenFileMayGoTo("https://other.example:9500", ""));
  EXPECT_FALSE(TokenFileMayGoTo("not a url", own));
}

}  // namespace
}  // namespace gpufleet::cli
