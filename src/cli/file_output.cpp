#include "cli/file_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace gpufleet::cli {
namespace {

// Writes all of `text` to `fd`; false on an error (errno says which).
bool WriteAll(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool Failed(const std::string& path, int error) {
  std::fprintf(stderr, "error: cannot write %s: %s\n", path.c_str(), std::strerror(error));
  return false;
}

// Writes `text` into what `path` names, as it is (no new file): a device or a pipe.
bool WriteInPlace(const std::string& path, const std::string& text, int flags) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | flags);
  const bool ok = fd >= 0 && WriteAll(fd, text);
  const int saved = errno;
  if (fd >= 0) ::close(fd);
  return ok || Failed(path, saved);
}

}  // namespace

bool WriteTextFile(const std::string& path, const std::string& text) {
  // The standard streams by name, a process substitution's pipe (/dev/fd/N), and a device or
  // pipe given itself (/dev/null, a FIFO) are written as they are: only root makes devices, and
  // replacing (below) would replace the device node or the link to the stream.
  if (path == "/dev/stdout" || path == "/dev/stderr") {
    std::fflush(nullptr);
    return WriteAll(path == "/dev/stdout" ? 1 : 2, text) || Failed(path, errno);
  }
  if (path.rfind("/dev/fd/", 0) == 0 || path.rfind("/proc/self/fd/", 0) == 0) {
    return WriteInPlace(path, text, 0);
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    return WriteInPlace(path, text, O_NOFOLLOW);
  }
  const std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  // A new file of its own beside `path` (mkstemp: O_EXCL, so never through a link), renamed over
  // it: a link planted at `path` in a shared folder is replaced (in a sticky one such as /tmp,
  // where another account's link may not be replaced, the write fails), never followed into
  // someone's file, and nobody reads half a file.
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return Failed(path, errno);
  const mode_t mask = ::umask(0);  // mkstemp made it 0600; the usual mode is 0666 & ~umask
  ::umask(mask);
  bool ok = ::fchmod(fd, 0666 & ~mask) == 0 && WriteAll(fd, text);
  ok = ::close(fd) == 0 && ok;
  ok = ok && std::rename(tmp.c_str(), path.c_str()) == 0;
  if (ok) return true;
  const int saved = errno;
  ::unlink(tmp.c_str());
  return Failed(path, saved);
}

}  // namespace gpufleet::cli
