// Fuzzes the server's reading of a request (net/http_wire.h), as its epoll front uses it: the
// head up to the blank line, its framing against the limits, then a chunked body fed in pieces.
// Whatever the bytes, nothing may crash, no body may exceed the limit, and a decoder that says
// it is done must have consumed no more than it was given. The same bytes go to the Host check.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/check.h"
#include "net/http_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet::net;
  if (size < 1) return 0;
  // The first byte picks how the body arrives: in pieces of 1..64 bytes.
  const std::size_t piece = 1 + data[0] % 64;
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  constexpr std::size_t kMaxBody = 1024;
  const std::size_t end = input.find("\r\n\r\n");
  const std::string_view head = input.substr(0, end == std::string_view::npos ? input.size() : end);
  httplib::Request req;
  // Naming more hosts never refuses a Host that fewer accepted.
  if (wire::HostAllowed(head, {})) GPUFLEET_CHECK(wire::HostAllowed(head, {"gpu.example", "*"}));
  if (wire::ParseHead(head, 100, req)) return 0;
  wire::Framing framing;
  if (wire::ReadFraming(req, kMaxBody, framing)) return 0;
  GPUFLEET_CHECK(framing.chunked || framing.content_length <= kMaxBody);
  if (!framing.chunked || end == std::string_view::npos) return 0;
  const std::string_view rest = input.substr(end + 4);
  wire::ChunkedDecoder decoder(kMaxBody);
  std::string body;
  std::string buffer;
  for (std::size_t at = 0; at < rest.size(); at += piece) {
    buffer.append(rest.substr(at, piece));
    std::size_t pos = 0;
    const auto status = decoder.Feed(buffer, pos, body);
    GPUFLEET_CHECK(pos <= buffer.size());
    GPUFLEET_CHECK(body.size() <= kMaxBody);
    buffer.erase(0, pos);
    if (status != wire::ChunkedDecoder::Status::kNeedMore) break;
  }
  return 0;
}
