#include "gateway/served_models.h"

#include <chrono>
#include <utility>

namespace orchid {

ServedModels::ServedModels(std::vector<RoutedModel> models, MetricsRegistry* metrics,
                           std::string openapi)
    : models_(std::move(models)),
      metrics_(metrics),
      created_(std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      openapi_(std::move(openapi)) {}

const RoutedModel* ServedModels::Select(const std::optional<std::string>& name,
                                        ApiError* error) const {
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

std::optional<ApiError> TooManyInputs(const EmbeddingsRequest& request) {
  constexpr size_t kMax = ServedModels::kMaxClientBatchSize;
  if (request.num_inputs() <= kMax) return std::nullopt;
  ApiError e = ApiError::InvalidRequest(
      "input has " + std::to_string(request.num_inputs()) + " entries, more than the limit of " +
          std::to_string(kMax) + " per request; split it into smaller requests",
      "input", "too_many_inputs");
  e.http_status = 413;
  return e;
}

std::optional<ApiError> NotAnEmbedder(const EmbeddingService& service) {
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

}  // namespace orchid
