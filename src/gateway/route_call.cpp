#include "gateway/route_call.h"

namespace orchid {

EmbeddingService* EmbedderFor(const ServedModels& served, EmbeddingsRequest* request,
                              RouteCall* call) {
  call->DropBody();
  call->Schedule(&request->scheduling);
  if (auto e = TooManyInputs(*request)) {
    call->Fail(*e);
    return nullptr;
  }
  ApiError not_found;
  const RoutedModel* model = served.Select(request->model, &not_found);
  if (model == nullptr) {
    call->Fail(not_found);
    return nullptr;
  }
  if (auto e = NotAnEmbedder(*model->embed)) {
    call->Fail(*e);
    return nullptr;
  }
  return model->embed;
}

}  // namespace orchid
