// The route table (route_table.h) is the only list of routes: no path is answered that it lacks,
// every line of it is answered, src/gateway/openapi.json documents exactly its operations, and
// the auth middleware and the error dialect follow its columns.
#include "gateway/route_table.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gateway/fake_tokenizer.h"
#include "gateway/router.h"
#include "worker/fake_engine.h"

namespace orchid {
namespace {

using testing::FakeEngine;
using testing::FakeTokenizer;

const std::filesystem::path kGatewaySources =
    std::filesystem::path(ORCHID_SOURCE_DIR) / "src/gateway";

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The operations src/gateway/openapi.json documents, as "post /embed".
std::set<std::string> DocumentedOperations() {
  simdjson::dom::parser parser;
  const std::string text = ReadFile(kGatewaySources / "openapi.json");
  simdjson::dom::element doc = parser.parse(text);
  std::set<std::string> ops;
  for (simdjson::dom::key_value_pair path : simdjson::dom::object(doc["paths"])) {
    for (simdjson::dom::key_value_pair op : simdjson::dom::object(path.value)) {
      const std::string_view method = op.key;
      if (method.substr(0, 2) == "x-" || method == "parameters" || method == "summary" ||
          method == "description" || method == "servers") {
        continue;
      }
      ops.insert(std::string(method) + " " + std::string(path.key));
    }
  }
  return ops;
}

// Every string literal of the gateway's sources (and pages) that starts with '/': whatever path
// some code there might answer.
std::set<std::string> PathLiterals() {
  const std::regex literal(R"re(["'](/[A-Za-z0-9_.{}%/-]*)["'])re");
  std::set<std::string> paths;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kGatewaySources)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".h" && ext != ".html") continue;
    const std::string text = ReadFile(entry.path());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), literal);
         it != std::sregex_iterator(); ++it) {
      paths.insert((*it)[1].str());
    }
  }
  return paths;
}

// Whether the table has a line for `path` (any method): its path, or a path its "{id}" fills.
bool TableHasPath(const std::vector<Route>& table, std::string path) {
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  for (const Route& r : table) {
    if (r.path == path) return true;
    const std::string_view pattern = r.path;
    const size_t brace = pattern.find('{');
    if (brace != std::string_view::npos && path.size() > brace &&
        path.compare(0, brace, pattern.substr(0, brace)) == 0) {
      return true;
    }
  }
  return false;
}

class RouteTableTest : public ::testing::Test {
 protected:
  RouteTableTest()
      : engine_(/*auto_complete=*/true, /*vocab_size=*/1000, /*max_seq_length=*/8),
        scheduler_(&engine_, TokenBudgetSchedulerOptions{64, 1024, 2}),
        backend_(&scheduler_),
        embed_(
            &tokenizer_, &backend_, "m", [](Task t) { t(); }, &metrics_),
        score_(&tokenizer_, &backend_, "m", [](Task t) { t(); }),
        router_(std::vector<RoutedModel>{{&embed_, &score_}}, &metrics_) {}

  HttpResponse Call(HttpRequest request) {
    std::promise<HttpResponse> p;
    auto f = p.get_future();
    router_.Handle(std::move(request), [&p](HttpResponse r) { p.set_value(std::move(r)); });
    return f.get();
  }
  HttpResponse Call(std::string method, std::string target, std::string authorization = {}) {
    HttpRequest request{std::move(method), std::move(target), "{}", std::move(authorization)};
    request.accept = "text/html";  // GET / answers the playground (a page), not the health check
    return Call(std::move(request));
  }
  // A route's path as a client sends it ("{id}" filled with the served model's name).
  static std::string TargetOf(const Route& r) {
    std::string target(r.path);
    if (const size_t brace = target.find('{'); brace != std::string::npos) {
      target = target.substr(0, brace) + "m";
    }
    return target;
  }
  // Whether a reply is the router's own 404 for a path it has no route for.
  bool NoRoute(const HttpResponse& r) {
    if (r.status != 404) return false;
    simdjson::dom::element message;
    return parser_.parse(r.body)["error"]["message"].get(message) == simdjson::SUCCESS &&
           std::string_view(message).substr(0, 13) == "no route for ";
  }

  FakeTokenizer tokenizer_;
  MetricsRegistry metrics_;
  FakeEngine engine_;
  TokenBudgetScheduler scheduler_;
  LocalBackend backend_;
  EmbeddingService embed_;
  ScoreService score_;
  Router router_;
  simdjson::dom::parser parser_;
};

// openapi.json documents exactly the table's API operations: a path in the document that the
// table lacks fails here, and so does a route (not a browser page) the document lacks.
TEST_F(RouteTableTest, TheOpenApiDocumentListsExactlyTheTablesOperations) {
  const std::set<std::string> documented = DocumentedOperations();
  const std::set<std::string> routed = Operations(router_.routes());
  ASSERT_GT(documented.size(), 20u);
  for (const std::string& op : documented) {
    EXPECT_TRUE(routed.count(op)) << "openapi.json documents `" << op
                                  << "`, which the route table lacks";
  }
  for (const std::string& op : routed) {
    EXPECT_TRUE(documented.count(op))
        << "the route table has `" << op << "`, which openapi.json does not document";
  }
}

