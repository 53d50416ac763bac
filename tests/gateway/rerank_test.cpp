// The rerank routes (/rerank, /v1/rerank, /v1/score), model selection across several served
// models, and ScoreService's pair encodings — over the fake tokenizer and fake engines: an
// embedder "embed-model" (served first, the default) and a one-label scorer "rerank-model"
// whose logit is 0.1 * length + sum of token type ids (FakeEngine::ScorerLogit).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cmath>
#include <future>
#include <map>
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

constexpr int kMaxLen = 10;

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// The fake scorer's logit for (one-word query, doc of `words` words): [CLS] q [SEP] d.. [SEP].
float PairLogit(int words) { return FakeEngine::ScorerLogit(4 + words, words + 1); }

std::unique_ptr<FakeEngine> MakeScorerEngine() {
  auto e = std::make_unique<FakeEngine>(true, 1000, kMaxLen);
  e->MakeScorer();
  return e;
}

class RerankTest : public ::testing::Test {
 protected:
  RerankTest()
      : embed_engine_(true, 1000, kMaxLen),
        score_engine_(MakeScorerEngine()),
        embed_scheduler_(&embed_engine_, TokenBudgetSchedulerOptions{64, 1 << 16, 2}),
        score_scheduler_(score_engine_.get(), TokenBudgetSchedulerOptions{64, 1 << 16, 2}),
        embed_backend_(&embed_scheduler_),
        score_backend_(&score_scheduler_),
        embed_(&tokenizer_, &embed_backend_, "embed-model", [](Task t) { t(); }),
        embed_score_(&tokenizer_, &embed_backend_, "embed-model", [](Task t) { t(); }),
        reranker_embed_(&tokenizer_, &score_backend_, "rerank-model", [](Task t) { t(); }),
        reranker_(&tokenizer_, &score_backend_, "rerank-model", [](Task t) { t(); }),
        router_(
            std::vector<RoutedModel>{{&embed_, &embed_score_}, {&reranker_embed_, &reranker_}}) {}

  HttpResponse Call(std::string method, std::string target, std::string body = {}) {
    std::promise<HttpResponse> p;
    auto f = p.get_future();
    router_.Handle(HttpRequest{std::move(method), std::move(target), std::move(body)},
                   [&p](HttpResponse r) { p.set_value(std::move(r)); });
    return f.get();
  }
  HttpResponse Post(std::string target, std::string body) {
    return Call("POST", std::move(target), std::move(body));
  }

  // index → score, from any of the three reply shapes.
  std::map<int64_t, double> Scores(const HttpResponse& r, std::string_view route) {
    EXPECT_EQ(r.status, 200) << r.body;
    std::map<int64_t, double> out;
    simdjson::dom::element doc = parser_.parse(r.body);
    simdjson::dom::array items = route == "/rerank"      ? simdjson::dom::array(doc)
                                 : route == "/v1/rerank" ? simdjson::dom::array(doc["results"])
                                                         : simdjson::dom::array(doc["data"]);
    const char* key = route == "/rerank"      ? "score"
                      : route == "/v1/rerank" ? "relevance_score"
                                              : "score";
    for (simdjson::dom::element item : items) out[int64_t(item["index"])] = double(item[key]);
    return out;
  }

  FakeTokenizer tokenizer_;
  FakeEngine embed_engine_;
  std::unique_ptr<FakeEngine> score_engine_;
  TokenBudgetScheduler embed_scheduler_;
  TokenBudgetScheduler score_scheduler_;
  LocalBackend embed_backend_;
  LocalBackend score_backend_;
  EmbeddingService embed_;
  ScoreService embed_score_;
  EmbeddingService reranker_embed_;
  ScoreService reranker_;
  Router router_;
  simdjson::dom::parser parser_;
};

TEST_F(RerankTest, TheThreeRoutesGiveTheSameScores) {
  const auto tei =
      Scores(Post("/rerank", R"({"query":"q","texts":["a","b c d","e f"],"model":"rerank-model"})"),
             "/rerank");
  const auto cohere = Scores(
      Post("/v1/rerank",
           R"({"model":"rerank-model","query":"q","documents":["a",{"text":"b c d"},"e f"]})"),
      "/v1/rerank");
  const auto score = Scores(
      Post("/v1/score", R"({"model":"rerank-model","text_1":"q","text_2":["a","b c d","e f"]})"),
      "/v1/score");
  ASSERT_EQ(tei.size(), 3u);
  EXPECT_EQ(tei, cohere);
  EXPECT_EQ(tei, score);
  EXPECT_NEAR(tei.at(0), Sigmoid(PairLogit(1)), 1e-6);
  EXPECT_NEAR(tei.at(1), Sigmoid(PairLogit(3)), 1e-6);
  EXPECT_NEAR(tei.at(2), Sigmoid(PairLogit(2)), 1e-6);
}

