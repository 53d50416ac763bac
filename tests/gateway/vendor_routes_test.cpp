// Cohere's routes (POST /v2/embed, /v1/embed, /v2/rerank) and the Hugging Face Inference API's
// POST / (what InferenceClient posts to a server's URL), over the fake tokenizer and engines:
// each answers what the native route answers for the same inputs, in the vendor's shape, and
// refuses what the native route refuses. Fake embedder rows are {first id, length, last id}
// (FakeEngine), so prompts and truncation show in them.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <deque>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "gateway/fake_tokenizer.h"
#include "gateway/router.h"
#include "gateway/score_service.h"
#include "worker/fake_engine.h"

namespace orchid {
namespace {

using testing::FakeEngine;
using testing::FakeTokenizer;

constexpr int kMaxLen = 8;

std::unique_ptr<FakeEngine> Engine(int labels) {
  auto e = std::make_unique<FakeEngine>(true, 1000, kMaxLen);
  if (labels == 1) e->MakeScorer();
  if (labels > 1) e->MakeClassifier({"neg", "mid", "pos"});
  return e;
}

// One served model: engine, scheduler, backend, services and a router over them alone.
struct Served {
  Served(int labels, const Tokenizer* tokenizer, const std::string& name,
         const EncodeConfig& prompts = {})
      : engine(Engine(labels)),
        scheduler(engine.get(), TokenBudgetSchedulerOptions{64, 1 << 16, 2}),
        backend(&scheduler),
        embed(tokenizer, &backend, name, [](Task t) { t(); }),
        score(tokenizer, &backend, name, [](Task t) { t(); }) {
    embed.SetPrompts(prompts, std::nullopt);  // before the router: its document names them
    router = std::make_unique<Router>(std::vector<RoutedModel>{{&embed, &score}});
  }

  HttpResponse Post(std::string target, std::string body) {
    std::promise<HttpResponse> p;
    auto f = p.get_future();
    router->Handle(HttpRequest{"POST", std::move(target), std::move(body)},
                   [&p](HttpResponse r) { p.set_value(std::move(r)); });
    return f.get();
  }

  std::unique_ptr<FakeEngine> engine;
  TokenBudgetScheduler scheduler;
  LocalBackend backend;
  EmbeddingService embed;
  ScoreService score;
  std::unique_ptr<Router> router;
};

class VendorRoutesTest : public ::testing::Test {
 protected:
  VendorRoutesTest()
      : embedder_(
            0, &tokenizer_, "embed-model",
            EncodeConfig{{{"query", "q z "}, {"document", "d "}, {"classification", "c "}}, ""}),
        reranker_(1, &tokenizer_, "rerank-model"),
        classifier_(3, &tokenizer_, "nli-model") {}

  simdjson::dom::element Json(const HttpResponse& r, int status = 200) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    bodies_.push_back(r.body);
    return parsers_.emplace_back().parse(bodies_.back());
  }

  // Rows of a JSON array of arrays of numbers.
  static std::vector<std::vector<double>> Rows(simdjson::dom::element rows) {
    std::vector<std::vector<double>> out;
    for (simdjson::dom::element row : simdjson::dom::array(rows)) {
      out.emplace_back();
      for (simdjson::dom::element v : simdjson::dom::array(row)) {
        out.back().push_back(v.is_double() ? double(v) : double(int64_t(v)));
      }
    }
    return out;
  }

  // The rows /v1/embeddings answers for `fields` (a JSON object's members) in `format`.
  std::vector<std::vector<double>> OpenAi(const std::string& fields, const char* format) {
    simdjson::dom::element doc = Json(embedder_.Post(
        "/v1/embeddings", "{" + fields + R"(,"encoding_format":")" + format + "\"}"));
    std::vector<std::vector<double>> out;
    for (simdjson::dom::element item : simdjson::dom::array(doc["data"])) {
      std::vector<double> row;
      for (simdjson::dom::element v : simdjson::dom::array(item["embedding"])) {
        row.push_back(v.is_double() ? double(v) : double(int64_t(v)));
      }
      out.push_back(row);
    }
    return out;
  }

