#include "core/text.h"

#include <cstdio>

namespace gpufleet::core {

std::vector<std::string_view> SplitText(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t pos = text.find(sep, start);
    out.push_back(text.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string_view TrimText(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string FirstNonAsciiPosition(std::string_view text) {
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == '\n') {
      ++line;
      line_start = i + 1;
    } else if (byte >= 0x80) {
      return std::to_string(line) + ":" + std::to_string(i - line_start + 1);
    }
  }
  return "";
}

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string TruncateUtf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  constexpr std::string_view kMore = "...";
  if (max_bytes < kMore.size()) return std::string(kMore.substr(0, max_bytes));
  std::size_t cut = max_bytes - kMore.size();
  // Back over continuation bytes (10xxxxxx) to the start of the character that would be split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + std::string(kMore);
}

namespace {

// The UTF-8 length of the bidirectional formatting character at `text[i]`, or 0 when none is.
std::size_t BidiControlLength(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) {
    return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0;
  };
  if (at(0) == 0xD8 && at(1) == 0x9C) return 2;  // U+061C
  if (at(0) != 0xE2) return 0;
  if (at(1) == 0x80 && (at(2) == 0x8E || at(2) == 0x8F || (at(2) >= 0xAA && at(2) <= 0xAE))) {
    return 3;  // U+200E, U+200F, U+202A..U+202E
  }
  if (at(1) == 0x81 && at(2) >= 0xA6 && at(2) <= 0xA9) return 3;  // U+2066..U+2069
  return 0;
}

// Its code point as four lower-case hex digits (only for what BidiControlLength accepted).
std::string BidiControlCode(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned code = byte(0) == 0xD8
                            ? 0x0600u | (byte(1) & 0x3Fu)
                            : (0x2u << 12) | ((byte(1) & 0x3Fu) << 6) | (byte(2) & 0x3Fu);
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04x", code);
  return buf;
}

}  // namespace

namespace {

std::string Escaped(std::string_view text, bool keep_layout) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    // C1 controls arrive in UTF-8 as 0xC2 0x80..0x9F; some terminals obey them too (CSI).
    const bool c1 = c == 0xC2 && i + 1 < text.size() &&
                    static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[i + 1]) <= 0x9F;
    // Bidirectional formatting characters (U+061C, U+200E-200F, U+202A-202E, U+2066-2069) let a
    // name reorder what a terminal shows around it (a job name that seems to be another user's).
    const std::size_t bidi = BidiControlLength(text, i);
    if (bidi > 0) {
      out += "\\u";
      out += BidiControlCode(text, i);
      i += bidi - 1;
    } else if (keep_layout && (c == '\n' || c == '\t' || c == '\r')) {
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F || c1) {
      const unsigned char shown = c1 ? static_cast<unsigned char>(text[++i]) : c;
      out += "\\x";
      out += kHex[shown >> 4];
      out += kHex[shown & 0xF];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string Printable(std::string_view text) { return Escaped(text, false); }
std::string PrintableOutput(std::string_view text) { return Escaped(text, true); }

std::size_t WholeUtf8Prefix(std::string_view text) {
  // Back over at most 3 continuation bytes to the last lead byte; cut before it if its
  // character is not all there.
  std::size_t i = text.size();
  for (int back = 0; back < 4 && i > 0; ++back) {
    const auto c = static_cast<unsigned char>(text[i - 1]);
    if ((c & 0xC0) != 0x80) {  // ASCII or a lead byte
      const std::size_t need = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      return text.size() - (i - 1) >= need ? text.size() : i - 1;
    }
    --i;
  }
  return text.size();  // not UTF-8 there: nothing to wait for
}

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" ||
         (host.starts_with("127.") &&
          host.find_first_not_of("0123456789.") == std::string_view::npos);
}

}  // namespace gpufleet::core
