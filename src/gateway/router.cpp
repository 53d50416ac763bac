#include "gateway/router.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "gateway/route_handlers.h"

namespace orchid {
namespace {

std::string_view PathOf(std::string_view target) {
  if (const size_t q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  if (target.size() > 1 && target.back() == '/') target.remove_suffix(1);
  return target;
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

// The router's own refusals (401, 404, 405), in OpenAI's shape on every path.
HttpResponse Refusal(int status, std::string message, std::string code) {
  ApiError e = ApiError::InvalidRequest(std::move(message), {}, std::move(code));
  e.http_status = status;
  return ErrorResponse(e);
}

}  // namespace

Router::Router(EmbeddingService* service, MetricsRegistry* metrics, ScoreService* score)
    : Router(std::vector<RoutedModel>{RoutedModel{service, score}}, metrics) {}

Router::Router(std::vector<RoutedModel> models, MetricsRegistry* metrics)
    : routes_(RouteTable(*models.at(0).embed)),
      served_(models, metrics, ServedOpenApi(models, Operations(routes_))) {}

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
  std::string_view param;
  const std::vector<const Route*> routes = RoutesOf(routes_, PathOf(request.target), &param);
  // The metrics' route label: the table's path, or "other" (keeps label sets bounded).
  const std::string label = routes.empty() ? "other" : std::string(routes.front()->path);
  if (const std::string allowed = CorsOrigin(request.origin); !allowed.empty()) {
    if (request.method == "OPTIONS") {  // a preflight: what the real request may carry
      HttpResponse r;
      r.status = routes.empty() ? 404 : 204;
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
  if (MetricsRegistry* metrics = served_.metrics(); metrics != nullptr) {
    Histogram* seconds = metrics->GetHistogram(
        "orchid_http_request_seconds", "HTTP requests: body read to reply handed to the socket",
        LatencyBuckets(), {{"route", label}});
    reply = [metrics, label, seconds, start = std::chrono::steady_clock::now(),
             inner = std::move(reply)](HttpResponse r) {
      seconds->Observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      metrics
          ->GetCounter("orchid_http_requests_total", "HTTP requests by route and status",
                       {{"route", label}, {"status", std::to_string(r.status)}})
          ->Inc();
      inner(std::move(r));
    };
  }
  reply = Once(std::move(reply));
  Guarded(reply, [&] { Dispatch(std::move(request), reply); });
}

void Router::Dispatch(HttpRequest request, const Reply& reply) const {
  const std::string_view path = PathOf(request.target);
  std::string_view raw_param;
  const std::vector<const Route*> routes = RoutesOf(routes_, path, &raw_param);
  const Route* route = nullptr;
  bool open = false;  // needs no API key
  for (const Route* r : routes) {
    if (r->method == request.method) route = r;
    if (r->access == Access::kOpenPath) open = true;
  }
  if (route != nullptr && route->access != Access::kKey) open = true;
  if (!expected_authorization_.empty() && !open &&
      !SameAuthorization(request.authorization, expected_authorization_)) {
    HttpResponse r =
        Refusal(401,
                request.authorization.empty()
                    ? "this server requires an API key: send `Authorization: Bearer <key>`"
                    : "the API key in the Authorization header is not this server's",
                "invalid_api_key");
    r.www_authenticate = "Bearer";
    return reply(std::move(r));
  }
  if (routes.empty()) {
    return reply(
        Refusal(404, "no route for " + request.method + " " + std::string(path), "not_found"));
  }
  if (route == nullptr) {
    std::string allow;
    for (const Route* r : routes) {
      if (!allow.empty()) allow.append(", ");
      allow.append(r->method);
    }
    HttpResponse r = Refusal(
        405, std::string(routes.front()->path) + " accepts " + allow + ", not " + request.method,
        "method_not_allowed");
    r.allow = std::move(allow);
    return reply(std::move(r));
  }
  std::string param = PercentDecoded(raw_param);  // (a view of the target, moved below)
  RouteCall call{std::move(request),      route->path, std::move(param), {}, reply,
                 ErrorReplyOf(route->api)};
  if (route->runs == Runs::kEngine) {
    call.client.cancellation = call.request.cancellation;
    if (auto err = ClientDeadline(call.request, &call.client.deadline)) return call.Fail(*err);
  }
  route->handler(served_, std::move(call));
}

}  // namespace orchid
