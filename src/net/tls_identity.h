#pragma once
// The server's TLS identity: a private CA for the cluster and a server certificate it signs, made
// by `gpufleet up` / `gpufleet controller` on first start in `<data-dir>/tls/` (keys 0600).
//
//   ca.pem / ca.key          the cluster CA (EC P-256, 10 years); agents and CLIs trust it
//   server.pem / server.key  the server's certificate (1 year) followed by the CA's, and its key
//
// The CA is kept across restarts, so trust, once given, stays valid. The server certificate is
// issued again at a start when it would expire within 30 days, when it is not the CA's, or when
// it does not name every host it must (`names`: DNS names and IP addresses).
#include <string>
#include <vector>

#include "core/result.h"

namespace gpufleet::net {

struct TlsIdentity {
  std::string ca_file;      // PEM of the CA certificate
  std::string chain_file;   // the server certificate, then the CA's
  std::string key_file;     // the server's key
  std::string ca_sha256;    // hex SHA-256 of the CA certificate's DER (what join tokens pin)
  bool issued_now = false;  // the server certificate was (re)issued at this call
};

// Loads or makes the identity in `dir`. `names` (at least one) are DNS names or IP addresses; each
// is checked (letters, digits, '-', '.', or an address) so that none can smuggle in other
// certificate fields. Errors name the file or the name at fault.
core::Result<TlsIdentity> EnsureTlsIdentity(const std::string& dir,
                                            const std::vector<std::string>& names);

// True when `name` may go into a certificate as a host: an IPv4 or IPv6 address, or a DNS name of
// labels of letters, digits and '-' (at most 253 characters).
bool ValidTlsName(const std::string& name);

// The names a server listening on `host` should have in its certificate: localhost, 127.0.0.1,
// ::1, this machine's host name, every address of its interfaces, `host` itself unless it is a
// wildcard, and `extra`; without duplicates.
std::vector<std::string> DefaultTlsNames(const std::string& host,
                                         const std::vector<std::string>& extra);

}  // namespace gpufleet::net
