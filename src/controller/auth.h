#pragma once
// API tokens: random, shown once, stored only as SHA-256 hashes.
#include <string>

#include "core/result.h"

namespace gpufleet::controller {

// Lowercase hex SHA-256 of `text`.
std::string Sha256Hex(const std::string& text);
// A new random token (32 bytes from the OS, hex), or an error when no randomness is available.
core::Result<std::string> NewToken();

}  // namespace gpufleet::controller