// No path is answered that the table lacks: every path written in the gateway's sources and
// openapi.json, and a few that other servers answer, is either a path of the table or the
// router's 404 "no route" to both GET and POST.
TEST_F(RouteTableTest, NoPathIsServedOutsideTheTable) {
  std::set<std::string> candidates = PathLiterals();
  ASSERT_TRUE(candidates.count("/v1/embeddings")) << "the source scan found no route paths";
  for (const std::string& op : DocumentedOperations())
    candidates.insert(op.substr(op.find(' ') + 1));
  for (const char* other : {"/invocations", "/v1/chat/completions", "/v1/completions", "/classify",
                            "/v1/classify", "/v2/classify", "/embed_sparse/", "/docs/oauth2",
                            "/v1/models/m/x", "/v1", "/v2", "/api/embed"}) {
    candidates.insert(other);
  }
  for (const std::string& path : candidates) {
    std::string target = path;
    if (const size_t brace = target.find('{'); brace != std::string::npos) {
      target = target.substr(0, brace) + "m";
    }
    for (const char* method : {"GET", "POST"}) {
      const HttpResponse r = Call(method, target);
      if (!NoRoute(r)) {
        EXPECT_TRUE(TableHasPath(router_.routes(), target))
            << method << " " << target << " is answered (" << r.status
            << ") but the route table has no line for it";
      }
    }
  }
}

// Every line of the table is answered on its method (not 404 or 405); another method on its
// path is a 405 whose Allow lists the table's methods for that path, in table order.
TEST_F(RouteTableTest, EveryLineIsAnsweredAndOtherMethodsAre405) {
  for (const Route& r : router_.routes()) {
    const std::string target = TargetOf(r);
    const HttpResponse answered = Call(std::string(r.method), target);
    EXPECT_NE(answered.status, 404) << r.method << " " << r.path << ": " << answered.body;
    EXPECT_NE(answered.status, 405) << r.method << " " << r.path << ": " << answered.body;
    std::string allow;
    for (const Route& same : router_.routes()) {
      if (same.path == r.path) allow += (allow.empty() ? "" : ", ") + std::string(same.method);
    }
    const HttpResponse other = Call("PUT", target);
    EXPECT_EQ(other.status, 405) << r.path;
    EXPECT_EQ(other.allow, allow) << r.path;
  }
}

// The auth middleware reads the access column: with a key set, a kKey line answers 401 without
// it, an open one does not; another method on a kOpenPath line's path is told its 405 without the
// key, on a kOpen line's path (a page) it needs the key first; with the key, nothing is a 401.
TEST_F(RouteTableTest, TheApiKeyGuardsExactlyTheLinesThatNeedIt) {
  router_.SetApiKey("k");
  for (const Route& r : router_.routes()) {
    const HttpResponse without = Call(std::string(r.method), TargetOf(r));
    if (r.access == Access::kKey) {
      EXPECT_EQ(without.status, 401) << r.method << " " << r.path;
      EXPECT_EQ(without.www_authenticate, "Bearer") << r.path;
    } else {
      EXPECT_NE(without.status, 401) << r.method << " " << r.path;
    }
    const HttpResponse other = Call("PUT", TargetOf(r));
    EXPECT_EQ(other.status, r.access == Access::kOpenPath ? 405 : 401) << "PUT " << r.path;
    EXPECT_NE(Call(std::string(r.method), TargetOf(r), "Bearer k").status, 401) << r.path;
  }
  // What the table does not hold needs the key first.
  EXPECT_EQ(Call("GET", "/nowhere").status, 401);
  EXPECT_EQ(Call("POST", "/docs").status, 401);
}

// The error dialect reads the API column: a malformed X-Request-Timeout on a route that runs the
// engine is a 400 in that API's error body (TEI's {"error": string}, Cohere's {"message"},
// OpenAI's {"error": {"message"}} for the rest); the routes that do not run the engine ignore
// the header (they answer as without it).
TEST_F(RouteTableTest, EngineRoutesAnswerABadTimeoutInTheirApisErrorShape) {
  int engine_routes = 0;
  for (const Route& r : router_.routes()) {
    HttpRequest request{std::string(r.method), TargetOf(r), "{}"};
    const HttpResponse plain = Call(request);
    request.request_timeout = "soon";
    const HttpResponse reply = Call(std::move(request));
    if (r.runs == Runs::kGateway) {
      EXPECT_EQ(reply.status, plain.status) << r.path;
      if (r.path != "/metrics") {  // (its counts move with every request)
        EXPECT_EQ(reply.body, plain.body) << r.path;
      }
      continue;
    }
    ++engine_routes;
    ASSERT_EQ(reply.status, 400) << r.path << ": " << reply.body;
    simdjson::dom::element body = parser_.parse(reply.body);
    switch (r.api) {
      case Api::kTei:
        EXPECT_TRUE(body["error"].is_string()) << r.path << ": " << reply.body;
        EXPECT_TRUE(body["error_type"].is_string()) << r.path << ": " << reply.body;
        break;
      case Api::kCohere:
        EXPECT_TRUE(body["message"].is_string()) << r.path << ": " << reply.body;
        EXPECT_TRUE(body["error"].error()) << r.path << ": " << reply.body;
        break;
      default:
        EXPECT_TRUE(body["error"]["message"].is_string()) << r.path << ": " << reply.body;
        EXPECT_EQ(std::string_view(body["error"]["code"]), "invalid_request_timeout") << r.path;
    }
  }
  EXPECT_GT(engine_routes, 15);
}

}  // namespace
}  // namespace orchid
