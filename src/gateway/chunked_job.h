// ChunkedJob: one client request on its way through a ReplicaPool, split into chunks of whole
// sequences (each at most chunk_tokens, unless one sequence alone is more), each chunk a
// ChunkCall to one replica at a time. The chunks' rows are put back in input order and the
// request is answered once: with every row, or with the first error of any chunk.
//
// Thread safety: ChunkedJob's methods may be called from any thread (gRPC's callbacks); its
// fields below `mu` are guarded by it. A ChunkCall is touched by one attempt at a time (the
// dispatcher starts the next attempt from the callback of the one before).
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "core/status.h"
#include "gateway/replica_set.h"
#include "orchid/v1/worker.grpc.pb.h"
#include "rpc/convert.h"
#include "worker/embed_request.h"

namespace orchid {

struct ChunkCall;

struct ChunkedJob {
  EmbedCallback done;  // called once
  int rows = 0;        // of the whole answer: sequences, or tokens for per-token output

  std::mutex mu;
  Embeddings out;
  int chunks_left = 0;
  bool finished = false;
  // The client went away (its HTTP connection closed): every attempt in flight is cancelled
  // and no new one starts. Guarded by mu, as the attempts' contexts in `calls` are.
  bool cancelled = false;
  std::vector<std::weak_ptr<ChunkCall>> calls;

  // Cancels the calls in flight; they end with CANCELLED, which answers the job.
  void Cancel();
  // Whether Cancel() was called.
  bool IsCancelled();
  // Called once per chunk (rows at `first`), or with an error. The first error answers the job.
  void ChunkDone(size_t first, Result<Embeddings> part);
};

// One chunk of a job and its current attempt.
struct ChunkCall {
  using Clock = std::chrono::steady_clock;

  std::shared_ptr<ChunkedJob> job;
  Clock::time_point deadline = Clock::time_point::max();  // the request's own, if any
  size_t first_row = 0;
  int64_t tokens = 0;
  v1::EmbedRequest request;
  v1::EmbedResponse response;
  bool scorer = false;     // the pool's model is a scorer
  bool via_score = false;  // the current attempt is a Score call
  v1::ScoreRequest score_request;
  v1::ScoreResponse score_response;
  std::unique_ptr<grpc::ClientContext> context;
  std::vector<std::unique_ptr<grpc::ClientContext>> spent_contexts;  // earlier attempts'
  std::shared_ptr<Replica> replica;                                  // of the current attempt
  std::set<const Replica*> tried;
  bool retried_transport = false;  // the one retry after a transport failure is used
  bool any_refused_for_load = false;

  // Answers this chunk's part of the job.
  void Done(Result<Embeddings> rows) { job->ChunkDone(first_row, std::move(rows)); }
};

// Splits `request` into the chunks of `job` (whole sequences, in order, until a chunk would
// pass `chunk_tokens`), each carrying the request's options and scheduling and, with `model`,
// its name, tokenizer and task. Sets job->rows and job->chunks_left and registers the calls
// with the job. The request's sequences are moved into the chunks.
std::vector<std::shared_ptr<ChunkCall>> SplitIntoChunks(EmbedRequest&& request,
                                                        int64_t chunk_tokens,
                                                        const rpc::WorkerModel* model,
                                                        const std::shared_ptr<ChunkedJob>& job);

}  // namespace orchid
