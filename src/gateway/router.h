// Router: the HTTP API's routes, independent of the socket layer — a request (method, target,
// body) in, a response (status, headers, body) out through a callback.
//
//   POST /v1/embeddings   OpenAI embeddings (embedding models)
//   POST /embed           text-embeddings-inference embeddings
//   POST /similarity      TEI: the similarity of a source sentence to each of several, by the
//                         model's similarity function (similarity_fn_name; cosine by default)
//   POST /rerank          TEI rerank (scorer models; see score_request.h for the three shapes)
//   POST /predict         TEI: every label's probability for texts or pairs (classifiers)
//   POST /v1/rerank       Cohere / Jina rerank
//   POST /v2/rerank       Cohere's v2 rerank (what cohere.ClientV2.rerank posts)
//   POST /v2/embed        Cohere's v2 embed, embeddings by type (cohere.ClientV2.embed)
//   POST /v1/embed        Cohere's v1 embed (cohere.Client.embed)
//   POST /v1/score        vLLM-style pair scores (a reranker's, or an embedder's similarity)
//   POST /tokenize        TEI: tokens with ids, text and character offsets
//   POST /decode          TEI: ids back to text
//   GET  /v1/models       every served model; /v1/models/{id} one of them (OpenAI's retrieve)
//   GET  /health          {"status":"ok"}, or 503 while no worker can take requests
//   GET  /metrics         Prometheus text format (when a registry is given)
//   GET  /info            the default model, in text-embeddings-inference's shape
//   GET  /openapi.json    the API's OpenAPI 3.1 description (src/gateway/openapi.json), narrowed
//                         to the routes, model names and limits of the served models
//   POST /                TEI's: the default model's route (/embed, or /similarity for an
//                         object `inputs`; /embed_sparse; /rerank for a reranker's body without
//                         `inputs`; else /predict in the Hugging Face Inference API's shape)
//   GET  /                the playground for a browser (Accept: text/html), else TEI's health
//                         check (as /health); /docs is Swagger UI (static_pages.h)
//
// With an API key set (SetApiKey), every route but /health, /metrics, /openapi.json and the
// browser pages (GET /, /docs and its assets) answers 401 unless the request carries
// `Authorization: Bearer <key>` (what OpenAI's clients send).
// With CORS origins set (SetCorsOrigins), a request whose Origin is allowed gets
// Access-Control-Allow-Origin on its reply, and an OPTIONS preflight to a known route gets 204
// with the allowed methods and headers (no API key needed for it).
//
// Several models can be served at once: the request's `model` field picks one (absent: the
// first); an unknown name answers 404 listing the served names. /embed, /tokenize and /decode
// (no model field in TEI) use the first model.
// Requests that reach the engine take vLLM's `priority` (lower first) in their body, and a
// deadline from X-Request-Timeout or X-Stainless-Timeout (seconds; the sooner of the two): work
// not started by then is dropped and answered 504. A malformed X-Request-Timeout is a 400 (a
// malformed X-Stainless-Timeout, sent by a client library, is ignored).
// Unknown paths answer 404, known paths with another method 405, always with a JSON error body.
// Thread safety: Handle() may be called from many threads; call it from a worker pool (it
// parses JSON and tokenizes on the calling thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gateway/embedding_service.h"
#include "gateway/error_response.h"
#include "gateway/http_types.h"
#include "gateway/score_service.h"

namespace orchid {

class JsonWriter;  // gateway/json_writer.h

// One served model: its embeddings and scoring services (the same name, tokenizer and backend).
struct RoutedModel {
  EmbeddingService* embed = nullptr;
  ScoreService* score = nullptr;  // null: rerank routes refuse this model
};

class Router {
 public:
  // Inputs per /v1/embeddings, /tokenize or /decode request (OpenAI's limit for embeddings
  // inputs; TEI's max_client_batch_size).
  static constexpr size_t kMaxClientBatchSize = 2048;

  // The services (and `metrics`, if given) must outlive the router. `models` is not empty. Set
  // the services' prompts (SetPrompts) first: the served OpenAPI document lists them.
  explicit Router(EmbeddingService* service, MetricsRegistry* metrics = nullptr,
                  ScoreService* score = nullptr);
  explicit Router(std::vector<RoutedModel> models, MetricsRegistry* metrics = nullptr);

