#include "controller/auth.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

namespace gpufleet::controller {
namespace {

std::string Hex(const unsigned char* data, unsigned size) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (unsigned i = 0; i < size; ++i) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 15];
  }
  return out;
}

}  // namespace

std::string Sha256Hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned size = 0;
  EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr);
  return Hex(digest, size);
}

core::Result<std::string> NewToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return core::Error{"no randomness for a new token"};
  return Hex(bytes, sizeof bytes);
}

}  // namespace gpufleet::controller
