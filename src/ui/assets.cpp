#include "ui/assets.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

namespace gpufleet::ui {
namespace {

std::string EtagOf(std::string_view bytes) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a: a cache validator, not a security property
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char text[24];
  std::snprintf(text, sizeof text, "\"%016llx\"", static_cast<unsigned long long>(h));
  return text;
}

std::shared_ptr<const Asset> MakeAsset(std::string_view path, std::string body) {
  auto asset = std::make_shared<Asset>();
  asset->content_type = std::string(ContentTypeOf(path));
  asset->etag = EtagOf(body);
  asset->body = std::move(body);
  return asset;
}

std::string Normalized(std::string_view path) {
  if (path.empty() || path.back() == '/') return std::string(path) + "index.html";
  return std::string(path);
}

}  // namespace

bool ValidAssetPath(std::string_view path) {
  if (path.empty() || path.size() > 200 || path.front() == '/') return false;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view segment = path.substr(start, end - start);
    if (segment.empty() || segment.front() == '.') return false;
    for (char c : segment) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
      if (!ok) return false;
    }
    start = end + 1;
  }
  return true;
}

std::string_view ContentTypeOf(std::string_view path) {
  auto ends = [&](std::string_view ext) {
    return path.size() >= ext.size() && path.substr(path.size() - ext.size()) == ext;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".json")) return "application/json";
  if (ends(".png")) return "image/png";
  return "application/octet-stream";
}

std::shared_ptr<const AssetSet> AssetSet::Embedded() {
  static const std::shared_ptr<const AssetSet> embedded = [] {
    auto set = std::make_shared<AssetSet>();
    for (const EmbeddedFile& f : EmbeddedFiles()) {
      set->files_[std::string(f.path)] = MakeAsset(f.path, std::string(f.bytes));
    }
    return set;
  }();
  return embedded;
}

std::shared_ptr<const AssetSet> AssetSet::FromDirectory(const std::string& dir) {
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return nullptr;
  auto set = std::make_shared<AssetSet>();
  set->dir_ = dir;
  return set;
}

std::shared_ptr<const Asset> AssetSet::Find(std::string_view path) const {
  const std::string name = Normalized(path);
  if (!ValidAssetPath(name)) return nullptr;
  if (dir_.empty()) {
    auto it = files_.find(name);
    return it == files_.end() ? nullptr : it->second;
  }
  std::string relative = name;  // below dir_
  if (name.rfind("vendor/", 0) == 0) {
    relative = "node_modules/uplot/dist/" + name.substr(7);
  } else if (name.rfind("node_modules/", 0) == 0) {
    return nullptr;
  }
  // One component at a time from the directory, each opened without following a link: nothing
  // swapped in between a check and the open can lead out of the tree.
  int fd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  std::size_t start = 0;
  while (fd >= 0) {
    const std::size_t slash = relative.find('/', start);
    const std::string part =
        relative.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    const bool last = slash == std::string::npos;
    const int next = openat(fd, part.c_str(),
                            O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY));
    close(fd);
    fd = next;
    if (last) break;
    start = slash + 1;
  }
  if (fd < 0) return nullptr;
  struct stat st{};
  std::string bytes;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::size_t>(st.st_size) <= kMaxDirectoryFileBytes) {
    bytes.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < bytes.size()) {
      const ssize_t n = read(fd, bytes.data() + got, bytes.size() - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    bytes.resize(got);
  } else {
    close(fd);
    return nullptr;
  }
  close(fd);
  return MakeAsset(name, std::move(bytes));
}

}  // namespace gpufleet::ui
