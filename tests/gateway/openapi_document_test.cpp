// The served OpenAPI document: src/gateway/openapi.json narrowed to the served models (its
// x-orchid-* markers replaced), and what routers hand out at GET /openapi.json for an embedder,
// a reranker and a classifier — every path listed is answered, and only those.
#include "gateway/openapi_document.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <future>
#include <memory>
#include <set>
#include <string>

#include "gateway/fake_tokenizer.h"
#include "gateway/router.h"
#include "gateway/score_service.h"
#include "worker/fake_engine.h"

namespace orchid {
namespace {

using testing::FakeEngine;
using testing::FakeTokenizer;

TEST(OpenApiDocumentTest, MarkersAreReplacedByWhatTheModelsServe) {
  const std::string source = R"({
    "paths": {
      "/e": {"x-orchid-serves": ["embed"], "post": {"operationId": "e"}},
      "/r": {"x-orchid-serves": ["rerank", "classify"], "post": {"operationId": "r"}},
      "/": {"post": {"schema": {"anyOf": [{"$ref": "#/E", "x-orchid-serves": ["default-embed"]},
                                          {"$ref": "#/R", "x-orchid-serves": ["default-rerank"]}]},
                     "both": {"oneOf": [{"type": "string", "x-orchid-serves": ["embed"]},
                                        {"type": "null"}], "description": "kept"}}}
    },
    "m": {"type": ["string", "null"], "x-orchid-enum": "models"},
    "p": {"type": ["string", "null"], "x-orchid-enum": "prompts"},
    "t": {"type": "integer", "minimum": 0, "x-orchid-maximum": "token_id"},
    "d": {"type": "integer", "x-orchid-maximum": "dimensions", "x": [1.5, "\"q\"", true, null]}
  })";
  ServedModelFacts embed;
  embed.kinds = {"embed", "default-embed"};
  embed.model_names = {"a", "b"};
  embed.prompt_names = {"query"};
  embed.max_token_id = 999;
  embed.dimensions = 384;
  simdjson::dom::parser parser;
  const std::string out = ServedOpenApiDocument(source, embed);
  simdjson::dom::element doc = parser.parse(out);
  simdjson::dom::object paths = doc["paths"];
  EXPECT_EQ(paths.size(), 2u);
  EXPECT_EQ(std::string_view(doc["paths"]["/e"]["post"]["operationId"]), "e");
  EXPECT_TRUE(doc["paths"]["/r"].error());
  EXPECT_TRUE(doc["paths"]["/e"]["x-orchid-serves"].error());  // markers are not served
  // A one-branch anyOf is its branch; a oneOf beside other keys keeps its shape.
  EXPECT_EQ(simdjson::to_string(doc["paths"]["/"]["post"]["schema"]), R"({"$ref":"#/E"})");
  EXPECT_EQ(simdjson::dom::array(doc["paths"]["/"]["post"]["both"]["oneOf"]).size(), 2u);
  EXPECT_EQ(simdjson::to_string(doc["m"]), R"({"type":["string","null"],"enum":["a","b",null]})");
  EXPECT_EQ(simdjson::to_string(doc["p"]["enum"]), R"(["query",null])");
  EXPECT_EQ(int64_t(doc["t"]["maximum"]), 999);
  EXPECT_EQ(int64_t(doc["d"]["maximum"]), 384);
  EXPECT_EQ(simdjson::to_string(doc["d"]["x"]), R"([1.5,"\"q\"",true,null])");

