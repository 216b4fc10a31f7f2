#include "net/private_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace gpufleet::net {

core::Result<bool> WritePrivateFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return core::Error{"cannot create " + tmp + ": " + std::strerror(errno)};
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  const int saved = errno;
  const bool written = done == text.size() && ::close(fd) == 0;
  if (!written) {
    if (done != text.size()) ::close(fd);
    ::unlink(tmp.c_str());
    return core::Error{"cannot write " + tmp + ": " + std::strerror(saved != 0 ? saved : EIO)};
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return core::Error{"cannot rename " + tmp + " to " + path + ": " + why};
  }
  return true;
}

std::optional<std::string> ReplaceableByOthers(const std::string& path, uid_t owner,
                                               const std::string& what, bool from_parent) {
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(path, ec);
  if (ec) return what + " " + path + " cannot be found: " + ec.message();
  std::filesystem::path p = from_parent && real != real.root_path() ? real.parent_path() : real;
  for (;; p = p.parent_path()) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return what + "'s path " + p.string() + " cannot be read";
    const bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
    const bool sticky_dir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0;
    const bool owned = st.st_uid == owner || st.st_uid == 0;
    if (!owned || (others_write && !sticky_dir)) {
      return what + " " + real.string() + " could be replaced by another account: " + p.string() +
             (!owned ? " belongs to uid " + std::to_string(st.st_uid)
                     : std::string(" is writable by others (group or all)"));
    }
    if (p == p.root_path()) break;
  }
  return std::nullopt;
}

core::Result<bool> PrepareOwnDirectory(const std::string& given) {
  // "dir/" would make the kernel follow a link at "dir" despite O_NOFOLLOW.
  std::string path = given;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return core::Error{"cannot create " + path + ": " + ec.message()};
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENOTDIR) {
      return core::Error{path +
                         " is a symbolic link (or not a directory): give the directory "
                         "itself"};
    }
    return core::Error{"cannot open " + path + ": " + std::strerror(errno)};
  }
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0) {
    why = "cannot read " + path + ": " + std::strerror(errno);
  } else if (st.st_uid != ::geteuid()) {
    why = path + " belongs to uid " + std::to_string(st.st_uid) + ", not to this account (uid " +
          std::to_string(::geteuid()) +
          "): another account could read or plant what is kept there; use a directory of your "
          "own";
  } else if ((st.st_mode & 07777) != 0700 && ::fchmod(fd, 0700) != 0) {
    why = "cannot make " + path + " mode 0700: " + std::strerror(errno);
  }
  ::close(fd);
  if (!why.empty()) return core::Error{why};
  if (auto replaceable = ReplaceableByOthers(path, ::geteuid(), "the data directory",
                                             /*from_parent=*/true)) {
    return core::Error{*replaceable +
                       " (it could rename the directory away and put its own in its place); use "
                       "a directory under one only you or root may write"};
  }
  return true;
}

core::Result<int> LockDirectory(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return core::Error{"cannot open " + path + ": " + std::strerror(errno)};
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char holder[32] = {};
    const ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    std::string pid(holder, n > 0 ? static_cast<std::size_t>(n) : 0);
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    if (error == EWOULDBLOCK) {
      return core::Error{dir + " is in use by another gpufleet process" +
                         (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos
                              ? std::string()
                              : " (pid " + pid + ")") +
                         ": stop it first, or give this one a --data-dir of its own"};
    }
    return core::Error{"cannot lock " + path + ": " + std::strerror(error)};
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds all the same; only the pid in a refusal is missing.
  }
  return fd;
}

}  // namespace gpufleet::net
