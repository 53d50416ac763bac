#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gateway/json_parse.h"
#include "gateway/json_writer.h"
#include "gateway/pair_scores.h"
#include "gateway/route_handlers.h"
#include "gateway/score_routes.h"

namespace orchid {
namespace {

// TEI's embedding routes start alike: /embed's body, the client's scheduling and the input cap
// on the request, for the default model — for the dense routes, an embedder. Null after replying
// the error.
EmbeddingService* DefaultEmbedder(const ServedModels& served, const RouteCall& call,
                                  EmbeddingsRequest* request, bool dense) {
  if (auto err = ParseTeiEmbedRequest(call.request.body, request)) {
    call.Fail(*err);
    return nullptr;
  }
  call.Schedule(&request->scheduling);
  std::optional<ApiError> e = TooManyInputs(*request);
  if (!e && dense) e = NotAnEmbedder(served.default_model());
  if (e) {
    call.Fail(*e);
    return nullptr;
  }
  return &served.default_model();
}

// `hf`: the Hugging Face Inference API's text classification (POST / on a classifier).
void Predict(const ServedModels& served, RouteCall call, bool hf) {
  PredictRequest request;
  if (auto err = hf ? ParseHfClassificationRequest(call.request.body, &request)
                    : ParsePredictRequest(call.request.body, &request)) {
    return call.Fail(*err);
  }
  call.DropBody();
  call.Schedule(&request.scheduling);
  ApiError not_found;
  const RoutedModel* model = served.Select(request.model, &not_found);
  if (model == nullptr) return call.Fail(not_found);
  if (model->score == nullptr) {
    return call.Fail(
        ApiError::InvalidRequest("The model `" + model->embed->model_name() + "` has no classifier",
                                 "model", "model_not_a_classifier"));
  }
  std::vector<std::string> labels;
  const ModelInfo& info = model->embed->model_info();
  for (int i = 0; i < info.num_labels; ++i) labels.push_back(info.label(i));
  auto respond = [batch = request.batch, top_k = request.top_k,
                  labels = std::move(labels)](PredictReply result) {
    return WritePredictResponse(batch, result.scores, labels, top_k);
  };
  model->score->Predict(std::move(request), Responding(call, std::move(respond)));
}

void HfClassify(const ServedModels& served, RouteCall call) {
  Predict(served, std::move(call), /*hf=*/true);
}

// What a POST / body's "inputs" is: none (absent, null, or no JSON object at all), an object
// (TEI's /similarity request), or anything else.
enum class BodyInputs { kNone, kObject, kOther };
BodyInputs InputsOf(std::string_view body) {
  simdjson::dom::element doc, inputs;
  if (ParseDocument(body, &doc) || doc["inputs"].get(inputs) != simdjson::SUCCESS ||
      inputs.is_null()) {
    return BodyInputs::kNone;
  }
  return inputs.is_object() ? BodyInputs::kObject : BodyInputs::kOther;
}

void EmbedOrSimilarity(const ServedModels& served, RouteCall call) {
  if (InputsOf(call.request.body) == BodyInputs::kObject) {
    return TeiSimilarity(served, std::move(call));
  }
  TeiEmbed(served, std::move(call));
}

void RerankOrClassify(const ServedModels& served, RouteCall call) {
  if (InputsOf(call.request.body) == BodyInputs::kNone) return TeiRerank(served, std::move(call));
  HfClassify(served, std::move(call));
}

}  // namespace

void TeiEmbed(const ServedModels& served, RouteCall call) {
  EmbeddingsRequest request;
  EmbeddingService* service = DefaultEmbedder(served, call, &request, /*dense=*/true);
  if (service == nullptr) return;
  service->Embed(std::move(request), Responding(call, [](EmbeddingReply result) {
                   return WriteTeiEmbedResponse(result.embeddings);
                 }));
}

void TeiEmbedSparse(const ServedModels& served, RouteCall call) {
  EmbeddingsRequest request;
  EmbeddingService* service = DefaultEmbedder(served, call, &request, /*dense=*/false);
  if (service == nullptr) return;
  if (service->bge_m3()) {
    // BGE-M3's lexical weights, from a per-token pass.
    request.per_token = true;
    service->Embed(std::move(request), Responding(call, [](EmbeddingReply result) {
                     return WriteTeiLexicalResponse(result.lexical);
                   }));
    return;
  }
  if (!service->model_info().sparse) {
    return call.Fail(ApiError::InvalidRequest(
        "The model `" + service->model_name() +
            "` is not a sparse (SPLADE or BGE-M3) model; /embed_sparse needs one (use /embed)",
        "model", "model_not_sparse"));
  }
  request.normalize = false;  // term weights, as sentence-transformers' SparseEncoder returns
  service->Embed(std::move(request), Responding(call, [](EmbeddingReply result) {
                   return WriteTeiSparseResponse(result.embeddings);
                 }));
}

// Per input, every token's last hidden state (dense embedders only).
void TeiEmbedAll(const ServedModels& served, RouteCall call) {
  EmbeddingsRequest request;
  EmbeddingService* service = DefaultEmbedder(served, call, &request, /*dense=*/true);
  if (service == nullptr) return;
  request.per_token = true;
  service->Embed(std::move(request), Responding(call, [](EmbeddingReply result) {
                   std::string body;
                   JsonWriter w(&body);
                   w.BeginArray();
                   int row = 0;
                   for (int32_t n : result.token_counts) {
                     WriteTokenRows(result.embeddings, n, &row, &w);
                   }
                   w.EndArray();
                   if (row != result.embeddings.rows) {
                     throw std::runtime_error("per-token rows mismatch");
                   }
                   return body;
                 }));
}

void TeiSimilarity(const ServedModels& served, RouteCall call) {
  EmbeddingsRequest request;
  if (auto err = ParseTeiSimilarityRequest(call.request.body, &request)) return call.Fail(*err);
  call.Schedule(&request.scheduling);
  if (auto e = TooManyInputs(request)) return call.Fail(*e);
  ApiError not_found;
  const RoutedModel* model = served.Select(request.model, &not_found);
  if (model == nullptr) return call.Fail(not_found);
  EmbeddingService& service = *model->embed;
  if (auto e = NotAnEmbedder(service)) return call.Fail(*e);
  request.model.reset();  // picked here (the service checks a name against its own)
  // The model's similarity function (config_sentence_transformers.json similarity_fn_name),
  // as sentence-transformers' model.similarity computes it; row 0 is the source sentence.
  const SimilarityFunction fn = service.prompts().similarity;
  service.Embed(std::move(request), Responding(call, [fn](EmbeddingReply result) {
                  std::string body;
                  JsonWriter w(&body);
                  w.BeginArray();
                  for (float s : SimilaritiesToFirst(fn, result.embeddings)) w.Float(s);
                  w.EndArray();
                  return body;
                }));
}

void TeiPredict(const ServedModels& served, RouteCall call) {
  Predict(served, std::move(call), /*hf=*/false);
}

void TeiRerank(const ServedModels& served, RouteCall call) {
  ScoreRequest request;
  if (auto err = ParseTeiRerankRequest(call.request.body, &request)) return call.Fail(*err);
  ScorePairs(served, std::move(call), std::move(request), [](const ScoredPairs& p) {
    return WriteTeiRerankResponse(p.shown, p.scores, p.chunks);
  });
}

Handler TeiRoot(const EmbeddingService& default_model) {
  if (!default_model.is_scorer()) {
    return default_model.model_info().sparse ? TeiEmbedSparse : EmbedOrSimilarity;
  }
  return default_model.model_info().num_labels == 1 ? RerankOrClassify : HfClassify;
}

}  // namespace orchid
