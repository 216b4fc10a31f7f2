#include "net/tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace gpufleet::net {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct StoreFree {
  void operator()(X509_STORE* s) const { X509_STORE_free(s); }
};
struct StoreCtxFree {
  void operator()(X509_STORE_CTX* s) const { X509_STORE_CTX_free(s); }
};

std::string Hex(const unsigned char* data, unsigned size) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < size; ++i) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 15];
  }
  return out;
}

std::string Sha256Of(X509* cert) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned size = 0;
  if (X509_digest(cert, EVP_sha256(), md, &size) != 1) return "";
  return Hex(md, size);
}

std::string PemOf(X509* cert) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return "";
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return size > 0 ? std::string(data, static_cast<std::size_t>(size)) : "";
}

void SetSocketTimeouts(int fd, int ms) {
  const timeval tv{ms / 1000, (ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool IsIpAddress(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

// OpenSSL's socket BIO with send(MSG_NOSIGNAL) and recv for its I/O; everything else (the fd,
// closing) is the socket BIO's own.
int NoSigpipeWrite(BIO* bio, const char* data, int size) {
  const int fd = static_cast<int>(BIO_get_fd(bio, nullptr));
  errno = 0;
  const ssize_t n = ::send(fd, data, static_cast<std::size_t>(size), MSG_NOSIGNAL);
  BIO_clear_retry_flags(bio);
  if (n < 0 && BIO_sock_should_retry(-1)) BIO_set_retry_write(bio);
  return static_cast<int>(n);
}

int NoSigpipeRead(BIO* bio, char* data, int size) {
  const int fd = static_cast<int>(BIO_get_fd(bio, nullptr));
  errno = 0;
  const ssize_t n = ::recv(fd, data, static_cast<std::size_t>(size), 0);
  BIO_clear_retry_flags(bio);
  if (n < 0 && BIO_sock_should_retry(-1)) BIO_set_retry_read(bio);
  return static_cast<int>(n);
}

int NoSigpipePuts(BIO* bio, const char* text) {
  return NoSigpipeWrite(bio, text, static_cast<int>(std::strlen(text)));
}

const BIO_METHOD* NoSigpipeSocketMethod() {
  static const BIO_METHOD* method = [] {
    const BIO_METHOD* socket = BIO_s_socket();
    BIO_METHOD* m = BIO_meth_new(BIO_TYPE_SOCKET, "gpufleet socket");
    BIO_meth_set_write(m, NoSigpipeWrite);
    BIO_meth_set_read(m, NoSigpipeRead);
    BIO_meth_set_puts(m, NoSigpipePuts);
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(socket));
    BIO_meth_set_create(m, BIO_meth_get_create(socket));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(socket));
    return m;
  }();
  return method;
}

}  // namespace

void EnableHttpsClients() {
  SetTlsConnector([](int fd, const std::string& host, const TlsTrust& trust,
                     int timeout_ms) -> core::Result<std::unique_ptr<TlsStream>> {
    auto session = TlsClientSession::Connect(fd, host, trust, timeout_ms);
    if (!session) return session.failure();
    return std::unique_ptr<TlsStream>(std::move(session).value());
  });
}

SslPtr NewSslOnSocket(SSL_CTX* ctx, int fd) {
  SslPtr ssl(SSL_new(ctx));
  if (!ssl) return nullptr;
  BIO* bio = BIO_new(NoSigpipeSocketMethod());
  if (bio == nullptr) return nullptr;
  BIO_set_fd(bio, fd, BIO_NOCLOSE);
  SSL_set_bio(ssl.get(), bio, bio);
  return ssl;
}

std::string TlsErrorText(const std::string& fallback) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return fallback;
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

core::Result<std::string> CertificateSha256(const std::string& pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::unique_ptr<X509, X509Free> cert(
      bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!cert) return core::Error{"not a PEM certificate: " + TlsErrorText("unreadable")};
  return Sha256Of(cert.get());
}

bool NormalizePin(std::string& text) {
  if (text.rfind("sha256:", 0) == 0) text.erase(0, 7);
  if (text.size() != 64) return false;
  for (char& c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return true;
}

core::Result<std::unique_ptr<TlsClientSession>> TlsClientSession::Connect(int fd,
                                                                          const std::string& host,
                                                                          const TlsTrust& trust,
                                                                          int timeout_ms) {
  if (trust.empty()) {
    return core::Error{"no CA to trust for https: give --ca FILE (or GPUFLEET_CA), the ca.pem "
                       "of the server's data directory"};
  }
  std::unique_ptr<TlsClientSession> s(new TlsClientSession());
  s->ctx_.reset(SSL_CTX_new(TLS_client_method()));
  if (!s->ctx_) return core::Error{"TLS: " + TlsErrorText("cannot make a context")};
  SSL_CTX_set_min_proto_version(s->ctx_.get(), TLS1_2_VERSION);
  // Verified below, against the chosen anchor only, before any request byte is sent.
  SSL_CTX_set_verify(s->ctx_.get(), SSL_VERIFY_NONE, nullptr);
  s->ssl_ = NewSslOnSocket(s->ctx_.get(), fd);
  if (!s->ssl_) {
    return core::Error{"TLS: " + TlsErrorText("cannot make a session")};
  }
  SSL_set_mode(s->ssl_.get(), SSL_MODE_AUTO_RETRY);
  if (!IsIpAddress(host)) SSL_set_tlsext_host_name(s->ssl_.get(), host.c_str());
  SetSocketTimeouts(fd, timeout_ms);
  ERR_clear_error();
  if (SSL_connect(s->ssl_.get()) != 1) {
    const bool timed_out = errno == EAGAIN || errno == EWOULDBLOCK;
    return core::Error{"TLS handshake with " + host + " failed: " +
                       (timed_out ? "no answer within " + std::to_string(timeout_ms) + " ms"
                                  : TlsErrorText("the server is not speaking TLS (an http:// "
                                                 "server?)"))};
  }

  // Verify the chain against the anchor, and that the certificate names `host`.
  X509* leaf = SSL_get0_peer_certificate(s->ssl_.get());
  STACK_OF(X509)* chain = SSL_get_peer_cert_chain(s->ssl_.get());
  if (leaf == nullptr) return core::Error{"TLS: the server sent no certificate"};
  std::unique_ptr<X509_STORE, StoreFree> store(X509_STORE_new());
  if (!trust.ca_file.empty()) {
    if (X509_STORE_load_file(store.get(), trust.ca_file.c_str()) != 1) {
      return core::Error{"cannot read the CA file " + trust.ca_file + ": " +
                         TlsErrorText("not a PEM certificate")};
    }
  } else {
    X509* anchor = nullptr;
    for (int i = 0; chain != nullptr && i < sk_X509_num(chain); ++i) {
      if (Sha256Of(sk_X509_value(chain, i)) == trust.pin_sha256) anchor = sk_X509_value(chain, i);
    }
    if (anchor == nullptr) {
      return core::Error{"the server at " + host +
                         " does not present the CA the join token names (sha256 " +
                         trust.pin_sha256.substr(0, 16) +
                         "...): another server, or a token of another cluster; nothing was sent"};
    }
    X509_STORE_add_cert(store.get(), anchor);
  }
  std::unique_ptr<X509_STORE_CTX, StoreCtxFree> verify(X509_STORE_CTX_new());
  if (!verify || X509_STORE_CTX_init(verify.get(), store.get(), leaf, chain) != 1) {
    return core::Error{"TLS: " + TlsErrorText("cannot verify")};
  }
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(verify.get());
  X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
  if (IsIpAddress(host)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  }
  if (X509_verify_cert(verify.get()) != 1) {
    const int error = X509_STORE_CTX_get_error(verify.get());
    std::string why = X509_verify_cert_error_string(error);
    if (error == X509_V_ERR_HOSTNAME_MISMATCH || error == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      why += ": the server's certificate does not name " + host +
             " (start the server with --tls-san " + host + ")";
    }
    ERR_clear_error();
    return core::Error{"the server at " + host + " is not trusted: " + why + "; nothing was sent"};
  }
  STACK_OF(X509)* verified = X509_STORE_CTX_get0_chain(verify.get());
  if (verified != nullptr && sk_X509_num(verified) > 0) {
    s->anchor_pem_ = PemOf(sk_X509_value(verified, sk_X509_num(verified) - 1));
  }
  return s;
}

TlsClientSession::~TlsClientSession() = default;

long TlsClientSession::Write(const char* data, std::size_t size) {
  std::size_t written = 0;
  ERR_clear_error();
  if (SSL_write_ex(ssl_.get(), data, size, &written) != 1) return -1;
  return static_cast<long>(written);
}

long TlsClientSession::Read(char* data, std::size_t size) {
  std::size_t got = 0;
  ERR_clear_error();
  if (SSL_read_ex(ssl_.get(), data, size, &got) == 1) return static_cast<long>(got);
  const int error = SSL_get_error(ssl_.get(), 0);
  if (error == SSL_ERROR_ZERO_RETURN) return 0;
  // A server that closes without close_notify (after a "Connection: close" answer) ends the
  // stream too; OpenSSL 3 reports it as an unexpected EOF.
  if (error == SSL_ERROR_SSL &&
      ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    ERR_clear_error();
    return 0;
  }
  if (error == SSL_ERROR_SYSCALL && errno == 0) return 0;
  ERR_clear_error();
  return -1;
}

bool TlsClientSession::HasBuffered() const { return SSL_pending(ssl_.get()) > 0; }

void TlsClientSession::Shutdown() {
  ERR_clear_error();
  SSL_shutdown(ssl_.get());
  ERR_clear_error();
}

core::Result<std::shared_ptr<TlsServerContext>> TlsServerContext::Create(
    const std::string& chain_file, const std::string& key_file) {
  auto context = std::make_shared<TlsServerContext>();
  context->ctx_.reset(SSL_CTX_new(TLS_server_method()));
  SSL_CTX* ctx = context->ctx_.get();
  if (ctx == nullptr) return core::Error{"TLS: " + TlsErrorText("cannot make a context")};
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx, chain_file.c_str()) != 1) {
    return core::Error{"cannot load the TLS certificate " + chain_file + ": " +
                       TlsErrorText("unreadable")};
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    return core::Error{"cannot load the TLS key " + key_file + " (or it does not match " +
                       chain_file + "): " + TlsErrorText("unreadable")};
  }
  return context;
}

}  // namespace gpufleet::net
