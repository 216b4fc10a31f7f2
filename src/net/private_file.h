#pragma once
// Files only their owner may read (credentials, keys, the server's address).
#include <sys/types.h>

#include <optional>
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
// server or agent keeps there, root's included. Refused too when another account could replace
// it: a directory above it that is neither this account's nor root's, or that others may write
// (a sticky one, as /tmp, is fine) lets them rename it away and put their own, or a link, in its
// place while the server runs (ReplaceableByOthers).
core::Result<bool> PrepareOwnDirectory(const std::string& path);

// Takes an exclusive lock (flock) on `<dir>/lock`, held while the returned descriptor stays open
// (in practice, the life of the process): a second server or agent given the same data
// directory is refused, naming the holder's pid, instead of sharing its store, tokens and jobs
// (two `up`s on one SQLite store would both lead and launch the same jobs).
core::Result<int> LockDirectory(const std::string& dir);

// Why an account other than `owner` and root could replace `path` or a directory above it: one of
// them belongs to another account, or is writable by others without being a sticky directory;
// `what` names the path in the text. Nothing when none can. `from_parent`: start at the
// directory above `path` (its own owner and mode checked by the caller).
std::optional<std::string> ReplaceableByOthers(const std::string& path, uid_t owner,
                                               const std::string& what, bool from_parent = false);

}  // namespace gpufleet::net
