#include "net/http_wire.h"

#include <gtest/gtest.h>

namespace gpufleet::net::wire {
namespace {

TEST(HttpWire, ParsesTheHeadAndDecodesPathAndQuery) {
  httplib::Request req;
  auto error = ParseHead(
      "GET /v1/jobs/a%20b?user=al%2Bice&state=RUNNING&x=1+2&flag HTTP/1.1\r\nHost: h\r\n"
      "Authorization:   Bearer t  \r\nX-Two: 1\r\nX-Two: 2",
      10, req);
  ASSERT_FALSE(error) << error->message;
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.path, "/v1/jobs/a b");
  EXPECT_EQ(req.get_param_value("user"), "al+ice");
  EXPECT_EQ(req.get_param_value("x"), "1 2");
  EXPECT_TRUE(req.has_param("flag"));
  EXPECT_EQ(req.get_header_value("authorization"), "Bearer t");
  EXPECT_EQ(req.get_header_value_count("X-Two"), 2U);
}

TEST(HttpWire, HostAllowedTakesAddressesLocalhostAndTheNamedHostsOnly) {
  const std::vector<std::string> allowed = {"gpu.example", "tunnel.example."};
  for (const char* ok : {"", "127.0.0.1", "127.0.0.1:9500", "10.1.2.3:80", "[::1]", "[::1]:9500",
                         "[2001:db8::1]:1", "localhost", "LocalHost:1", "localhost.", "a.localhost",
                         "gpu.example", "GPU.example:443", "tunnel.example", " gpu.example "}) {
    EXPECT_TRUE(HostAllowed(ok, allowed)) << ok;
  }
  for (const char* bad : {"evil.example", "evil.example:9500", "localhost.evil.example",
                          "127.0.0.1.nip.io", "gpu.example.evil", "[::1", "[::1]x", "[nothing]",
                          "localhost:port", ":9500", ".", "xgpu.example", "localhost:9500:1"}) {
    EXPECT_FALSE(HostAllowed(bad, allowed)) << bad;
  }
  EXPECT_TRUE(HostAllowed("anything.example", {"*"}));
}

TEST(HttpWire, AliasesInHostsFileAreTheOtherNamesOnTheLinesThatNameIt) {
  const std::string hosts =
      "127.0.0.1 localhost\n"
      "127.0.1.1\tgpu01.example.com gpu01  # this machine\n"
      "# 10.0.0.9 gpu01 evil.example\n"
      "10.0.0.5 other.example\n"
      "::1 GPU01 gpu01-v6";
  EXPECT_EQ(AliasesInHostsFile(hosts, "gpu01"),
            (std::vector<std::string>{"gpu01.example.com", "gpu01-v6"}));
  EXPECT_TRUE(AliasesInHostsFile(hosts, "nobody").empty());
  EXPECT_TRUE(AliasesInHostsFile("", "gpu01").empty());
}

TEST(HttpWire, RejectsMalformedHeadsWithTheRightStatus) {
  struct Case {
    const char* head;
    int status;
  };
  for (const Case& c : std::vector<Case>{{"garbage", 400},
                                         {"GET /  HTTP/1.1", 400},
                                         {"GET / HTTP/2.0", 505},
                                         {"GET / FTP/1.0", 400},
                                         {"GET nopath HTTP/1.1", 400},
                                         {"G(T / HTTP/1.1", 400},
                                         {"GET / HTTP/1.1\r\nNo colon here", 400},
                                         {"GET / HTTP/1.1\r\nBad Name: x", 400},
                                         {"GET / HTTP/1.1\r\nA: 1\r\n folded", 400},
                                         // A bare LF could hide a second request in the head.
                                         {"GET /a HTTP/1.1\nHost: x\n\nGET /b HTTP/1.1", 400},
                                         {"GET / HTTP/1.1\r\nA: 1\nB: 2", 400},
                                         {"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4", 431}}) {
    httplib::Request req;
    auto error = ParseHead(c.head, 3, req);
    ASSERT_TRUE(error) << c.head;
    EXPECT_EQ(error->status, c.status) << c.head;
    EXPECT_FALSE(error->message.empty());
  }
}

TEST(HttpWire, FramingIsCheckedBeforeAnyBodyByte) {
  struct Case {
    const char* head;
    int status;  // 0: accepted
  };
  for (const Case& c : std::vector<Case>{
           {"GET / HTTP/1.1", 0},
           {"POST / HTTP/1.1\r\nContent-Length: 10", 0},
           {"POST / HTTP/1.1\r\nTransfer-Encoding: Chunked", 0},
           {"POST / HTTP/1.1\r\nContent-Length: 10\r\nContent-Encoding: identity", 0},
           {"POST / HTTP/1.1", 411},
           {"PUT / HTTP/1.1", 411},
           {"POST / HTTP/1.1\r\nContent-Length: 101", 413},
           {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999", 400},
           {"POST / HTTP/1.1\r\nContent-Length: -1", 400},
           {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2", 400},
           {"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked", 400},
           {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked", 501},
           {"POST / HTTP/1.1\r\nContent-Length: 10\r\nContent-Encoding: gzip", 415},
           {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Encoding: br", 415},
           {"POST / HTTP/1.1\r\nContent-Length: 1\r\nExpect: 200-ok", 417},
       }) {
    httplib::Request req;
    ASSERT_FALSE(ParseHead(c.head, 10, req)) << c.head;
    Framing framing;
    auto error = ReadFraming(req, 100, framing);
    EXPECT_EQ(error ? error->status : 0, c.status) << c.head;
  }
  httplib::Request old;
  ASSERT_FALSE(ParseHead("GET / HTTP/1.0\r\nConnection: Keep-Alive", 10, old));
  Framing framing;
  ASSERT_FALSE(ReadFraming(old, 100, framing));
  EXPECT_TRUE(framing.keep_alive);
  httplib::Request closing;
  ASSERT_FALSE(ParseHead("GET / HTTP/1.1\r\nConnection: foo, close", 10, closing));
  ASSERT_FALSE(ReadFraming(closing, 100, framing));
  EXPECT_FALSE(framing.keep_alive);
}

TEST(HttpWire, DecodesChunkedBodiesFedByteByByte) {
  const std::string wire = "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n";
  ChunkedDecoder decoder(1024);
  std::string body;
  ChunkedDecoder::Status status = ChunkedDecoder::Status::kNeedMore;
  for (char c : wire) {
    std::size_t pos = 0;
    const std::string one(1, c);
    status = decoder.Feed(one, pos, body);
    ASSERT_NE(status, ChunkedDecoder::Status::kBad);
  }
  EXPECT_EQ(status, ChunkedDecoder::Status::kDone);
  EXPECT_EQ(body, "hello world");
}

TEST(HttpWire, ChunkedBodiesAreBoundedAndChecked) {
  std::string body;
  std::size_t pos = 0;
  ChunkedDecoder small(10);
  EXPECT_EQ(small.Feed("8\r\n12345678\r\n8\r\n", pos, body), ChunkedDecoder::Status::kTooLarge);
  pos = 0;
  body.clear();
  ChunkedDecoder huge(10);
  EXPECT_EQ(huge.Feed("ffffffffffffffffffff\r\n", pos, body), ChunkedDecoder::Status::kBad);
  pos = 0;
  ChunkedDecoder bad(10);
  EXPECT_EQ(bad.Feed("zz\r\n", pos, body), ChunkedDecoder::Status::kBad);
  pos = 0;
  ChunkedDecoder no_crlf(10);
  EXPECT_EQ(no_crlf.Feed("2\r\nabX", pos, body), ChunkedDecoder::Status::kBad);
  pos = 0;
  ChunkedDecoder endless(1 << 20);
  EXPECT_EQ(endless.Feed(std::string(8192, '0'), pos, body), ChunkedDecoder::Status::kBad);
}

TEST(HttpWire, FormatsAnswersWithOwnFraming) {
  httplib::Response res;
  res.set_content("{}", "application/json");
  res.set_header("Content-Length", "999");
  res.set_header("X-Evil", "a\r\nInjected: 1");
  const std::string out = FormatResponse(res, false, true);
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\n", 0), 0U);
  EXPECT_NE(out.find("Content-Length: 2\r\n"), std::string::npos);
  EXPECT_EQ(out.find("999"), std::string::npos);
  EXPECT_EQ(out.find("Injected"), std::string::npos);
  EXPECT_NE(out.find("Connection: keep-alive\r\n\r\n{}"), std::string::npos);
  const std::string head = FormatResponse(res, true, false);
  EXPECT_NE(head.find("Content-Length: 2\r\n"), std::string::npos);
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");
}

}  // namespace
}  // namespace gpufleet::net::wire