TEST_F(RerankTest, TeiRerankIsSortedAndEchoesTextsOnRequest) {
  HttpResponse r = Post("/rerank", R"({"query":"q","texts":["a","b c d","e f"],
      "model":"rerank-model","return_text":true,"raw_scores":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::element doc = parser_.parse(r.body);
  std::vector<int64_t> order;
  for (simdjson::dom::element item : simdjson::dom::array(doc)) order.push_back(item["index"]);
  EXPECT_EQ(order, (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(std::string_view(doc.at(0)["text"]), "b c d");
  EXPECT_NEAR(double(doc.at(0)["score"]), PairLogit(3), 1e-5);  // raw: the logit itself
  // Without return_text there is no text.
  r = Post("/rerank", R"({"query":"q","texts":["a"],"model":"rerank-model"})");
  EXPECT_TRUE(parser_.parse(r.body).at(0)["text"].error());
}

TEST_F(RerankTest, CohereRerankTopNDocumentsAndUsage) {
  HttpResponse r = Post("/v1/rerank", R"({"model":"rerank-model","query":"q",
      "documents":["a","b c d","e f"],"top_n":2,"return_documents":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::element doc = parser_.parse(r.body);
  EXPECT_EQ(std::string_view(doc["model"]), "rerank-model");
  const std::string id{std::string_view(doc["id"])};
  EXPECT_EQ(id.rfind("rerank-", 0), 0u) << id;
  EXPECT_EQ(id.size(), 7u + 16u) << id;
  simdjson::dom::array results = doc["results"];
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(int64_t(results.at(0)["index"]), 1);
  EXPECT_EQ(std::string_view(results.at(0)["document"]["text"]), "b c d");
  EXPECT_EQ(int64_t(results.at(1)["index"]), 2);
  // Tokens: (4 + 1) + (4 + 3) + (4 + 2).
  EXPECT_EQ(int64_t(doc["usage"]["total_tokens"]), 18);
}

TEST_F(RerankTest, ScorePairsAreZippedOrBroadcast) {
  HttpResponse r = Post("/v1/score", R"({"model":"rerank-model","text_1":["q","r s"],
      "text_2":["a","b c"]})");
  auto s = Scores(r, "/v1/score");
  EXPECT_NEAR(s.at(0), Sigmoid(FakeEngine::ScorerLogit(5, 2)), 1e-6);
  EXPECT_NEAR(s.at(1), Sigmoid(FakeEngine::ScorerLogit(7, 3)), 1e-6);
  simdjson::dom::element doc = parser_.parse(r.body);
  EXPECT_EQ(std::string_view(doc["object"]), "list");
  EXPECT_EQ(std::string_view(doc["data"].at(0)["object"]), "score");
  const std::string id{std::string_view(doc["id"])};
  EXPECT_EQ(id.rfind("score-", 0), 0u) << id;
  // Each reply has its own id.
  r = Post("/v1/score", R"({"model":"rerank-model","text_1":"q","text_2":"a"})");
  EXPECT_NE(std::string(std::string_view(parser_.parse(r.body)["id"])), id);
  r = Post("/v1/score", R"({"model":"rerank-model","text_1":["q","r"],"text_2":["a","b","c"]})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("text_1"), std::string::npos);
}

TEST_F(RerankTest, TooLongPairsFollowEachApisConvention) {
  // [CLS] q [SEP] + 8 words + [SEP] = 12 tokens > 10.
  const std::string doc = "a b c d e f g h";
  HttpResponse r =
      Post("/rerank", R"({"model":"rerank-model","query":"q","texts":["x",")" + doc + R"("]})");
  EXPECT_EQ(r.status, 413) << r.body;  // TEI: validation error
  EXPECT_EQ(std::string_view(parser_.parse(r.body)["error_type"]), "Validation");
  EXPECT_NE(r.body.find("texts[1]"), std::string::npos) << r.body;
  r = Post("/rerank", R"({"model":"rerank-model","query":"q","texts":[")" + doc +
                          R"("],"truncate":true,"raw_scores":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  // Truncated to 10 tokens: the document keeps 6 words (longest_first trims the longer one).
  EXPECT_NEAR(double(parser_.parse(r.body).at(0)["score"]), PairLogit(6), 1e-5);
  // Cohere / Jina truncate by default; vLLM-style /v1/score refuses unless asked.
  r = Post("/v1/rerank", R"({"model":"rerank-model","query":"q","documents":[")" + doc + R"("]})");
  EXPECT_EQ(r.status, 200) << r.body;
  r = Post("/v1/score", R"({"model":"rerank-model","text_1":"q","text_2":[")" + doc + R"("]})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(std::string_view(parser_.parse(r.body)["error"]["code"]), "context_length_exceeded");
  r = Post("/v1/score",
           R"({"model":"rerank-model","text_1":"q","text_2":[")" + doc + R"("],"truncate":true})");
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(RerankTest, BadRequestsAreRefusedWithTheField) {
  struct Case {
    std::string route, body, param;
  };
  const std::vector<Case> cases = {
      {"/rerank", R"({"texts":["a"]})", "query"},
      {"/rerank", R"({"query":"q"})", "texts"},
      {"/rerank", R"({"query":"q","texts":[]})", "texts"},
      {"/rerank", R"({"query":"q","texts":["a",3]})", "texts[1]"},
      {"/rerank", R"({"query":"","texts":["a"]})", "query"},
      {"/rerank", R"({"query":"q","texts":["a"],"truncation_direction":"up"})",
       "truncation_direction"},
      {"/v1/rerank", R"({"query":"q","documents":[{"title":"a"}]})", "documents[0].text"},
      {"/v1/rerank", R"({"query":"q","documents":["a"],"top_n":0})", "top_n"},
      {"/v1/score", R"({"text_1":3,"text_2":["a"]})", "text_1"},
  };
  for (const Case& c : cases) {
    HttpResponse r = Post(c.route, c.body);
    EXPECT_GE(r.status, 400) << c.body;
    EXPECT_LT(r.status, 500) << c.body;
    EXPECT_NE(r.body.find(c.param), std::string::npos) << c.body << " → " << r.body;
  }
  // More documents than a request may hold.
  std::string many = R"({"model":"rerank-model","query":"q","texts":[)";
  for (size_t i = 0; i <= kMaxScorePairs; ++i) many.append(i ? ",\"a\"" : "\"a\"");
  many.append("]}");
  EXPECT_EQ(Post("/rerank", many).status, 413);
}

// Long documents (max_chunks_per_doc). The window is 10 tokens: beside [CLS] q [SEP] … [SEP]
// a chunk holds 6 words, and chunks overlap by 6 / 4 = 1 word.
std::string NumberedWords(const char* stem, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.append(i ? " " : "").append(stem).append(std::to_string(i));
  return s;
}

TEST_F(RerankTest, ALongDocumentScoresAsItsBestChunkSentAlone) {
  const std::string doc = NumberedWords("w", 14);  // w0 … w13
  HttpResponse r = Post("/v1/rerank", R"({"model":"rerank-model","query":"q","documents":[")" +
                                          doc + R"(","a b"],"max_chunks_per_doc":5,
      "return_chunks":true,"raw_scores":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::parser own;  // parser_ parses the replies below
  simdjson::dom::element reply = own.parse(r.body);
  std::map<int64_t, simdjson::dom::element> results;
  for (simdjson::dom::element item : simdjson::dom::array(reply["results"])) {
    results[int64_t(item["index"])] = item;
  }
  // The chunks: w0-w5, w5-w10, w10-w13; each sent alone as a document.
  const auto alone = Scores(
      Post("/v1/rerank", R"({"model":"rerank-model","query":"q","raw_scores":true,"documents":
          ["w0 w1 w2 w3 w4 w5","w5 w6 w7 w8 w9 w10","w10 w11 w12 w13"]})"),
      "/v1/rerank");
  ASSERT_EQ(alone.size(), 3u);
  const double best = std::max({alone.at(0), alone.at(1), alone.at(2)});
  EXPECT_EQ(double(results.at(0)["relevance_score"]), best);
  EXPECT_NEAR(best, PairLogit(6), 1e-5);
  simdjson::dom::element chunk = results.at(0)["chunk"];
  EXPECT_EQ(int64_t(chunk["index"]), 0);  // the first of the two 6-word chunks
  EXPECT_EQ(int64_t(chunk["start"]), 0);
  EXPECT_EQ(int64_t(chunk["end"]), 17);  // "w0 w1 w2 w3 w4 w5"
  EXPECT_EQ(int64_t(chunk["count"]), 3);
  // A document that fits is its own only chunk, scored as without chunking.
  EXPECT_NEAR(double(results.at(1)["relevance_score"]), PairLogit(2), 1e-5);
  chunk = results.at(1)["chunk"];
  EXPECT_EQ(int64_t(chunk["index"]), 0);
  EXPECT_EQ(int64_t(chunk["end"]), 3);
  EXPECT_EQ(int64_t(chunk["count"]), 1);
  // Usage counts every chunk: 10 + 10 + 8 tokens, and 6 for "a b".
  EXPECT_EQ(int64_t(reply["usage"]["total_tokens"]), 34);
  // Only the first N chunks.
  r = Post("/rerank", R"({"model":"rerank-model","query":"q","texts":[")" + doc +
                          R"("],"max_chunks_per_doc":2,"return_chunks":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(int64_t(parser_.parse(r.body).at(0)["chunk"]["count"]), 2);
  // Without return_chunks there is no chunk.
  r = Post("/v1/rerank", R"({"model":"rerank-model","query":"q","documents":[")" + doc +
                             R"("],"max_chunks_per_doc":5})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(parser_.parse(r.body)["results"].at(0)["chunk"].error());
}

