// The `deepcontext view` server over real HTTP: the access checks, the
// routes, files it must never serve, and profiles that cannot be read.
#include "tools/server/view_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <regex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "format/dctx_file.h"
#include "tests/unit/scratch_dir.h"
#include "tests/unit/tools/server/view_fixtures.h"
#include "tools/analyzer/analyzer.h"
#include "tools/analyzer/findings_json.h"

namespace deepcontext::server {
namespace {

using nlohmann::json;

class ViewServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = std::make_unique<ScratchDir>();
    ASSERT_TRUE(testing::WriteViewFixtures(Dir()).ok());
  }
  static void TearDownTestSuite() { scratch_.reset(); }

  void SetUp() override {
    auto bound = ViewServer::Bind(
        {Dir() + "/before.dctx", Dir() + "/after.dctx", Dir() + "/foreign.dctx"},
        0);
    ASSERT_TRUE(bound.ok()) << bound.error().message;
    server_ = std::move(bound.value());
    thread_ = std::thread([this] { server_->Run(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    // Requests go out byte for byte as written, encodings included.
    client_->set_url_encode(false);
    for (int i = 0; i < 200 && !client_->Get("/"); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  void TearDown() override {
    server_->Stop();
    thread_.join();
  }

  // GET path with the token header.
  httplib::Result Get(const std::string& path) {
    return client_->Get(path, {{"X-DeepContext-Token", server_->token()}});
  }
  static const std::string& Dir() { return scratch_->path(); }

  // The fixtures are written once for the suite and shared by its tests.
  static std::unique_ptr<ScratchDir> scratch_;
  std::unique_ptr<ViewServer> server_;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
};

std::unique_ptr<ScratchDir> ViewServerTest::scratch_;

TEST_F(ViewServerTest, UrlIsLoopbackWithToken) {
  EXPECT_EQ(server_->url(), "http://127.0.0.1:" +
                                std::to_string(server_->port()) +
                                "/?token=" + server_->token());
  EXPECT_TRUE(std::regex_match(server_->token(), std::regex("[0-9a-f]{32}")));
}

TEST_F(ViewServerTest, RequestsWithoutTheTokenAreRefused) {
  for (const char* path : {"/", "/api/profiles", "/api/profiles/0/tree",
                           "/api/profiles/0/findings"}) {
    auto missing = client_->Get(path);
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 401) << path;
    EXPECT_EQ(missing->body.find("deepcontext-view"), std::string::npos);
    auto wrong = client_->Get(path, {{"X-DeepContext-Token", "0123"}});
    EXPECT_EQ(wrong->status, 403) << path;
    std::string other = server_->token();
    other[0] = other[0] == 'a' ? 'b' : 'a';
    auto almost = client_->Get(std::string(path) + "?token=" + other);
    EXPECT_EQ(almost->status, 403) << path;
  }
  auto by_query = client_->Get("/api/profiles?token=" + server_->token());
  EXPECT_EQ(by_query->status, 200);
  EXPECT_EQ(Get("/api/profiles")->status, 200);
}

TEST_F(ViewServerTest, OtherHostsAndMethodsAreRefused) {
  auto rebound = client_->Get(
      "/api/profiles", {{"X-DeepContext-Token", server_->token()},
                        {"Host", "evil.example:80"}});
  EXPECT_EQ(rebound->status, 403);
  auto post = client_->Post("/api/profiles?token=" + server_->token(), "x",
                            "text/plain");
  EXPECT_EQ(post->status, 405);
}

TEST_F(ViewServerTest, PageCarriesANoncePolicy) {
  auto page = Get("/");
  ASSERT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value_count("Content-Security-Policy"), 1u);
  std::string policy = page->get_header_value("Content-Security-Policy");
  std::smatch nonce;
  ASSERT_TRUE(std::regex_search(policy, nonce, std::regex("'nonce-([0-9a-f]+)'")));
  EXPECT_NE(policy.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(page->body.find("<script nonce=\"" + nonce[1].str() + "\">"),
            std::string::npos);
  EXPECT_EQ(page->get_header_value("Referrer-Policy"), "no-referrer");
  auto api = Get("/api/profiles");
  EXPECT_EQ(api->get_header_value("Content-Security-Policy"),
            "default-src 'none'; frame-ancestors 'none'");
}

TEST_F(ViewServerTest, ListsProfilesAndServesTrees) {
  json list = json::parse(Get("/api/profiles")->body)["profiles"];
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list[3]["label"], "all profiles");
  auto tree = Get("/api/profiles/0/tree");
  ASSERT_EQ(tree->status, 200);
  json data = json::parse(tree->body);
  EXPECT_EQ(data["format"], "deepcontext-view");
  EXPECT_EQ(data["metrics"][data["defaultMetric"].get<int>()]["name"], "gpu_time");
  EXPECT_EQ(data["nodes"]["parent"].size(), data["nodes"]["frame"].size());
  auto binary = Get("/api/profiles/0/tree.bin");
  ASSERT_EQ(binary->status, 200);
  EXPECT_EQ(binary->get_header_value("Content-Type"), "application/octet-stream");
  EXPECT_EQ(binary->body.rfind("DCVIEW02", 0), 0u);
  auto stats = Get("/api/profiles/0/tree-stats.bin");
  ASSERT_EQ(stats->status, 200);
  EXPECT_EQ(stats->body.rfind("DCSTAT01", 0), 0u);
  EXPECT_EQ(Get("/api/profiles/2/tree.bin")->status, 422);
  EXPECT_EQ(Get("/api/profiles/2/tree-stats.bin")->status, 422);
  EXPECT_EQ(Get("/api/profiles/9/tree-stats.bin")->status, 404);
  EXPECT_EQ(client_->Get("/api/profiles/0/tree-stats.bin")->status, 401);
  EXPECT_EQ(client_->Get("/api/profiles/0/tree.bin")->status, 401);
}

TEST_F(ViewServerTest, BadProfileGivesAClearErrorAndTheServerStaysUp) {
  auto bad = Get("/api/profiles/2/tree");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 422);
  std::string error = json::parse(bad->body)["error"];
  EXPECT_NE(error.find("foreign.dctx"), std::string::npos) << error;
  auto merged = Get("/api/profiles/3/tree");
  EXPECT_EQ(merged->status, 422);
  json list = json::parse(Get("/api/profiles")->body)["profiles"];
  EXPECT_EQ(list[2]["state"], "error");
  EXPECT_EQ(list[0]["state"], "ready");
  EXPECT_EQ(Get("/api/profiles/1/tree")->status, 200);
  EXPECT_EQ(Get("/api/profiles/7/tree")->status, 404);
  EXPECT_EQ(Get("/api/profiles/99999999999999999999/tree")->status, 404);
}

TEST_F(ViewServerTest, FindingsAreTheAnalyzersAndNameViewNodes) {
  auto response = Get("/api/profiles/0/findings");
  ASSERT_EQ(response->status, 200) << response->body;
  EXPECT_EQ(response->get_header_value("Content-Type"),
            "application/json; charset=utf-8");
  // Exactly what `deepcontext analyze --format json` prints for the file.
  deepcontext::StatusOr<format::Profile> read =
      format::ReadProfileFile(Dir() + "/before.dctx");
  ASSERT_TRUE(read.ok()) << read.status().message();
  analysis::ProfileTree tree =
      analysis::ProfileTree::FromProfile(*read, Dir() + "/before.dctx");
  EXPECT_EQ(response->body,
            analyzer::AnalysisToJson(analyzer::Analyze(tree)));

  // The fixture holds its whole 64 MiB device-memory peak in aten::linear
  // (the device's size unknown: medium at most).
  json doc = json::parse(response->body);
  ASSERT_FALSE(doc["findings"].empty());
  const json& finding = doc["findings"][0];
  EXPECT_EQ(finding["rule"], "memory_peak");
  EXPECT_EQ(finding["severity"], "medium");
  // Its node id indexes the tree the page draws.
  json view = json::parse(Get("/api/profiles/0/tree")->body);
  size_t node = finding["node"]["id"];
  ASSERT_LT(node, view["nodes"]["frame"].size());
  size_t frame = view["nodes"]["frame"][node];
  size_t name = view["frames"]["name"][frame];
  EXPECT_EQ(view["strings"][name], "aten::linear");
  EXPECT_EQ(finding["node"]["path"].back(), "aten::linear");

  // Computed once, then served as is.
  EXPECT_EQ(Get("/api/profiles/0/findings")->body, response->body);
  EXPECT_EQ(Get("/api/profiles/2/findings")->status, 422);
  EXPECT_EQ(Get("/api/profiles/7/findings")->status, 404);
  EXPECT_EQ(client_->Get("/api/profiles/0/findings")->status, 401);
  EXPECT_EQ(client_->Get("/api/profiles/0/findings",
                         {{"X-DeepContext-Token", "0123"}})->status,
            403);
}

TEST_F(ViewServerTest, SourceOfANamedFileWithLineMetrics) {
  std::string file = Dir() + "/src/model.py";
  auto source = Get("/api/profiles/0/source?file=" +
                    httplib::detail::encode_query_param(file));
  ASSERT_EQ(source->status, 200) << source->body;
  json doc = json::parse(source->body);
  EXPECT_NE(doc["text"].get<std::string>().find("class Model"), std::string::npos);
  bool found = false;
  for (const json& line : doc["lines"]) {
    if (line["line"] == 6) {
      found = true;
      EXPECT_DOUBLE_EQ(line["inclusive"]["gpu_time"].get<double>(), 2e7);
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(ViewServerTest, MissingNamedFileSaysSo) {
  auto source = Get("/api/profiles/0/source?file=" +
                    httplib::detail::encode_query_param(Dir() + "/src/missing.py"));
  ASSERT_EQ(source->status, 200);
  json doc = json::parse(source->body);
  EXPECT_TRUE(doc["text"].is_null());
  EXPECT_NE(doc["error"].get<std::string>().find("No such file"), std::string::npos);
  EXPECT_FALSE(doc["lines"].empty());
}

TEST_F(ViewServerTest, FilesTheProfileDoesNotNameAreNeverServed) {
  const std::string d = Dir();
  const std::string enc_dir = httplib::detail::encode_query_param(d);
  const std::vector<std::string> files = {
      httplib::detail::encode_query_param(d + "/secret.txt"),
      httplib::detail::encode_query_param(d + "/src/../secret.txt"),
      httplib::detail::encode_query_param(d + "/src/link.py"),
      "../secret.txt",
      "..%2Fsecret.txt",
      "%2e%2e%2fsecret.txt",
      "%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
      enc_dir + "%2Fsrc%2F%2e%2e%2Fsecret.txt",
      enc_dir + "%2fsrc%2f..%2fsecret.txt",
      "/etc/passwd",
      "%2Fetc%2Fpasswd",
      "src/model.py",
      httplib::detail::encode_query_param(d + "//src/model.py"),
      httplib::detail::encode_query_param(d + "/src/./model.py"),
  };
  for (const std::string& file : files) {
    auto source = Get("/api/profiles/0/source?file=" + file);
    ASSERT_TRUE(source) << file;
    EXPECT_EQ(source->status, 404) << file;
    EXPECT_EQ(source->body.find("secret\n"), std::string::npos) << file;
    EXPECT_EQ(source->body.find("root:"), std::string::npos) << file;
  }
  EXPECT_EQ(Get("/api/profiles/0/source")->status, 400);
}

TEST_F(ViewServerTest, PathsOutsideTheRoutesAreNotFound) {
  for (const char* path :
       {"/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
        "/api/profiles/0/../../../etc/passwd", "/api/..%2f..%2fetc%2fpasswd",
        "/etc/passwd", "/api/profiles/0/tree/..", "/secret.txt",
        "/api/profiles/0/source/../../secret.txt"}) {
    auto result = Get(path);
    ASSERT_TRUE(result) << path;
    EXPECT_TRUE(result->status == 404 || result->status == 400)
        << path << " " << result->status;
    EXPECT_EQ(result->body.find("root:"), std::string::npos) << path;
    EXPECT_EQ(result->body.find("secret\n"), std::string::npos) << path;
  }
}

TEST(ViewServerBindTest, TakenPortIsAnError) {
  auto first = ViewServer::Bind({}, 0);
  ASSERT_TRUE(first.ok());
  auto second = ViewServer::Bind({}, first.value()->port());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("cannot listen on 127.0.0.1:"),
            std::string::npos);
}

}  // namespace
}  // namespace deepcontext::server
