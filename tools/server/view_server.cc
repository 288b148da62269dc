#include "tools/server/view_server.h"

#include <sys/socket.h>

#include <httplib.h>

#include "tools/server/access_guard.h"
#include "tools/server/access_token.h"
#include "tools/server/view_api.h"

namespace deepcontext::server {

namespace {
constexpr const char* kHost = "127.0.0.1";
}  // namespace

ViewServer::ViewServer(std::vector<std::string> files)
    : store_(std::move(files)),
      http_(std::make_unique<httplib::Server>()),
      token_(NewAccessToken()) {}

ViewServer::~ViewServer() { Stop(); }

StatusOr<std::unique_ptr<ViewServer>> ViewServer::Bind(
    std::vector<std::string> files, int port) {
  std::unique_ptr<ViewServer> server(new ViewServer(std::move(files)));
  // httplib's default SO_REUSEPORT would let another process bind the same
  // port and take over half the connections, token included.
  server->http_->set_socket_options([](socket_t socket) {
    int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  if (port == 0) {
    server->port_ = server->http_->bind_to_any_port(kHost);
  } else if (server->http_->bind_to_port(kHost, port)) {
    server->port_ = port;
  } else {
    server->port_ = -1;
  }
  if (server->port_ <= 0) {
    return Error{ErrorCode::kBadRequest,
                 "cannot listen on " + std::string(kHost) + ":" +
                     std::to_string(port)};
  }
  InstallAccessGuard(*server->http_, server->token_, server->port_);
  RegisterViewApi(*server->http_, server->store_);
  return server;
}

std::string ViewServer::url() const {
  return "http://" + std::string(kHost) + ":" + std::to_string(port_) +
         "/?token=" + token_;
}

bool ViewServer::Run() { return http_->listen_after_bind(); }

void ViewServer::Stop() { http_->stop(); }

}  // namespace deepcontext::server
