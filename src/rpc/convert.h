// Between orchid's own types and the orchid.v1 protocol (proto/orchid/v1/worker.proto): status
// codes, pooling, embed requests and results, model info. Shared by the worker's gRPC service
// and the gateway's replica client so that both ends agree by construction.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <string>

#include "core/status.h"
#include "engine/engine.h"
#include "orchid/v1/worker.grpc.pb.h"
#include "worker/token_budget_scheduler.h"

namespace orchid::rpc {

grpc::Status ToGrpc(const Status& status);
Status FromGrpc(const grpc::Status& status);

v1::Pooling ToProto(Pooling p);
// POOLING_UNSPECIFIED → `fallback`. InvalidArgument for values this build does not know.
Result<Pooling> FromProto(v1::Pooling p, Pooling fallback);

v1::RequestClass ToProto(RequestClass c);

// What a worker checks an incoming request against.
struct WorkerModel {
  std::string name;
  ModelInfo info;
  int max_input_tokens = 0;
  uint64_t tokenizer_fingerprint = 0;  // 0 = unknown
};

// Validates `in` against the model (non-empty sequences within the maximum, ids in the
// vocabulary, dimensions within the width, matching model name and tokenizer when given) and
// fills `out` (priority, class and flow included), moving the token ids. `*tokens` gets the
// request's token count.
Status FromProto(const v1::EmbedRequest& in, const WorkerModel& model, EmbedRequest* out,
                 int64_t* tokens);
// Moves the sequences of `in` into the message, with its priority, class and flow (the gateway
// side; the deadline goes as the call's).
void ToProto(EmbedRequest&& in, v1::EmbedRequest* out);

// A Score call for a scorer: the pairs as sequences (with their token types), the model's
// default pooling, no normalisation. FailedPrecondition when the model is an embedder.
Status FromProto(const v1::ScoreRequest& in, const WorkerModel& model, EmbedRequest* out,
                 int64_t* tokens);

// Row-major float32, little-endian.
void ToProto(const Embeddings& in, v1::EmbedResponse* out);
// A scorer's logit rows [pairs, num_labels], and each pair's score through `activation`.
void ToProto(const Embeddings& logits, ScoreActivation activation, v1::ScoreResponse* out);
// The logit rows back (the gateway side; it applies activations itself).
Status FromProto(const v1::ScoreResponse& in, Embeddings* out);
Status FromProto(const v1::EmbedResponse& in, Embeddings* out);

void ToProto(const WorkerModel& model, int max_batch_tokens, v1::InfoResponse* out);
Result<WorkerModel> FromProto(const v1::InfoResponse& in);

// FNV-1a 64 of a file's bytes: how a gateway and a worker check they tokenize alike.
Result<uint64_t> FingerprintFile(const std::string& path);

}  // namespace orchid::rpc