TEST_F(RerankTest, ChunkSpansAreInCodePoints) {
  // "é0 é1 …": 3 bytes and 2 code points a word, then a space.
  const std::string doc = NumberedWords("\xC3\xA9", 9);
  HttpResponse r = Post("/rerank", R"({"model":"rerank-model","query":"q","texts":[")" + doc +
                                       R"("],"max_chunks_per_doc":3,"return_chunks":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::element chunk = parser_.parse(r.body).at(0)["chunk"];
  // Chunks é0-é5 and é5-é8; the first (longer) one wins: 6 words of 2 code points, 5 spaces.
  EXPECT_EQ(int64_t(chunk["index"]), 0);
  EXPECT_EQ(int64_t(chunk["start"]), 0);
  EXPECT_EQ(int64_t(chunk["end"]), 17);
  EXPECT_EQ(int64_t(chunk["count"]), 2);
}

TEST_F(RerankTest, TheServersMaxChunksPerDocAppliesToRerankRoutesOnly) {
  reranker_.set_max_chunks_per_doc(2);
  const std::string doc = NumberedWords("w", 14);
  for (const char* route : {"/rerank", "/v1/rerank"}) {
    const std::string field = std::string_view(route) == "/rerank" ? "texts" : "documents";
    HttpResponse r = Post(route, R"({"model":"rerank-model","query":"q","return_chunks":true,")" +
                                     field + R"(":[")" + doc + R"("]})");
    ASSERT_EQ(r.status, 200) << route << " " << r.body;
    simdjson::dom::element first = std::string_view(route) == "/rerank"
                                       ? parser_.parse(r.body).at(0)
                                       : parser_.parse(r.body)["results"].at(0);
    EXPECT_EQ(int64_t(first["chunk"]["count"]), 2) << route;
    // The request's own value wins.
    r = Post(route, R"({"model":"rerank-model","query":"q","return_chunks":true,)"
                    R"("max_chunks_per_doc":1,")" +
                        field + R"(":[")" + doc + R"("]})");
    ASSERT_EQ(r.status, 200) << r.body;
    first = std::string_view(route) == "/rerank" ? parser_.parse(r.body).at(0)
                                                 : parser_.parse(r.body)["results"].at(0);
    EXPECT_EQ(int64_t(first["chunk"]["count"]), 1) << route;
  }
  // vLLM's /v1/score still refuses the over-long pair (it cuts only when asked).
  HttpResponse r =
      Post("/v1/score", R"({"model":"rerank-model","text_1":"q","text_2":[")" + doc + R"("]})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(std::string_view(parser_.parse(r.body)["error"]["code"]), "context_length_exceeded");
}

