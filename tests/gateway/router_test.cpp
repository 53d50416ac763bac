#include "gateway/router.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstring>
#include <future>

#include "gateway/base64.h"
#include "gateway/fake_tokenizer.h"
#include "worker/fake_engine.h"

namespace orchid {
namespace {

using testing::FakeEngine;
using testing::FakeTokenizer;

// A router over the fake tokenizer and engine (max_seq_length 8, dim 3); the completion
// executor runs tasks inline, so replies arrive on the scheduler thread.
class RouterTest : public ::testing::Test {
 protected:
  RouterTest()
      : engine_(/*auto_complete=*/true, /*vocab_size=*/1000, /*max_seq_length=*/8),
        scheduler_(&engine_, TokenBudgetSchedulerOptions{64, 1024, 2}),
        backend_(&scheduler_),
        service_(&tokenizer_, &backend_, "fake-model", [](Task t) { t(); }, &metrics_),
        router_(&service_, &metrics_) {}

  HttpResponse Call(std::string method, std::string target, std::string body = {}) {
    std::promise<HttpResponse> p;
    auto f = p.get_future();
    router_.Handle(HttpRequest{std::move(method), std::move(target), std::move(body)},
                   [&p](HttpResponse r) { p.set_value(std::move(r)); });
    return f.get();
  }
  HttpResponse Post(std::string body) { return Call("POST", "/v1/embeddings", std::move(body)); }

  // Parses an OpenAI reply into rows of floats (decoding base64 when it is a string).
  std::vector<std::vector<float>> Rows(const HttpResponse& r, int64_t* tokens = nullptr) {
    simdjson::dom::element doc = parser_.parse(r.body);
    EXPECT_EQ(std::string_view(doc["object"]), "list");
    EXPECT_EQ(std::string_view(doc["model"]), "fake-model");
    if (tokens) *tokens = int64_t(doc["usage"]["prompt_tokens"]);
    EXPECT_EQ(int64_t(doc["usage"]["prompt_tokens"]), int64_t(doc["usage"]["total_tokens"]));
    std::vector<std::vector<float>> rows;
    int64_t index = 0;
    for (simdjson::dom::element item : simdjson::dom::array(doc["data"])) {
      EXPECT_EQ(std::string_view(item["object"]), "embedding");
      EXPECT_EQ(int64_t(item["index"]), index++);
      std::vector<float> row;
      if (item["embedding"].is_string()) {
        auto bytes = Base64Decode(std::string_view(item["embedding"]));
        EXPECT_TRUE(bytes.has_value());
        row.resize(bytes->size() / 4);
        std::memcpy(row.data(), bytes->data(), bytes->size());
      } else {
        for (simdjson::dom::element v : simdjson::dom::array(item["embedding"])) {
          row.push_back(float(double(v)));
        }
      }
      rows.push_back(row);
    }
    return rows;
  }

  // Checks the status and the OpenAI error shape; returns the error object.
  simdjson::dom::element Error(const HttpResponse& r, int status, std::string_view param = {}) {
    EXPECT_EQ(r.status, status) << r.body;
    simdjson::dom::element e = parser_.parse(r.body)["error"];
    EXPECT_TRUE(e["message"].is_string()) << r.body;
    EXPECT_TRUE(e["type"].is_string()) << r.body;
    if (param.empty()) {
      EXPECT_TRUE(e["param"].is_null()) << r.body;
    } else {
      EXPECT_EQ(std::string_view(e["param"]), param) << r.body;
    }
    EXPECT_FALSE(e["code"].error()) << r.body;
    return e;
  }

