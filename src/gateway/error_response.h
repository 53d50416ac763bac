// An ApiError as the HTTP reply of each API's dialect (api_error.h writes the bodies). Which
// dialect a route answers in is its line of the route table (route_table.h).
//
// Thread safety: free functions.
#pragma once

#include <exception>

#include "gateway/api_error.h"
#include "gateway/http_types.h"

namespace orchid {

// OpenAI's {"error": {...}} with the error's status: OpenAI's routes, vLLM's and orchid's own,
// and what the router itself answers (401, 404, 405) on any path.
HttpResponse ErrorResponse(const ApiError& error);
// text-embeddings-inference's {"error", "error_type"}; an input over the model's maximum is
// TEI's Validation error, a 413.
HttpResponse TeiErrorResponse(const ApiError& error);
// Cohere's {"message"} (with OpenAI's "param" and "code" beside it), with the error's status.
HttpResponse CohereErrorResponse(const ApiError& error);

// An exception while handling a request: logged, and a 500 in OpenAI's shape on every route.
HttpResponse InternalError(const std::exception& e);

}  // namespace orchid
