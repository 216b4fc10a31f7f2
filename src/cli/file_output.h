#pragma once
// Writing a command's output files. The one place the CLI creates folders and reports write
// errors (a full disk or a read-only folder gets "error: cannot write PATH" and `false`).

#include <string>

namespace gpufleet::cli {

// Writes `text` to `path`, creating its folder: into a new file beside it, renamed over it, so
// that a symbolic link at `path` is replaced, never written through. Prints an error and returns
// false on failure.
bool WriteTextFile(const std::string& path, const std::string& text);

}  // namespace gpufleet::cli
