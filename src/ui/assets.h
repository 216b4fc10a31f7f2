#pragma once
// The dashboard's files (web/): compiled into the binary (embedded_files.cpp, generated at build
// time by embed_assets.cmake), or read from a directory on every request for development
// (`gpufleet up --ui-dir web`). Each answer carries its content type and a strong ETag.
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gpufleet::ui {

// One compiled-in file: its path under /ui/ ("index.html", "vendor/uPlot.esm.js") and bytes.
struct EmbeddedFile {
  std::string_view path;
  std::string_view bytes;
};
std::span<const EmbeddedFile> EmbeddedFiles();

struct Asset {
  std::string content_type;
  std::string etag;  // "\"<16 hex digits>\"", from the bytes
  std::string body;
};

// Whether `path` may name a dashboard file: 1-200 of [A-Za-z0-9._/-], no empty segment and none
// that starts with '.' (no "..", and no dotfile or dot-directory such as .git or .env of a
// --ui-dir), no leading '/'.
bool ValidAssetPath(std::string_view path);
// The content type served for a file, from its extension (application/octet-stream if unknown).
std::string_view ContentTypeOf(std::string_view path);

class AssetSet {
 public:
  static constexpr std::size_t kMaxDirectoryFileBytes = std::size_t{16} << 20;
  // The compiled-in files.
  static std::shared_ptr<const AssetSet> Embedded();
  // Files read from `dir` at each request: `dir`/PATH, and vendor/ from
  // `dir`/node_modules/uplot/dist/; only regular files of at most kMaxDirectoryFileBytes, and
  // never through a symbolic link (a link in the tree could point anywhere on the machine). Null
  // when `dir` is not a directory.
  static std::shared_ptr<const AssetSet> FromDirectory(const std::string& dir);

  // The file served at /ui/`path` ("" and a path ending in '/' mean its index.html); null when
  // there is none or the path is not valid.
  std::shared_ptr<const Asset> Find(std::string_view path) const;
  std::size_t size() const { return files_.size(); }

 private:
  std::unordered_map<std::string, std::shared_ptr<const Asset>> files_;
  std::string dir_;  // set: read from here at each request
};

}  // namespace gpufleet::ui
