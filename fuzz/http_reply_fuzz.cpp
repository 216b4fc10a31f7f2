// Fuzzes the command-line HTTP client's answer parser (net/http_client.h, ReadHttpReply): status
// line, headers, interim answers, Content-Length, chunked and read-to-close bodies. The first
// byte sets how many bytes each read of the "socket" delivers, so that answers split at every
// place are tried; up to four answers are read from one stream, as on a kept-alive connection.
#include <strings.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/check.h"
#include "net/http_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 64;
  std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t delivered = 0;
  std::string buffer;
  auto fill = [&]() -> core::Result<size_t> {
    const size_t n = std::min(piece, stream.size() - delivered);
    buffer.append(stream.substr(delivered, n));
    delivered += n;
    return n;
  };
  for (int answer = 0; answer < 4; ++answer) {
    bool keep_alive = false;
    auto reply = net::ReadHttpReply(buffer, fill, keep_alive);
    if (!reply) break;
    GPUFLEET_CHECK(reply.value().status >= 0 && reply.value().status <= 999);
    // Nothing is invented: the body and what is left come from the stream.
    GPUFLEET_CHECK(reply.value().body.size() + buffer.size() <= stream.size());
    // With one Content-Length and no Transfer-Encoding, a final answer's body has that length.
    int lengths = 0, encodings = 0;
    std::string length;
    for (const auto& [name, value] : reply.value().headers) {
      if (strcasecmp(name.c_str(), "Content-Length") == 0) {
        ++lengths;
        length = value;
      }
      encodings += strcasecmp(name.c_str(), "Transfer-Encoding") == 0;
    }
    const int status = reply.value().status;
    if (lengths == 1 && encodings == 0 && status >= 200 && status != 204 && status != 304) {
      GPUFLEET_CHECK(reply.value().body.size() == std::stoull(length));
    }
    if (!keep_alive) break;
  }
  return 0;
}
