// What a route's handler is given — the served models and one call (the request, the client's
// scheduling, the reply and the error body of the route's API) — and the one exception wrapper
// every route runs in.
//
// A handler replies exactly once through call.reply: at once (a parse error, a GET), or from
// the completion of the service it hands the request to (Responding). The reply may run on
// another thread, after the handler has returned.
// Thread safety: a RouteCall belongs to one request; the handlers keep no state of their own.
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include "gateway/error_response.h"
#include "gateway/http_types.h"
#include "gateway/served_models.h"
#include "worker/scheduling.h"

namespace orchid {

// An API's error body for an error (error_response.h), picked by the route's line in the table.
using ErrorReply = HttpResponse (*)(const ApiError&);

struct RouteCall {
  HttpRequest request;
  std::string_view route;  // the route's path in the table (its "{id}" unfilled)
  std::string param;       // what the route's "{id}" matched, percent-decoded; else empty
  Scheduling client;       // engine routes: the client's deadline and connection (else unset)
  Reply reply;             // answers once; later calls are dropped
  ErrorReply error;        // the route's API's error body

  void Fail(const ApiError& e) const { reply(error(e)); }
  // Lets the body go once parsed, before the tokenizing that runs on this thread.
  void DropBody() {
    request.body.clear();
    request.body.shrink_to_fit();
  }
  // The client's deadline and cancellation on a request's scheduling (its priority is its own).
  void Schedule(Scheduling* s) const {
    s->deadline = client.deadline;
    s->cancellation = client.cancellation;
  }
};

// A route's handler. route_handlers.h declares them as `HandlerFunction Name;`.
using HandlerFunction = void(const ServedModels& served, RouteCall call);
using Handler = HandlerFunction*;

// The one exception wrapper: runs `work`; an exception out of it becomes a 500 reply
// (InternalError: logged, OpenAI's body on every route). Each route's handler runs in it
// (Router::Handle), and so does each completion (Responding).
template <class Work>
void Guarded(const Reply& reply, Work&& work) {
  try {
    std::forward<Work>(work)();
  } catch (const std::exception& e) {
    reply(InternalError(e));
  }
}

// The completion (`done`) of a service request made for `call`: a failed request's error in the
// route's API's shape, else a 200 whose JSON body `write(result)` makes (it may throw: Guarded).
// Every service reply (EmbeddingReply, ScoreReply, PredictReply) carries `error`.
template <class Write>
auto Responding(const RouteCall& call, Write write) {
  return [reply = call.reply, error = call.error, write = std::move(write)](auto result) {
    Guarded(reply, [&] {
      if (result.error) return reply(error(*result.error));
      HttpResponse r;
      r.body = write(std::move(result));
      reply(std::move(r));
    });
  };
}

// How the embedding routes that name a model (OpenAI's, vLLM's /pooling, Cohere's, /embed_multi)
// go on from the parsed request: the body let go, the client's scheduling and the input cap on
// the request, the model it names, and that it embeds. Null after replying the error.
EmbeddingService* EmbedderFor(const ServedModels& served, EmbeddingsRequest* request,
                              RouteCall* call);

}  // namespace orchid