  ServedModelFacts rerank;
  rerank.kinds = {"rerank", "classify", "default-rerank", "default-classify"};
  rerank.model_names = {"r"};
  rerank.max_token_id = 99;
  doc = parser.parse(ServedOpenApiDocument(source, rerank));
  EXPECT_TRUE(doc["paths"]["/e"].error());
  EXPECT_FALSE(doc["paths"]["/r"].error());
  EXPECT_EQ(simdjson::to_string(doc["paths"]["/"]["post"]["schema"]), R"({"$ref":"#/R"})");
  EXPECT_EQ(simdjson::dom::array(doc["paths"]["/"]["post"]["both"]["oneOf"]).size(), 1u);
  EXPECT_EQ(simdjson::to_string(doc["p"]["enum"]), "[null]");  // no prompts: only null
  EXPECT_TRUE(doc["d"]["maximum"].error());                    // no embedder: no bound
  EXPECT_EQ(ServedOpenApiDocument("[1]", rerank), "[1]");      // not a document: as it is
}

// The route table's operations (ServedModelFacts::operations): an operation it lacks is left
// out, and a path left without operations goes; what is not an operation stays.
TEST(OpenApiDocumentTest, OnlyTheRouteTablesOperationsAreKept) {
  const std::string source = R"({
    "paths": {
      "/a": {"summary": "kept", "get": {"operationId": "getA"}, "post": {"operationId": "postA"}},
      "/b": {"post": {"operationId": "postB"}},
      "/c": {"x-orchid-serves": ["rerank"], "post": {"operationId": "postC"}}
    },
    "components": {"paths": {"/b": {"post": 1}}}
  })";
  ServedModelFacts facts;
  facts.kinds = {"embed"};
  facts.operations = {"get /a", "post /c"};
  simdjson::dom::parser parser;
  const std::string out = ServedOpenApiDocument(source, facts);
  EXPECT_EQ(out,
            R"({"paths":{"/a":{"summary":"kept","get":{"operationId":"getA"}}},)"
            R"("components":{"paths":{"/b":{"post":1}}}})");
  facts.operations.clear();  // none listed: every operation stays (as far as the kinds say)
  simdjson::dom::element doc = parser.parse(ServedOpenApiDocument(source, facts));
  EXPECT_EQ(simdjson::dom::object(doc["paths"]).size(), 2u);
  EXPECT_FALSE(doc["paths"]["/a"]["post"].error());
}

// A router over one fake model: an embedder (0 labels), a reranker (1) or a classifier (3).
struct OneModel {
  explicit OneModel(int labels, const std::string& name)
      : engine(MakeEngine(labels)),
        scheduler(engine.get(), TokenBudgetSchedulerOptions{64, 1 << 16, 2}),
        backend(&scheduler),
        embed(&tokenizer, &backend, name, [](Task t) { t(); }),
        score(&tokenizer, &backend, name, [](Task t) { t(); }) {
    EncodeConfig prompts;
    prompts.prompts = {{"query", "q "}};
    embed.SetPrompts(prompts, std::nullopt);
    router = std::make_unique<Router>(std::vector<RoutedModel>{{&embed, &score}}, &metrics);
  }
  static std::unique_ptr<FakeEngine> MakeEngine(int labels) {
    auto e = std::make_unique<FakeEngine>(true, 1000, 8);
    if (labels == 1) e->MakeScorer();
    if (labels > 1) e->MakeClassifier({"a", "b", "c"});
    return e;
  }
  HttpResponse Call(const std::string& method, const std::string& target, std::string body) {
    std::promise<HttpResponse> p;
    auto f = p.get_future();
    router->Handle(HttpRequest{method, target, std::move(body)},
                   [&p](HttpResponse r) { p.set_value(std::move(r)); });
    return f.get();
  }

  FakeTokenizer tokenizer;
  MetricsRegistry metrics;
  std::unique_ptr<FakeEngine> engine;
  TokenBudgetScheduler scheduler;
  LocalBackend backend;
  EmbeddingService embed;
  ScoreService score;
  std::unique_ptr<Router> router;
};

// The operations of a served document, as "post /v1/embeddings"; each is answered by the
// router (not 404 or 405).
std::set<std::string> Operations(OneModel& m, simdjson::dom::parser& parser, std::string* body) {
  const HttpResponse r = m.Call("GET", "/openapi.json", "");
  EXPECT_EQ(r.status, 200);
  *body = r.body;
  std::set<std::string> ops;
  for (simdjson::dom::key_value_pair path : simdjson::dom::object(parser.parse(*body)["paths"])) {
    for (simdjson::dom::key_value_pair op : simdjson::dom::object(path.value)) {
      ops.insert(std::string(op.key) + " " + std::string(path.key));
      std::string target(path.key);
      if (target == "/v1/models/{id}") target = "/v1/models/" + m.embed.model_name();
      const int status = m.Call(op.key == "get" ? "GET" : "POST", target, "{}").status;
      EXPECT_NE(status, 404) << op.key << " " << path.key;
      EXPECT_NE(status, 405) << op.key << " " << path.key;
    }
  }
  return ops;
}

