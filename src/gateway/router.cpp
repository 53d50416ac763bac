#include "gateway/router.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <string_view>
#include <utility>

#include "gateway/json_writer.h"
#include "gateway/tokenize_routes.h"

namespace orchid {
namespace {

HttpResponse TeiErrorResponse(const ApiError& error) {
  HttpResponse r;
  r.status = error.http_status;
  r.body = TeiErrorBody(error);
  return r;
}

struct RouteEntry {
  std::string_view path;
  std::string_view method;
};
constexpr RouteEntry kRoutes[] = {
    {"/v1/embeddings", "POST"}, {"/embeddings", "POST"}, {"/embed", "POST"},
    {"/v1/models", "GET"},      {"/health", "GET"},      {"/metrics", "GET"},
    {"/tokenize", "POST"},      {"/decode", "POST"},
};

std::string_view PathOf(std::string_view target) {
  if (const size_t q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  if (target.size() > 1 && target.back() == '/') target.remove_suffix(1);
  return target;
}

// The route label of a request's metrics: a known path, or "other" (keeps label sets bounded).
std::string RouteLabel(std::string_view target) {
  const std::string_view path = PathOf(target);
  for (const RouteEntry& r : kRoutes) {
    if (r.path == path) return std::string(path);
  }
  return "other";
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

HttpResponse InternalError(const std::exception& e) {
  spdlog::error("internal error while handling a request: {}", e.what());
  return ErrorResponse(ApiError::FromStatus(Status::Internal(e.what())));
}

}  // namespace

HttpResponse ErrorResponse(const ApiError& error) {
  HttpResponse r;
  r.status = error.http_status;
  r.body = OpenAiErrorBody(error);
  return r;
}

Router::Router(EmbeddingService* service, MetricsRegistry* metrics)
    : service_(service),
      metrics_(metrics),
      created_(std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()) {}

void Router::Handle(HttpRequest request, Reply reply) {
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

  const RouteEntry* route = nullptr;
  for (const RouteEntry& r : kRoutes) {
    if (r.path == path) route = &r;
  }
  if (route == nullptr) {
    ApiError e = ApiError::InvalidRequest(
        "no route for " + request.method + " " + std::string(path), {}, "not_found");
    e.http_status = 404;
    return reply(ErrorResponse(e));
  }
  if (request.method != route->method) {
    ApiError e = ApiError::InvalidRequest(
        std::string(path) + " accepts " + std::string(route->method) + ", not " + request.method,
        {}, "method_not_allowed");
    e.http_status = 405;
    HttpResponse r = ErrorResponse(e);
    r.allow = std::string(route->method);
    return reply(std::move(r));
  }
  if (path == "/health") {
    HttpResponse r;
    if (service_->healthy()) {
      r.body = R"({"status":"ok"})";
    } else {
      r.status = 503;
      r.body = R"({"status":"unavailable","error":"no healthy worker replica"})";
    }
    return reply(std::move(r));
  }
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
  if (path == "/tokenize") {
    return reply(HandleTokenize(service_->tokenizer(), request.body, kMaxClientBatchSize));
  }
  if (path == "/decode") {
    return reply(HandleDecode(service_->tokenizer(), request.body, kMaxClientBatchSize));
  }
  if (path == "/embed") return TeiEmbed(std::move(request.body), reply);
  return Embeddings(std::move(request.body), reply);
}

void Router::Embeddings(std::string body, const Reply& reply) {
  EmbeddingsRequest request;
  if (auto err = ParseOpenAiEmbeddingsRequest(body, &request)) return reply(ErrorResponse(*err));
  body.clear();
  body.shrink_to_fit();
  const EncodingFormat format = request.encoding_format;
  service_->Embed(std::move(request), [this, reply, format](EmbeddingReply result) {
    if (result.error) return reply(ErrorResponse(*result.error));
    try {
      HttpResponse r;
      r.body = WriteOpenAiEmbeddingsResponse(result.embeddings, format, service_->model_name(),
                                             result.prompt_tokens);
      reply(std::move(r));
    } catch (const std::exception& e) {
      reply(InternalError(e));
    }
  });
}

void Router::TeiEmbed(std::string body, const Reply& reply) {
  EmbeddingsRequest request;
  if (auto err = ParseTeiEmbedRequest(body, &request)) return reply(TeiErrorResponse(*err));
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

HttpResponse Router::Models() const {
  HttpResponse r;
  JsonWriter w(&r.body);
  w.BeginObject().Key("object").String("list").Key("data").BeginArray();
  w.BeginObject().Key("id").String(service_->model_name()).Key("object").String("model");
  w.Key("created").Int(created_).Key("owned_by").String("orchid").EndObject();
  w.EndArray().EndObject();
  return r;
}

}  // namespace orchid
