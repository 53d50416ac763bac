#include "gateway/router.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/bge_m3.h"
#include "gateway/json_parse.h"
#include "gateway/json_writer.h"
#include "gateway/openapi_document.h"
#include "gateway/openapi_json.h"
#include "gateway/static_pages.h"
#include "gateway/tokenize_routes.h"

namespace orchid {
namespace {

// TEI's error body; an input over the model's maximum is TEI's Validation error, a 413.
HttpResponse TeiErrorResponse(const ApiError& error) {
  HttpResponse r;
  r.status = error.code == "context_length_exceeded" ? 413 : error.http_status;
  r.body = TeiErrorBody(error);
  return r;
}

// Cohere's error body on Cohere's routes (/v1/embed, /v2/embed, /v2/rerank).
HttpResponse CohereErrorResponse(const ApiError& error) {
  HttpResponse r;
  r.status = error.http_status;
  r.body = CohereErrorBody(error);
  return r;
}

bool IsCohereRoute(std::string_view path) {
  return path == "/v1/embed" || path == "/v2/embed" || path == "/v2/rerank";
}

// "/" is TEI's POST / (the default model's route). GET / and the other browser pages
// (static_pages.h) are answered before this table is looked at.
struct RouteEntry {
  std::string_view path;
  std::string_view method;
};
constexpr RouteEntry kRoutes[] = {
    {"/v1/embeddings", "POST"}, {"/embeddings", "POST"},  {"/embed", "POST"},
    {"/embed_sparse", "POST"},  {"/v1/models", "GET"},    {"/health", "GET"},
    {"/metrics", "GET"},        {"/tokenize", "POST"},    {"/decode", "POST"},
    {"/rerank", "POST"},        {"/v1/rerank", "POST"},   {"/v1/score", "POST"},
    {"/score", "POST"},         {"/info", "GET"},         {"/similarity", "POST"},
    {"/predict", "POST"},       {"/openapi.json", "GET"}, {"/", "POST"},
    {"/v1/embed", "POST"},      {"/v2/embed", "POST"},    {"/v2/rerank", "POST"},
    {"/embed_all", "POST"},     {"/pooling", "POST"},     {"/embed_multi", "POST"},
};

std::string_view PathOf(std::string_view target) {
  if (const size_t q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  if (target.size() > 1 && target.back() == '/') target.remove_suffix(1);
  return target;
}

// The route label of a request's metrics: a known path, or "other" (keeps label sets bounded).
// OpenAI's "retrieve model": GET /v1/models/{id}, where the id may hold '/' ("BAAI/bge-m3").
constexpr std::string_view kModelPrefix = "/v1/models/";

std::string RouteLabel(std::string_view target) {
  const std::string_view path = PathOf(target);
  for (const RouteEntry& r : kRoutes) {
    if (r.path == path) return std::string(path);
  }
  if (FindStaticPage(path) != nullptr) return std::string(path);
  if (path.size() > kModelPrefix.size() && path.substr(0, kModelPrefix.size()) == kModelPrefix) {
    return "/v1/models/{id}";
  }
  return "other";
}

// %XX escapes decoded (a client may send "BAAI%2Fbge-m3"); malformed escapes stay as they are.
std::string PercentDecoded(std::string_view s) {
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(char(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Replies at most once, so that a failure after a reply (or a reply after a failure) cannot
// answer twice on one connection.
Reply Once(Reply reply) {
  struct State {
    std::atomic<bool> done{false};
    Reply reply;
  };
  auto state = std::make_shared<State>();
  state->reply = std::move(reply);
  return [state](HttpResponse r) {
    if (!state->done.exchange(true)) state->reply(std::move(r));
  };
}

// Whether `given` equals `expected`, in time that depends on their lengths only (not on where
// they first differ), so that a key cannot be guessed byte by byte from response times. The
// scheme is matched without regard to case, as RFC 9110 says.
bool SameAuthorization(std::string_view given, std::string_view expected) {
  constexpr std::string_view kScheme = "bearer ";
  unsigned diff = given.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < expected.size(); ++i) {
    unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    unsigned char e = static_cast<unsigned char>(expected[i]);
    if (i < kScheme.size() && g >= 'A' && g <= 'Z') g = static_cast<unsigned char>(g + 32);
    if (i < kScheme.size() && e >= 'A' && e <= 'Z') e = static_cast<unsigned char>(e + 32);
    diff |= unsigned(g ^ e);
  }
  return diff == 0;
}

// A timeout header's value: seconds, a positive finite number ("30", "2.5", "600.0").
std::optional<double> TimeoutSeconds(const std::string& value) {
  if (value.empty() || value.size() > 32) return std::nullopt;
  char* end = nullptr;
  const double s = std::strtod(value.c_str(), &end);
  while (end != nullptr && (*end == ' ' || *end == '\t')) ++end;
  if (end == value.c_str() || end == nullptr || *end != '\0' || !std::isfinite(s) || s <= 0) {
    return std::nullopt;
  }
  return s;
}

// The request's deadline from its timeout headers (max(): none), or the 400 to send.
std::optional<ApiError> ClientDeadline(const HttpRequest& request,
                                       std::chrono::steady_clock::time_point* deadline) {
  using Clock = std::chrono::steady_clock;
  *deadline = Clock::time_point::max();
  // Over ~30 years counts as none (and keeps now + timeout from overflowing).
  constexpr double kNever = 1e9;
  auto apply = [&](double seconds) {
    if (seconds >= kNever) return;
    *deadline = std::min(*deadline, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                       std::chrono::duration<double>(seconds)));
  };
  if (request.request_timeout) {
    const std::optional<double> s = TimeoutSeconds(*request.request_timeout);
    if (!s) {
      return ApiError::InvalidRequest(
          "X-Request-Timeout must be a positive number of seconds, e.g. 30 or 2.5",
          "X-Request-Timeout", "invalid_request_timeout");
    }
    apply(*s);
  }
  if (const std::optional<double> s = TimeoutSeconds(request.stainless_timeout)) apply(*s);
  return std::nullopt;
}

HttpResponse InternalError(const std::exception& e) {
  spdlog::error("internal error while handling a request: {}", e.what());
  return ErrorResponse(ApiError::FromStatus(Status::Internal(e.what())));
}

HttpResponse PageResponse(const StaticPage& page) {
  HttpResponse r;
  r.content_type = std::string(page.content_type);
  r.body = std::string(page.body);
  return r;
}

// What a POST / body's "inputs" is, which picks the route (see Route): none (absent, null, or
// no JSON object at all), an object (TEI's /similarity request), or anything else.
enum class BodyInputs { kNone, kObject, kOther };
BodyInputs InputsOf(std::string_view body) {
  simdjson::dom::element doc, inputs;
  if (ParseDocument(body, &doc) || doc["inputs"].get(inputs) != simdjson::SUCCESS ||
      inputs.is_null()) {
    return BodyInputs::kNone;
  }
  return inputs.is_object() ? BodyInputs::kObject : BodyInputs::kOther;
}

}  // namespace

HttpResponse ErrorResponse(const ApiError& error) {
  HttpResponse r;
  r.status = error.http_status;
  r.body = OpenAiErrorBody(error);
  return r;
}

Router::Router(EmbeddingService* service, MetricsRegistry* metrics, ScoreService* score)
    : Router(std::vector<RoutedModel>{RoutedModel{service, score}}, metrics) {}

// What the served models answer, for the OpenAPI document (openapi_document.h).
static ServedModelFacts FactsOf(const std::vector<RoutedModel>& models) {
  ServedModelFacts facts;
  for (size_t i = 0; i < models.size(); ++i) {
    const EmbeddingService& m = *models[i].embed;
    const ModelInfo& info = m.model_info();
    std::vector<std::string> kinds;
    if (info.bge_m3) {
      // Dense on the embedding routes, lexical weights on /embed_sparse, its own scores.
      kinds.insert(kinds.end(), {"embed", "sparse", "bge-m3"});
      facts.dimensions =
          facts.dimensions == 0 ? m.dim() : std::min<int64_t>(facts.dimensions, m.dim());
    } else if (info.late_interaction.enabled) {
      // Per-token vectors (/embed_all, /pooling) and MaxSim scores; no pooled vector.
      kinds.push_back("colbert");
      facts.dimensions =
          facts.dimensions == 0 ? m.dim() : std::min<int64_t>(facts.dimensions, m.dim());
    } else if (!m.is_scorer()) {
      kinds.push_back(info.sparse ? "sparse" : "embed");
      facts.dimensions =
          facts.dimensions == 0 ? m.dim() : std::min<int64_t>(facts.dimensions, m.dim());
    } else if (models[i].score != nullptr) {
      if (info.num_labels == 1) kinds.push_back("rerank");
      if (info.pair_format == PairFormat::kTokenizerPair) kinds.push_back("classify");
    }
    for (const std::string& k : kinds) {
      facts.kinds.insert(k);
      if (i == 0) facts.kinds.insert("default-" + k);
    }
    facts.model_names.push_back(m.model_name());
    const int64_t last_id = int64_t(info.vocab_size) - 1;
    facts.max_token_id = i == 0 ? last_id : std::min(facts.max_token_id, last_id);
  }
  for (const auto& [name, text] : models.front().embed->prompts().prompts) {
    facts.prompt_names.push_back(name);
  }
  const ModelInfo& first = models.front().embed->model_info();
  facts.task_names = first.tasks;
  facts.matryoshka_dimensions = first.matryoshka_dimensions;
  return facts;
}

Router::Router(std::vector<RoutedModel> models, MetricsRegistry* metrics)
    : models_(std::move(models)),
      service_(models_.at(0).embed),
      metrics_(metrics),
      created_(std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      openapi_(ServedOpenApiDocument(kOpenApiJson, FactsOf(models_))) {}

void Router::SetApiKey(std::string key) {
  expected_authorization_ = key.empty() ? std::string() : "Bearer " + key;
}

void Router::SetCorsOrigins(std::vector<std::string> origins) {
  cors_origins_ = std::move(origins);
}

std::string Router::CorsOrigin(const std::string& origin) const {
  if (origin.empty()) return {};
  for (const std::string& o : cors_origins_) {
    if (o == "*") return "*";
    if (o == origin) return origin;
  }
  return {};
}

void Router::Handle(HttpRequest request, Reply reply) {
  if (const std::string allowed = CorsOrigin(request.origin); !allowed.empty()) {
    if (request.method == "OPTIONS") {  // a preflight: what the real request may carry
      HttpResponse r;
      r.status = RouteLabel(request.target) == "other" ? 404 : 204;
      r.content_type.clear();
      r.headers = {{"Access-Control-Allow-Origin", allowed},
                   {"Access-Control-Allow-Methods", "GET, POST"},
                   {"Access-Control-Allow-Headers", "authorization, content-type"},
                   {"Access-Control-Max-Age", "600"},
                   {"Vary", "Origin"}};
      return reply(std::move(r));
    }
    reply = [allowed, inner = std::move(reply)](HttpResponse r) {
      r.headers.emplace_back("Access-Control-Allow-Origin", allowed);
      r.headers.emplace_back("Vary", "Origin");
      inner(std::move(r));
    };
  }
  if (metrics_ != nullptr) {
    const std::string route = RouteLabel(request.target);
    Histogram* seconds = metrics_->GetHistogram(
        "orchid_http_request_seconds", "HTTP requests: body read to reply handed to the socket",
        LatencyBuckets(), {{"route", route}});
    reply = [this, route, seconds, start = std::chrono::steady_clock::now(),
             inner = std::move(reply)](HttpResponse r) {
      seconds->Observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      metrics_
          ->GetCounter("orchid_http_requests_total", "HTTP requests by route and status",
                       {{"route", route}, {"status", std::to_string(r.status)}})
          ->Inc();
      inner(std::move(r));
    };
  }
  reply = Once(std::move(reply));
  try {
    Route(std::move(request), reply);
  } catch (const std::exception& e) {
    reply(InternalError(e));
  }
}

void Router::Route(HttpRequest request, const Reply& reply) {
  const std::string_view path = PathOf(request.target);
  // The pages a browser opens (and GET /, also TEI's health check) need no key either.
  const bool page = request.method == "GET" && FindStaticPage(path) != nullptr;
  if (!expected_authorization_.empty() && path != "/health" && path != "/metrics" &&
      path != "/openapi.json" && !page &&
      !SameAuthorization(request.authorization, expected_authorization_)) {
    ApiError e = ApiError::InvalidRequest(
        request.authorization.empty()
            ? "this server requires an API key: send `Authorization: Bearer <key>`"
            : "the API key in the Authorization header is not this server's",
        {}, "invalid_api_key");
    e.http_status = 401;
    HttpResponse r = ErrorResponse(e);
    r.www_authenticate = "Bearer";
    return reply(std::move(r));
  }

  // The browser pages. GET / is the playground for a browser only: for anything else it stays
  // TEI's health check (GET / there).
  if (page) {
    if (path == "/" && !AcceptsHtml(request.accept)) return reply(Health());
    return reply(PageResponse(*FindStaticPage(path)));
  }
  if (path != "/" && FindStaticPage(path) != nullptr) {
    ApiError e = ApiError::InvalidRequest(std::string(path) + " accepts GET, not " + request.method,
                                          {}, "method_not_allowed");
    e.http_status = 405;
    HttpResponse r = ErrorResponse(e);
    r.allow = "GET";
    return reply(std::move(r));
  }
  const RouteEntry* route = nullptr;
  for (const RouteEntry& r : kRoutes) {
    if (r.path == path) route = &r;
  }
  if (route == nullptr && RouteLabel(path) == "/v1/models/{id}") {
    if (request.method != "GET") {
      ApiError e = ApiError::InvalidRequest("/v1/models/{id} accepts GET, not " + request.method,
                                            {}, "method_not_allowed");
      e.http_status = 405;
      HttpResponse r = ErrorResponse(e);
      r.allow = "GET";
      return reply(std::move(r));
    }
    return reply(Model(PercentDecoded(path.substr(kModelPrefix.size()))));
  }
  if (route == nullptr) {
    ApiError e = ApiError::InvalidRequest(
        "no route for " + request.method + " " + std::string(path), {}, "not_found");
    e.http_status = 404;
    return reply(ErrorResponse(e));
  }
  if (request.method != route->method) {
    const std::string allow = path == "/" ? "GET, POST" : std::string(route->method);
    ApiError e = ApiError::InvalidRequest(
        std::string(path) + " accepts " + allow + ", not " + request.method, {},
        "method_not_allowed");
    e.http_status = 405;
    HttpResponse r = ErrorResponse(e);
    r.allow = allow;
    return reply(std::move(r));
  }
  if (path == "/health") return reply(Health());
  if (path == "/metrics") {
    if (metrics_ == nullptr) {
      ApiError e = ApiError::InvalidRequest("metrics are not enabled", {}, "not_found");
      e.http_status = 404;
      return reply(ErrorResponse(e));
    }
    HttpResponse r;
    r.content_type = MetricsRegistry::kContentType;
    r.body = metrics_->Render();
    return reply(std::move(r));
  }
  if (path == "/v1/models") return reply(Models());
  if (path == "/openapi.json") {
    HttpResponse r;
    r.body = openapi_;
    return reply(std::move(r));
  }
  if (path == "/info") return reply(Info());
  if (path == "/tokenize") {
    return reply(HandleTokenize(service_->tokenizer(), request.body, kMaxClientBatchSize));
  }
  if (path == "/decode") {
    return reply(HandleDecode(service_->tokenizer(), request.body, kMaxClientBatchSize));
  }
  // The routes below run the engine: the client's deadline and connection go with them.
  Scheduling client;
  client.cancellation = request.cancellation;
  if (auto err = ClientDeadline(request, &client.deadline)) {
    const bool tei = path == "/embed" || path == "/embed_sparse" || path == "/embed_all" ||
                     path == "/similarity" || path == "/predict" || path == "/rerank" ||
                     path == "/";
    return reply(tei                   ? TeiErrorResponse(*err)
                 : IsCohereRoute(path) ? CohereErrorResponse(*err)
                                       : ErrorResponse(*err));
  }
  std::string body = std::move(request.body);
  // TEI's POST /: the default model's own route. A reranker's body without `inputs` is /rerank
  // (TEI's {query, texts}); a classifier's or a reranker's body with `inputs` (what Hugging
  // Face's InferenceClient.text_classification sends) is /predict, in the Inference API's
  // text-classification shape. An embedder's body whose `inputs` is an object is /similarity
  // (InferenceClient.sentence_similarity); any other is /embed.
  if (path == "/") {
    const BodyInputs inputs = InputsOf(body);
    if (!service_->is_scorer()) {
      if (service_->model_info().sparse) return TeiEmbedSparse(std::move(body), client, reply);
      if (inputs == BodyInputs::kObject) return TeiSimilarity(std::move(body), client, reply);
      return TeiEmbed(std::move(body), client, reply);
    }
    if (service_->model_info().num_labels == 1 && inputs == BodyInputs::kNone) {
      return Score(ScoreRoute::kTei, std::move(body), client, reply);
    }
    return TeiPredict(std::move(body), client, reply, /*hf=*/true);
  }
  if (path == "/embed") return TeiEmbed(std::move(body), client, reply);
  if (path == "/embed_sparse") return TeiEmbedSparse(std::move(body), client, reply);
  if (path == "/embed_all") return TeiEmbedAll(std::move(body), client, reply);
  if (path == "/pooling") return Pooling(std::move(body), client, reply);
  if (path == "/embed_multi") return EmbedMulti(std::move(body), client, reply);
  if (path == "/similarity") return TeiSimilarity(std::move(body), client, reply);
  if (path == "/predict") return TeiPredict(std::move(body), client, reply);
  if (path == "/rerank") return Score(ScoreRoute::kTei, std::move(body), client, reply);
  if (path == "/v1/rerank") return Score(ScoreRoute::kRerank, std::move(body), client, reply);
  if (path == "/v2/rerank") return CohereRerank(std::move(body), client, reply);
  if (path == "/v2/embed") {
    return CohereEmbed(CohereApiVersion::kV2, std::move(body), client, reply);
  }
  if (path == "/v1/embed") {
    return CohereEmbed(CohereApiVersion::kV1, std::move(body), client, reply);
  }
  if (path == "/v1/score" || path == "/score") {
    return Score(ScoreRoute::kScore, std::move(body), client, reply);
  }
  return Embeddings(std::move(body), client, reply);
}

const RoutedModel* Router::Select(const std::optional<std::string>& name, ApiError* error) const {
  if (!name) return &models_.front();
  for (const RoutedModel& m : models_) {
    if (m.embed->model_name() == *name) return &m;
  }
  std::string names;
  for (const RoutedModel& m : models_) {
    if (!names.empty()) names.append(", ");
    names.append("`").append(m.embed->model_name()).append("`");
  }
  std::string message = "The model `";
  message.append(*name).append("` does not exist; this server serves ").append(names);
  *error = ApiError::InvalidRequest(std::move(message), "model", "model_not_found");
  error->http_status = 404;
  return nullptr;
}

// The body's priority with the HTTP request's deadline and cancellation.
static void AddClient(const Scheduling& client, Scheduling* s) {
  s->deadline = client.deadline;
  s->cancellation = client.cancellation;
}

// score_mode / score_weights name BGE-M3's scores; another model refuses them.
static std::optional<ApiError> NotBgeM3Score(const EmbeddingService& service,
                                             const ScoreRequest& request) {
  if (service.bge_m3() || (!request.score_mode && request.score_weights.empty())) {
    return std::nullopt;
  }
  return ApiError::InvalidRequest(
      "score_mode and score_weights choose among a BGE-M3 model's scores; the model `" +
          service.model_name() + "` is not one",
      request.score_mode ? "score_mode" : "score_weights", "not_a_bge_m3_model");
}

void Router::Score(ScoreRoute route, std::string body, const Scheduling& client,
                   const Reply& reply) {
  const bool tei = route == ScoreRoute::kTei;
  // TEI's error shape (an over-long input is a 413 there), the others OpenAI's.
  auto error_reply = [tei](ApiError e) { return tei ? TeiErrorResponse(e) : ErrorResponse(e); };
  ScoreRequest request;
  std::optional<ApiError> err;
  switch (route) {
    case ScoreRoute::kTei:
      err = ParseTeiRerankRequest(body, &request);
      break;
    case ScoreRoute::kRerank:
      err = ParseRerankRequest(body, &request);
      break;
    case ScoreRoute::kScore:
      err = ParseScoreRequest(body, &request);
      break;
  }
  if (err) return reply(error_reply(std::move(*err)));
  body.clear();
  body.shrink_to_fit();
  AddClient(client, &request.scheduling);
  ApiError not_found;
  const RoutedModel* model = Select(request.model, &not_found);
  if (model == nullptr) return reply(error_reply(std::move(not_found)));
  if (auto e = NotBgeM3Score(*model->embed, request)) return reply(error_reply(std::move(*e)));
  if (model->embed->late_interaction() || model->embed->bge_m3()) {
    const std::string name = model->embed->model_name();
    auto write = [this, route, name](const ScoreRequest& shown, const std::vector<float>& scores,
                                     int64_t tokens) {
      switch (route) {
        case ScoreRoute::kTei:
          return WriteTeiRerankResponse(shown, scores);
        case ScoreRoute::kRerank:
          return WriteRerankResponse(shown, scores, name, tokens);
        case ScoreRoute::kScore:
          break;
      }
      return WriteScoreResponse(scores, name, tokens, created_);
    };
    if (model->embed->bge_m3()) {
      return BgeM3Score(*model->embed, std::move(request), write, error_reply, reply);
    }
    return LateInteractionScore(*model->embed, std::move(request), write, error_reply, reply);
  }
  if (route == ScoreRoute::kScore && !model->embed->is_scorer() &&
      !model->embed->model_info().sparse) {
    return EmbeddingScore(*model->embed, std::move(request), reply);
  }
  if (model->score == nullptr || !model->score->is_scorer()) {
    ApiError e = ApiError::InvalidRequest(
        "The model `" + model->embed->model_name() +
            "` is an embedding model; rerank and score requests need a reranker "
            "(cross-encoder) model. Use /v1/embeddings for it.",
        "model", "model_not_a_reranker");
    return reply(error_reply(std::move(e)));
  }
  const std::string name = model->score->model_name();
  // What the reply writers need of the request: its options, and the texts when echoed.
  auto shown = std::make_shared<ScoreRequest>();
  shown->top_n = request.top_n;
  shown->return_text = request.return_text;
  shown->return_chunks = request.return_chunks;
  if (request.return_text) shown->documents = request.documents;
  model->score->Score(
      std::move(request), [this, route, shown, name, error_reply, reply](ScoreReply result) {
        if (result.error) return reply(error_reply(std::move(*result.error)));
        try {
          HttpResponse r;
          switch (route) {
            case ScoreRoute::kTei:
              r.body = WriteTeiRerankResponse(*shown, result.scores, result.chunks);
              break;
            case ScoreRoute::kRerank:
              r.body =
                  WriteRerankResponse(*shown, result.scores, name, result.tokens, result.chunks);
              break;
            case ScoreRoute::kScore:
              r.body = WriteScoreResponse(result.scores, name, result.tokens, created_);
              break;
          }
          reply(std::move(r));
        } catch (const std::exception& e) {
          reply(InternalError(e));
        }
      });
}

// OpenAI's (and TEI's max_client_batch_size) limit on the inputs of one embeddings request.
static std::optional<ApiError> TooManyInputs(const EmbeddingsRequest& request) {
  if (request.num_inputs() <= Router::kMaxClientBatchSize) return std::nullopt;
  ApiError e = ApiError::InvalidRequest("input has " + std::to_string(request.num_inputs()) +
                                            " entries, more than the limit of " +
                                            std::to_string(Router::kMaxClientBatchSize) +
                                            " per request; split it into smaller requests",
                                        "input", "too_many_inputs");
  e.http_status = 413;
  return e;
}

// Embedding routes refuse scorer models (their rows are logits, not embeddings).
static std::optional<ApiError> NotAnEmbedder(const EmbeddingService& service) {
  if (service.model_info().sparse) {
    return ApiError::InvalidRequest("The model `" + service.model_name() +
                                        "` is a sparse (SPLADE) model; its embeddings are "
                                        "vocabulary-wide term weights. Use /embed_sparse for it.",
                                    "model", "model_is_sparse");
  }
  if (!service.is_scorer()) return std::nullopt;
  return ApiError::InvalidRequest(
      "The model `" + service.model_name() +
          "` is a reranker (cross-encoder); it scores (query, document) pairs and has no "
          "embeddings. Use /rerank, /v1/rerank or /v1/score for it.",
      "model", "model_not_an_embedder");
}

EmbeddingService* Router::EmbedderFor(EmbeddingsRequest* request, const Scheduling& client,
                                      const Reply& reply,
                                      HttpResponse (*error)(const ApiError&)) const {
  AddClient(client, &request->scheduling);
  if (auto e = TooManyInputs(*request)) {
    reply(error(*e));
    return nullptr;
  }
  ApiError not_found;
  const RoutedModel* model = Select(request->model, &not_found);
  if (model == nullptr) {
    reply(error(not_found));
    return nullptr;
  }
  if (auto e = NotAnEmbedder(*model->embed)) {
    reply(error(*e));
    return nullptr;
  }
  return model->embed;
}

void Router::Embeddings(std::string body, const Scheduling& client, const Reply& reply) {
  EmbeddingsRequest request;
  if (auto err = ParseOpenAiEmbeddingsRequest(body, &request)) return reply(ErrorResponse(*err));
  body.clear();
  body.shrink_to_fit();
  EmbeddingService* service = EmbedderFor(&request, client, reply, ErrorResponse);
  if (service == nullptr) return;
  const EmbeddingOutput output{request.encoding_format, request.embedding_types,
                               service->native_quantization()};
  service->Embed(std::move(request), [service, reply, output](EmbeddingReply result) {
    if (result.error) return reply(ErrorResponse(*result.error));
    try {
      HttpResponse r;
      r.body = WriteOpenAiEmbeddingsResponse(result.embeddings, output, service->model_name(),
                                             result.prompt_tokens);
      reply(std::move(r));
    } catch (const std::exception& e) {
      reply(InternalError(e));
    }
  });
}

void Router::TeiEmbed(std::string body, const Scheduling& client, const Reply& reply) {
  EmbeddingsRequest request;
  if (auto err = ParseTeiEmbedRequest(body, &request)) return reply(TeiErrorResponse(*err));
  AddClient(client, &request.scheduling);
  if (auto e = TooManyInputs(request)) return reply(TeiErrorResponse(*e));
  if (auto e = NotAnEmbedder(*service_)) return reply(TeiErrorResponse(*e));
  service_->Embed(std::move(request), [reply](EmbeddingReply result) {
    if (result.error) return reply(TeiErrorResponse(*result.error));
    try {
      HttpResponse r;
      r.body = WriteTeiEmbedResponse(result.embeddings);
      reply(std::move(r));
    } catch (const std::exception& e) {
      reply(InternalError(e));
    }
  });
}

void Router::TeiEmbedSparse(std::string body, const Scheduling& client, const Reply& reply) {
  EmbeddingsRequest request;
  if (auto err = ParseTeiEmbedRequest(body, &request)) return reply(TeiErrorResponse(*err));
  AddClient(client, &request.scheduling);
  if (auto e = TooManyInputs(request)) return reply(TeiErrorResponse(*e));
  if (service_->bge_m3()) {
    // BGE-M3's lexical weights, from a per-token pass.
    request.per_token = true;
    service_->Embed(std::move(request), [reply](EmbeddingReply result) {
      if (result.error) return reply(TeiErrorResponse(*result.error));
      HttpResponse r;
      r.body = WriteTeiLexicalResponse(result.lexical);
      reply(std::move(r));
    });
    return;
  }
  if (!service_->model_info().sparse) {
    return reply(TeiErrorResponse(ApiError::InvalidRequest(
        "The model `" + service_->model_name() +
            "` is not a sparse (SPLADE or BGE-M3) model; /embed_sparse needs one (use /embed)",
        "model", "model_not_sparse")));
  }
  request.normalize = false;  // term weights, as sentence-transformers' SparseEncoder returns
  service_->Embed(std::move(request), [reply](EmbeddingReply result) {
    if (result.error) return reply(TeiErrorResponse(*result.error));
    try {
      HttpResponse r;
      r.body = WriteTeiSparseResponse(result.embeddings);
      reply(std::move(r));
    } catch (const std::exception& e) {
      reply(InternalError(e));
    }
  });
}

// TEI's /embed_all: per input, every token's last hidden state (dense embedders only).
void Router::TeiEmbedAll(std::string body, const Scheduling& client, const Reply& reply) {
  EmbeddingsRequest request;
  if (auto err = ParseTeiEmbedRequest(body, &request)) return reply(TeiErrorResponse(*err));
  AddClient(client, &request.scheduling);
  if (auto e = TooManyInputs(request)) return reply(TeiErrorResponse(*e));
  if (auto e = NotAnEmbedder(*service_)) return reply(TeiErrorResponse(*e));
  request.per_token = true;
  service_->Embed(std::move(request), [reply](EmbeddingReply result) {
    if (result.error) return reply(TeiErrorResponse(*result.error));
    try {
      const EmbeddingMatrix& m = result.embeddings;
      HttpResponse r;
      JsonWriter w(&r.body);
      w.BeginArray();
      int row = 0;
      for (int32_t n : result.token_counts) {
        w.BeginArray();
        for (int t = 0; t < n && row < m.rows; ++t, ++row) {
          w.FloatArray(m.row(row), size_t(m.dim));
        }
        w.EndArray();
      }
      w.EndArray();
      if (row != m.rows) return reply(InternalError(std::runtime_error("per-token rows mismatch")));
      reply(std::move(r));
    } catch (const std::exception& e) {
      reply(InternalError(e));
    }
  });
}

// vLLM's POST /pooling, task "token_embed": per input, every token's vector (a ColBERT's
// projected, normalised and filtered as PyLate's encode; another embedder's last hidden state).
void Router::Pooling(std::string body, const Scheduling& client, const Reply& reply) {
  EmbeddingsRequest request;
  if (auto err = ParsePoolingRequest(body, &request)) return reply(ErrorResponse(*err));
  body.clear();
  body.shrink_to_fit();
  EmbeddingService* service = EmbedderFor(&request, client, reply, ErrorResponse);
  if (service == nullptr) return;
  request.model.reset();  // picked here
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  service->Embed(std::move(request), [service, reply, created](EmbeddingReply result) {
    if (result.error) return reply(ErrorResponse(*result.error));
    try {
      const EmbeddingMatrix& m = result.embeddings;
      HttpResponse r;
      JsonWriter w(&r.body);
      w.BeginObject().Key("id").String("pool-" + std::to_string(created));
      w.Key("object").String("list").Key("created").Int(created);
      w.Key("model").String(service->model_name()).Key("data").BeginArray();
      int row = 0;
      for (size_t i = 0; i < result.token_counts.size(); ++i) {
        w.BeginObject().Key("index").Int(int64_t(i)).Key("object").String("pooling");
        w.Key("data").BeginArray();
        for (int t = 0; t < result.token_counts[i] && row < m.rows; ++t, ++row) {
          w.FloatArray(m.row(row), size_t(m.dim));
        }
        w.EndArray().EndObject();
      }
      w.EndArray();
      w.Key("usage").BeginObject().Key("prompt_tokens").Int(result.prompt_tokens);
      w.Key("total_tokens").Int(result.prompt_tokens).Key("completion_tokens").Int(0);
      w.EndObject().EndObject();
      if (row != m.rows) return reply(InternalError(std::runtime_error("per-token rows mismatch")));
      reply(std::move(r));
    } catch (const std::exception& e) {
      reply(InternalError(e));
    }
  });
}

// orchid's POST /embed_multi: a BGE-M3 model's dense vector, lexical weights and ColBERT
// vectors from one pass (bge_m3.h).
void Router::EmbedMulti(std::string body, const Scheduling& client, const Reply& reply) {
  EmbeddingsRequest request;
  BgeM3Outputs outputs;
  if (auto err = ParseEmbedMultiRequest(body, &request, &outputs)) {
    return reply(ErrorResponse(*err));
  }
  body.clear();
  body.shrink_to_fit();
  EmbeddingService* service = EmbedderFor(&request, client, reply, ErrorResponse);
  if (service == nullptr) return;
  if (!service->bge_m3()) {
    return reply(ErrorResponse(ApiError::InvalidRequest(
        "The model `" + service->model_name() +
            "` is not a BGE-M3 model (colbert_linear.pt and sparse_linear.pt beside its "
            "weights); /embed_multi serves only those. Use /v1/embeddings for it.",
        "model", "not_a_bge_m3_model")));
  }
  service->Embed(std::move(request), [service, reply, outputs](EmbeddingReply result) {
    if (result.error) return reply(ErrorResponse(*result.error));
    try {
      HttpResponse r;
      r.body =
          WriteEmbedMultiResponse(outputs, service->model_name(), result.dense, result.lexical,
                                  result.embeddings, result.token_counts, result.prompt_tokens);
      reply(std::move(r));
    } catch (const std::exception& e) {
      reply(InternalError(e));
    }
  });
}

void Router::TeiSimilarity(std::string body, const Scheduling& client, const Reply& reply) {
  EmbeddingsRequest request;
  if (auto err = ParseTeiSimilarityRequest(body, &request)) return reply(TeiErrorResponse(*err));
  AddClient(client, &request.scheduling);
  if (auto e = TooManyInputs(request)) return reply(TeiErrorResponse(*e));
  ApiError not_found;
  const RoutedModel* model = Select(request.model, &not_found);
  if (model == nullptr) return reply(TeiErrorResponse(not_found));
  EmbeddingService& service = *model->embed;
  if (auto e = NotAnEmbedder(service)) return reply(TeiErrorResponse(*e));
  request.model.reset();  // picked here (the service checks a name against its own)
  // The model's similarity function (config_sentence_transformers.json similarity_fn_name),
  // as sentence-transformers' model.similarity computes it.
  const SimilarityFunction fn = service.prompts().similarity;
  service.Embed(std::move(request), [reply, fn](EmbeddingReply result) {
    if (result.error) return reply(TeiErrorResponse(*result.error));
    try {
      // Row 0 is the source sentence: its similarity with each other row, in double.
      const EmbeddingMatrix& m = result.embeddings;
      HttpResponse r;
      JsonWriter w(&r.body);
      w.BeginArray();
      for (int i = 1; i < m.rows; ++i) w.Float(float(Similarity(fn, m.row(0), m.row(i), m.dim)));
      w.EndArray();
      reply(std::move(r));
    } catch (const std::exception& e) {
      reply(InternalError(e));
    }
  });
}

// vLLM's /v1/score for an embedding model: each pair's similarity, by the model's similarity
// function, between the two texts' embeddings (each text embedded once).
void Router::EmbeddingScore(EmbeddingService& service, ScoreRequest request, const Reply& reply) {
  EmbeddingsRequest embed;
  embed.texts = std::move(request.queries);
  const size_t num_queries = embed.texts.size(), n = request.num_pairs();
  for (std::string& d : request.documents) embed.texts.push_back(std::move(d));
  embed.truncate = request.truncate;
  embed.truncation_direction = request.truncation_direction;
  embed.scheduling = std::move(request.scheduling);  // (the pairs' own limit is checked)
  const SimilarityFunction fn = service.prompts().similarity;
  const std::string name = service.model_name();
  service.Embed(std::move(embed), [this, reply, fn, name, num_queries, n](EmbeddingReply result) {
    if (result.error) return reply(ErrorResponse(*result.error));
    try {
      const EmbeddingMatrix& m = result.embeddings;
      std::vector<float> scores(n);
      for (size_t i = 0; i < n; ++i) {
        const int q = num_queries == 1 ? 0 : int(i);
        scores[i] = float(Similarity(fn, m.row(q), m.row(int(num_queries + i)), m.dim));
      }
      HttpResponse r;
      r.body = WriteScoreResponse(scores, name, result.prompt_tokens, created_);
      reply(std::move(r));
    } catch (const std::exception& e) {
      reply(InternalError(e));
    }
  });
}

// The rerank and score routes of per-token models (ColBERT, BGE-M3): the request's queries, then
// its documents, as one per-token embeddings request (the queries encoded as queries where the
// model tells them apart); *shown gets what the reply writers need of the request.
static EmbeddingsRequest PerTokenPairs(ScoreRequest request, std::shared_ptr<ScoreRequest>* shown) {
  EmbeddingsRequest embed;
  embed.per_token = true;
  embed.truncate = request.truncate;
  embed.truncation_direction = request.truncation_direction;
  embed.texts = std::move(request.queries);
  const size_t num_queries = embed.texts.size();
  embed.late_queries = num_queries;
  for (std::string& d : request.documents) embed.texts.push_back(std::move(d));
  embed.scheduling = std::move(request.scheduling);
  *shown = std::make_shared<ScoreRequest>();
  (*shown)->top_n = request.top_n;
  (*shown)->return_text = request.return_text;
  if (request.return_text) {
    (*shown)->documents.assign(embed.texts.begin() + std::ptrdiff_t(num_queries),
                               embed.texts.end());
  }
  return embed;
}

void Router::LateInteractionScore(EmbeddingService& service, ScoreRequest request,
                                  ScoreWriter write,
                                  std::function<HttpResponse(ApiError)> error_reply,
                                  const Reply& reply) {
  if (request.max_chunks_per_doc.value_or(0) > 0) {
    return reply(error_reply(ApiError::InvalidRequest(
        "max_chunks_per_doc does not apply to a late-interaction (ColBERT) model: its documents "
        "are cut to the model's document_length, as PyLate encodes them",
        "max_chunks_per_doc")));
  }
  const size_t num_queries = request.queries.size(), n = request.num_pairs();
  std::shared_ptr<ScoreRequest> shown;
  EmbeddingsRequest embed = PerTokenPairs(std::move(request), &shown);
  service.Embed(
      std::move(embed), [shown, write, error_reply, reply, num_queries, n](EmbeddingReply result) {
        if (result.error) return reply(error_reply(std::move(*result.error)));
        try {
          const EmbeddingMatrix& m = result.embeddings;
          std::vector<size_t> first(result.token_counts.size() + 1, 0);
          for (size_t i = 0; i < result.token_counts.size(); ++i) {
            first[i + 1] = first[i] + size_t(result.token_counts[i]);
          }
          if (first.size() != num_queries + n + 1 || first.back() != size_t(m.rows)) {
            return reply(InternalError(std::runtime_error("late-interaction rows mismatch")));
          }
          std::vector<float> scores(n);
          for (size_t i = 0; i < n; ++i) {
            const size_t q = num_queries == 1 ? 0 : i, d = num_queries + i;
            scores[i] = float(MaxSim(m.row(int(first[q])), result.token_counts[q],
                                     m.row(int(first[d])), result.token_counts[d], m.dim));
          }
          HttpResponse r;
          r.body = write(*shown, scores, result.prompt_tokens);
          reply(std::move(r));
        } catch (const std::exception& e) {
          reply(InternalError(e));
        }
      });
}

void Router::BgeM3Score(EmbeddingService& service, ScoreRequest request, ScoreWriter write,
                        std::function<HttpResponse(ApiError)> error_reply, const Reply& reply) {
  if (request.max_chunks_per_doc.value_or(0) > 0) {
    return reply(error_reply(ApiError::InvalidRequest(
        "max_chunks_per_doc does not apply to a BGE-M3 model: it scores each (query, document) "
        "pair from their embeddings, as FlagEmbedding's compute_score",
        "max_chunks_per_doc")));
  }
  BgeM3ScoreMode mode;
  if (request.score_mode) mode.kind = ParseBgeM3ScoreKind(*request.score_mode).value_or(mode.kind);
  if (request.score_weights.size() == 3) {
    mode.dense_weight = request.score_weights[0];
    mode.sparse_weight = request.score_weights[1];
    mode.colbert_weight = request.score_weights[2];
  }
  const size_t num_queries = request.queries.size(), n = request.num_pairs();
  std::shared_ptr<ScoreRequest> shown;
  EmbeddingsRequest embed = PerTokenPairs(std::move(request), &shown);
  service.Embed(std::move(embed), [shown, write, error_reply, reply, num_queries, n,
                                   mode](EmbeddingReply result) {
    if (result.error) return reply(error_reply(std::move(*result.error)));
    try {
      const EmbeddingMatrix& colbert = result.embeddings;
      const size_t texts = num_queries + n;
      std::vector<size_t> first(texts + 1, 0);
      for (size_t i = 0; i < result.token_counts.size() && i < texts; ++i) {
        first[i + 1] = first[i] + size_t(result.token_counts[i]);
      }
      if (result.token_counts.size() != texts || first.back() != size_t(colbert.rows) ||
          size_t(result.dense.rows) != texts || result.lexical.size() != texts) {
        return reply(InternalError(std::runtime_error("BGE-M3 rows mismatch")));
      }
      std::vector<float> scores(n);
      for (size_t i = 0; i < n; ++i) {
        const size_t q = num_queries == 1 ? 0 : i, d = num_queries + i;
        double dense = 0;
        for (int k = 0; k < result.dense.dim; ++k) {
          dense += double(result.dense.row(int(q))[k]) * double(result.dense.row(int(d))[k]);
        }
        const double sparse = LexicalScore(result.lexical[q], result.lexical[d]);
        const double late =
            BgeM3ColbertScore(colbert.row(int(first[q])), result.token_counts[q],
                              colbert.row(int(first[d])), result.token_counts[d], colbert.dim);
        scores[i] = float(orchid::BgeM3Score(mode, dense, sparse, late));
      }
      HttpResponse r;
      r.body = write(*shown, scores, result.prompt_tokens);
      reply(std::move(r));
    } catch (const std::exception& e) {
      reply(InternalError(e));
    }
  });
}

void Router::TeiPredict(std::string body, const Scheduling& client, const Reply& reply, bool hf) {
  auto error_reply = [](ApiError e) { return TeiErrorResponse(e); };
  PredictRequest request;
  if (auto err =
          hf ? ParseHfClassificationRequest(body, &request) : ParsePredictRequest(body, &request)) {
    return reply(error_reply(std::move(*err)));
  }
  body.clear();
  body.shrink_to_fit();
  AddClient(client, &request.scheduling);
  ApiError not_found;
  const RoutedModel* model = Select(request.model, &not_found);
  if (model == nullptr) return reply(error_reply(std::move(not_found)));
  if (model->score == nullptr) {
    return reply(error_reply(
        ApiError::InvalidRequest("The model `" + model->embed->model_name() + "` has no classifier",
                                 "model", "model_not_a_classifier")));
  }
  std::vector<std::string> labels;
  const ModelInfo& info = model->embed->model_info();
  for (int i = 0; i < info.num_labels; ++i) labels.push_back(info.label(i));
  const bool batch = request.batch;
  const std::optional<int64_t> top_k = request.top_k;
  model->score->Predict(std::move(request), [batch, top_k, labels = std::move(labels), error_reply,
                                             reply](PredictReply result) {
    if (result.error) return reply(error_reply(std::move(*result.error)));
    try {
      HttpResponse r;
      r.body = WritePredictResponse(batch, result.scores, labels, top_k);
      reply(std::move(r));
    } catch (const std::exception& e) {
      reply(InternalError(e));
    }
  });
}

void Router::CohereEmbed(CohereApiVersion version, std::string body, const Scheduling& client,
                         const Reply& reply) {
  EmbeddingsRequest request;
  if (auto err = ParseCohereEmbedRequest(body, version, &request)) {
    return reply(CohereErrorResponse(*err));
  }
  body.clear();
  body.shrink_to_fit();
  EmbeddingService* service = EmbedderFor(&request, client, reply, CohereErrorResponse);
  if (service == nullptr) return;
  const EmbeddingOutput output{EncodingFormat::kFloat, request.embedding_types,
                               service->native_quantization()};
  // Cohere echoes the texts.
  auto texts = std::make_shared<const std::vector<std::string>>(request.texts);
  const std::string_view api_version = version == CohereApiVersion::kV1 ? "1" : "2";
  service->Embed(std::move(request), [reply, output, texts, api_version](EmbeddingReply result) {
    if (result.error) return reply(CohereErrorResponse(*result.error));
    try {
      HttpResponse r;
      r.body = WriteCohereEmbedResponse(result.embeddings, output, *texts, api_version,
                                        result.prompt_tokens);
      reply(std::move(r));
    } catch (const std::exception& e) {
      reply(InternalError(e));
    }
  });
}

void Router::CohereRerank(std::string body, const Scheduling& client, const Reply& reply) {
  ScoreRequest request;
  if (auto err = ParseCohereRerankRequest(body, &request)) return reply(CohereErrorResponse(*err));
  body.clear();
  body.shrink_to_fit();
  AddClient(client, &request.scheduling);
  ApiError not_found;
  const RoutedModel* model = Select(request.model, &not_found);
  if (model == nullptr) return reply(CohereErrorResponse(not_found));
  if (auto e = NotBgeM3Score(*model->embed, request)) return reply(CohereErrorResponse(*e));
  if (model->embed->late_interaction() || model->embed->bge_m3()) {
    auto write = [](const ScoreRequest& shown, const std::vector<float>& scores, int64_t tokens) {
      return WriteCohereRerankResponse(shown, scores, tokens);
    };
    auto error_reply = [](ApiError e) { return CohereErrorResponse(e); };
    if (model->embed->bge_m3()) {
      return BgeM3Score(*model->embed, std::move(request), write, error_reply, reply);
    }
    return LateInteractionScore(*model->embed, std::move(request), write, error_reply, reply);
  }
  if (model->score == nullptr) {
    return reply(CohereErrorResponse(
        ApiError::InvalidRequest("The model `" + model->embed->model_name() + "` is not a reranker",
                                 "model", "model_not_a_reranker")));
  }
  auto shown = std::make_shared<ScoreRequest>();
  shown->top_n = request.top_n;
  shown->return_text = request.return_text;
  shown->return_chunks = request.return_chunks;
  if (request.return_text) shown->documents = request.documents;
  model->score->Score(std::move(request), [shown, reply](ScoreReply result) {
    if (result.error) return reply(CohereErrorResponse(*result.error));
    try {
      HttpResponse r;
      r.body = WriteCohereRerankResponse(*shown, result.scores, result.tokens, result.chunks);
      reply(std::move(r));
    } catch (const std::exception& e) {
      reply(InternalError(e));
    }
  });
}

// "dtype" (named `key`) and "fidelity" (int8_fidelity in openapi.json): how the engine
// multiplies and, for --dtype int8, the start-up check against float32.
static void WriteDtype(const ModelInfo& info, const char* key, JsonWriter* w) {
  if (!info.dtype.empty()) w->Key(key).String(info.dtype);
  w->Key("fidelity");
  if (info.fidelity.samples <= 0) {
    w->Null();
    return;
  }
  w->BeginObject().Key("reference").String("float32");
  w->Key("samples").Int(info.fidelity.samples);
  w->Key("mean_cosine").Float(float(info.fidelity.mean_cosine));
  w->Key("min_cosine").Float(float(info.fidelity.min_cosine));
  w->EndObject();
}

// A model with task adapters: "tasks" (what a request's `task` may name) and the Matryoshka
// widths `dimensions` may take, when its config lists them.
static void WriteTasks(const ModelInfo& info, JsonWriter* w) {
  if (info.tasks.empty()) return;
  w->Key("tasks").BeginArray();
  for (const std::string& t : info.tasks) w->String(t);
  w->EndArray();
  if (info.matryoshka_dimensions.empty()) return;
  w->Key("matryoshka_dimensions").BeginArray();
  for (int d : info.matryoshka_dimensions) w->Int(d);
  w->EndArray();
}

// One model as OpenAI's model object, with orchid's "task": embed, rerank (one label) or
// classify (several).
void Router::WriteModel(const RoutedModel& m, JsonWriter* w) const {
  w->BeginObject().Key("id").String(m.embed->model_name()).Key("object").String("model");
  w->Key("created").Int(created_).Key("owned_by").String("orchid");
  const char* task = !m.embed->is_scorer()                   ? "embed"
                     : m.embed->model_info().num_labels == 1 ? "rerank"
                                                             : "classify";
  w->Key("task").String(task);
  const ModelInfo& info = m.embed->model_info();
  if (info.bge_m3)
    w->Key("outputs").BeginArray().String("dense").String("sparse").String("colbert").EndArray();
  w->Key("max_input_length").Int(m.embed->max_seq_length());
  w->Key("max_input_length_source").String(info.max_seq_length_source);
  WriteDtype(info, "dtype", w);
  WriteTasks(info, w);
  w->EndObject();
}

HttpResponse Router::Models() const {
  HttpResponse r;
  JsonWriter w(&r.body);
  w.BeginObject().Key("object").String("list").Key("data").BeginArray();
  for (const RoutedModel& m : models_) WriteModel(m, &w);
  w.EndArray().EndObject();
  return r;
}

HttpResponse Router::Model(const std::string& id) const {
  ApiError not_found;
  const RoutedModel* m = Select(id, &not_found);
  if (m == nullptr) return ErrorResponse(not_found);
  HttpResponse r;
  JsonWriter w(&r.body);
  WriteModel(*m, &w);
  return r;
}

// One model: 200 {"status":"ok"}, or 503 when it cannot serve. Several: 503 only when none can
// ("degraded" when some can), and the body names each model's state, so that one model without
// workers does not take the others out of a load balancer.
HttpResponse Router::Health() const {
  std::vector<bool> healthy;  // read once: replicas come and go while this runs
  for (const RoutedModel& m : models_) healthy.push_back(m.embed->healthy());
  const size_t up = size_t(std::count(healthy.begin(), healthy.end(), true));
  HttpResponse r;
  JsonWriter w(&r.body);
  w.BeginObject().Key("status").String(up == models_.size() ? "ok"
                                       : up > 0             ? "degraded"
                                                            : "unavailable");
  if (up == 0) {
    r.status = 503;
    w.Key("error").String("no healthy worker replica");
  }
  if (models_.size() > 1) {
    w.Key("models").BeginObject();
    for (size_t i = 0; i < models_.size(); ++i) {
      w.Key(models_[i].embed->model_name()).String(healthy[i] ? "ok" : "unavailable");
    }
    w.EndObject();
  }
  w.EndObject();
  return r;
}

// TEI's GET /info, for the default (first) model: the fields a TEI client reads, plus
// orchid's own (architecture, dimensions, normalize, the names of every model served).
HttpResponse Router::Info() const {
  const EmbeddingService& m = *service_;
  const ModelInfo& info = m.model_info();
  HttpResponse r;
  JsonWriter w(&r.body);
  w.BeginObject().Key("model_id").String(m.model_name());
  w.Key("model_type").BeginObject();
  if (m.is_scorer()) {
    // TEI calls a one-label model a reranker, several labels a classifier.
    w.Key(info.num_labels == 1 ? "reranker" : "classifier").BeginObject();
    w.Key("id2label").BeginObject();
    for (int i = 0; i < info.num_labels; ++i) w.Key(std::to_string(i)).String(info.label(i));
    w.EndObject().Key("label2id").BeginObject();
    for (int i = 0; i < info.num_labels; ++i) w.Key(info.label(i)).Int(i);
    w.EndObject().EndObject();
  } else {
    w.Key("embedding").BeginObject().Key("pooling").String(PoolingName(m.pooling())).EndObject();
  }
  w.EndObject();
  w.Key("max_input_length").Int(m.max_seq_length());
  // Where that limit comes from (a model file and field, or --max-batch-tokens).
  w.Key("max_input_length_source").String(info.max_seq_length_source);
  WriteDtype(info, "model_dtype", &w);
  w.Key("max_client_batch_size").Int(int64_t(kMaxClientBatchSize));
  w.Key("auto_truncate").Bool(m.auto_truncate());
  w.Key("version").String(std::string("orchid ") + ORCHID_VERSION_STRING);
  w.Key("architecture").String(info.architecture);
  w.Key("dimensions").Int(info.late_interaction.enabled ? info.token_dim() : info.output_dim());
  w.Key("normalize").Bool(!m.is_scorer() && m.normalize());
  if (info.late_interaction.enabled) {
    w.Key("similarity").String("MaxSim");
  } else if (!m.is_scorer()) {
    w.Key("similarity").String(SimilarityName(m.prompts().similarity));
  }
  WriteTasks(info, &w);
  // What the engine runs its ops on (the CUDA engine's attention library and why).
  if (!info.engine_facts.empty()) {
    w.Key("engine").BeginObject();
    for (const ModelInfo::EngineFact& f : info.engine_facts) w.Key(f.name).String(f.value);
    w.EndObject();
  }
  w.Key("models").BeginArray();
  for (const RoutedModel& rm : models_) w.String(rm.embed->model_name());
  w.EndArray().EndObject();
  return r;
}

}  // namespace orchid
