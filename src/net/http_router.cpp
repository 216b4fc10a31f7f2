#include "net/http_router.h"

#include "net/http_wire.h"

namespace gpufleet::net {

void Router::Add(std::string method, const std::string& pattern, Handler handler) {
  routes_.push_back({std::move(method), std::regex(pattern), std::move(handler), nullptr});
}

void Router::AddStream(std::string method, const std::string& pattern, StreamHandler handler) {
  routes_.push_back({std::move(method), std::regex(pattern), nullptr, std::move(handler)});
}

bool Router::Admit(httplib::Request& req, httplib::Response& res) const {
  if (pre_routing_ && pre_routing_(req, res) == httplib::Server::HandlerResponse::Handled) {
    return true;
  }
  if (!auth_hook_ || auth_hook_(req, res)) return false;
  if (res.status < 400) res.status = 401;
  if (res.body.empty()) res.set_content(wire::ErrorJson("unauthorized"), "application/json");
  return true;
}

void Router::Handle(httplib::Request& req, httplib::Response& res,
                    std::shared_ptr<EventStream>* stream) const {
  if (req.path.size() > kMaxRoutedPath) {
    // libstdc++'s regex_match recurses once per character: a long path must not reach it.
    res.status = 414;
    ErrorAnswer(req, res,
                "path longer than " + std::to_string(kMaxRoutedPath) + " bytes: no route has one");
    return;
  }
  const std::string method = req.method == "HEAD" ? "GET" : req.method;
  for (const Route& route : routes_) {
    if (route.method == method && std::regex_match(req.path, req.matches, route.pattern)) {
      if (route.handler) {
        route.handler(req, res);
      } else if (stream != nullptr) {
        *stream = route.stream_handler(req, res);
      } else {
        res.status = 500;
        ErrorAnswer(req, res, "a streamed answer is not available here");
      }
      return;
    }
  }
  std::string allowed;
  for (const Route& route : routes_) {
    if (allowed.find(route.method) == std::string::npos &&
        std::regex_match(req.path, route.pattern)) {
      allowed += (allowed.empty() ? "" : ", ") + route.method;
    }
  }
  if (allowed.empty()) {
    res.status = 404;
    ErrorAnswer(req, res, "no such endpoint: " + req.method + " " + req.path);
    return;
  }
  res.status = 405;
  res.set_header("Allow", allowed);
  ErrorAnswer(
      req, res,
      "method " + req.method + " not allowed on " + req.path + " (allowed: " + allowed + ")");
}

void Router::ErrorAnswer(const httplib::Request& req, httplib::Response& res,
                         const std::string& message) const {
  res.body.clear();
  if (error_handler_) error_handler_(req, res);
  if (res.body.empty()) res.set_content(wire::ErrorJson(message), "application/json");
}

}  // namespace gpufleet::net
