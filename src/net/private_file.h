#pragma once
// Files only their owner may read (credentials, keys, the server's address).
#include <string>

#include "core/result.h"

namespace gpufleet::net {

// Writes `text` to `path` through `path.tmp`, created with O_EXCL|O_NOFOLLOW and mode 0600 (a
// planted `.tmp` link is removed, never followed), then renamed over `path`. The error names the
// file and the reason.
core::Result<bool> WritePrivateFile(const std::string& path, const std::string& text);

// Makes `path` (and its parents) when missing, and its mode 0700. Refused, saying why, when it is
// a symbolic link or belongs to another account: a directory someone else owns (made in advance
// in a shared place) would let them read, or plant, the tokens, the store and the keys that a
// server or agent keeps there, root's included.
core::Result<bool> PrepareOwnDirectory(const std::string& path);

}  // namespace gpufleet::net
