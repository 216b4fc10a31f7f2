// Fuzzes how clients read a list of controllers and a standby's answer (net/failover_client.h):
// the input's first line is the URL list (--server / --controller / GPUFLEET_SERVER), the rest a
// raw HTTP answer from a controller. Checks that a list that parses names only http(s) URLs, and
// that the leader a hostile answer names is matched only to a configured endpoint, never added.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/check.h"
#include "net/failover_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string list(input.substr(0, newline));
  std::string answer(newline == std::string_view::npos ? "" : input.substr(newline + 1));
  auto client = net::FailoverHttpClient::ForUrls(list);
  if (!client.ok()) {
    GPUFLEET_CHECK(!client.error().empty());
    return 0;
  }
  const net::FailoverHttpClient& c = client.value();
  GPUFLEET_CHECK(c.size() >= 1);
  for (size_t k = 0; k < c.size(); ++k) {
    GPUFLEET_CHECK(c.url(k).rfind("http://", 0) == 0 || c.url(k).rfind("https://", 0) == 0);
    GPUFLEET_CHECK(c.Find(c.url(k)) == k);  // duplicates were dropped: each finds itself
  }
  size_t delivered = 0;
  auto fill = [&]() -> core::Result<size_t> {
    const size_t n = answer.size() - delivered;
    delivered = answer.size();
    return n;
  };
  std::string buffer;
  bool keep_alive = false;
  auto reply = net::ReadHttpReply(buffer, fill, keep_alive);
  if (reply.ok()) {
    const std::string leader = reply.value().Header("X-Gpufleet-Leader");
    const size_t found = c.Find(leader);
    GPUFLEET_CHECK(found <= c.size());
    (void)net::IsStandbyReply(reply.value());
  }
  return 0;
}
