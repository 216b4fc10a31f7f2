#pragma once
// The HTTP/1.1 wire format as `HttpServer` reads and writes it: the request head (request line and
// header fields) into httplib's plain `Request` struct, the chunked transfer coding, URL decoding,
// and the answer's bytes. Pure functions over strings, so every limit is unit-testable without a
// socket. Nothing here decompresses or allocates more than the caller's limits allow.
#include <httplib.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufleet::net::wire {

// An error found while reading a request: the status to answer and the message of its JSON body.
struct WireError {
  int status = 400;
  std::string message;
};

// Parses `head` (request line and header fields, without the blank line that ends them) into
// `req`: method, target, path (percent-decoded), params (the query, decoded), version, headers.
// More than `max_headers` fields is a 431; anything malformed a 400; a version other than
// HTTP/1.0 or HTTP/1.1 a 505.
std::optional<WireError> ParseHead(std::string_view head, int max_headers, httplib::Request& req);

// How a request's body is framed, and what the connection does after it.
struct Framing {
  bool keep_alive = true;
  bool chunked = false;
  std::size_t content_length = 0;  // when not chunked
  bool expect_continue = false;    // "Expect: 100-continue"
};
// Reads the framing of a parsed head and checks it against the limits, before any body byte:
// Transfer-Encoding other than chunked (501), both it and Content-Length or a malformed or
// conflicting Content-Length (400), a Content-Encoding other than identity (415: bodies are
// never decompressed), a Content-Length over `max_body` (413), a POST, PUT or PATCH with neither
// (411), an Expect other than 100-continue (417).
std::optional<WireError> ReadFraming(const httplib::Request& req, std::size_t max_body,
                                     Framing& framing);

// Whether a request's Host header (`host`, with or without its port) may reach a server that
// listens on loopback only. A web page on any site can have the browser send requests to
// 127.0.0.1 under its own name (DNS rebinding: "attacker.example" resolves to 127.0.0.1) and read
// the answers as same-origin; such a request names a host the server is not. Accepted: an empty
// Host (no browser sends one), an IP address literal ("127.0.0.1", "[::1]"), "localhost" and names
// under ".localhost" (browsers resolve those to loopback themselves), and the names in `allowed`
// (case-insensitive; "*" accepts every name). A trailing dot is ignored.
bool HostAllowed(std::string_view host, const std::vector<std::string>& allowed);

// The other names of `name` in the text of an /etc/hosts file: every name on each line that
// names it (case-insensitive), `name` itself left out; comments ignored.
std::vector<std::string> AliasesInHostsFile(std::string_view hosts, std::string_view name);

// Percent-decoding; `plus_as_space` for query strings. Invalid escapes are kept as they are.
std::string DecodeUrl(std::string_view text, bool plus_as_space);
void ParseQuery(std::string_view query, httplib::Params& params);

// Decodes a chunked body incrementally, as bytes arrive. Never holds more than `max_body` bytes of
// data, nor a size or trailer line longer than a few KiB.
class ChunkedDecoder {
 public:
  enum class Status { kNeedMore, kDone, kBad, kTooLarge };
  explicit ChunkedDecoder(std::size_t max_body) : max_body_(max_body) {}
  // Consumes from `in` (from `pos` on, advancing it), appending the data to `body`.
  Status Feed(std::string_view in, std::size_t& pos, std::string& body);

 private:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone };
  std::size_t max_body_;
  State state_ = State::kSize;
  std::size_t remaining_ = 0;
  std::string line_;
  std::size_t trailer_bytes_ = 0;
};

// ASCII case-insensitive equality (header names, tokens).
bool IEquals(std::string_view a, std::string_view b);
// The reason phrase of a status ("Not Found"), or "Unknown".
const char* Reason(int status);
// {"error": message} as JSON text.
std::string ErrorJson(const std::string& message);
// The answer's bytes: status line, `res.headers` (less the framing ones, which this writes),
// Content-Length, Connection, then the body unless `head_only`. A status of -1 (httplib's "not
// set") is sent as 200.
std::string FormatResponse(const httplib::Response& res, bool head_only, bool keep_alive);
// The head of a streamed answer (HttpServer::GetStream): `res`'s status and headers, no length,
// no caching, and Connection: close (the body ends when the connection does).
std::string FormatStreamHead(const httplib::Response& res);

}  // namespace gpufleet::net::wire