TEST_F(RerankTest, AQueryThatFillsTheWindowIsCutAsWithoutChunks) {
  // A 7-word query leaves no room beside [CLS] [SEP] [SEP] in 10 tokens for a chunk.
  const std::string query = NumberedWords("q", 7), doc = NumberedWords("w", 14);
  const std::string body = R"({"model":"rerank-model","query":")" + query +
                           R"(","raw_scores":true,"documents":[")" + doc + R"("])";
  HttpResponse chunked = Post("/v1/rerank", body + R"(,"max_chunks_per_doc":3})");
  HttpResponse cut = Post("/v1/rerank", body + "}");
  ASSERT_EQ(chunked.status, 200) << chunked.body;
  ASSERT_EQ(cut.status, 200) << cut.body;
  EXPECT_EQ(double(parser_.parse(chunked.body)["results"].at(0)["relevance_score"]),
            double(parser_.parse(cut.body)["results"].at(0)["relevance_score"]));
  // Refused as without chunking when truncation is off.
  chunked = Post("/v1/rerank", body + R"(,"max_chunks_per_doc":3,"truncate":false})");
  EXPECT_EQ(chunked.status, 400) << chunked.body;
  EXPECT_EQ(std::string_view(parser_.parse(chunked.body)["error"]["code"]),
            "context_length_exceeded");
}

TEST_F(RerankTest, BadChunkFieldsAreRefusedWithTheField) {
  for (const char* route : {"/rerank", "/v1/rerank", "/v2/rerank"}) {
    const std::string docs =
        std::string_view(route) == "/rerank" ? R"("texts":["a"])" : R"("documents":["a"])";
    for (const char* value : {"0", "-1", "1.5", "\"2\"", "true", "[1]"}) {
      HttpResponse r = Post(route, R"({"model":"rerank-model","query":"q",)" + docs +
                                       R"(,"max_chunks_per_doc":)" + value + "}");
      EXPECT_EQ(r.status, 400) << route << " " << value << " → " << r.body;
      EXPECT_NE(r.body.find("max_chunks_per_doc must be a positive integer"), std::string::npos)
          << route << " " << r.body;
    }
    HttpResponse r =
        Post(route, R"({"model":"rerank-model","query":"q",)" + docs + R"(,"return_chunks":1})");
    EXPECT_EQ(r.status, 400) << route << " " << r.body;
    EXPECT_NE(r.body.find("return_chunks"), std::string::npos) << r.body;
    // return_chunks without chunking (no max_chunks_per_doc, none by default): no chunk.
    r = Post(route, R"({"model":"rerank-model","query":"q",)" + docs + R"(,"return_chunks":true})");
    EXPECT_EQ(r.status, 200) << route << " " << r.body;
    EXPECT_EQ(r.body.find("chunk"), std::string::npos) << r.body;
  }
  // 2.0 is an integer, as JSON Schema counts them.
  EXPECT_EQ(Post("/v1/rerank", R"({"model":"rerank-model","query":"q","documents":["a"],
      "max_chunks_per_doc":2.0})")
                .status,
            200);
}

