#include "gateway/route_table.h"

#include <cctype>

#include "gateway/route_handlers.h"

namespace orchid {

std::vector<Route> RouteTable(const EmbeddingService& default_model) {
  using enum Api;
  using enum Access;
  using enum Runs;
  // clang-format off
  return {
      // {method, path, API (its error body), access (API key), runs, handler}
      {"POST", "/v1/embeddings",             kOpenAi, kKey,      kEngine,  OpenAiEmbeddings},
      {"POST", "/embeddings",                kOpenAi, kKey,      kEngine,  OpenAiEmbeddings},
      {"GET",  "/v1/models",                 kOpenAi, kKey,      kGateway, Models},
      {"GET",  "/v1/models/{id}",            kOpenAi, kKey,      kGateway, Model},
      {"POST", "/embed",                     kTei,    kKey,      kEngine,  TeiEmbed},
      {"POST", "/embed_sparse",              kTei,    kKey,      kEngine,  TeiEmbedSparse},
      {"POST", "/embed_all",                 kTei,    kKey,      kEngine,  TeiEmbedAll},
      {"POST", "/similarity",                kTei,    kKey,      kEngine,  TeiSimilarity},
      {"POST", "/predict",                   kTei,    kKey,      kEngine,  TeiPredict},
      {"POST", "/rerank",                    kTei,    kKey,      kEngine,  TeiRerank},
      {"POST", "/tokenize",                  kTei,    kKey,      kGateway, TeiTokenize},
      {"POST", "/decode",                    kTei,    kKey,      kGateway, TeiDecode},
      {"GET",  "/info",                      kTei,    kKey,      kGateway, Info},
      {"GET",  "/",                          kTei,    kOpen,     kGateway, Root},
      {"POST", "/",                          kTei,    kKey,      kEngine,  TeiRoot(default_model)},
      {"POST", "/v1/embed",                  kCohere, kKey,      kEngine,  CohereEmbedV1},
      {"POST", "/v2/embed",                  kCohere, kKey,      kEngine,  CohereEmbedV2},
      {"POST", "/v2/rerank",                 kCohere, kKey,      kEngine,  CohereRerankV2},
      {"POST", "/v1/rerank",                 kVllm,   kKey,      kEngine,  VllmRerank},
      {"POST", "/v1/score",                  kVllm,   kKey,      kEngine,  VllmScore},
      {"POST", "/score",                     kVllm,   kKey,      kEngine,  VllmScore},
      {"POST", "/pooling",                   kVllm,   kKey,      kEngine,  VllmPooling},
      {"POST", "/embed_multi",               kOrchid, kKey,      kEngine,  EmbedMulti},
      {"GET",  "/health",                    kOrchid, kOpenPath, kGateway, Health},
      {"GET",  "/metrics",                   kOrchid, kOpenPath, kGateway, Metrics},
      {"GET",  "/openapi.json",              kOrchid, kOpenPath, kGateway, OpenApi},
      {"GET",  "/docs",                      kPage,   kOpen,     kGateway, Page},
      {"GET",  "/docs/swagger-ui-bundle.js", kPage,   kOpen,     kGateway, Page},
      {"GET",  "/docs/swagger-ui.css",       kPage,   kOpen,     kGateway, Page},
  };
  // clang-format on
}

ErrorReply ErrorReplyOf(Api api) {
  switch (api) {
    case Api::kTei:
      return TeiErrorResponse;
    case Api::kCohere:
      return CohereErrorResponse;
    case Api::kOpenAi:
    case Api::kVllm:
    case Api::kOrchid:
    case Api::kPage:
      break;
  }
  return ErrorResponse;
}

std::vector<const Route*> RoutesOf(const std::vector<Route>& table, std::string_view path,
                                   std::string_view* param) {
  std::vector<const Route*> exact, filled;
  for (const Route& r : table) {
    if (r.path == path) {
      exact.push_back(&r);
      continue;
    }
    constexpr std::string_view kId = "{id}";
    if (!r.path.ends_with(kId)) continue;
    const std::string_view prefix = r.path.substr(0, r.path.size() - kId.size());
    if (path.size() > prefix.size() && path.starts_with(prefix)) {
      filled.push_back(&r);
      *param = path.substr(prefix.size());
    }
  }
  return exact.empty() ? filled : exact;
}

std::set<std::string> Operations(const std::vector<Route>& table) {
  std::set<std::string> out;
  for (const Route& r : table) {
    if (r.api == Api::kPage) continue;
    std::string op;
    for (char c : r.method) op.push_back(char(std::tolower(static_cast<unsigned char>(c))));
    out.insert(op + " " + std::string(r.path));
  }
  return out;
}

}  // namespace orchid
