// Checks every request to `deepcontext view` before any route sees it.
#pragma once

#include <string>

#include <httplib.h>

namespace deepcontext::server {

// Installs a pre-routing check on server that answers, without running any
// route:
//   403 when the Host header is not 127.0.0.1:<port> or localhost:<port>
//       (a web page cannot reach the server through a rebound DNS name);
//   401 when the request carries no token, 403 when it carries another one;
//   405 for methods other than GET and HEAD.
// It also sets headers on every response: no caching, no referrer (the
// token is in the URL), no MIME sniffing, no framing, and a deny-all
// Content-Security-Policy that the page route replaces with its own.
void InstallAccessGuard(httplib::Server& server, const std::string& token,
                        int port);

}  // namespace deepcontext::server
