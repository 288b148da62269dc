// The HTTP routes of `deepcontext view` (documented in docs/GUI.md):
//   GET /                               the app page
//   GET /api/profiles                   the profiles and their load states
//   GET /api/profiles/<id>/tree         one profile's view data (view_data.h)
//   GET /api/profiles/<id>/tree.bin     the same in binary (view_data_binary.h),
//                                       without the samples' count/min/max
//   GET /api/profiles/<id>/tree-stats.bin  those, asked for after the first screen
//   GET /api/profiles/<id>/source?file= a named source file with line metrics
//   GET /api/profiles/<id>/findings     the analyzer's findings (findings_json.h)
// Every request must carry the access token (?token= or the
// X-DeepContext-Token header) and a Host of 127.0.0.1 or localhost; see
// access_guard.h.
#pragma once

#include <httplib.h>

#include "tools/server/profile_store.h"

namespace deepcontext::server {

// Registers the routes on server. store must outlive server.
void RegisterViewApi(httplib::Server& server, const ProfileStore& store);

}  // namespace deepcontext::server
