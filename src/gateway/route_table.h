// The HTTP API as one table: every route orchid answers is one line of RouteTable() — its
// method, its path, whose API it is (which picks its error body), whether it needs the API key,
// whether it runs the engine, and its handler. Nothing else lists routes: the router matches
// requests against the table (404 for a path it lacks, 405 with Allow for a method it lacks,
// the metrics' route label), the auth middleware reads its access column, each route's errors
// take the shape of its API column, and the served OpenAPI document keeps only its operations
// (tests/gateway/route_table_test.cpp checks that src/gateway/openapi.json lists exactly them).
//
// Adding a route: its line in RouteTable(), its handler — `void Name(const ServedModels&,
// RouteCall)` (route_call.h) — declared in route_handlers.h under its API and defined in the
// file named for that API (openai_routes.cpp, tei_routes.cpp, cohere_routes.cpp,
// vllm_routes.cpp, server_routes.cpp), and its operation in openapi.json.
//
// Thread safety: the table is plain data, built once at start-up.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/route_call.h"

namespace orchid {

// Whose API a route belongs to; that picks its error body (error_response.h).
enum class Api : uint8_t {
  kOpenAi,  // OpenAI's: OpenAI's error body
  kTei,     // text-embeddings-inference's: TEI's error body (an over-long input is a 413)
  kCohere,  // Cohere's: Cohere's error body
  kVllm,    // vLLM's: OpenAI's error body, as vLLM answers
  kOrchid,  // orchid's own: OpenAI's error body
  kPage,    // a page for a browser (static_pages.h): no API operation, not in openapi.json
};

enum class Access : uint8_t {
  kKey,       // with an API key set, answers 401 without `Authorization: Bearer <key>`
  kOpen,      // no key needed for this method and path (the browser pages)
  kOpenPath,  // no key needed for any method on this path (probes, scrapers, the API's
              // description): a wrong method is told its 405, not a 401
};

enum class Runs : uint8_t {
  kGateway,  // answered by the gateway alone
  kEngine,   // runs the engine: takes the client's deadline (a bad X-Request-Timeout is a 400)
};

struct Route {
  std::string_view method;  // "GET" or "POST"
  std::string_view path;    // exact; or ending in "{id}": any non-empty rest of a path
  Api api;
  Access access;
  Runs runs;
  Handler handler;
};

// Every route, in the order their 405's Allow lists a path's methods. POST /'s handler is the
// one TEI's POST / means for the default model (TeiRoot): chosen here, once.
std::vector<Route> RouteTable(const EmbeddingService& default_model);

// The error body of an API's routes.
ErrorReply ErrorReplyOf(Api api);

// The routes of `path` (no query, no trailing slash), every method, in table order: the ones
// whose path is exactly it, or else those whose "{id}" it fills (*param: the raw rest).
std::vector<const Route*> RoutesOf(const std::vector<Route>& table, std::string_view path,
                                   std::string_view* param);

// The API operations of the table, as OpenAPI names them: "post /v1/embeddings" (no pages).
std::set<std::string> Operations(const std::vector<Route>& table);

}  // namespace orchid