  // Requires `Authorization: Bearer <key>` on every route but /health, /metrics, /openapi.json
  // and the browser pages (an empty key requires nothing). Call before the first Handle().
  void SetApiKey(std::string key);
  // Origins (e.g. "https://app.example.com") whose browser pages may call the API; "*": any.
  // Empty: no CORS headers (browsers then refuse cross-origin replies). Call before Handle().
  void SetCorsOrigins(std::vector<std::string> origins);

  // Calls `reply` exactly once, possibly on another thread (the service's completions executor).
  // An exception while handling becomes a 500 reply.
  void Handle(HttpRequest request, Reply reply);

 private:
  void Route(HttpRequest request, const Reply& reply);
  // `client`: the deadline and cancellation of the HTTP request, for the engine's scheduler.
  void Embeddings(std::string body, const Scheduling& client, const Reply& reply);
  void TeiEmbed(std::string body, const Scheduling& client, const Reply& reply);
  void TeiEmbedSparse(std::string body, const Scheduling& client, const Reply& reply);
  void TeiEmbedAll(std::string body, const Scheduling& client, const Reply& reply);
  void TeiSimilarity(std::string body, const Scheduling& client, const Reply& reply);
  void EmbeddingScore(EmbeddingService& service, ScoreRequest request, const Reply& reply);
  // `hf`: the Hugging Face Inference API's text classification (POST / on a classifier):
  // `parameters` {top_k, function_to_apply} and a list per input, also for a single text.
  void TeiPredict(std::string body, const Scheduling& client, const Reply& reply, bool hf = false);
  void CohereEmbed(CohereApiVersion version, std::string body, const Scheduling& client,
                   const Reply& reply);
  void CohereRerank(std::string body, const Scheduling& client, const Reply& reply);
  enum class ScoreRoute { kTei, kRerank, kScore };
  void Score(ScoreRoute route, std::string body, const Scheduling& client, const Reply& reply);
  // A late-interaction (ColBERT) model's rerank and score routes: MaxSim of each query's
  // vectors (encoded as a query) against its document's (encoded as a document).
  // `write` makes the reply's body from the request's options, the scores and the tokens;
  // `error_reply` answers an error in the route's shape.
  using ScoreWriter =
      std::function<std::string(const ScoreRequest&, const std::vector<float>&, int64_t)>;
  void LateInteractionScore(EmbeddingService& service, ScoreRequest request, ScoreWriter write,
                            std::function<HttpResponse(ApiError)> error_reply, const Reply& reply);
  // A BGE-M3 model's rerank and score routes: FlagEmbedding's compute_score result that the
  // request's score_mode names (dense by default) with its score_weights (bge_m3.h).
  void BgeM3Score(EmbeddingService& service, ScoreRequest request, ScoreWriter write,
                  std::function<HttpResponse(ApiError)> error_reply, const Reply& reply);
  // orchid's POST /embed_multi: a BGE-M3 model's three outputs from one pass.
  void EmbedMulti(std::string body, const Scheduling& client, const Reply& reply);
  // vLLM's POST /pooling with task "token_embed": every input's per-token vectors.
  void Pooling(std::string body, const Scheduling& client, const Reply& reply);
  HttpResponse Models() const;
  HttpResponse Model(const std::string& id) const;  // GET /v1/models/{id}
  void WriteModel(const RoutedModel& m, JsonWriter* w) const;
  HttpResponse Info() const;
  HttpResponse Health() const;
  // The model a request names (nullopt: the first), or the 404 to send.
  const RoutedModel* Select(const std::optional<std::string>& name, ApiError* error) const;
  // How the embedding routes that name a model (OpenAI, vLLM's /pooling, Cohere) start: the
  // client's scheduling and the input cap on the request, the model it names, and that it
  // embeds. Null after replying the error in the route's own shape (`error`).
  EmbeddingService* EmbedderFor(EmbeddingsRequest* request, const Scheduling& client,
                                const Reply& reply, HttpResponse (*error)(const ApiError&)) const;

  std::vector<RoutedModel> models_;
  EmbeddingService* service_;  // the first model's
  MetricsRegistry* metrics_;
  std::string expected_authorization_;  // "Bearer <key>"; empty: no key required
  std::vector<std::string> cors_origins_;
  // The Access-Control-Allow-Origin value for a request's Origin, or empty when not allowed.
  std::string CorsOrigin(const std::string& origin) const;
  int64_t created_;  // reported as the model's "created" time: when the server started
  // GET /openapi.json: the document narrowed to what the served models answer
  // (openapi_document.h), built once.
  std::string openapi_;
};

}  // namespace orchid
