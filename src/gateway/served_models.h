// ServedModels: what every route handler reads — the models served, in order (the first is the
// default: the routes without a `model` field use it), the server's start time, its metrics
// registry and its OpenAPI document — and the checks the routes share on them.
//
// Thread safety: immutable after construction; any thread may read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/metrics.h"
#include "gateway/api_error.h"
#include "gateway/embedding_service.h"
#include "gateway/score_service.h"

namespace orchid {

// One served model: its embeddings and scoring services (the same name, tokenizer and backend).
struct RoutedModel {
  EmbeddingService* embed = nullptr;
  ScoreService* score = nullptr;  // null: rerank routes refuse this model
};

class ServedModels {
 public:
  // Inputs per /v1/embeddings, /tokenize or /decode request (OpenAI's limit for embeddings
  // inputs; TEI's max_client_batch_size).
  static constexpr size_t kMaxClientBatchSize = 2048;

  // The services (and `metrics`, if given) must outlive this. `models` is not empty.
  // `openapi`: what GET /openapi.json answers.
  ServedModels(std::vector<RoutedModel> models, MetricsRegistry* metrics, std::string openapi);

  const std::vector<RoutedModel>& all() const { return models_; }
  // The first model's embeddings service: what /embed, /tokenize, /info and POST / use.
  EmbeddingService& default_model() const { return *models_.front().embed; }
  // The model a request names (nullopt: the first), or null with *error the 404 to send.
  const RoutedModel* Select(const std::optional<std::string>& name, ApiError* error) const;

  MetricsRegistry* metrics() const { return metrics_; }  // null: no /metrics
  int64_t created() const { return created_; }           // when the server started (Unix seconds)
  const std::string& openapi() const { return openapi_; }

 private:
  std::vector<RoutedModel> models_;
  MetricsRegistry* metrics_;
  int64_t created_;
  std::string openapi_;
};

// The limit on the inputs of one embeddings request (OpenAI's; TEI's max_client_batch_size).
std::optional<ApiError> TooManyInputs(const EmbeddingsRequest& request);
// Embedding routes refuse scorer models (their rows are logits, not embeddings) and sparse ones.
std::optional<ApiError> NotAnEmbedder(const EmbeddingService& service);

}  // namespace orchid
