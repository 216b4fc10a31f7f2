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

}  // namespace

bool WriteTextFile(const std::string& path, const std::string& text) {
  const std::filesystem::path p(path);
  // The standard streams by name, and a device or pipe given itself (/dev/null, a FIFO): written
  // as they are (only root makes devices; the replacing below would replace the device node).
  if (path == "/dev/stdout" || path == "/dev/stderr") {
    std::fflush(nullptr);
    if (WriteAll(path == "/dev/stdout" ? 1 : 2, text)) return true;
    std::fprintf(stderr, "error: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    const bool ok = fd >= 0 && WriteAll(fd, text);
    const int saved = errno;
    if (fd >= 0) ::close(fd);
    if (ok) return true;
    std::fprintf(stderr, "error: cannot write %s: %s\n", path.c_str(), std::strerror(saved));
    return false;
  }
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  // A new file of its own beside `path` (mkstemp: O_EXCL, so never through a link), renamed over
  // it: a link planted at `path` in a shared folder is replaced, never followed into someone's
  // file, and nobody reads half a file.
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  bool ok = fd >= 0;
  if (ok) {
    const mode_t mask = ::umask(0);  // mkstemp made it 0600; the usual mode is 0666 & ~umask
    ::umask(mask);
    ok = ::fchmod(fd, 0666 & ~mask) == 0 && WriteAll(fd, text);
    ok = ::close(fd) == 0 && ok;
    ok = ok && std::rename(tmp.c_str(), path.c_str()) == 0;
    const int saved = errno;
    if (!ok) ::unlink(tmp.c_str());
    errno = saved;
  }
  if (!ok) {
    std::fprintf(stderr, "error: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace gpufleet::cli
