#include "ui/assets.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace gpufleet::ui {
namespace {

TEST(UiAssets, PathsOutsideTheDashboardAreNeverValid) {
  for (const char* bad :
       {"", "/etc/passwd", "../x", "a/../../b", "a//b", "./a", "a/.", "a b", "a\\b", "a%2e%2e",
        "a\n", ".git/config", ".env", "pages/.hidden", "a/.b/c"}) {
    EXPECT_FALSE(ValidAssetPath(bad)) << bad;
  }
  for (const char* good : {"index.html", "pages/fleet.js", "vendor/uPlot.esm.js", "a.b-c_d"}) {
    EXPECT_TRUE(ValidAssetPath(good)) << good;
  }
}

TEST(UiAssets, TheCompiledInSetHasThePageItsScriptsAndUplot) {
  auto set = AssetSet::Embedded();
  auto index = set->Find("");
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->content_type, "text/html; charset=utf-8");
  EXPECT_NE(index->body.find("<html"), std::string::npos);
  auto uplot = set->Find("vendor/uPlot.esm.js");
  ASSERT_NE(uplot, nullptr);
  EXPECT_EQ(uplot->content_type, "text/javascript; charset=utf-8");
  EXPECT_GT(uplot->body.size(), 10000u);
  EXPECT_EQ(uplot->etag.size(), 18u);
  EXPECT_NE(set->Find("vendor/uPlot.min.css"), nullptr);
  EXPECT_EQ(set->Find("no-such-file.js"), nullptr);
  EXPECT_EQ(set->Find("../CMakeLists.txt"), nullptr);
}

TEST(UiAssets, ADirectoryIsReadAtEachRequestAndNeverEscaped) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ui-assets-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "pages");
  std::ofstream(dir / "index.html") << "<html>one";
  std::ofstream(dir / "secret.txt") << "x";
  auto set = AssetSet::FromDirectory(dir.string());
  ASSERT_NE(set, nullptr);
  auto first = set->Find("");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->body, "<html>one");
  std::ofstream(dir / "index.html") << "<html>two";
  auto second = set->Find("index.html");
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->body, "<html>two");
  EXPECT_NE(first->etag, second->etag);
  EXPECT_EQ(set->Find("pages"), nullptr);  // a directory is not a file
  EXPECT_EQ(set->Find("../" + dir.filename().string() + "/index.html"), nullptr);
  EXPECT_EQ(AssetSet::FromDirectory((dir / "missing").string()), nullptr);
  // Nothing outside the tree through a link, nor a dotfile of it.
  std::ofstream(dir / ".env") << "SECRET=1";
  EXPECT_EQ(set->Find(".env"), nullptr);
  const std::filesystem::path outside = dir.string() + "-outside";
  std::filesystem::create_directories(outside);
  std::ofstream(outside / "private.txt") << "private";
  std::filesystem::create_symlink(outside / "private.txt", dir / "linked.txt");
  std::filesystem::create_directory_symlink(outside, dir / "out");
  EXPECT_EQ(set->Find("linked.txt"), nullptr);
  EXPECT_EQ(set->Find("out/private.txt"), nullptr);
  EXPECT_NE(set->Find("secret.txt"), nullptr);  // a plain file of the tree is served
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(outside);
}

}  // namespace
}  // namespace gpufleet::ui
