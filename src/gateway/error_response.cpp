#include "gateway/error_response.h"

#include <spdlog/spdlog.h>

namespace orchid {

HttpResponse ErrorResponse(const ApiError& error) {
  HttpResponse r;
  r.status = error.http_status;
  r.body = OpenAiErrorBody(error);
  return r;
}

HttpResponse TeiErrorResponse(const ApiError& error) {
  HttpResponse r;
  r.status = error.code == "context_length_exceeded" ? 413 : error.http_status;
  r.body = TeiErrorBody(error);
  return r;
}

HttpResponse CohereErrorResponse(const ApiError& error) {
  HttpResponse r;
  r.status = error.http_status;
  r.body = CohereErrorBody(error);
  return r;
}

HttpResponse InternalError(const std::exception& e) {
  spdlog::error("internal error while handling a request: {}", e.what());
  return ErrorResponse(ApiError::FromStatus(Status::Internal(e.what())));
}

}  // namespace orchid
