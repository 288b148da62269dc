#include "tools/server/access_guard.h"

#include <nlohmann/json.hpp>

#include "tools/server/access_token.h"

namespace deepcontext::server {

namespace {

constexpr const char* kTokenHeader = "X-DeepContext-Token";

httplib::Server::HandlerResponse Refuse(httplib::Response& response,
                                        int status,
                                        const std::string& message) {
  response.status = status;
  response.set_content(nlohmann::json({{"error", message}}).dump(),
                       "application/json; charset=utf-8");
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

void InstallAccessGuard(httplib::Server& server, const std::string& token,
                        int port) {
  server.set_default_headers({
      {"Cache-Control", "no-store"},
      {"Referrer-Policy", "no-referrer"},
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
  });
  // After the route, so that the page's own policy is the only one: two
  // policies would both apply and block the page's scripts.
  server.set_post_routing_handler(
      [](const httplib::Request&, httplib::Response& response) {
        if (!response.has_header("Content-Security-Policy")) {
          response.set_header("Content-Security-Policy",
                              "default-src 'none'; frame-ancestors 'none'");
        }
      });
  const std::string port_text = std::to_string(port);
  server.set_pre_routing_handler(
      [token, port_text](const httplib::Request& request,
                         httplib::Response& response) {
        const std::string host = request.get_header_value("Host");
        if (host != "127.0.0.1:" + port_text && host != "localhost:" + port_text) {
          return Refuse(response, 403, "unexpected Host header");
        }
        std::string given = request.get_header_value(kTokenHeader);
        if (given.empty()) given = request.get_param_value("token");
        if (given.empty()) {
          return Refuse(response, 401,
                        "missing access token: open the URL that "
                        "`deepcontext view` printed");
        }
        if (!TokensEqual(token, given)) {
          return Refuse(response, 403, "wrong access token");
        }
        if (request.method != "GET" && request.method != "HEAD") {
          return Refuse(response, 405, "only GET is served");
        }
        return httplib::Server::HandlerResponse::Unhandled;
      });
}

}  // namespace deepcontext::server
