#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/route_handlers.h"
#include "gateway/score_routes.h"

namespace orchid {
namespace {

void Embed(const ServedModels& served, RouteCall call, CohereApiVersion version) {
  EmbeddingsRequest request;
  if (auto err = ParseCohereEmbedRequest(call.request.body, version, &request)) {
    return call.Fail(*err);
  }
  EmbeddingService* service = EmbedderFor(served, &request, &call);
  if (service == nullptr) return;
  const EmbeddingOutput output{EncodingFormat::kFloat, request.embedding_types,
                               service->native_quantization()};
  // Cohere echoes the texts.
  auto texts = std::make_shared<const std::vector<std::string>>(request.texts);
  const std::string_view api_version = version == CohereApiVersion::kV1 ? "1" : "2";
  service->Embed(std::move(request),
                 Responding(call, [output, texts, api_version](EmbeddingReply result) {
                   return WriteCohereEmbedResponse(result.embeddings, output, *texts, api_version,
                                                   result.prompt_tokens);
                 }));
}

}  // namespace

void CohereEmbedV1(const ServedModels& served, RouteCall call) {
  Embed(served, std::move(call), CohereApiVersion::kV1);
}

void CohereEmbedV2(const ServedModels& served, RouteCall call) {
  Embed(served, std::move(call), CohereApiVersion::kV2);
}

void CohereRerankV2(const ServedModels& served, RouteCall call) {
  ScoreRequest request;
  if (auto err = ParseCohereRerankRequest(call.request.body, &request)) return call.Fail(*err);
  ScorePairs(served, std::move(call), std::move(request), [](const ScoredPairs& p) {
    return WriteCohereRerankResponse(p.shown, p.scores, p.tokens, p.chunks);
  });
}

}  // namespace orchid