  // Checks Cohere's error shape and returns its code.
  std::string CohereError(const HttpResponse& r, int status, std::string_view param) {
    simdjson::dom::element e = Json(r, status);
    EXPECT_TRUE(e["message"].is_string()) << r.body;
    EXPECT_FALSE(e["error"].error() == simdjson::SUCCESS) << r.body;
    EXPECT_EQ(std::string_view(e["param"]), param) << r.body;
    return e["code"].is_null() ? std::string() : std::string(std::string_view(e["code"]));
  }

  FakeTokenizer tokenizer_;
  Served embedder_;
  Served reranker_;
  Served classifier_;
  // Elements point into their parser: a deque keeps each where it was.
  std::deque<std::string> bodies_;
  std::deque<simdjson::dom::parser> parsers_;
};

TEST_F(VendorRoutesTest, CohereV2EmbedAnswersEveryTypeAsTheOpenAiRoute) {
  simdjson::dom::element doc = Json(embedder_.Post(
      "/v2/embed", R"({"model":"embed-model","texts":["a b","c"],"input_type":"search_document",
                      "embedding_types":["float","int8","ubinary","base64"]})"));
  EXPECT_EQ(std::string_view(doc["response_type"]), "embeddings_by_type");
  EXPECT_EQ(std::string_view(doc["id"]).substr(0, 6), "embed-");
  EXPECT_EQ(simdjson::to_string(doc["texts"]), R"(["a b","c"])");
  EXPECT_EQ(std::string_view(doc["meta"]["api_version"]["version"]), "2");
  // "d a b" and "d c" with [CLS] and [SEP]: 5 + 4 tokens.
  EXPECT_EQ(int64_t(doc["meta"]["billed_units"]["input_tokens"]), 9);
  const std::string same = R"("input":["a b","c"],"input_type":"document")";
  EXPECT_EQ(Rows(doc["embeddings"]["float"]), OpenAi(same, "float"));
  EXPECT_EQ(Rows(doc["embeddings"]["int8"]), OpenAi(same, "int8"));
  EXPECT_EQ(Rows(doc["embeddings"]["ubinary"]), OpenAi(same, "ubinary"));
  simdjson::dom::element openai =
      Json(embedder_.Post("/v1/embeddings", "{" + same + R"(,"encoding_format":"base64"})"));
  EXPECT_EQ(std::string_view(doc["embeddings"]["base64"].at(1)),
            std::string_view(openai["data"].at(1)["embedding"]));
  // The order of the types is the request's; no embedding_types: floats only.
  simdjson::dom::element plain = Json(embedder_.Post("/v2/embed", R"({"texts":["a b"]})"));
  simdjson::dom::object by_type = plain["embeddings"];
  ASSERT_EQ(by_type.size(), 1u);
  EXPECT_EQ((*by_type.begin()).key, "float");
}

TEST_F(VendorRoutesTest, CohereV1EmbedAnswersFloatsUnlessTypesAreAsked) {
  simdjson::dom::element doc = Json(embedder_.Post("/v1/embed", R"({"texts":["a b","c"]})"));
  EXPECT_EQ(std::string_view(doc["response_type"]), "embeddings_floats");
  EXPECT_EQ(std::string_view(doc["meta"]["api_version"]["version"]), "1");
  EXPECT_EQ(Rows(doc["embeddings"]), OpenAi(R"("input":["a b","c"])", "float"));
  doc = Json(embedder_.Post("/v1/embed", R"({"texts":["a b"],"embedding_types":["uint8"]})"));
  EXPECT_EQ(std::string_view(doc["response_type"]), "embeddings_by_type");
  EXPECT_EQ(Rows(doc["embeddings"]["uint8"]), OpenAi(R"("input":["a b"])", "uint8"));
}

