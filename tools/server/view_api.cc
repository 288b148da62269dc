#include "tools/server/view_api.h"

#include <algorithm>
#include <charconv>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/export/app_page.h"
#include "tools/server/access_token.h"
#include "tools/server/source_view.h"

namespace deepcontext::server {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char *kJsonType = "application/json; charset=utf-8";

std::string DumpJson(const Json &value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void SendError(httplib::Response &response, const Error &error) {
  response.status = HttpStatus(error.code);
  response.set_content(DumpJson({{"error", error.message}}), kJsonType);
}

// The profile named by the route's first capture, or the error to send.
StatusOr<size_t> ProfileId(const httplib::Request &request,
                           const ProfileStore &store) {
  const std::string text = request.matches[1].str();
  size_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || end != text.data() + text.size() ||
      id >= store.size()) {
    return Error{ErrorCode::kNotFound, "no profile " + text};
  }
  return id;
}

void ServePage(const httplib::Request &, httplib::Response &response) {
  // A fresh nonce per page: only the page's own inline code may run.
  std::string nonce = NewAccessToken();
  exporter::AppPageContent content;
  content.config_json = "{\"mode\":\"server\"}";
  content.nonce = nonce;
  response.set_header("Content-Security-Policy",
                      exporter::ServedPagePolicy(nonce));
  response.set_content(exporter::RenderAppPage(content),
                       "text/html; charset=utf-8");
}

void ServeProfiles(const ProfileStore &store, httplib::Response &response) {
  Json profiles = Json::array();
  for (size_t id = 0; id < store.size(); ++id) {
    Json entry = {{"id", id}, {"label", store.Label(id)}};
    if (!store.Settled(id)) {
      entry["state"] = "loading";
    } else if (LoadResult result = store.Get(id); result.ok()) {
      entry["state"] = "ready";
    } else {
      entry["state"] = "error";
      entry["error"] = result.error().message;
    }
    profiles.push_back(std::move(entry));
  }
  response.set_content(DumpJson({{"profiles", profiles}}), kJsonType);
}

// A route that answers with one document of the profile the request names
// (`document` picks it); an unknown id or an unreadable profile is a JSON
// error.
template <typename Document>
httplib::Server::Handler ServeFromProfile(const ProfileStore &store,
                                          const char *type, Document document) {
  return [&store, type, document](const httplib::Request &request,
                                  httplib::Response &response) {
    StatusOr<size_t> id = ProfileId(request, store);
    if (!id.ok())
      return SendError(response, id.error());
    LoadResult loaded = store.Get(id.value());
    if (!loaded.ok())
      return SendError(response, loaded.error());
    // Sent from the profile's own copy: set_content would copy tens of
    // megabytes first, on the way to the first screen.
    std::shared_ptr<const LoadedProfile> profile = loaded.value();
    const std::string &body = document(*profile);
    response.set_content_provider(body.size(), type,
                                  [profile, &body](size_t offset, size_t length,
                                                   httplib::DataSink &sink) {
                                    constexpr size_t kChunk = 1 << 20;
                                    return sink.write(body.data() + offset,
                                                      std::min(length, kChunk));
                                  });
  };
}

} // namespace

void RegisterViewApi(httplib::Server &server, const ProfileStore &store) {
  server.Get("/", ServePage);
  server.Get("/api/profiles",
             [&store](const httplib::Request &, httplib::Response &response) {
               ServeProfiles(store, response);
             });
  using Document = const std::string &;
  server.Get(R"(/api/profiles/([0-9]+)/tree)",
             ServeFromProfile(store, kJsonType,
                              [](const LoadedProfile &profile) -> Document {
                                return profile.view_json();
                              }));
  server.Get(R"(/api/profiles/([0-9]+)/tree\.bin)",
             ServeFromProfile(store, "application/octet-stream",
                              [](const LoadedProfile &profile) -> Document {
                                return profile.view_binary();
                              }));
  server.Get(R"(/api/profiles/([0-9]+)/tree-stats\.bin)",
             ServeFromProfile(store, "application/octet-stream",
                              [](const LoadedProfile &profile) -> Document {
                                return profile.view_stats_binary();
                              }));
  server.Get(R"(/api/profiles/([0-9]+)/findings)",
             ServeFromProfile(store, kJsonType,
                              [](const LoadedProfile &profile) -> Document {
                                return profile.findings_json();
                              }));
  server.Get(
      R"(/api/profiles/([0-9]+)/source)",
      [&store](const httplib::Request &request, httplib::Response &response) {
        StatusOr<size_t> id = ProfileId(request, store);
        if (!id.ok())
          return SendError(response, id.error());
        if (!request.has_param("file")) {
          return SendError(response, {ErrorCode::kBadRequest,
                                      "the file parameter is missing"});
        }
        LoadResult loaded = store.Get(id.value());
        if (!loaded.ok())
          return SendError(response, loaded.error());
        StatusOr<std::string> source =
            RenderSourceView(*loaded.value(), request.get_param_value("file"));
        if (!source.ok())
          return SendError(response, source.error());
        response.set_content(source.value(), kJsonType);
      });
}

} // namespace deepcontext::server
