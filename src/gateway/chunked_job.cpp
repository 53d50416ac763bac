#include "gateway/chunked_job.h"

#include <algorithm>
#include <utility>

namespace orchid {

void ChunkedJob::Cancel() {
  std::lock_guard<std::mutex> lock(mu);
  if (cancelled || finished) return;
  cancelled = true;
  for (const auto& weak : calls) {
    if (auto call = weak.lock(); call && call->context) call->context->TryCancel();
  }
}

bool ChunkedJob::IsCancelled() {
  std::lock_guard<std::mutex> lock(mu);
  return cancelled;
}

void ChunkedJob::ChunkDone(size_t first, Result<Embeddings> part) {
  std::unique_lock<std::mutex> lock(mu);
  if (finished) return;
  if (!part.ok()) {
    finished = true;
    lock.unlock();
    done(part.status());
    return;
  }
  if (out.data.empty()) {
    out.rows = rows;
    out.dim = part->dim;
    out.data.resize(size_t(rows) * size_t(part->dim));
  }
  if (part->dim != out.dim || first + size_t(part->rows) > size_t(rows)) {
    finished = true;
    lock.unlock();
    done(Status::Internal("replicas answered with inconsistent shapes"));
    return;
  }
  std::copy(part->data.begin(), part->data.end(), out.data.begin() + first * size_t(out.dim));
  if (--chunks_left > 0) return;
  finished = true;
  Embeddings result = std::move(out);
  lock.unlock();
  done(std::move(result));
}

std::vector<std::shared_ptr<ChunkCall>> SplitIntoChunks(EmbedRequest&& request,
                                                        int64_t chunk_tokens,
                                                        const rpc::WorkerModel* model,
                                                        const std::shared_ptr<ChunkedJob>& job) {
  // Per-token output (kNone): one row per token; each chunk's rows start at its first token.
  const bool per_token = request.pooling == Pooling::kNone;
  const Scheduling& sched = request.scheduling;
  int64_t total_tokens = 0;
  for (const auto& seq : request.sequences) total_tokens += int64_t(seq.size());
  job->rows = per_token ? int(total_tokens) : int(request.sequences.size());
  const bool typed = !request.token_type_ids.empty();
  const bool limited = !request.attend_lens.empty();
  const bool images = request.images();
  std::vector<std::shared_ptr<ChunkCall>> chunks;
  size_t i = 0;
  size_t tokens_before = 0;
  while (i < request.sequences.size()) {
    auto call = std::make_shared<ChunkCall>();
    call->job = job;
    call->first_row = per_token ? tokens_before : i;
    call->deadline = sched.deadline;
    EmbedRequest part;
    part.pooling = request.pooling;
    part.pool_skip = request.pool_skip;
    part.normalize = request.normalize;
    part.dimensions = request.dimensions;
    part.scheduling.priority = sched.priority;
    part.scheduling.request_class = sched.request_class;
    part.scheduling.flow = sched.flow;
    while (i < request.sequences.size()) {
      const int64_t n = int64_t(request.sequences[i].size());
      if (!part.sequences.empty() && call->tokens + n > chunk_tokens) break;
      call->tokens += n;
      part.sequences.push_back(std::move(request.sequences[i]));
      if (typed) part.token_type_ids.push_back(std::move(request.token_type_ids[i]));
      if (limited) part.attend_lens.push_back(request.attend_lens[i]);
      if (images) part.pixels.push_back(std::move(request.pixels[i]));
      ++i;
    }
    tokens_before += size_t(call->tokens);
    rpc::ToProto(std::move(part), &call->request);
    if (model != nullptr) {
      // The task travels by name: the worker numbers its adapters itself.
      if (request.adapter > 0)
        call->request.set_task(model->info.tasks[size_t(request.adapter) - 1]);
      call->request.set_model(model->name);
      call->request.set_tokenizer_fingerprint(model->tokenizer_fingerprint);
      call->scorer = model->info.task == ModelTask::kScore;
    }
    chunks.push_back(std::move(call));
  }
  job->chunks_left = int(chunks.size());
  for (const auto& c : chunks) job->calls.push_back(c);
  return chunks;
}

}  // namespace orchid