TEST_F(VendorRoutesTest, CohereInputTypesSelectTheModelsPrompts) {
  const std::pair<const char*, const char*> cases[] = {{"search_query", "q z a b"},
                                                       {"search_document", "d a b"},
                                                       {"classification", "c a b"},
                                                       {"clustering", "a b"}};  // no such prompt
  for (const auto& [type, prompted] : cases) {
    simdjson::dom::element doc = Json(embedder_.Post(
        "/v2/embed", std::string(R"({"texts":["a b"],"input_type":")") + type + "\"}"));
    EXPECT_EQ(Rows(doc["embeddings"]["float"]),
              OpenAi(std::string(R"("input":[")") + prompted + "\"]", "float"))
        << type;
  }
  // v2's inputs: an input's text parts are joined by a newline (one word each for the fake).
  simdjson::dom::element doc =
      Json(embedder_.Post("/v2/embed", R"({"inputs":[{"content":[{"type":"text","text":"a"},
                                              {"type":"text","text":"b"}]}]})"));
  EXPECT_EQ(simdjson::to_string(doc["texts"]), R"(["a\nb"])");
}

TEST_F(VendorRoutesTest, CohereTruncatesByDefaultAndCountsMaxTokensWithoutSpecialTokens) {
  const std::string long_text = R"("w1 w2 w3 w4 w5 w6 w7 w8 w9 w10")";  // 12 tokens > 8
  auto cohere = [&](const std::string& extra) {
    return Rows(Json(embedder_.Post(
        "/v2/embed", R"({"texts":[)" + long_text + "]" + extra + "}"))["embeddings"]["float"]);
  };
  const std::string input = R"("input":[)" + long_text + "]";
  EXPECT_EQ(cohere(""), OpenAi(input + R"(,"truncate":true)", "float"));  // END
  EXPECT_EQ(cohere(R"(,"truncate":"END")"), OpenAi(input + R"(,"truncate":true)", "float"));
  EXPECT_EQ(cohere(R"(,"truncate":"START")"),
            OpenAi(input + R"(,"truncate":true,"truncation_direction":"left")", "float"));
  EXPECT_EQ(CohereError(embedder_.Post("/v2/embed",
                                       R"({"texts":[)" + long_text + R"(],"truncate":"NONE"})"),
                        400, "input[0]"),
            "context_length_exceeded");
  // max_tokens 3: [CLS] w1 w2 w3 [SEP], as the token ids say.
  simdjson::dom::element doc =
      Json(embedder_.Post("/v2/embed", R"({"texts":[)" + long_text + R"(],"max_tokens":3})"));
  EXPECT_EQ(int64_t(doc["meta"]["billed_units"]["input_tokens"]), 5);
  EXPECT_EQ(Rows(doc["embeddings"]["float"]),
            OpenAi(R"("input":[[1,)" + std::to_string(FakeTokenizer::WordId("w1")) + "," +
                       std::to_string(FakeTokenizer::WordId("w2")) + "," +
                       std::to_string(FakeTokenizer::WordId("w3")) + ",2]]",
                   "float"));
  EXPECT_EQ(CohereError(embedder_.Post("/v2/embed", R"({"texts":[)" + long_text +
                                                        R"(],"truncate":"NONE","max_tokens":3})"),
                        400, "input[0]"),
            "context_length_exceeded");
  // output_dimension is /v1/embeddings' dimensions.
  EXPECT_EQ(cohere(R"(,"output_dimension":2)"),
            OpenAi(input + R"(,"truncate":true,"dimensions":2)", "float"));
}

