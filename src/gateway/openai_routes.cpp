#include <utility>

#include "gateway/bge_m3.h"
#include "gateway/route_handlers.h"

namespace orchid {

void OpenAiEmbeddings(const ServedModels& served, RouteCall call) {
  EmbeddingsRequest request;
  if (auto err = ParseOpenAiEmbeddingsRequest(call.request.body, &request)) {
    return call.Fail(*err);
  }
  EmbeddingService* service = EmbedderFor(served, &request, &call);
  if (service == nullptr) return;
  const EmbeddingOutput output{request.encoding_format, request.embedding_types,
                               service->native_quantization()};
  service->Embed(std::move(request),
                 Responding(call, [name = service->model_name(), output](EmbeddingReply result) {
                   return WriteOpenAiEmbeddingsResponse(result.embeddings, output, name,
                                                        result.prompt_tokens);
                 }));
}

void EmbedMulti(const ServedModels& served, RouteCall call) {
  EmbeddingsRequest request;
  BgeM3Outputs outputs;
  if (auto err = ParseEmbedMultiRequest(call.request.body, &request, &outputs)) {
    return call.Fail(*err);
  }
  EmbeddingService* service = EmbedderFor(served, &request, &call);
  if (service == nullptr) return;
  if (!service->bge_m3()) {
    return call.Fail(ApiError::InvalidRequest(
        "The model `" + service->model_name() +
            "` is not a BGE-M3 model (colbert_linear.pt and sparse_linear.pt beside its "
            "weights); /embed_multi serves only those. Use /v1/embeddings for it.",
        "model", "not_a_bge_m3_model"));
  }
  service->Embed(std::move(request),
                 Responding(call, [name = service->model_name(), outputs](EmbeddingReply result) {
                   return WriteEmbedMultiResponse(outputs, name, result.dense, result.lexical,
                                                  result.embeddings, result.token_counts,
                                                  result.prompt_tokens);
                 }));
}

}  // namespace orchid
