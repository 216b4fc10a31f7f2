#include "cli/client_http.h"

#include <gtest/gtest.h>

namespace gpufleet::cli {
namespace {

// Found by a review: the data directory's admin token went to whatever --server named, so a
// user who pointed their CLI at a colleague's cluster handed that cluster's operator their own
// cluster's admin token (in the clear over http://).
// Then: any port of this machine took it, so another local account's server on another port
// ("look at my controller on localhost:7000") got the admin's token.
TEST(TokenFile, GoesOnlyToItsOwnServerOrToThisMachine) {
  const std::string own = "https://ctl-a.example:9500,https://ctl-b.example:9500";
  EXPECT_TRUE(TokenFileMayGoTo("https://ctl-b.example:9500", own));
  EXPECT_TRUE(TokenFileMayGoTo(own, own));
  // This machine, under another of its names, at its own server's port and scheme; not at
  // another port (another local account's server, which would get the admin's token), nor with
  // no own server known.
  const std::string local = "http://127.0.0.1:9500";
  EXPECT_TRUE(TokenFileMayGoTo("http://127.0.0.1:9500", local));
  EXPECT_TRUE(TokenFileMayGoTo("http://localhost:9500", local));
  EXPECT_TRUE(TokenFileMayGoTo("http://[::1]:9500", local));
  EXPECT_TRUE(TokenFileMayGoTo("http://localhost:9500/", local));
  EXPECT_FALSE(TokenFileMayGoTo("http://localhost:7000", local));
  EXPECT_FALSE(TokenFileMayGoTo("https://localhost:9500", local)) << "another scheme";
  EXPECT_FALSE(TokenFileMayGoTo("http://127.0.0.1:9500", ""));
  EXPECT_FALSE(TokenFileMayGoTo("http://localhost:9500", own));
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
