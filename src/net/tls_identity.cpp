#include "net/tls_identity.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "net/private_file.h"
#include "net/tls.h"

namespace gpufleet::net {
namespace {

constexpr long kCaDays = 3650;
constexpr long kServerDays = 365;
constexpr long kRenewDays = 30;

struct Free {
  void operator()(X509* x) const { X509_free(x); }
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(BIO* b) const { BIO_free(b); }
  void operator()(X509_EXTENSION* e) const { X509_EXTENSION_free(e); }
};
using CertPtr = std::unique_ptr<X509, Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Free>;
using BioPtr = std::unique_ptr<BIO, Free>;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool IsIp(const std::string& name) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, name.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, name.c_str(), buffer) == 1;
}

CertPtr LoadCert(const std::string& path) {
  const std::string pem = ReadFile(path);
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return CertPtr(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
}

KeyPtr LoadKey(const std::string& path) {
  const std::string pem = ReadFile(path);
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return KeyPtr(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
}

std::string PemOfCert(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return "";
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

std::string PemOfKey(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return "";
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

bool AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, Free> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

// A certificate for `key` named `common_name`, signed by `issuer_key` (self-signed when `issuer`
// is null), with `extensions` (nid, value).
core::Result<CertPtr> Issue(EVP_PKEY* key, const std::string& common_name, long days,
                            X509* issuer, EVP_PKEY* issuer_key,
                            const std::vector<std::pair<int, std::string>>& extensions) {
  CertPtr cert(X509_new());
  if (!cert) return core::Error{"TLS: " + TlsErrorText("out of memory")};
  X509_set_version(cert.get(), 2);
  // A random 159-bit serial, as RFC 5280 and the CA/Browser rules expect.
  BIGNUM* serial = BN_new();
  BN_rand(serial, 159, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY);
  BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert.get()));
  BN_free(serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // clocks of agents may lag a bit
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), days * 86400L);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("gpufleet"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  for (const auto& [nid, value] : extensions) {
    if (!AddExtension(cert.get(), signer, nid, value)) {
      return core::Error{"TLS: cannot add a certificate extension (" + value +
                         "): " + TlsErrorText("rejected")};
    }
  }
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) {
    return core::Error{"TLS: cannot sign a certificate: " + TlsErrorText("failed")};
  }
  return cert;
}

// The server certificate is good for another while, is the CA's, and names every host.
bool ServerCertStillGood(X509* cert, EVP_PKEY* ca_key, const std::vector<std::string>& names) {
  if (cert == nullptr || X509_verify(cert, ca_key) != 1) return false;
  time_t renew_after = time(nullptr) + kRenewDays * 86400L;
  if (X509_cmp_time(X509_get0_notAfter(cert), &renew_after) <= 0) return false;
  for (const std::string& name : names) {
    const int ok = IsIp(name) ? X509_check_ip_asc(cert, name.c_str(), 0)
                              : X509_check_host(cert, name.c_str(), name.size(), 0, nullptr);
    if (ok != 1) return false;
  }
  ERR_clear_error();
  return true;
}

}  // namespace

bool ValidTlsName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  if (IsIp(name)) return true;
  std::size_t label = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    (c == '-' && label > 0);
    if (!ok || ++label > 63) return false;
  }
  return label > 0 && name.back() != '-';
}

std::vector<std::string> DefaultTlsNames(const std::string& host,
                                         const std::vector<std::string>& extra) {
  std::vector<std::string> names = {"localhost", "127.0.0.1", "::1"};
  char hostname[256] = "";
  if (gethostname(hostname, sizeof hostname - 1) == 0 && ValidTlsName(hostname)) {
    names.push_back(hostname);
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr) continue;
      char text[INET6_ADDRSTRLEN] = "";
      if (a->ifa_addr->sa_family == AF_INET) {
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text,
                  sizeof text);
      } else if (a->ifa_addr->sa_family == AF_INET6) {
        const auto* six = reinterpret_cast<sockaddr_in6*>(a->ifa_addr);
        if (IN6_IS_ADDR_LINKLOCAL(&six->sin6_addr)) continue;  // needs a zone; no use in a URL
        inet_ntop(AF_INET6, &six->sin6_addr, text, sizeof text);
      }
      if (text[0] != '\0') names.push_back(text);
    }
    freeifaddrs(list);
  }
  if (!host.empty() && host != "0.0.0.0" && host != "::" && ValidTlsName(host)) {
    names.push_back(host);
  }
  for (const std::string& name : extra) names.push_back(name);
  std::vector<std::string> unique;
  for (const std::string& name : names) {
    if (std::find(unique.begin(), unique.end(), name) == unique.end()) unique.push_back(name);
  }
  return unique;
}

