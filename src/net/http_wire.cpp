#include "net/http_wire.h"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>

namespace gpufleet::net::wire {
namespace {

// Longest chunk-size line and trailer section accepted in a chunked body.
constexpr std::size_t kMaxChunkLine = 4096;
constexpr std::size_t kMaxTrailerBytes = 8192;

bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The next line of `text` from `pos` (without its CRLF or LF); false at the end.
bool NextLine(std::string_view text, std::size_t& pos, std::string_view& line) {
  if (pos >= text.size()) return false;
  std::size_t end = text.find('\n', pos);
  if (end == std::string_view::npos) end = text.size();
  line = text.substr(pos, end - pos);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  pos = end + 1;
  return true;
}

// Whether the comma-separated header value `list` holds `token`.
bool HasToken(const std::string& list, std::string_view token);

}  // namespace

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string DecodeUrl(std::string_view text, bool plus_as_space) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      const int hi = HexValue(text[i + 1]);
      const int lo = HexValue(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_as_space && c == '+' ? ' ' : c);
  }
  return out;
}

void ParseQuery(std::string_view query, httplib::Params& params) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    std::string key = DecodeUrl(pair.substr(0, eq), true);
    std::string value =
        eq == std::string_view::npos ? std::string() : DecodeUrl(pair.substr(eq + 1), true);
    params.emplace(std::move(key), std::move(value));
  }
}

std::optional<WireError> ParseHead(std::string_view head, int max_headers, httplib::Request& req) {
  // Lines end in CRLF only: the server finds a head's end at CRLF CRLF, and a bare LF read as a
  // line end here would let a head hide a second request (or a body) from that search.
  for (std::size_t lf = head.find('\n'); lf != std::string_view::npos;
       lf = head.find('\n', lf + 1)) {
    if (lf == 0 || head[lf - 1] != '\r')
      return WireError{400, "a line of the request head ends in a bare LF"};
  }
  std::size_t pos = 0;
  std::string_view line;
  // RFC 9112 2.2: a server should ignore empty lines before the request line.
  while (NextLine(head, pos, line) && line.empty()) {
  }
  if (line.empty()) return WireError{400, "empty request"};
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return WireError{400, "malformed request line (expected: METHOD TARGET HTTP/1.1)"};
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return WireError{400, "malformed request method"};
  if (version.rfind("HTTP/", 0) != 0) {
    return WireError{400, "malformed request line (expected: METHOD TARGET HTTP/1.1)"};
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return WireError{505, "HTTP version not supported: " + std::string(version)};
  }
  if (target.empty() || target.front() != '/') {
    return WireError{400, "the request target must be a path starting with '/'"};
  }
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return WireError{400, "control character in the request target"};
    }
  }
  req.method = std::string(method);
  req.version = std::string(version);
  req.target = std::string(target);
  const std::size_t question = target.find('?');
  req.path = DecodeUrl(target.substr(0, question), false);
  if (question != std::string_view::npos) ParseQuery(target.substr(question + 1), req.params);

  int count = 0;
  while (NextLine(head, pos, line)) {
    if (line.empty()) break;
    if (++count > max_headers) {
      return WireError{431,
                       "too many header fields (the limit is " + std::to_string(max_headers) + ")"};
    }
    if (line.front() == ' ' || line.front() == '\t') {
      return WireError{400, "obsolete line folding in a header field"};
    }
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return WireError{400, "malformed header field"};
    }
    const std::string_view value = Trim(line.substr(colon + 1));
    for (char c : value) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
        return WireError{400, "control character in a header value"};
      }
    }
    req.headers.emplace(std::string(line.substr(0, colon)), std::string(value));
  }
  return std::nullopt;
}

