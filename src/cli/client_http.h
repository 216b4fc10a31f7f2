#pragma once
// What every client command shares: finding the server and token, checking an answer, and
// printing values safely. Internal to src/cli.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/client_commands.h"
#include "net/failover_client.h"
#include "net/http_client.h"

namespace gpufleet::cli {

struct Connection {
  std::string url;  // as given: one URL, or several comma-separated (the leader is followed)
  std::string token;
  std::optional<net::FailoverHttpClient> http;
};

// Finds the server and token; prints what to do and returns nothing when it cannot.
std::optional<Connection> Connect(const ClientOptions& o);
// Whether the data directory's token file (its own server's admin credential) may be sent to
// `urls` (as --server takes them): only when each is one of `own_urls` (`<data_dir>/server`) or
// on this machine, never to another cluster that --server or GPUFLEET_SERVER names.
bool TokenFileMayGoTo(const std::string& urls, const std::string& own_urls);
// The response's JSON body, or nothing after printing the error. `what` names the action.
std::optional<nlohmann::json> Check(const core::Result<net::HttpReply>& r, const Connection& c,
                                    const char* what);
// `text` as one query-string value: every byte but [A-Za-z0-9-._~] percent-encoded.
std::string QueryValue(const std::string& text);
// A value for a table cell: "-" for none, control characters escaped (Printable).
std::string Cell(const nlohmann::json& v);
// `j[key]`, read safely: nlohmann's const operator[] of a key that is not there (or of something
// that is not an object) is undefined behaviour in a Release build, and a server's answer may
// lack any field. A null there.
const nlohmann::json& Field(const nlohmann::json& j, const char* key);

}  // namespace gpufleet::cli
