// The browser pages (GET /, /docs and Swagger UI's assets, static_pages.h) and TEI's POST /,
// through the router, over the fake tokenizer and engines: an embedder, a one-label reranker
// and a three-label classifier, each served first (the default) by a router of its own.
#include "gateway/static_pages.h"

#include <gtest/gtest.h>
#include <simdjson.h>

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

constexpr int kMaxLen = 10;
constexpr const char* kBrowserAccept =
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8";

TEST(StaticPagesTest, AcceptsHtmlOnlyWhenTextHtmlIsListedAndNotRefused) {
  EXPECT_TRUE(AcceptsHtml(kBrowserAccept));
  EXPECT_TRUE(AcceptsHtml("text/html"));
  EXPECT_TRUE(AcceptsHtml(" Text/HTML ; q=0.5"));
  EXPECT_TRUE(AcceptsHtml("application/json, text/html;level=1"));
  EXPECT_FALSE(AcceptsHtml(""));
  EXPECT_FALSE(AcceptsHtml("*/*"));  // curl, requests, HF's clients: TEI's health check
  EXPECT_FALSE(AcceptsHtml("application/json"));
  EXPECT_FALSE(AcceptsHtml("text/html;q=0"));
  EXPECT_FALSE(AcceptsHtml("text/html; q=0.000, */*"));
  EXPECT_FALSE(AcceptsHtml("text/htmlx"));
}

TEST(StaticPagesTest, EveryPageIsCompiledIn) {
  const StaticPage* playground = FindStaticPage("/");
  ASSERT_NE(playground, nullptr);
  EXPECT_EQ(playground->content_type, "text/html; charset=utf-8");
  EXPECT_NE(playground->body.find("<title>orchid playground</title>"), std::string_view::npos);
  // Self-contained: nothing is loaded from another host (the page works offline).
  for (const StaticPage* page : {playground, FindStaticPage("/docs")}) {
    ASSERT_NE(page, nullptr);
    EXPECT_EQ(page->body.find("http://"), std::string_view::npos) << page->path;
    EXPECT_EQ(page->body.find("https://"), std::string_view::npos) << page->path;
    EXPECT_EQ(page->body.find("//cdn"), std::string_view::npos) << page->path;
  }
  const std::string_view docs = FindStaticPage("/docs")->body;
  for (const char* ref : {"\"/docs/swagger-ui-bundle.js\"", "\"/docs/swagger-ui.css\"",
                          "\"/openapi.json\"", "SwaggerUIBundle("}) {
    EXPECT_NE(docs.find(ref), std::string_view::npos) << ref;
  }
  // Swagger UI's own build, whole (the bundle is ~1.7 MB; a truncated copy would not run).
  const StaticPage* bundle = FindStaticPage("/docs/swagger-ui-bundle.js");
  ASSERT_NE(bundle, nullptr);
  EXPECT_EQ(bundle->content_type, "text/javascript; charset=utf-8");
  EXPECT_GT(bundle->body.size(), 1000000u);
  EXPECT_NE(bundle->body.find("SwaggerUIBundle"), std::string_view::npos);
  EXPECT_EQ(bundle->body.find('\0'), std::string_view::npos);
  const StaticPage* css = FindStaticPage("/docs/swagger-ui.css");
  ASSERT_NE(css, nullptr);
  EXPECT_EQ(css->content_type, "text/css; charset=utf-8");
  EXPECT_NE(css->body.find(".swagger-ui"), std::string_view::npos);
  EXPECT_EQ(FindStaticPage("/docs/other.js"), nullptr);
  EXPECT_EQ(FindStaticPage("/index.html"), nullptr);
}