TEST_F(VendorRoutesTest, CohereEmbedRefusesWhatItCannotServeInItsOwnShape) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({})", "texts"},
      {R"({"texts":["a"],"inputs":[{"content":[{"type":"text","text":"b"}]}]})", "texts"},
      {R"({"texts":"a"})", "texts"},
      {R"({"texts":[]})", "texts"},
      {R"({"texts":["a",""]})", "texts[1]"},
      {R"({"texts":["a"],"images":["data:image/png;base64,AAAA"]})", "texts"},
      // A text model refuses images (a CLIP / SigLIP model takes them: tests/e2e/test_images.py).
      {R"({"images":["data:image/png;base64,AAAA"],"input_type":"image"})", "input"},
      {R"({"inputs":[{"content":[{"type":"image_url","image_url":{"url":"x"}}]}]})", "input"},
      {R"({"inputs":[{"content":[{"type":"audio","text":"x"}]}]})", "inputs[0].content[0].type"},
      {R"({"inputs":[{"content":[]}]})", "inputs[0].content"},
      {R"({"texts":["a"],"input_type":"image"})", "input_type"},
      {R"({"texts":["a"],"input_type":"query"})", "input_type"},
      {R"({"texts":["a"],"truncate":"none"})", "truncate"},
      {R"({"texts":["a"],"truncate":true})", "truncate"},
      {R"({"texts":["a"],"embedding_types":["float","int4"]})", "embedding_types[1]"},
      {R"({"texts":["a"],"embedding_types":[]})", "embedding_types"},
      {R"({"texts":["a"],"max_tokens":0})", "max_tokens"},
      {R"({"texts":["a"],"max_tokens":1.5})", "max_tokens"},
      {R"({"texts":["a"],"output_dimension":"8"})", "output_dimension"},
      {R"({"texts":["a"],"output_dimension":4})", "dimensions"},  // the model has 3
      {R"({"texts":["a"],"priority":"high"})", "priority"},
      {R"({"texts":["a"],"model":5})", "model"},
  };
  for (const Case& c : cases) {
    for (const char* route : {"/v2/embed", "/v1/embed"}) {
      CohereError(embedder_.Post(route, c.body), 400, c.param);
    }
  }
  EXPECT_EQ(CohereError(embedder_.Post("/v2/embed", R"({"texts":["a"],"model":"embed-v4.0"})"), 404,
                        "model"),
            "model_not_found");
  EXPECT_EQ(CohereError(reranker_.Post("/v2/embed", R"({"texts":["a"]})"), 400, "model"),
            "model_not_an_embedder");
}

TEST_F(VendorRoutesTest, CohereV2RerankScoresAsTheV1Route) {
  simdjson::dom::element v1 = Json(
      reranker_.Post("/v1/rerank", R"({"query":"q","documents":["a","b c d","e f"],"top_n":2})"));
  simdjson::dom::element v2 = Json(reranker_.Post(
      "/v2/rerank", R"({"model":"rerank-model","query":"q","documents":["a","b c d","e f"],
                        "top_n":2,"max_tokens_per_doc":4096,
                        "relevant_spans":{"mode":"disabled"}})"));
  EXPECT_EQ(simdjson::to_string(v2["results"]), simdjson::to_string(v1["results"]));
  EXPECT_EQ(simdjson::dom::array(v2["results"]).size(), 2u);
  EXPECT_EQ(std::string_view(v2["id"]).substr(0, 7), "rerank-");
  EXPECT_EQ(std::string_view(v2["meta"]["api_version"]["version"]), "2");
  EXPECT_EQ(int64_t(v2["meta"]["billed_units"]["search_units"]), 1);
  EXPECT_EQ(int64_t(v2["meta"]["tokens"]["input_tokens"]), int64_t(v1["usage"]["total_tokens"]));
  simdjson::dom::element docs = Json(reranker_.Post(
      "/v2/rerank", R"({"query":"q","documents":["a","b"],"return_documents":true})"));
  EXPECT_TRUE(docs["results"].at(0)["document"]["text"].is_string());
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({"documents":["a"]})", "query"},
      {R"({"query":"q"})", "documents"},
      {R"({"query":"q","documents":[{"text":"a"}]})", "documents[0]"},
      {R"({"query":"q","documents":["a"],"top_n":0})", "top_n"},
      {R"({"query":"q","documents":["a"],"max_tokens_per_doc":"all"})", "max_tokens_per_doc"},
      {R"({"query":"q","documents":["a"],"relevant_spans":{"mode":"enabled"}})", "relevant_spans"},
      {R"({"query":"q","documents":["a"],"relevant_spans":{"mode":"disabled","threshold":"x"}})",
       "relevant_spans.threshold"},
      {R"({"query":"q","documents":["a"],"relevant_spans":true})", "relevant_spans"},
  };
  for (const Case& c : cases) CohereError(reranker_.Post("/v2/rerank", c.body), 400, c.param);
  EXPECT_EQ(
      CohereError(embedder_.Post("/v2/rerank", R"({"query":"q","documents":["a"]})"), 400, "model"),
      "model_not_a_reranker");
}

