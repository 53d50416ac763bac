#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "gateway/json_writer.h"
#include "gateway/route_handlers.h"
#include "gateway/score_routes.h"

namespace orchid {

void VllmPooling(const ServedModels& served, RouteCall call) {
  EmbeddingsRequest request;
  if (auto err = ParsePoolingRequest(call.request.body, &request)) return call.Fail(*err);
  EmbeddingService* service = EmbedderFor(served, &request, &call);
  if (service == nullptr) return;
  request.model.reset();  // picked here
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  auto respond = [name = service->model_name(), created](EmbeddingReply result) {
    std::string body;
    JsonWriter w(&body);
    w.BeginObject().Key("id").String("pool-" + std::to_string(created));
    w.Key("object").String("list").Key("created").Int(created);
    w.Key("model").String(name).Key("data").BeginArray();
    int row = 0;
    for (size_t i = 0; i < result.token_counts.size(); ++i) {
      w.BeginObject().Key("index").Int(int64_t(i)).Key("object").String("pooling");
      w.Key("data");
      WriteTokenRows(result.embeddings, result.token_counts[i], &row, &w);
      w.EndObject();
    }
    w.EndArray();
    w.Key("usage").BeginObject().Key("prompt_tokens").Int(result.prompt_tokens);
    w.Key("total_tokens").Int(result.prompt_tokens).Key("completion_tokens").Int(0);
    w.EndObject().EndObject();
    if (row != result.embeddings.rows) throw std::runtime_error("per-token rows mismatch");
    return body;
  };
  service->Embed(std::move(request), Responding(call, std::move(respond)));
}

void VllmScore(const ServedModels& served, RouteCall call) {
  ScoreRequest request;
  if (auto err = ParseScoreRequest(call.request.body, &request)) return call.Fail(*err);
  ScorePairs(
      served, std::move(call), std::move(request),
      [created = served.created()](const ScoredPairs& p) {
        return WriteScoreResponse(p.scores, p.model, p.tokens, created);
      },
      EmbedderScores::kSimilarity);
}

void VllmRerank(const ServedModels& served, RouteCall call) {
  ScoreRequest request;
  if (auto err = ParseRerankRequest(call.request.body, &request)) return call.Fail(*err);
  ScorePairs(served, std::move(call), std::move(request), [](const ScoredPairs& p) {
    return WriteRerankResponse(p.shown, p.scores, p.model, p.tokens, p.chunks);
  });
}

}  // namespace orchid