namespace {

bool HasToken(const std::string& list, std::string_view token) {
  std::string_view rest(list);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    if (IEquals(Trim(rest.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

std::optional<WireError> ReadFraming(const httplib::Request& req, std::size_t max_body,
                                     Framing& framing) {
  const std::string connection = req.get_header_value("Connection");
  framing.keep_alive = req.version == "HTTP/1.1" ? !HasToken(connection, "close")
                                                 : HasToken(connection, "keep-alive");
  const std::size_t te_count = req.get_header_value_count("Transfer-Encoding");
  const std::size_t cl_count = req.get_header_value_count("Content-Length");
  if (te_count > 0 && cl_count > 0) {
    return WireError{400, "both Transfer-Encoding and Content-Length"};
  }
  if (te_count > 0) {
    const std::string te = req.get_header_value("Transfer-Encoding");
    if (te_count > 1 || !IEquals(Trim(te), "chunked")) {
      return WireError{501, "unsupported Transfer-Encoding '" + te + "' (only chunked)"};
    }
    framing.chunked = true;
  }
  if (cl_count > 0) {
    const std::string first = req.get_header_value("Content-Length");
    for (std::size_t i = 1; i < cl_count; ++i) {
      if (req.get_header_value("Content-Length", i) != first) {
        return WireError{400, "conflicting Content-Length fields"};
      }
    }
    auto [end, ec] =
        std::from_chars(first.data(), first.data() + first.size(), framing.content_length);
    if (first.empty() || ec != std::errc() || end != first.data() + first.size()) {
      return WireError{400, "malformed Content-Length '" + first + "'"};
    }
  }
  if (req.has_header("Content-Encoding")) {
    const std::string encoding = req.get_header_value("Content-Encoding");
    if (!IEquals(Trim(encoding), "identity")) {
      return WireError{415, "request bodies must not be compressed (Content-Encoding: " + encoding +
                                "); send them uncompressed"};
    }
  }
  if (!framing.chunked && framing.content_length > max_body) {
    return WireError{
        413, "request body too large (the limit is " + std::to_string(max_body) + " bytes)"};
  }
  if (te_count == 0 && cl_count == 0 &&
      (req.method == "POST" || req.method == "PUT" || req.method == "PATCH")) {
    return WireError{411, "a " + req.method + " needs a Content-Length (or a chunked body)"};
  }
  if (req.has_header("Expect")) {
    if (!IEquals(Trim(req.get_header_value("Expect")), "100-continue")) {
      return WireError{417, "unsupported Expect '" + req.get_header_value("Expect") + "'"};
    }
    framing.expect_continue = true;
  }
  return std::nullopt;
}

ChunkedDecoder::Status ChunkedDecoder::Feed(std::string_view in, std::size_t& pos,
                                            std::string& body) {
  while (pos < in.size() || state_ == State::kDone) {
    switch (state_) {
      case State::kDone:
        return Status::kDone;
      case State::kSize:
      case State::kTrailer: {
        const std::size_t nl = in.find('\n', pos);
        const std::size_t take = (nl == std::string_view::npos ? in.size() : nl + 1) - pos;
        line_.append(in.substr(pos, take));
        pos += take;
        if (state_ == State::kTrailer) trailer_bytes_ += take;
        if (line_.size() > kMaxChunkLine || trailer_bytes_ > kMaxTrailerBytes) return Status::kBad;
        if (nl == std::string_view::npos) return Status::kNeedMore;
        std::string_view line(line_);
        line.remove_suffix(1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (state_ == State::kTrailer) {
          if (line.empty()) state_ = State::kDone;
          line_.clear();
          continue;
        }
        line = Trim(line.substr(0, line.find(';')));
        std::size_t size = 0;
        auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
        if (line.empty() || ec != std::errc() || end != line.data() + line.size()) {
          return Status::kBad;
        }
        line_.clear();
        if (size > max_body_ || body.size() > max_body_ - size) return Status::kTooLarge;
        remaining_ = size;
        state_ = size == 0 ? State::kTrailer : State::kData;
        break;
      }
      case State::kData: {
        const std::size_t take = std::min(remaining_, in.size() - pos);
        body.append(in.substr(pos, take));
        pos += take;
        remaining_ -= take;
        if (remaining_ == 0) state_ = State::kDataEnd;
        break;
      }
      case State::kDataEnd: {
        // CRLF after the data (a bare LF is tolerated).
        const char c = in[pos++];
        if (c == '\r' && line_.empty()) {
          line_ = "\r";
        } else if (c == '\n') {
          line_.clear();
          state_ = State::kSize;
        } else {
          return Status::kBad;
        }
        break;
      }
    }
  }
  return Status::kNeedMore;
}

const char* Reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 417:
      return "Expectation Failed";
    case 421:
      return "Misdirected Request";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

bool HostAllowed(std::string_view host, const std::vector<std::string>& allowed) {
  while (!host.empty() && (host.front() == ' ' || host.front() == '\t')) host.remove_prefix(1);
  while (!host.empty() && (host.back() == ' ' || host.back() == '\t')) host.remove_suffix(1);
  if (host.empty()) return true;
  std::string_view name = host;
  if (name.front() == '[') {  // "[v6]" or "[v6]:port": only an IPv6 literal is bracketed
    const std::size_t close = name.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view rest = name.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return false;
    const std::string literal(name.substr(1, close - 1));
    in6_addr v6{};
    return literal.size() <= INET6_ADDRSTRLEN && inet_pton(AF_INET6, literal.c_str(), &v6) == 1;
  }
  if (const std::size_t colon = name.rfind(':'); colon != std::string_view::npos) {
    const std::string_view port = name.substr(colon + 1);
    if (port.find_first_not_of("0123456789") != std::string_view::npos) return false;
    name = name.substr(0, colon);
  }
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  if (name.empty() || name.size() > 253) return false;
  const std::string text(name);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return true;
  constexpr std::string_view kLocal = "localhost";
  constexpr std::string_view kUnderLocal = ".localhost";
  if (IEquals(name, kLocal)) return true;
  if (name.size() > kUnderLocal.size() &&
      IEquals(name.substr(name.size() - kUnderLocal.size()), kUnderLocal)) {
    return true;
  }
  for (const std::string& a : allowed) {
    std::string_view want = a;
    if (want == "*") return true;
    if (!want.empty() && want.back() == '.') want.remove_suffix(1);
    if (IEquals(name, want)) return true;
  }
  return false;
}

std::vector<std::string> AliasesInHostsFile(std::string_view hosts, std::string_view name) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < hosts.size()) {
    std::size_t end = hosts.find('\n', start);
    if (end == std::string_view::npos) end = hosts.size();
    std::string_view line = hosts.substr(start, end - start);
    start = end + 1;
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    std::vector<std::string_view> words;
    std::size_t at = 0;
    while (at < line.size()) {
      const std::size_t from = line.find_first_not_of(" \t\r", at);
      if (from == std::string_view::npos) break;
      std::size_t to = line.find_first_of(" \t\r", from);
      if (to == std::string_view::npos) to = line.size();
      words.push_back(line.substr(from, to - from));
      at = to;
    }
    bool names_it = false;
    for (std::size_t k = 1; k < words.size(); ++k) names_it = names_it || IEquals(words[k], name);
    if (!names_it) continue;
    for (std::size_t k = 1; k < words.size() && out.size() < 16; ++k) {
      if (!IEquals(words[k], name)) out.emplace_back(words[k]);
    }
  }
  return out;
}

std::string ErrorJson(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false,
                                                 nlohmann::json::error_handler_t::replace);
}

namespace {
// A handler's headers, less those the framing decides and any with a line break (which would
// split the answer).
void AppendHeaders(const httplib::Response& res, std::string& out) {
  for (const auto& [name, value] : res.headers) {
    if (IEquals(name, "Content-Length") || IEquals(name, "Transfer-Encoding") ||
        IEquals(name, "Connection")) {
      continue;
    }
    if (name.find_first_of("\r\n") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos) {
      continue;
    }
    out += name + ": " + value + "\r\n";
  }
}
}  // namespace

std::string FormatStreamHead(const httplib::Response& res) {
  const int status = res.status <= 0 ? 200 : res.status;
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) + "\r\n";
  AppendHeaders(res, out);
  if (!res.has_header("Cache-Control")) out += "Cache-Control: no-store\r\n";
  out += "X-Accel-Buffering: no\r\nConnection: close\r\n\r\n";
  return out;
}

std::string FormatResponse(const httplib::Response& res, bool head_only, bool keep_alive) {
  const int status = res.status <= 0 ? 200 : res.status;
  std::string out;
  out.reserve(256 + (head_only ? 0 : res.body.size()));
  out += "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) + "\r\n";
  AppendHeaders(res, out);
  const bool bodiless = status < 200 || status == 204 || status == 304;
  if (!bodiless) out += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  if (!head_only && !bodiless) out += res.body;
  return out;
}

}  // namespace gpufleet::net::wire
