#include "net/private_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

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

}  // namespace gpufleet::net