core::Result<TlsIdentity> EnsureTlsIdentity(const std::string& dir,
                                            const std::vector<std::string>& names) {
  if (names.empty()) return core::Error{"TLS: no host name for the server certificate"};
  for (const std::string& name : names) {
    if (!ValidTlsName(name)) {
      return core::Error{"'" + name + "' is not a host name or IP address", core::ErrorCode::kInvalid,
                         "tls-san"};
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || ::chmod(dir.c_str(), 0700) != 0) {
    return core::Error{"cannot create " + dir + " (mode 0700)" +
                       (ec ? ": " + ec.message() : std::string())};
  }
  TlsIdentity id;
  id.ca_file = dir + "/ca.pem";
  id.chain_file = dir + "/server.pem";
  id.key_file = dir + "/server.key";
  const std::string ca_key_file = dir + "/ca.key";

  CertPtr ca = LoadCert(id.ca_file);
  KeyPtr ca_key = LoadKey(ca_key_file);
  ERR_clear_error();
  if (!ca || !ca_key || X509_check_private_key(ca.get(), ca_key.get()) != 1) {
    if (std::filesystem::exists(id.ca_file, ec) || std::filesystem::exists(ca_key_file, ec)) {
      // Never replace a CA silently: every agent and user trusts it.
      return core::Error{"the cluster CA in " + dir +
                         " is unreadable or its key does not match; restore it, or remove "
                         "ca.pem and ca.key to make a new one (every agent must then join again)"};
    }
    ca_key.reset(EVP_EC_gen("P-256"));
    if (!ca_key) return core::Error{"TLS: cannot make a key: " + TlsErrorText("failed")};
    auto made = Issue(ca_key.get(), "gpufleet cluster CA", kCaDays, nullptr, ca_key.get(),
                      {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                       {NID_key_usage, "critical,keyCertSign,cRLSign"},
                       {NID_subject_key_identifier, "hash"}});
    if (!made) return made.failure();
    ca = std::move(made).value();
    // The key first: a CA certificate without its key would be refused at the next start.
    if (auto r = WritePrivateFile(ca_key_file, PemOfKey(ca_key.get())); !r) return r.failure();
    if (auto r = WritePrivateFile(id.ca_file, PemOfCert(ca.get())); !r) return r.failure();
  }
  ERR_clear_error();
  {
    const std::string ca_pem = PemOfCert(ca.get());
    auto sha = CertificateSha256(ca_pem);
    if (!sha) return sha.failure();
    id.ca_sha256 = sha.value();
  }

  CertPtr server = LoadCert(id.chain_file);
  KeyPtr server_key = LoadKey(id.key_file);
  ERR_clear_error();
  if (server && server_key && X509_check_private_key(server.get(), server_key.get()) == 1 &&
      ServerCertStillGood(server.get(), ca_key.get(), names)) {
    return id;
  }
  ERR_clear_error();
  server_key.reset(EVP_EC_gen("P-256"));
  if (!server_key) return core::Error{"TLS: cannot make a key: " + TlsErrorText("failed")};
  std::string san;
  for (const std::string& name : names) {
    san += (san.empty() ? "" : ",") + std::string(IsIp(name) ? "IP:" : "DNS:") + name;
  }
  auto made = Issue(server_key.get(), "gpufleet server", kServerDays, ca.get(), ca_key.get(),
                    {{NID_basic_constraints, "critical,CA:FALSE"},
                     {NID_key_usage, "critical,digitalSignature"},
                     {NID_ext_key_usage, "serverAuth"},
                     {NID_subject_key_identifier, "hash"},
                     {NID_authority_key_identifier, "keyid:always"},
                     {NID_subject_alt_name, san}});
  if (!made) return made.failure();
  if (auto r = WritePrivateFile(id.key_file, PemOfKey(server_key.get())); !r) return r.failure();
  if (auto r = WritePrivateFile(id.chain_file, PemOfCert(made.value().get()) + PemOfCert(ca.get()));
      !r) {
    return r.failure();
  }
  id.issued_now = true;
  return id;
}

}  // namespace gpufleet::net