TEST(OpenApiDocumentTest, EachModelKindGetsTheRoutesItAnswers) {
  const std::set<std::string> common = {"get /",          "post /",
                                        "post /tokenize", "post /decode",
                                        "get /v1/models", "get /v1/models/{id}",
                                        "get /info",      "get /health",
                                        "get /metrics",   "get /openapi.json"};
  auto with = [&common](std::set<std::string> more) {
    more.insert(common.begin(), common.end());
    return more;
  };
  simdjson::dom::parser parser;
  std::string body;
  OneModel embedder(0, "m");
  EXPECT_EQ(Operations(embedder, parser, &body),
            with({"post /v1/embeddings", "post /embeddings", "post /embed", "post /similarity",
                  "post /v1/embed", "post /v2/embed", "post /embed_all", "post /pooling",
                  "post /v1/score",
                  "post /score"}));  // vLLM's score of an embedder: its texts' similarity
  simdjson::dom::element doc = parser.parse(body);
  simdjson::dom::element request = doc["components"]["schemas"]["EmbeddingsRequest"];
  EXPECT_EQ(simdjson::to_string(request["properties"]["model"]["enum"]), R"(["m",null])");
  EXPECT_EQ(simdjson::to_string(request["properties"]["prompt_name"]["enum"]), R"(["query",null])");
  EXPECT_EQ(int64_t(request["properties"]["dimensions"]["maximum"]), 3);
  EXPECT_EQ(int64_t(request["properties"]["input"]["oneOf"].at(2)["items"]["maximum"]), 999);
  // POST / takes /embed's and /similarity's bodies only.
  EXPECT_EQ(simdjson::dom::array(doc["paths"]["/"]["post"]["requestBody"]["content"]
                                    ["application/json"]["schema"]["anyOf"])
                .size(),
            2u);
  OneModel reranker(1, "r");
  EXPECT_EQ(Operations(reranker, parser, &body),
            with({"post /rerank", "post /v1/rerank", "post /v1/score", "post /score",
                  "post /v2/rerank", "post /predict"}));
  OneModel classifier(3, "c");
  EXPECT_EQ(Operations(classifier, parser, &body), with({"post /predict"}));
}

// Task adapters: `task`'s enum is the default model's tasks with their adapter folders' names;
// `dimensions` takes only the Matryoshka widths the model lists; neither without them.
TEST(OpenApiDocumentTest, TasksAndMatryoshkaWidthsBoundTheirFields) {
  const std::string source = R"({
    "task": {"type": ["string", "null"], "x-orchid-enum": "tasks"},
    "d": {"type": "integer", "x-orchid-maximum": "dimensions"}
  })";
  ServedModelFacts jina;
  jina.kinds = {"embed", "default-embed"};
  jina.task_names = {"retrieval.query", "separation", "text-matching"};
  jina.matryoshka_dimensions = {32, 64, 1024};
  jina.dimensions = 1024;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(ServedOpenApiDocument(source, jina));
  EXPECT_EQ(
      simdjson::to_string(doc["task"]["enum"]),
      R"(["retrieval.query","retrieval_query","separation","text-matching","text_matching",null])");
  EXPECT_EQ(simdjson::to_string(doc["d"]["enum"]), R"([32,64,1024,null])");
  ServedModelFacts plain;
  plain.kinds = {"embed", "default-embed"};
  plain.dimensions = 384;
  simdjson::dom::parser parser2;
  simdjson::dom::element doc2 = parser2.parse(ServedOpenApiDocument(source, plain));
  EXPECT_EQ(simdjson::to_string(doc2["task"]["enum"]), "[null]");
  EXPECT_TRUE(doc2["d"]["enum"].error());
}

}  // namespace
}  // namespace orchid