class PagesRouterTest : public ::testing::Test {
 protected:
  PagesRouterTest()
      : embed_engine_(true, 1000, kMaxLen),
        score_engine_(true, 1000, kMaxLen),
        classify_engine_(true, 1000, kMaxLen),
        embed_scheduler_(&embed_engine_, TokenBudgetSchedulerOptions{64, 1 << 16, 2}),
        score_scheduler_((score_engine_.MakeScorer(), &score_engine_),
                         TokenBudgetSchedulerOptions{64, 1 << 16, 2}),
        classify_scheduler_(
            (classify_engine_.MakeClassifier({"neg", "mid", "pos"}), &classify_engine_),
            TokenBudgetSchedulerOptions{64, 1 << 16, 2}),
        embed_backend_(&embed_scheduler_),
        score_backend_(&score_scheduler_),
        classify_backend_(&classify_scheduler_),
        embed_(
            &tokenizer_, &embed_backend_, "embed-model", [](Task t) { t(); }, &metrics_),
        embed_score_(&tokenizer_, &embed_backend_, "embed-model", [](Task t) { t(); }),
        rerank_embed_(&tokenizer_, &score_backend_, "rerank-model", [](Task t) { t(); }),
        rerank_(&tokenizer_, &score_backend_, "rerank-model", [](Task t) { t(); }),
        classify_embed_(&tokenizer_, &classify_backend_, "nli-model", [](Task t) { t(); }),
        classify_(&tokenizer_, &classify_backend_, "nli-model", [](Task t) { t(); }),
        embedder_(std::vector<RoutedModel>{{&embed_, &embed_score_}}, &metrics_),
        reranker_(std::vector<RoutedModel>{{&rerank_embed_, &rerank_}}),
        classifier_(std::vector<RoutedModel>{{&classify_embed_, &classify_}}) {}

  static HttpResponse Call(Router& router, HttpRequest request) {
    std::promise<HttpResponse> p;
    auto f = p.get_future();
    router.Handle(std::move(request), [&p](HttpResponse r) { p.set_value(std::move(r)); });
    return f.get();
  }
  static HttpResponse Get(Router& router, std::string target, std::string accept = {},
                          std::string authorization = {}) {
    HttpRequest request{"GET", std::move(target), {}, std::move(authorization)};
    request.accept = std::move(accept);
    return Call(router, std::move(request));
  }
  static HttpResponse Post(Router& router, std::string target, std::string body,
                           std::string authorization = {}) {
    return Call(router,
                HttpRequest{"POST", std::move(target), std::move(body), std::move(authorization)});
  }

  FakeTokenizer tokenizer_;
  FakeEngine embed_engine_;
  FakeEngine score_engine_;
  FakeEngine classify_engine_;
  TokenBudgetScheduler embed_scheduler_;
  TokenBudgetScheduler score_scheduler_;
  TokenBudgetScheduler classify_scheduler_;
  LocalBackend embed_backend_;
  LocalBackend score_backend_;
  LocalBackend classify_backend_;
  MetricsRegistry metrics_;
  EmbeddingService embed_;
  ScoreService embed_score_;
  EmbeddingService rerank_embed_;
  ScoreService rerank_;
  EmbeddingService classify_embed_;
  ScoreService classify_;
  Router embedder_;
  Router reranker_;
  Router classifier_;
  simdjson::dom::parser parser_;
};

TEST_F(PagesRouterTest, GetRootIsThePlaygroundForABrowserAndTeisHealthCheckOtherwise) {
  HttpResponse page = Get(embedder_, "/", kBrowserAccept);
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(page.body, FindStaticPage("/")->body);
  EXPECT_EQ(Get(embedder_, "/?tab=tokens", "text/html").body, page.body);
  for (const char* accept : {"", "*/*", "application/json"}) {
    HttpResponse health = Get(embedder_, "/", accept);
    EXPECT_EQ(health.status, 200) << accept;
    EXPECT_EQ(health.content_type, "application/json") << accept;
    EXPECT_EQ(health.body, Get(embedder_, "/health").body) << accept;
  }
}

TEST_F(PagesRouterTest, DocsAndSwaggerUiAssetsAreServedWithTheirTypes) {
  for (const char* path :
       {"/docs", "/docs/", "/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css"}) {
    HttpResponse r = Get(embedder_, path);
    ASSERT_EQ(r.status, 200) << path;
    const std::string canonical = std::string(path) == "/docs/" ? "/docs" : path;
    EXPECT_EQ(r.content_type, FindStaticPage(canonical)->content_type) << path;
    EXPECT_EQ(r.body, FindStaticPage(canonical)->body) << path;
  }
  EXPECT_EQ(Get(embedder_, "/docs/index.html").status, 404);
  // GET only; the Allow header says so.
  HttpResponse wrong = Post(embedder_, "/docs", "{}");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.allow, "GET");
  EXPECT_EQ(Post(embedder_, "/docs/swagger-ui.css", "{}").allow, "GET");
  HttpResponse put = Call(embedder_, HttpRequest{"PUT", "/", "{}"});
  EXPECT_EQ(put.status, 405);
  EXPECT_EQ(put.allow, "GET, POST");
  // Each page is a route label of its own in the metrics.
  const std::string metrics = Get(embedder_, "/metrics").body;
  EXPECT_NE(metrics.find("orchid_http_requests_total{route=\"/docs\",status=\"200\"} 2\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("orchid_http_requests_total{route=\"/\",status=\"405\"} 1\n"),
            std::string::npos)
      << metrics;
}

