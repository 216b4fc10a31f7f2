#pragma once
// TLS for gpufleet's HTTP, on OpenSSL (Debian's libssl3): what a client trusts, the client side of
// a connection, and the server's context.
//
// Trust is a private cluster CA (see tls_identity.h), never the system's store: a client trusts a
// CA file it was given (`--ca`, `GPUFLEET_CA`, the data directory's `ca.pem`), or, when it joins,
// the one certificate of the server's chain whose SHA-256 the join token names (pinning, as
// kubeadm's `--discovery-token-ca-cert-hash` does). The chain is verified after the handshake and
// before any request byte leaves, against exactly that anchor, and the server's certificate must
// name the host the client dialled (DNS name or IP address).
#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "core/result.h"
#include "net/http_client.h"

namespace gpufleet::net {

// Makes HttpClient able to speak https (SetTlsConnector with TlsClientSession::Connect). Called
// at the start of every program that talks to a server over https.
void EnableHttpsClients();

// "sha256 of the DER" of the first certificate in `pem`, as 64 lower-case hex digits.
core::Result<std::string> CertificateSha256(const std::string& pem);
// True when `text` is 64 hex digits (a pin); lower-cases it.
bool NormalizePin(std::string& text);

struct SslFree {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using SslPtr = std::unique_ptr<SSL, SslFree>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslFree>;

// A TLS session on socket `fd` (not owned) whose writes never raise SIGPIPE: a peer that closes
// early costs an error, not the process (OpenSSL's socket BIO writes with write(2)).
SslPtr NewSslOnSocket(SSL_CTX* ctx, int fd);

// A client's TLS session over a connected blocking socket `fd` (not owned). Connect does the
// handshake within `timeout_ms` and verifies the server against `trust` for `host`; errors say
// which step failed and what to do.
class TlsClientSession final : public TlsStream {
 public:
  static core::Result<std::unique_ptr<TlsClientSession>> Connect(int fd, const std::string& host,
                                                                 const TlsTrust& trust,
                                                                 int timeout_ms);
  ~TlsClientSession() override;
  // Like send/recv on a blocking socket: bytes moved, 0 at a clean end (read), -1 on error
  // (errno kept for timeouts: EAGAIN).
  long Write(const char* data, std::size_t size) override;
  long Read(char* data, std::size_t size) override;
  // Decrypted bytes waiting in the session: a read returns them without touching the socket.
  bool HasBuffered() const override;
  // The PEM of the CA certificate the verification anchored on (to save after a pinned join).
  const std::string& AnchorPem() const override { return anchor_pem_; }
  // Sends close_notify (best effort).
  void Shutdown();

 private:
  TlsClientSession() = default;
  SslCtxPtr ctx_;
  SslPtr ssl_;
  std::string anchor_pem_;
};

// The server's side: a context made from a certificate chain and key (PEM files), TLS 1.2 or
// later, no renegotiation. Shared by every connection of an HttpServer.
class TlsServerContext {
 public:
  static core::Result<std::shared_ptr<TlsServerContext>> Create(const std::string& chain_file,
                                                                const std::string& key_file);
  SSL_CTX* get() const { return ctx_.get(); }

 private:
  SslCtxPtr ctx_;
};

// The first error on OpenSSL's queue as text (and the queue cleared), or `fallback`.
std::string TlsErrorText(const std::string& fallback);

}  // namespace gpufleet::net
