// Fuzzes what a browser sends the dashboard (controller/ui_sessions.h, ui/assets.h): the same
// bytes as a Cookie header, a login body and a path under /ui/. A cookie's value never runs past
// its ';'; a login gives a token of 1-256 characters or an error naming "token"; a file is found
// only for a valid path, so no input reaches outside the compiled-in set.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "controller/ui_sessions.h"
#include "core/check.h"
#include "ui/assets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto values = controller::CookieValues(text, "gf_session", 4);
  GPUFLEET_CHECK(values.size() <= 4);
  for (const std::string& v : values) {
    GPUFLEET_CHECK(v.find(';') == std::string::npos);
    GPUFLEET_CHECK(v.size() <= text.size());
  }
  auto token = controller::ParseLoginRequest(text);
  if (token) {
    GPUFLEET_CHECK(!token.value().empty() && token.value().size() <= 256);
  } else {
    GPUFLEET_CHECK(token.failure().field == "token");
  }
  static const auto assets = ui::AssetSet::Embedded();
  if (assets->Find(text) != nullptr) {
    const std::string name =
        text.empty() || text.back() == '/' ? std::string(text) + "index.html" : std::string(text);
    GPUFLEET_CHECK(ui::ValidAssetPath(name));
  }
  (void)controller::ConstantTimeEquals(text, "0123456789abcdef");
  return 0;
}
