#pragma once
// Files only their owner may read (credentials, keys, the server's address).
#include <string>

#include "core/result.h"

namespace gpufleet::net {

// Writes `text` to `path` through `path.tmp`, created with O_EXCL|O_NOFOLLOW and mode 0600 (a
// planted `.tmp` link is removed, never followed), then renamed over `path`. The error names the
// file and the reason.
core::Result<bool> WritePrivateFile(const std::string& path, const std::string& text);

}  // namespace gpufleet::net