  FakeTokenizer tokenizer_;
  FakeEngine engine_;
  TokenBudgetScheduler scheduler_;
  LocalBackend backend_;
  MetricsRegistry metrics_;
  EmbeddingService service_;
  Router router_;
  simdjson::dom::parser parser_;
};

TEST_F(RouterTest, MetricsCountRequestsByRouteAndStatus) {
  EXPECT_EQ(Post(R"({"input":"a b"})").status, 200);
  EXPECT_EQ(Post(R"({"input":""})").status, 400);
  EXPECT_EQ(Call("GET", "/nowhere").status, 404);
  const HttpResponse r = Call("GET", "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, MetricsRegistry::kContentType);
  EXPECT_NE(r.body.find("orchid_http_requests_total{route=\"/v1/embeddings\",status=\"200\"} 1\n"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("orchid_http_requests_total{route=\"/v1/embeddings\",status=\"400\"} 1\n"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("orchid_http_requests_total{route=\"other\",status=\"404\"} 1\n"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("orchid_gateway_tokenize_seconds_count 1\n"), std::string::npos) << r.body;
}

TEST_F(RouterTest, HealthAndModels) {
  HttpResponse h = Call("GET", "/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.body, R"({"status":"ok"})");
  HttpResponse m = Call("GET", "/v1/models");
  EXPECT_EQ(m.status, 200);
  simdjson::dom::element doc = parser_.parse(m.body);
  EXPECT_EQ(std::string_view(doc["object"]), "list");
  EXPECT_EQ(std::string_view(doc["data"].at(0)["id"]), "fake-model");
  EXPECT_EQ(std::string_view(doc["data"].at(0)["object"]), "model");
  EXPECT_EQ(std::string_view(doc["data"].at(0)["owned_by"]), "orchid");
  EXPECT_GT(int64_t(doc["data"].at(0)["created"]), 1600000000);
  // OpenAI's retrieve: GET /v1/models/{id}, the id percent-decoded.
  for (const char* target : {"/v1/models/fake-model", "/v1/models/fake%2Dmodel"}) {
    HttpResponse one = Call("GET", target);
    ASSERT_EQ(one.status, 200) << target << one.body;
    simdjson::dom::element o = parser_.parse(one.body);
    EXPECT_EQ(std::string_view(o["id"]), "fake-model");
    EXPECT_EQ(std::string_view(o["object"]), "model");
    EXPECT_EQ(std::string_view(o["task"]), "embed");
  }
  simdjson::dom::element e = Error(Call("GET", "/v1/models/BAAI/bge-m3"), 404, "model");
  EXPECT_EQ(std::string_view(e["code"]), "model_not_found");
  EXPECT_EQ(Call("POST", "/v1/models/fake-model").allow, "GET");
  // No id: the list (a trailing slash is dropped from every path).
  EXPECT_EQ(std::string_view(parser_.parse(Call("GET", "/v1/models/").body)["object"]), "list");
  EXPECT_NE(Call("GET", "/metrics").body.find("route=\"/v1/models/{id}\""), std::string::npos);
}

TEST_F(RouterTest, UnknownRouteAndWrongMethod) {
  Error(Call("GET", "/nope"), 404);
  Error(Call("POST", "/v1/chat/completions", "{}"), 404);
  HttpResponse r = Call("GET", "/v1/embeddings");
  Error(r, 405);
  EXPECT_EQ(r.allow, "POST");
  EXPECT_EQ(Call("POST", "/health").allow, "GET");
  EXPECT_EQ(Call("GET", "/health?x=1").status, 200);
}

TEST_F(RouterTest, AnApiKeyGuardsEveryRouteButHealthAndMetrics) {
  auto call = [&](std::string method, std::string target, std::string authorization,
                  std::string body = {}) {
    std::promise<HttpResponse> p;
    auto f = p.get_future();
    router_.Handle(HttpRequest{std::move(method), std::move(target), std::move(body),
                               std::move(authorization)},
                   [&p](HttpResponse r) { p.set_value(std::move(r)); });
    return f.get();
  };
  // No key set: the header is not looked at.
  EXPECT_EQ(call("GET", "/v1/models", "").status, 200);
  EXPECT_EQ(call("GET", "/v1/models", "Bearer anything").status, 200);

  router_.SetApiKey("s3cret-key");
  const std::string body = R"({"input":"a b"})";
  for (const std::string& wrong :
       {std::string(), std::string("s3cret-key"), std::string("Bearer s3cret-ke"),
        std::string("Bearer s3cret-keyy"), std::string("Bearer S3cret-key"),
        std::string("Basic s3cret-key"), std::string("Bearer  s3cret-key")}) {
    for (const auto& [method, target] :
         {std::pair<std::string, std::string>{"POST", "/v1/embeddings"},
          {"POST", "/embed"},
          {"POST", "/tokenize"},
          {"GET", "/v1/models"},
          {"GET", "/info"},
          {"GET", "/nowhere"}}) {
      const HttpResponse r = call(method, target, wrong, body);
      simdjson::dom::element e = Error(r, 401);
      EXPECT_EQ(std::string_view(e["code"]), "invalid_api_key") << target;
      EXPECT_EQ(r.www_authenticate, "Bearer") << target;
    }
  }
  // The right key, with the scheme in any case.
  for (const std::string& right :
       {std::string("Bearer s3cret-key"), std::string("bearer s3cret-key"),
        std::string("BEARER s3cret-key")}) {
    EXPECT_EQ(call("POST", "/v1/embeddings", right, body).status, 200) << right;
    EXPECT_EQ(call("GET", "/info", right).status, 200) << right;
    EXPECT_EQ(call("GET", "/nowhere", right).status, 404) << right;
  }
  // Probes and scrapers need no key.
  EXPECT_EQ(call("GET", "/health", "").status, 200);
  EXPECT_EQ(call("GET", "/metrics", "").status, 200);
  EXPECT_EQ(call("GET", "/health", "Bearer wrong").status, 200);

  router_.SetApiKey("");
  EXPECT_EQ(call("GET", "/v1/models", "").status, 200);
}

TEST_F(RouterTest, CorsAnswersPreflightsAndLabelsRepliesForAllowedOrigins) {
  auto call = [&](std::string method, std::string target, std::string origin,
                  std::string authorization = {}) {
    std::promise<HttpResponse> p;
    auto f = p.get_future();
    router_.Handle(HttpRequest{std::move(method), std::move(target), R"({"input":"a b"})",
                               std::move(authorization), std::move(origin)},
                   [&p](HttpResponse r) { p.set_value(std::move(r)); });
    return f.get();
  };
  auto header = [](const HttpResponse& r, std::string_view name) {
    for (const auto& [n, v] : r.headers) {
      if (n == name) return v;
    }
    return std::string("<none>");
  };
  // No origins configured: no CORS headers, and OPTIONS is just another method.
  EXPECT_EQ(
      header(call("POST", "/v1/embeddings", "https://a.example"), "Access-Control-Allow-Origin"),
      "<none>");
  EXPECT_EQ(call("OPTIONS", "/v1/embeddings", "https://a.example").status, 405);

  router_.SetCorsOrigins({"https://a.example", "https://b.example"});
  router_.SetApiKey("k");
  HttpResponse ok = call("POST", "/v1/embeddings", "https://b.example", "Bearer k");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(header(ok, "Access-Control-Allow-Origin"), "https://b.example");
  EXPECT_EQ(header(ok, "Vary"), "Origin");
  // Errors carry it too (the page must be able to read them).
  HttpResponse denied = call("POST", "/v1/embeddings", "https://a.example");
  EXPECT_EQ(denied.status, 401);
  EXPECT_EQ(header(denied, "Access-Control-Allow-Origin"), "https://a.example");
  EXPECT_EQ(header(call("POST", "/v1/embeddings", "https://c.example", "Bearer k"),
                   "Access-Control-Allow-Origin"),
            "<none>");
  // A preflight needs no key (browsers send none) and says what the request may carry.
  HttpResponse pre = call("OPTIONS", "/v1/embeddings", "https://a.example");
  EXPECT_EQ(pre.status, 204);
  EXPECT_TRUE(pre.body.empty());
  EXPECT_EQ(header(pre, "Access-Control-Allow-Origin"), "https://a.example");
  EXPECT_EQ(header(pre, "Access-Control-Allow-Methods"), "GET, POST");
  EXPECT_EQ(header(pre, "Access-Control-Allow-Headers"), "authorization, content-type");
  EXPECT_EQ(call("OPTIONS", "/nowhere", "https://a.example").status, 404);
  EXPECT_EQ(call("OPTIONS", "/v1/embeddings", "https://c.example").status, 401);

  router_.SetCorsOrigins({"*"});
  EXPECT_EQ(header(call("OPTIONS", "/embed", "https://any.example"), "Access-Control-Allow-Origin"),
            "*");
}

// GET /openapi.json: the compiled-in document, with the build's version, describing every route
// the router answers (and open without the API key, as documentation).
// The served document lists the routes this (embedding) model answers (/v1/score and /score
// among them: the similarity of its embeddings); the rerank and classify routes are in other
// models' documents (openapi_document_test.cpp).
TEST_F(RouterTest, OpenApiDescribesEveryRoute) {
  router_.SetApiKey("k");
  const HttpResponse r = Call("GET", "/openapi.json");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::element doc = parser_.parse(r.body);
  EXPECT_EQ(std::string_view(doc["openapi"]), "3.1.0");
  EXPECT_EQ(std::string_view(doc["info"]["version"]), ORCHID_VERSION_STRING);
  const std::vector<std::pair<std::string, std::string>> routes = {
      {"/v1/embeddings", "post"},
      {"/embeddings", "post"},
      {"/embed", "post"},
      {"/similarity", "post"},
      {"/v1/embed", "post"},
      {"/v2/embed", "post"},
      {"/", "get"},
      {"/", "post"},
      {"/tokenize", "post"},
      {"/decode", "post"},
      {"/v1/models", "get"},
      {"/v1/models/{id}", "get"},
      {"/info", "get"},
      {"/health", "get"},
      {"/metrics", "get"},
      {"/openapi.json", "get"},
      {"/embed_all", "post"},
      {"/v1/score", "post"},
      {"/score", "post"},  // an embedder's score: its texts' similarity
      {"/pooling", "post"}};
  simdjson::dom::object paths = doc["paths"];
  EXPECT_EQ(paths.size(), routes.size() - 1);  // "/" has two
  for (const auto& [path, method] : routes) {
    simdjson::dom::element op;
    EXPECT_EQ(paths[path][method].get(op), simdjson::SUCCESS) << method << " " << path;
    // And the router really answers it (not 404 / 405), with a key where one is needed.
    std::promise<HttpResponse> p;
    auto f = p.get_future();
    std::string target = path == "/v1/models/{id}" ? "/v1/models/fake-model" : path;
    router_.Handle(HttpRequest{method == "get" ? "GET" : "POST", target, "{}", "Bearer k"},
                   [&p](HttpResponse reply) { p.set_value(std::move(reply)); });
    const int status = f.get().status;
    EXPECT_NE(status, 404) << path;
    EXPECT_NE(status, 405) << path;
  }
}

TEST_F(RouterTest, EmbedsTextsInOrderWithUsage) {
  int64_t tokens = 0;
  auto rows =
      Rows(Post(R"({"input":["one two","three four five"],"model":"fake-model"})"), &tokens);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(tokens, 4 + 5);
  // The fake engine's row is {first id, length, last id}: [CLS]=1 and [SEP]=2.
  EXPECT_EQ(rows[0], (std::vector<float>{1, 4, 2}));
  EXPECT_EQ(rows[1], (std::vector<float>{1, 5, 2}));
}

TEST_F(RouterTest, TokenIdsGiveTheSameRowAsText) {
  const int32_t a = FakeTokenizer::WordId("hello"), b = FakeTokenizer::WordId("world");
  auto text = Rows(Post(R"({"input":"hello world"})"));
  auto ids = Rows(Post(R"({"input":[1,)" + std::to_string(a) + "," + std::to_string(b) + ",2]}"));
  auto nested =
      Rows(Post(R"({"input":[[1,)" + std::to_string(a) + "," + std::to_string(b) + ",2],[5]]}"));
  EXPECT_EQ(text[0], ids[0]);
  EXPECT_EQ(text[0], nested[0]);
  EXPECT_EQ(nested[1], (std::vector<float>{5, 1, 5}));
}

TEST_F(RouterTest, Base64MatchesFloat) {
  auto f = Rows(Post(R"({"input":["a b c","d"],"encoding_format":"float"})"));
  auto b = Rows(Post(R"({"input":["a b c","d"],"encoding_format":"base64"})"));
  EXPECT_EQ(f, b);
}

// The fake model does not normalise: `dimensions` only truncates (sentence-transformers'
// truncate_dim); a normalised request re-normalises the kept values (OpenAI).
TEST_F(RouterTest, DimensionsTruncateWithoutRenormalisingOnAModelThatDoesNotNormalise) {
  auto rows = Rows(Post(R"({"input":"x y z","dimensions":2})"));
  ASSERT_EQ(rows[0].size(), 2u);
  EXPECT_EQ(rows[0], (std::vector<float>{1, 5}));  // normalised requests: TeiEmbed below
  Error(Post(R"({"input":"x","dimensions":0})"), 400, "dimensions");
  Error(Post(R"({"input":"x","dimensions":4})"), 400, "dimensions");
  EXPECT_EQ(Rows(Post(R"({"input":"x","dimensions":3})"))[0].size(), 3u);
}

TEST_F(RouterTest, RejectsWhatTheModelCannotTake) {
  auto e = Error(Post(R"({"input":"x","model":"other"})"), 404, "model");
  EXPECT_EQ(std::string_view(e["code"]), "model_not_found");
  Error(Post(R"({"input":[1,1000]})"), 400, "input[0][1]");
  // 7 words + 2 special tokens = 9 > max_seq_length 8.
  auto long_text = R"({"input":["ok","a b c d e f g"]})";
  auto too_long = Error(Post(long_text), 400, "input[1]");
  EXPECT_EQ(std::string_view(too_long["code"]), "context_length_exceeded");
  Error(Post(R"({"input":[[1,2,3,4,5,6,7,8,9]]})"), 400, "input[0]");
  Error(Post("{\"input\":\"bad \xff\"}"), 400);
  Error(Post("not json"), 400);
  Error(Post(R"({"input":""})"), 400, "input");
  Error(Post(R"({"input":[]})"), 400, "input");
  Error(Post(R"({})"), 400, "input");
  // The server keeps serving after every bad request.
  EXPECT_EQ(Rows(Post(R"({"input":"fine"})")).size(), 1u);
}

TEST_F(RouterTest, TruncateCutsToTheMaximum) {
  int64_t tokens = 0;
  auto rows = Rows(Post(R"({"input":"a b c d e f g","truncate":true})"), &tokens);
  EXPECT_EQ(tokens, 8);
  EXPECT_EQ(rows[0], (std::vector<float>{1, 8, 2}));  // special tokens kept
  rows = Rows(Post(R"({"input":[[1,2,3,4,5,6,7,8,9]],"truncate":true})"), &tokens);
  EXPECT_EQ(tokens, 8);
  EXPECT_EQ(rows[0], (std::vector<float>{1, 8, 8}));
}

TEST_F(RouterTest, TeiEmbed) {
  HttpResponse r = Call("POST", "/embed", R"({"inputs":["a b","c"],"normalize":false})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "[[1,4,2],[1,3,2]]");
  HttpResponse n = Call("POST", "/embed", R"({"inputs":"a b"})");
  simdjson::dom::element doc = parser_.parse(n.body);
  double sq = 0;
  for (simdjson::dom::element v : simdjson::dom::array(doc.at(0))) sq += double(v) * double(v);
  EXPECT_NEAR(sq, 1.0, 1e-6);  // normalize defaults to true
  // Matryoshka `dimensions`, as on /v1/embeddings: the first N values, L2-normalised again
  // when the request normalises, as they are when it does not.
  HttpResponse raw = Call("POST", "/embed", R"({"inputs":"a b","normalize":false,"dimensions":2})");
  ASSERT_EQ(raw.status, 200) << raw.body;
  EXPECT_EQ(raw.body, "[[1,4]]");
  HttpResponse d = Call("POST", "/embed", R"({"inputs":"a b","normalize":true,"dimensions":2})");
  ASSERT_EQ(d.status, 200) << d.body;
  simdjson::dom::array dims = parser_.parse(d.body).at(0);
  ASSERT_EQ(dims.size(), 2u);
  EXPECT_NEAR(double(dims.at(0)), 1.0 / std::sqrt(17.0), 1e-6);
  EXPECT_NEAR(double(dims.at(1)), 4.0 / std::sqrt(17.0), 1e-6);
  EXPECT_EQ(Call("POST", "/embed", R"({"inputs":"a b","dimensions":4})").status, 400);
  EXPECT_EQ(Call("POST", "/embed", R"({"inputs":"a b","dimensions":"2"})").status, 400);
  HttpResponse bad = Call("POST", "/embed", R"({"inputs":[]})");
  EXPECT_EQ(bad.status, 400);
  simdjson::dom::element err = parser_.parse(bad.body);
  EXPECT_TRUE(err["error"].is_string());
  EXPECT_EQ(std::string_view(err["error_type"]), "Validation");
}

// --auto-truncate: a request that does not say `truncate` gets it; one that says false does not.
TEST_F(RouterTest, AutoTruncateCutsInputsThatDoNotSayOtherwise) {
  const std::string long_text = "a b c d e f g h i j";  // 12 tokens; the maximum is 8
  EXPECT_EQ(Post(R"({"input":")" + long_text + R"("})").status, 400);
  EXPECT_FALSE(bool(parser_.parse(Call("GET", "/info").body)["auto_truncate"]));
  service_.set_auto_truncate(true);
  EXPECT_TRUE(bool(parser_.parse(Call("GET", "/info").body)["auto_truncate"]));
  const HttpResponse cut = Post(R"({"input":")" + long_text + R"(","encoding_format":"float"})");
  ASSERT_EQ(cut.status, 200) << cut.body;
  const HttpResponse asked =
      Post(R"({"input":")" + long_text + R"(","encoding_format":"float","truncate":true})");
  EXPECT_EQ(Rows(cut), Rows(asked));
  EXPECT_EQ(Post(R"({"input":")" + long_text + R"(","truncate":false})").status, 400);
  EXPECT_EQ(Call("POST", "/embed", R"({"inputs":")" + long_text + R"("})").status, 200);
  EXPECT_EQ(Call("POST", "/embed", R"({"inputs":")" + long_text + R"(","truncate":false})").status,
            413);  // TEI's status for an input over the maximum
  EXPECT_EQ(Post(R"({"input":[[5,6,7,8,9,10,11,12,13,14]]})").status, 200);  // token ids too
}

TEST_F(RouterTest, TeiSimilarityIsTheCosineOfTheSourceToEachSentence) {
  // The fake engine's rows (see TeiEmbed): "a b" → [1,4,2], "c" → [1,3,2].
  HttpResponse r = Call("POST", "/similarity",
                        R"({"inputs":{"source_sentence":"a b","sentences":["c","a b","c"]},)"
                        R"("parameters":{"truncate":false,"truncation_direction":"left"}})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::element doc = parser_.parse(r.body);
  std::vector<double> got;
  for (simdjson::dom::element v : simdjson::dom::array(doc)) got.push_back(double(v));
  const double c = 17.0 / std::sqrt(21.0 * 14.0);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_NEAR(got[0], c, 1e-6);
  EXPECT_NEAR(got[1], 1.0, 1e-6);
  EXPECT_NEAR(got[2], c, 1e-6);

  auto validation = [&](std::string body, std::string_view needle, int status = 400) {
    HttpResponse e = Call("POST", "/similarity", std::move(body));
    EXPECT_EQ(e.status, status) << e.body;
    simdjson::dom::element j = parser_.parse(e.body);
    EXPECT_NE(std::string_view(j["error"]).find(needle), std::string_view::npos) << e.body;
    EXPECT_EQ(std::string_view(j["error_type"]), "Validation");
  };
  validation(R"({"inputs":{"sentences":["c"]}})", "source_sentence is required");
  validation(R"({"inputs":{"source_sentence":"a"}})", "sentences is required");
  validation(R"({"inputs":{"source_sentence":"","sentences":["c"]}})", "non-empty string");
  validation(R"({"inputs":{"source_sentence":"a","sentences":"c"}})", "array of strings");
  validation(R"({"inputs":{"source_sentence":"a","sentences":[]}})", "empty array");
  validation(R"({"inputs":{"source_sentence":"a","sentences":["c",3]}})", "array of strings");
  validation(R"({"inputs":["a","c"]})", "inputs must be an object");
  validation(R"({"inputs":{"source_sentence":"a","sentences":["c"]},"parameters":3})",
             "parameters must be an object");
  validation(R"({"inputs":{"source_sentence":"a","sentences":["c"]},)"
             R"("parameters":{"truncation_direction":"up"}})",
             "truncation_direction");
  std::string many = R"({"inputs":{"source_sentence":"a","sentences":[)";
  for (size_t i = 0; i < Router::kMaxClientBatchSize; ++i) many += i ? ",\"c\"" : "\"c\"";
  validation(many + "]}}", "more than the limit", 413);
  // Over the maximum length (8 tokens): 413 (TEI's Validation status) unless parameters.truncate.
  const std::string long_text = "a b c d e f g h i j";
  validation(R"({"inputs":{"source_sentence":")" + long_text + R"(","sentences":["c"]}})",
             "more than the model's maximum", 413);
  EXPECT_EQ(Call("POST", "/similarity",
                 R"({"inputs":{"source_sentence":")" + long_text +
                     R"(","sentences":["c"]},"parameters":{"truncate":true}})")
                .status,
            200);
}

}  // namespace
}  // namespace orchid

namespace orchid {
namespace {

// The TEI tokenizer routes are wired to the served tokenizer (their behaviour is tested in
// tokenize_routes_test.cpp).
TEST(RouterTokenizeTest, TokenizeAndDecodeAreRouted) {
  FakeEngine engine(/*auto_complete=*/true, /*vocab_size=*/1000, /*max_seq_length=*/8);
  TokenBudgetScheduler scheduler(&engine, TokenBudgetSchedulerOptions{64, 1024, 2});
  LocalBackend backend(&scheduler);
  FakeTokenizer tokenizer;
  EmbeddingService service(&tokenizer, &backend, "m", [](Task t) { t(); });
  Router router(&service);
  auto call = [&router](std::string method, std::string target, std::string body) {
    std::promise<HttpResponse> p;
    auto f = p.get_future();
    router.Handle(HttpRequest{std::move(method), std::move(target), std::move(body)},
                  [&p](HttpResponse r) { p.set_value(std::move(r)); });
    return f.get();
  };
  HttpResponse r = call("POST", "/tokenize", R"({"inputs":"a b"})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"id\":" + std::to_string(FakeTokenizer::WordId("a"))), std::string::npos)
      << r.body;
  EXPECT_EQ(call("POST", "/tokenize", R"({"inputs":5})").status, 422);
  EXPECT_EQ(call("GET", "/tokenize", "").allow, "POST");
  EXPECT_EQ(call("GET", "/decode", "").allow, "POST");
  EXPECT_EQ(call("POST", "/decode", R"({"ids":"x"})").status, 422);
}

}  // namespace
}  // namespace orchid

namespace orchid {
namespace {

TEST_F(RouterTest, PromptsArePrependedBeforeTokenizing) {
  EncodeConfig prompts;
  prompts.prompts = {{"query", "q z "}, {"passage", "p "}};
  service_.SetPrompts(prompts, std::nullopt);
  const auto plain = Rows(Post(R"({"input":["q z a b"]})"));
  int64_t tokens = 0;
  const auto by_name = Rows(Post(R"({"input":["a b"],"prompt_name":"query"})"), &tokens);
  const auto by_type = Rows(Post(R"({"input":["a b"],"input_type":"query"})"));
  EXPECT_EQ(by_name, plain);
  EXPECT_EQ(by_type, plain);
  EXPECT_EQ(tokens, 6);  // the prompt's tokens count, as sentence-transformers counts them
  // A type the model has no prompt for embeds the text as it is.
  EXPECT_EQ(Rows(Post(R"({"input":["a b"],"input_type":"document"})")),
            Rows(Post(R"({"input":["a b"]})")));
  Error(Post(R"({"input":["a b"],"prompt_name":"nope"})"), 400, "prompt_name");
  Error(Post(R"({"input":["a b"],"input_type":"other"})"), 400, "input_type");
  Error(Post(R"({"input":[[5,6]],"prompt_name":"query"})"), 400, "input");
  Error(Post(R"({"input":["a b"],"prompt_name":3})"), 400, "prompt_name");
  // The server's default prompt applies when the request names none.
  service_.SetPrompts(prompts, std::string("p "));
  EXPECT_EQ(Rows(Post(R"({"input":["a b"]})")),
            Rows(Post(R"({"input":["p a b"],"input_type":"document"})")));
  EXPECT_EQ(Rows(Post(R"({"input":["a b"],"input_type":"query"})")), plain);
}

}  // namespace
}  // namespace orchid

namespace orchid {
namespace {

// vLLM's `priority` on every route that runs the engine: an integer in int32's range; anything
// else is a 400 naming it (TEI's error shape on TEI's routes), and the server goes on serving.
TEST_F(RouterTest, PriorityIsValidatedOnEveryEngineRoute) {
  for (const char* bad : {"1.5", "\"high\"", "true", "2147483648", "-2147483649", "[1]"}) {
    const std::string p = bad;
    Error(Post(R"({"input":["a b"],"priority":)" + p + "}"), 400, "priority");
    const std::vector<std::pair<std::string, std::string>> others = {
        {"/embed", R"({"inputs":"a b","priority":)" + p + "}"},
        {"/similarity",
         R"({"inputs":{"source_sentence":"a","sentences":["b"]},"priority":)" + p + "}"},
        {"/similarity",
         R"({"inputs":{"source_sentence":"a","sentences":["b"]},"parameters":{"priority":)" + p +
             "}}"},
        {"/rerank", R"({"query":"a","texts":["b"],"priority":)" + p + "}"},
        {"/v1/rerank", R"({"query":"a","documents":["b"],"priority":)" + p + "}"},
        {"/v1/score", R"({"text_1":"a","text_2":["b"],"priority":)" + p + "}"},
        {"/predict", R"({"inputs":"a b","priority":)" + p + "}"},
    };
    for (const auto& [route, body] : others) {
      HttpResponse r = Call("POST", route, body);
      EXPECT_EQ(r.status, 400) << route << " " << body << ": " << r.body;
      EXPECT_NE(r.body.find("priority must be an integer"), std::string::npos) << r.body;
    }
  }
  for (const char* good : {"0", "5", "-3", "null", "2147483647", "-2147483648"}) {
    EXPECT_EQ(Rows(Post(R"({"input":["a b"],"priority":)" + std::string(good) + "}")).size(), 1u)
        << good;
  }
  EXPECT_EQ(Call("POST", "/embed", R"({"inputs":"a b","priority":-1})").status, 200);
}

HttpRequest WithHeaders(std::string body, std::optional<std::string> request_timeout,
                        std::string stainless_timeout) {
  HttpRequest r{"POST", "/v1/embeddings", std::move(body)};
  r.request_timeout = std::move(request_timeout);
  r.stainless_timeout = std::move(stainless_timeout);
  return r;
}

// X-Request-Timeout must be a positive number of seconds (else 400); X-Stainless-Timeout, which
// OpenAI's client sends by itself, is used when it reads as one and ignored otherwise.
TEST_F(RouterTest, TimeoutHeadersAreCheckedOrIgnored) {
  auto call = [this](HttpRequest req) {
    std::promise<HttpResponse> p;
    auto f = p.get_future();
    router_.Handle(std::move(req), [&p](HttpResponse r) { p.set_value(std::move(r)); });
    return f.get();
  };
  const std::string body = R"({"input":["a b"]})";
  for (const char* bad : {"abc", "0", "-1", "inf", "nan", "1s", " ", ""}) {
    auto e = Error(call(WithHeaders(body, bad, "")), 400, "X-Request-Timeout");
    EXPECT_EQ(std::string_view(e["code"]), "invalid_request_timeout");
  }
  for (const char* fine : {"30", "2.5", "600.0", "1e12"}) {
    EXPECT_EQ(call(WithHeaders(body, fine, "")).status, 200) << fine;
  }
  for (const char* any : {"abc", "0", "600", "NaN", "600.0"}) {
    EXPECT_EQ(call(WithHeaders(body, std::nullopt, any)).status, 200) << any;
  }
}

// Requests that wait behind a busy engine: one whose deadline passes before it starts is
// answered 504; one whose client has gone (its Cancellation fired) is dropped (499, which no
// one reads); neither reaches the engine, and the server goes on serving.
TEST(RouterDeadlineTest, WorkNotStartedInTimeIsDropped) {
  FakeEngine engine(/*auto_complete=*/false, /*vocab_size=*/1000, /*max_seq_length=*/8);
  TokenBudgetScheduler scheduler(&engine, TokenBudgetSchedulerOptions{64, 1024, 1});
  LocalBackend backend(&scheduler);
  FakeTokenizer tokenizer;
  EmbeddingService service(&tokenizer, &backend, "m", [](Task t) { t(); });
  Router router(&service);
  auto start = [&router](HttpRequest req) {
    auto p = std::make_shared<std::promise<HttpResponse>>();
    auto f = p->get_future();
    router.Handle(std::move(req), [p](HttpResponse r) { p->set_value(std::move(r)); });
    return f;
  };
  auto busy = start(HttpRequest{"POST", "/v1/embeddings", R"({"input":["a"]})"});
  ASSERT_TRUE(engine.WaitForBatches(1));
  auto late = start(WithHeaders(R"({"input":["a b"]})", "0.02", ""));
  auto cancel = std::make_shared<Cancellation>();
  HttpRequest gone{"POST", "/embed", R"({"inputs":"b c"})"};
  gone.cancellation = cancel;
  auto abandoned = start(std::move(gone));
  auto fine = start(WithHeaders(R"({"input":["c"]})", std::nullopt, "600"));
  cancel->Cancel();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  engine.Complete(0);
  ASSERT_TRUE(engine.WaitForBatches(2));
  EXPECT_EQ(engine.batch(1).num_sequences(), 1);  // `fine` only
  engine.Complete(1);
  EXPECT_EQ(busy.get().status, 200);
  HttpResponse r = late.get();
  EXPECT_EQ(r.status, 504) << r.body;
  EXPECT_NE(r.body.find("deadline"), std::string::npos) << r.body;
  EXPECT_EQ(abandoned.get().status, 499);
  EXPECT_EQ(fine.get().status, 200);
}

}  // namespace
}  // namespace orchid
