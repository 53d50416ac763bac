// ApiError: an error as the HTTP API reports it — a status code and OpenAI's error object
// {"error": {"message", "type", "param", "code"}} (or TEI's {"error", "error_type"} on TEI routes).
#pragma once

#include <string>

#include "core/status.h"

namespace orchid {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending request field, e.g. "input[3]"; empty → null
  std::string code;   // a short machine-readable code; empty → null

  static ApiError InvalidRequest(std::string message, std::string param = {},
                                 std::string code = {});
  // Maps an orchid Status onto the HTTP status and error type a client expects:
  // InvalidArgument/OutOfRange 400, NotFound 404, ResourceExhausted 429, Unavailable 503,
  // anything else 500.
  static ApiError FromStatus(const Status& status, std::string param = {});
};

std::string OpenAiErrorBody(const ApiError& error);
// text-embeddings-inference's error body: {"error": message, "error_type": kind}.
std::string TeiErrorBody(const ApiError& error);
// Cohere's error body, {"message": message}, with OpenAI's "param" and "code" beside it.
std::string CohereErrorBody(const ApiError& error);

}  // namespace orchid
