// The HTTP server of `deepcontext view`: bound to 127.0.0.1 only, on a
// free port unless one is asked for, guarded by a fresh access token.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tools/server/profile_store.h"
#include "tools/server/status_or.h"

namespace httplib {
class Server;
}

namespace deepcontext::server {

class ViewServer {
 public:
  // Binds 127.0.0.1:port (0 = any free port) and starts reading files.
  // Returns an error when the port cannot be bound.
  static StatusOr<std::unique_ptr<ViewServer>> Bind(
      std::vector<std::string> files, int port);
  ~ViewServer();

  // The URL to open, token included.
  std::string url() const;
  int port() const { return port_; }
  const std::string& token() const { return token_; }
  const ProfileStore& store() const { return store_; }

  // Serves requests until Stop(); returns false when serving failed.
  bool Run();
  // Makes Run() return; safe from another thread.
  void Stop();

 private:
  ViewServer(std::vector<std::string> files);

  ProfileStore store_;
  std::unique_ptr<httplib::Server> http_;
  std::string token_;
  int port_ = 0;
};

}  // namespace deepcontext::server