TEST_F(RerankTest, ModelsAreSelectedByNameAndTasksAreKeptApart) {
  // No model: the first one, an embedder, which refuses rerank requests.
  HttpResponse r = Post("/v1/rerank", R"({"query":"q","documents":["a"]})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(std::string_view(parser_.parse(r.body)["error"]["code"]), "model_not_a_reranker");
  EXPECT_NE(r.body.find("embed-model"), std::string::npos);
  r = Post("/rerank", R"({"query":"q","texts":["a"]})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(std::string_view(parser_.parse(r.body)["error_type"]), "Validation");
  // The reranker refuses embeddings.
  r = Post("/v1/embeddings", R"({"input":"a","model":"rerank-model"})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(std::string_view(parser_.parse(r.body)["error"]["code"]), "model_not_an_embedder");
  // The embedder embeds, by name or by default.
  EXPECT_EQ(Post("/v1/embeddings", R"({"input":"a","model":"embed-model"})").status, 200);
  EXPECT_EQ(Post("/v1/embeddings", R"({"input":"a"})").status, 200);
  // Unknown names: 404 listing what is served, on every route.
  for (const auto& [route, body] : std::vector<std::pair<std::string, std::string>>{
           {"/v1/embeddings", R"({"input":"a","model":"nope"})"},
           {"/v1/rerank", R"({"query":"q","documents":["a"],"model":"nope"})"},
           {"/v1/score", R"({"text_1":"q","text_2":"a","model":"nope"})"},
           {"/rerank", R"({"query":"q","texts":["a"],"model":"nope"})"}}) {
    r = Post(route, body);
    EXPECT_EQ(r.status, 404) << route << " " << r.body;
    EXPECT_NE(r.body.find("`embed-model`, `rerank-model`"), std::string::npos) << r.body;
  }
  // /v1/models lists both, in order, with their task.
  r = Call("GET", "/v1/models");
  simdjson::dom::element doc = parser_.parse(r.body);
  ASSERT_EQ(simdjson::dom::array(doc["data"]).size(), 2u);
  EXPECT_EQ(std::string_view(doc["data"].at(0)["id"]), "embed-model");
  EXPECT_EQ(std::string_view(doc["data"].at(1)["id"]), "rerank-model");
  EXPECT_EQ(std::string_view(doc["data"].at(1)["task"]), "rerank");
}

// An embedding model's /v1/score and TEI /similarity: each pair's similarity under the model's
// similarity function (config_sentence_transformers.json similarity_fn_name), computed on the
// very rows /v1/embeddings returns; /info names the function.
TEST_F(RerankTest, EmbedderScoresAreItsSimilarityFunction) {
  HttpResponse r = Post("/v1/embeddings", R"({"input":["a b","c","d e f"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<std::vector<float>> rows;
  for (simdjson::dom::element d : parser_.parse(r.body)["data"]) {
    rows.emplace_back();
    for (double v : d["embedding"]) rows.back().push_back(float(v));
  }
  ASSERT_EQ(rows.size(), 3u);
  const int dim = int(rows[0].size());
  for (SimilarityFunction fn : {SimilarityFunction::kCosine, SimilarityFunction::kDot,
                                SimilarityFunction::kEuclidean, SimilarityFunction::kManhattan}) {
    SCOPED_TRACE(SimilarityName(fn));
    EncodeConfig c;
    c.similarity = fn;
    embed_.SetPrompts(c, std::nullopt);
    const double want1 = Similarity(fn, rows[0].data(), rows[1].data(), dim);
    const double want2 = Similarity(fn, rows[0].data(), rows[2].data(), dim);
    // One text_1 against each text_2, and zipped lists.
    auto got = Scores(Post("/v1/score", R"({"text_1":"a b","text_2":["c","d e f"]})"), "/v1/score");
    ASSERT_EQ(got.size(), 2u);
    EXPECT_NEAR(got[0], want1, 1e-5 * std::max(1.0, std::abs(want1)));
    EXPECT_NEAR(got[1], want2, 1e-5 * std::max(1.0, std::abs(want2)));
    got = Scores(Post("/v1/score", R"({"text_1":["d e f","a b"],"text_2":["a b","c"]})"),
                 "/v1/score");
    EXPECT_NEAR(got[0], want2, 1e-5 * std::max(1.0, std::abs(want2)));
    EXPECT_NEAR(got[1], want1, 1e-5 * std::max(1.0, std::abs(want1)));
    r = Post("/similarity", R"({"inputs":{"source_sentence":"a b","sentences":["c","d e f"]}})");
    ASSERT_EQ(r.status, 200) << r.body;
    simdjson::dom::array sims = parser_.parse(r.body);
    ASSERT_EQ(sims.size(), 2u);
    EXPECT_NEAR(double(sims.at(0)), want1, 1e-5 * std::max(1.0, std::abs(want1)));
    EXPECT_NEAR(double(sims.at(1)), want2, 1e-5 * std::max(1.0, std::abs(want2)));
    r = Call("GET", "/info");
    EXPECT_EQ(std::string_view(parser_.parse(r.body)["similarity"]), SimilarityName(fn));
  }
  EXPECT_LT(Similarity(SimilarityFunction::kEuclidean, rows[0].data(), rows[1].data(), dim), 0);
  // /similarity picks a served model by name too, and refuses a reranker.
  r = Post("/similarity",
           R"({"model":"rerank-model","inputs":{"source_sentence":"a","sentences":["b"]}})");
  EXPECT_EQ(r.status, 400) << r.body;
  r = Post("/similarity", R"({"model":"nope","inputs":{"source_sentence":"a","sentences":["b"]}})");
  EXPECT_EQ(r.status, 404) << r.body;
}

// TEI's GET /info describes the default (first) model: an embedder here, a reranker when it
// comes first; every served name is listed.
TEST_F(RerankTest, InfoDescribesTheDefaultModelInTeisShape) {
  HttpResponse r = Call("GET", "/info");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::element doc = parser_.parse(r.body);
  EXPECT_EQ(std::string_view(doc["model_id"]), "embed-model");
  EXPECT_EQ(std::string_view(doc["model_type"]["embedding"]["pooling"]), "mean");
  EXPECT_EQ(int64_t(doc["max_input_length"]), kMaxLen);
  EXPECT_EQ(int64_t(doc["max_client_batch_size"]), int64_t(Router::kMaxClientBatchSize));
  EXPECT_EQ(int64_t(doc["dimensions"]), embed_.dim());
  ASSERT_EQ(simdjson::dom::array(doc["models"]).size(), 2u);
  EXPECT_EQ(std::string_view(doc["models"].at(1)), "rerank-model");

  Router reranker_first(std::vector<RoutedModel>{{&reranker_embed_, &reranker_}});
  std::promise<HttpResponse> p;
  reranker_first.Handle(HttpRequest{"GET", "/info", ""},
                        [&p](HttpResponse reply) { p.set_value(std::move(reply)); });
  r = p.get_future().get();
  ASSERT_EQ(r.status, 200) << r.body;
  doc = parser_.parse(r.body);
  EXPECT_EQ(std::string_view(doc["model_id"]), "rerank-model");
  EXPECT_TRUE(doc["model_type"]["embedding"].error()) << r.body;
  EXPECT_EQ(std::string_view(doc["model_type"]["reranker"]["id2label"]["0"]), "LABEL_0");
  EXPECT_EQ(int64_t(doc["model_type"]["reranker"]["label2id"]["LABEL_0"]), 0);
  EXPECT_EQ(int64_t(doc["dimensions"]), 1);
  EXPECT_FALSE(bool(doc["normalize"]));
  EXPECT_EQ(Call("POST", "/info", "{}").status, 405);
}

TEST_F(RerankTest, EmbeddingsRefuseMoreThan2048Inputs) {
  std::string body = R"({"input":[)";
  for (size_t i = 0; i <= Router::kMaxClientBatchSize; ++i) body.append(i ? ",\"a\"" : "\"a\"");
  body.append("]}");
  HttpResponse r = Post("/v1/embeddings", body);
  EXPECT_EQ(r.status, 413) << r.body.substr(0, 200);
  simdjson::dom::element e = parser_.parse(r.body)["error"];
  EXPECT_EQ(std::string_view(e["code"]), "too_many_inputs");
  EXPECT_NE(std::string_view(e["message"]).find("2048"), std::string_view::npos);
  // TEI's /embed has the same limit (its max_client_batch_size), answered in TEI's shape.
  std::string tei = R"({"inputs":[)";
  for (size_t i = 0; i <= Router::kMaxClientBatchSize; ++i) tei.append(i ? ",\"a\"" : "\"a\"");
  tei.append("]}");
  r = Post("/embed", tei);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(std::string_view(parser_.parse(r.body)["error_type"]), "Validation");
}

// Qwen3-Reranker: prefix + "<Instruct>: …\n<Query>: …\n<Document>: …" + suffix, one sequence
// without token types; truncation cuts the middle only.
TEST(ScoreServiceTest, Qwen3RerankerChatTemplate) {
  FakeTokenizer tokenizer;
  FakeEngine engine(true, 1000, /*max_seq_length=*/64);
  engine.MakeScorer(PairFormat::kQwen3RerankerChat);
  TokenBudgetScheduler scheduler(&engine, TokenBudgetSchedulerOptions{256, 1 << 16, 2});
  LocalBackend backend(&scheduler);
  ScoreService service(&tokenizer, &backend, "qwen3-reranker", [](Task t) { t(); });

  EncodeOptions plain;
  plain.add_special_tokens = false;
  Encoding prefix, suffix, middle;
  ASSERT_TRUE(tokenizer.Encode(kQwen3RerankerPrefix, plain, &prefix).ok());
  ASSERT_TRUE(tokenizer.Encode(kQwen3RerankerSuffix, plain, &suffix).ok());
  ASSERT_TRUE(tokenizer
                  .Encode(std::string("<Instruct>: ") + kQwen3RerankerDefaultInstruction +
                              "\n<Query>: what\n<Document>: that",
                          EncodeOptions{}, &middle)
                  .ok());
  ScoreRequest request;
  request.queries = {"what"};
  request.documents = {"that"};
  Encoding got;
  ASSERT_FALSE(service.EncodePair(request, 0, &got).has_value());
  std::vector<int32_t> want = prefix.ids;
  want.insert(want.end(), middle.ids.begin(), middle.ids.end());
  want.insert(want.end(), suffix.ids.begin(), suffix.ids.end());
  EXPECT_EQ(got.ids, want);
  EXPECT_TRUE(got.type_ids.empty());

  // An instruction replaces the default one.
  request.instruction = "Find code";
  ASSERT_FALSE(service.EncodePair(request, 0, &got).has_value());
  EXPECT_NE(got.ids, want);

  // Too long: refused, or with truncate the middle is cut and the template survives.
  std::string long_doc;
  for (int i = 0; i < 80; ++i) long_doc.append("w").append(std::to_string(i)).append(" ");
  request.documents = {long_doc};
  auto err = service.EncodePair(request, 0, &got);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->code, "context_length_exceeded");
  request.truncate = true;
  ASSERT_FALSE(service.EncodePair(request, 0, &got).has_value());
  ASSERT_EQ(got.ids.size(), 64u);
  EXPECT_TRUE(std::equal(prefix.ids.begin(), prefix.ids.end(), got.ids.begin()));
  EXPECT_TRUE(std::equal(suffix.ids.rbegin(), suffix.ids.rend(), got.ids.rbegin()));

  // Scores go through the engine as one sequence each: sigmoid(0.1 * length).
  request.truncate = false;
  request.instruction.reset();
  request.documents = {"that", "this one"};
  std::promise<ScoreReply> p;
  service.Score(request, [&p](ScoreReply r) { p.set_value(std::move(r)); });
  ScoreReply reply = p.get_future().get();
  ASSERT_FALSE(reply.error) << reply.error->message;
  ASSERT_EQ(reply.scores.size(), 2u);
  EXPECT_NEAR(reply.scores[0], Sigmoid(FakeEngine::ScorerLogit(int(want.size()), 0)), 1e-6);
  EXPECT_GT(reply.scores[1], reply.scores[0]);
}

// A request with many pairs is tokenized in slices on a real pool: scores (which depend on each
// pair's length and token types) stay in input order, and the first failing pair is the one
// reported, however the slices interleave.
TEST(ScoreServiceTest, ParallelTokenizationKeepsOrderTypesAndFirstError) {
  FakeTokenizer tokenizer;
  std::unique_ptr<FakeEngine> engine = MakeScorerEngine();
  TokenBudgetScheduler scheduler(engine.get(), TokenBudgetSchedulerOptions{4096, 1 << 20, 2});
  LocalBackend backend(&scheduler);
  boost::asio::thread_pool pool(3);
  ScoreService service(
      &tokenizer, &backend, "rerank-model",
      [&pool](Task t) { boost::asio::post(pool, std::move(t)); },
      /*parallelism=*/4);
  auto call = [&service](ScoreRequest r) {
    std::promise<ScoreReply> p;
    auto f = p.get_future();
    service.Score(std::move(r), [&p](ScoreReply reply) { p.set_value(std::move(reply)); });
    return f.get();
  };
  for (int round = 0; round < 20; ++round) {
    ScoreRequest r;
    r.queries = {"q"};
    for (int i = 0; i < 200; ++i) {
      std::string doc;  // 1 + i % 5 words
      for (int w = 0; w <= i % 5; ++w) doc.append(1, 'w').append(std::to_string(i)).append(1, ' ');
      r.documents.push_back(doc);
    }
    ScoreReply reply = call(std::move(r));
    ASSERT_FALSE(reply.error) << reply.error->message;
    ASSERT_EQ(reply.scores.size(), 200u);
    for (int i = 0; i < 200; ++i) {
      ASSERT_NEAR(reply.scores[size_t(i)], Sigmoid(PairLogit(1 + i % 5)), 1e-6) << i;
    }
    ScoreRequest bad;
    bad.queries = {"q"};
    for (int i = 0; i < 200; ++i) {
      bad.documents.push_back(i == 70 || i == 150 ? std::string("bad \xff")
                                                  : "ok " + std::to_string(i));
    }
    ScoreReply err = call(std::move(bad));
    ASSERT_TRUE(err.error);
    EXPECT_EQ(err.error->param, "documents[70]");
  }
  pool.join();
}

// TEI's POST /predict over a fake three-label classifier (and the one-label reranker): every
// label's probability per input, best first; texts and pairs; a batch answers a list of lists.
class PredictTest : public ::testing::Test {
 protected:
  explicit PredictTest(bool multi_label = false)
      : engine_(true, 1000, kMaxLen),
        scheduler_((engine_.MakeClassifier({"neg", "mid", "pos"}, multi_label), &engine_),
                   TokenBudgetSchedulerOptions{64, 1 << 16, 2}),
        backend_(&scheduler_),
        embed_(&tokenizer_, &backend_, "nli-model", [](Task t) { t(); }),
        score_(&tokenizer_, &backend_, "nli-model", [](Task t) { t(); }),
        router_(std::vector<RoutedModel>{{&embed_, &score_}}) {}

  HttpResponse Post(std::string body) {
    std::promise<HttpResponse> p;
    auto f = p.get_future();
    router_.Handle(HttpRequest{"POST", "/predict", std::move(body)},
                   [&p](HttpResponse r) { p.set_value(std::move(r)); });
    return f.get();
  }

  // The expected {label: probability} of an input of `length` tokens and `types` type-id sum.
  static std::map<std::string, double> Expected(int length, int types, bool multi_label,
                                                bool raw = false) {
    const char* names[] = {"neg", "mid", "pos"};
    double logit[3], sum = 0;
    for (int k = 0; k < 3; ++k) {
      logit[k] = FakeEngine::ClassifierLogit(length, types, k);
      sum += std::exp(logit[k]);
    }
    std::map<std::string, double> out;
    for (int k = 0; k < 3; ++k) {
      out[names[k]] = raw           ? logit[k]
                      : multi_label ? 1.0 / (1.0 + std::exp(-logit[k]))
                                    : std::exp(logit[k]) / sum;
    }
    return out;
  }

  // One input's reply: {label: score}, checking the order is best first.
  static std::map<std::string, double> Labels(simdjson::dom::element list) {
    std::map<std::string, double> out;
    double previous = INFINITY;
    for (simdjson::dom::element p : simdjson::dom::array(list)) {
      const double score = double(p["score"]);
      EXPECT_LE(score, previous);
      previous = score;
      out[std::string(std::string_view(p["label"]))] = score;
    }
    return out;
  }

  static void ExpectNear(const std::map<std::string, double>& got,
                         const std::map<std::string, double>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [label, score] : want) EXPECT_NEAR(got.at(label), score, 1e-5) << label;
  }

  FakeTokenizer tokenizer_;
  FakeEngine engine_;
  TokenBudgetScheduler scheduler_;
  LocalBackend backend_;
  EmbeddingService embed_;
  ScoreService score_;
  Router router_;
  simdjson::dom::parser parser_;
};

TEST_F(PredictTest, TextsAndPairsGetEveryLabelsProbabilityBestFirst) {
  // One text of 3 words: [CLS] w w w [SEP], 5 tokens, no token types.
  HttpResponse r = Post(R"({"inputs":"x y z"})");
  ASSERT_EQ(r.status, 200) << r.body;
  ExpectNear(Labels(parser_.parse(r.body)), Expected(5, 0, false));
  // Two strings are one pair: [CLS] a [SEP] b c [SEP], 6 tokens, type ids summing to 3.
  r = Post(R"({"inputs":["a","b c"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  ExpectNear(Labels(parser_.parse(r.body)), Expected(6, 3, false));
  // A batch mixing texts and pairs: a list of lists, in input order.
  r = Post(R"({"inputs":["one",["a","b c"],"p q r s t"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::array batch = parser_.parse(r.body);
  ASSERT_EQ(batch.size(), 3u);
  ExpectNear(Labels(batch.at(0)), Expected(3, 0, false));
  ExpectNear(Labels(batch.at(1)), Expected(6, 3, false));
  ExpectNear(Labels(batch.at(2)), Expected(7, 0, false));
  // A batch of one text, and raw scores.
  r = Post(R"({"inputs":["x y z"],"raw_scores":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  batch = parser_.parse(r.body);
  ASSERT_EQ(batch.size(), 1u);
  ExpectNear(Labels(batch.at(0)), Expected(5, 0, false, /*raw=*/true));
}

TEST_F(PredictTest, BadInputsAreRefusedInTeisShape) {
  auto refused = [&](std::string body, int status, std::string_view needle) {
    HttpResponse r = Post(std::move(body));
    EXPECT_EQ(r.status, status) << r.body;
    simdjson::dom::element e = parser_.parse(r.body);
    EXPECT_NE(std::string_view(e["error"]).find(needle), std::string_view::npos) << r.body;
    EXPECT_FALSE(e["error_type"].error()) << r.body;
  };
  refused(R"({})", 400, "inputs is required");
  refused(R"({"inputs":[]})", 400, "must not be empty");
  refused(R"({"inputs":""})", 400, "empty string");
  refused(R"({"inputs":3})", 400, "inputs must be a string");
  refused(R"({"inputs":[["a","b","c"]]})", 400, "inputs[0] must be a string or a pair");
  refused(R"({"inputs":["a",["b",""]]})", 400, "inputs[1][1]");
  refused(R"({"inputs":"a","model":"other"})", 404, "does not exist");
  refused(R"({"inputs":"a","truncation_direction":"up"})", 400, "truncation_direction");
  // Over the maximum (10 tokens): 413, unless truncate.
  const std::string long_text = "a b c d e f g h i j k l";
  refused(R"({"inputs":")" + long_text + R"("})", 413, "inputs: the text has 14 tokens");
  refused(R"({"inputs":["a",["b",")" + long_text + R"("]]})", 413, "inputs[1]: the pair has");
  EXPECT_EQ(Post(R"({"inputs":")" + long_text + R"(","truncate":true})").status, 200);
  std::string many = R"({"inputs":[)";
  for (size_t i = 0; i <= kMaxScorePairs; ++i) many += i ? ",\"a\"" : "\"a\"";
  refused(many + "]}", 413, "more than the limit");
}

TEST_F(PredictTest, ModelsCallsItAClassifier) {
  std::promise<HttpResponse> p;
  auto f = p.get_future();
  router_.Handle(HttpRequest{"GET", "/v1/models/nli-model", ""},
                 [&p](HttpResponse r) { p.set_value(std::move(r)); });
  const HttpResponse r = f.get();
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(std::string_view(parser_.parse(r.body)["task"]), "classify");
}

TEST_F(PredictTest, AutoTruncateCutsInputsThatDoNotSayOtherwise) {
  const std::string long_text = "a b c d e f g h i j k l";
  score_.set_auto_truncate(true);
  EXPECT_EQ(Post(R"({"inputs":")" + long_text + R"("})").status, 200);
  EXPECT_EQ(Post(R"({"inputs":")" + long_text + R"(","truncate":false})").status, 413);
}

class MultiLabelPredictTest : public PredictTest {
 protected:
  MultiLabelPredictTest() : PredictTest(/*multi_label=*/true) {}
};

TEST_F(MultiLabelPredictTest, IndependentLabelsGetASigmoidEach) {
  HttpResponse r = Post(R"({"inputs":"x y z"})");
  ASSERT_EQ(r.status, 200) << r.body;
  ExpectNear(Labels(parser_.parse(r.body)), Expected(5, 0, /*multi_label=*/true));
}

TEST_F(RerankTest, PredictOnARerankerAndOnAnEmbedder) {
  // One label: the reranker's own activation (sigmoid), named LABEL_0.
  HttpResponse r = Post("/predict", R"({"inputs":["q","d e"],"model":"rerank-model"})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::element only = parser_.parse(r.body).at(0);
  EXPECT_EQ(std::string_view(only["label"]), "LABEL_0");
  EXPECT_NEAR(double(only["score"]), Sigmoid(PairLogit(2)), 1e-6);
  // /rerank gives the same score for the same pair.
  EXPECT_NEAR(
      Scores(Post("/rerank", R"({"query":"q","texts":["d e"],"model":"rerank-model"})"), "/rerank")
          .at(0),
      double(only["score"]), 1e-6);
  r = Post("/predict", R"({"inputs":"q"})");  // the default model embeds
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("sequence-classification"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace orchid
