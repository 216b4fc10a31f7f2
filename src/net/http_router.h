#pragma once
// `Router`: what `HttpServer` does with a request once it has been read: the pre-routing handler
// and the auth hook (the admission), the routes, and the error answers. No I/O and no threads of
// its own: it runs on the server's worker pools (error answers also on its I/O thread), so it is
// configured before serving and only read afterwards.
#include <httplib.h>

#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "net/event_stream.h"

namespace gpufleet::net {

class Router {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  // May rewrite the request's headers (e.g. turn a session cookie into the credential it stands
  // for) before any route sees them.
  using AuthHook = std::function<bool(httplib::Request&, httplib::Response&)>;
  // A streamed answer: returns the stream to send (the answer's status and headers come from
  // `res`), or null after answering in `res` as a plain handler does (an error, say).
  using StreamHandler =
      std::function<std::shared_ptr<EventStream>(const httplib::Request&, httplib::Response&)>;
  using PreRoutingHandler =
      std::function<httplib::Server::HandlerResponse(const httplib::Request&, httplib::Response&)>;

  // `pattern` is a std::regex that must match the whole path; its groups land in `req.matches`.
  void Add(std::string method, const std::string& pattern, Handler handler);
  void AddStream(std::string method, const std::string& pattern, StreamHandler handler);
  void SetErrorHandler(Handler handler) { error_handler_ = std::move(handler); }
  void SetPreRoutingHandler(PreRoutingHandler handler) { pre_routing_ = std::move(handler); }
  void SetAuthHook(AuthHook hook) { auth_hook_ = std::move(hook); }

  // Whether requests must stop after their head for admission (a pre-routing handler or an auth
  // hook is set), before their body is read.
  bool AdmitsOnHead() const { return pre_routing_ || auth_hook_; }
  // Runs the pre-routing handler, then the auth hook, on a request's head; true when either
  // answered in `res` (a refused auth without a status >= 400 becomes a 401).
  bool Admit(httplib::Request& req, httplib::Response& res) const;
  // Paths longer than this are answered 414 before any pattern sees them (std::regex recursion).
  static constexpr std::size_t kMaxRoutedPath = 2048;
  // Runs the first route of the method (GET for HEAD) that matches the path; else answers 404, or
  // 405 with Allow when only other methods' routes match; a path over kMaxRoutedPath is a 414.
  // A stream route's stream lands in `*stream` (null: it answered in `res`, or no stream route).
  void Handle(httplib::Request& req, httplib::Response& res,
              std::shared_ptr<EventStream>* stream = nullptr) const;
  // An error answer with `res.status` already set: the error handler's body, else
  // {"error": message}.
  void ErrorAnswer(const httplib::Request& req, httplib::Response& res,
                   const std::string& message) const;

 private:
  struct Route {
    std::string method;
    std::regex pattern;
    Handler handler;
    StreamHandler stream_handler;  // set instead of `handler` for a stream route
  };
  std::vector<Route> routes_;
  Handler error_handler_;
  PreRoutingHandler pre_routing_;
  AuthHook auth_hook_;
};

}  // namespace gpufleet::net