TEST_F(PagesRouterTest, PagesNeedNoApiKeyButPostRootDoes) {
  embedder_.SetApiKey("k");
  for (const char* path : {"/", "/docs", "/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css"}) {
    EXPECT_EQ(Get(embedder_, path, kBrowserAccept).status, 200) << path;
  }
  EXPECT_EQ(Get(embedder_, "/", "*/*").status, 200);  // the health check, as /health
  EXPECT_EQ(Get(embedder_, "/info", kBrowserAccept).status, 401);
  HttpResponse denied = Post(embedder_, "/", R"({"inputs":"a b"})");
  EXPECT_EQ(denied.status, 401) << denied.body;
  EXPECT_EQ(denied.www_authenticate, "Bearer");
  EXPECT_EQ(Post(embedder_, "/", R"({"inputs":"a b"})", "Bearer k").status, 200);
  EXPECT_EQ(Post(embedder_, "/docs", "{}").status, 401);  // not a page: the key comes first
}

TEST_F(PagesRouterTest, PostRootEmbedsWithAnEmbedder) {
  const std::string body = R"({"inputs":["a b","c d e"]})";
  HttpResponse root = Post(embedder_, "/", body);
  ASSERT_EQ(root.status, 200) << root.body;
  EXPECT_EQ(root.body, Post(embedder_, "/embed", body).body);
  EXPECT_EQ(simdjson::dom::array(parser_.parse(root.body)).size(), 2u);
  // Errors in TEI's shape, as /embed's.
  HttpResponse bad = Post(embedder_, "/", R"({"inputs":[]})");
  EXPECT_EQ(bad.status, Post(embedder_, "/embed", R"({"inputs":[]})").status);
  EXPECT_TRUE(parser_.parse(bad.body)["error"].is_string()) << bad.body;
}

TEST_F(PagesRouterTest, PostRootPredictsOrReranksWithAReranker) {
  // Hugging Face's InferenceClient sends `inputs`: /predict.
  const std::string inputs = R"({"inputs":[["q","d e"],["q","f"]]})";
  HttpResponse predict = Post(reranker_, "/", inputs);
  ASSERT_EQ(predict.status, 200) << predict.body;
  EXPECT_EQ(predict.body, Post(reranker_, "/predict", inputs).body);
  EXPECT_EQ(std::string_view(parser_.parse(predict.body).at(0).at(0)["label"]), "LABEL_0");
  // A TEI rerank body (`query`, `texts`): /rerank, as TEI's POST / on a reranker.
  const std::string rerank = R"({"query":"q","texts":["a","b c d","e f"]})";
  HttpResponse ranked = Post(reranker_, "/", rerank);
  ASSERT_EQ(ranked.status, 200) << ranked.body;
  EXPECT_EQ(ranked.body, Post(reranker_, "/rerank", rerank).body);
  EXPECT_EQ(int64_t(parser_.parse(ranked.body).at(0)["index"]), 1);  // the longest, best first
}

TEST_F(PagesRouterTest, PostRootPredictsWithAClassifier) {
  const std::string body = R"({"inputs":["a b c",["a","b c d"]]})";
  HttpResponse r = Post(classifier_, "/", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, Post(classifier_, "/predict", body).body);
  simdjson::dom::element doc = parser_.parse(r.body);
  ASSERT_EQ(simdjson::dom::array(doc).size(), 2u);
  EXPECT_EQ(simdjson::dom::array(doc.at(0)).size(), 3u);  // one score per label
  // A body with a query is not a rerank for a classifier: the rerank routes refuse it.
  EXPECT_NE(Post(classifier_, "/", R"({"query":"q","texts":["a"]})").status, 200);
}

}  // namespace
}  // namespace orchid