TEST_F(VendorRoutesTest, PostRootOnAnEmbedderIsEmbedOrSimilarity) {
  EXPECT_EQ(embedder_.Post("/", R"({"inputs":["a b","c"],"normalize":false})").body,
            embedder_.Post("/embed", R"({"inputs":["a b","c"],"normalize":false})").body);
  const std::string similarity =
      R"({"inputs":{"source_sentence":"a b","sentences":["a c","d"]},"parameters":{}})";
  const HttpResponse root = embedder_.Post("/", similarity);
  EXPECT_EQ(root.status, 200) << root.body;
  EXPECT_EQ(root.body, embedder_.Post("/similarity", similarity).body);
}

TEST_F(VendorRoutesTest, PostRootOnAClassifierAnswersTheInferenceApisListPerInput) {
  // One text: the Inference API's [[...]], where TEI's /predict answers [...].
  const HttpResponse one = classifier_.Post("/", R"({"inputs":"a b"})");
  EXPECT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.body, "[" + classifier_.Post("/predict", R"({"inputs":"a b"})").body + "]");
  const std::string batch = R"({"inputs":["a b",["a","b c"]]})";
  EXPECT_EQ(classifier_.Post("/", batch).body, classifier_.Post("/predict", batch).body);
  // parameters.top_k keeps the best labels; function_to_apply none is raw_scores.
  simdjson::dom::element top = Json(classifier_.Post(
      "/", R"({"inputs":"a b","parameters":{"top_k":2,"function_to_apply":"none"}})"));
  simdjson::dom::element raw =
      Json(classifier_.Post("/predict", R"({"inputs":"a b","raw_scores":true})"));
  ASSERT_EQ(simdjson::dom::array(top.at(0)).size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(simdjson::to_string(top.at(0).at(k)), simdjson::to_string(raw.at(k)));
  }
  // sigmoid: each logit on its own (the scores no longer sum to 1).
  simdjson::dom::element sig = Json(
      classifier_.Post("/", R"({"inputs":"a b","parameters":{"function_to_apply":"sigmoid"}})"));
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(double(sig.at(0).at(k)["score"]),
                1.0 / (1.0 + std::exp(-double(raw.at(k)["score"]))), 1e-6);
  }
  for (const char* bad : {R"({"inputs":"a","parameters":{"top_k":0}})",
                          R"({"inputs":"a","parameters":{"function_to_apply":"relu"}})",
                          R"({"inputs":"a","parameters":[]})"}) {
    simdjson::dom::element e = Json(classifier_.Post("/", bad), 400);
    EXPECT_EQ(std::string_view(e["error_type"]), "Validation") << bad;  // TEI's shape
  }
}

TEST_F(VendorRoutesTest, PostRootOnARerankerIsRerankWithoutInputsAndPredictWithThem) {
  const std::string rerank = R"({"query":"q","texts":["a","b c"]})";
  EXPECT_EQ(reranker_.Post("/", rerank).body, reranker_.Post("/rerank", rerank).body);
  EXPECT_EQ(reranker_.Post("/", R"({"query":"q","texts":["a","b c"],"inputs":null})").body,
            reranker_.Post("/rerank", rerank).body);
  const HttpResponse predict = reranker_.Post("/", R"({"inputs":"a b","query":5})");
  EXPECT_EQ(predict.status, 200) << predict.body;
  EXPECT_EQ(predict.body, "[" + reranker_.Post("/predict", R"({"inputs":"a b"})").body + "]");
}

}  // namespace
}  // namespace orchid
