#include "gateway/chunk_dispatcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace orchid {

ChunkDispatcher::ChunkDispatcher(ReplicaSet* replicas, std::chrono::milliseconds request_timeout,
                                 Counter* retries)
    : replicas_(replicas), request_timeout_(request_timeout), retries_(retries) {}

bool ChunkDispatcher::cancelling() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelling_;
}

void ChunkDispatcher::CancelAll() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelling_ = true;
  for (ChunkCall* c : calls_) c->context->TryCancel();
}

void ChunkDispatcher::Send(std::shared_ptr<ChunkCall> call) {
  std::shared_ptr<Replica> r = replicas_->Pick(call->tried);
  if (!r) {
    call->Done(call->any_refused_for_load
                   ? Status::ResourceExhausted("every worker replica is at capacity; retry later")
                   : Status::Unavailable("no healthy worker replica"));
    return;
  }
  call->tried.insert(r.get());
  call->replica = r;
  bool cancelled = false;
  {
    // Under the job's lock: ChunkedJob::Cancel() cancels the context from another thread.
    std::lock_guard<std::mutex> lock(call->job->mu);
    cancelled = call->job->cancelled;
    if (!cancelled) {
      // A retry is sent from the callback of the attempt before it: that attempt's context is
      // kept (not destroyed inside its own callback) until the chunk call itself goes.
      if (call->context) call->spent_contexts.push_back(std::move(call->context));
      call->context = std::make_unique<grpc::ClientContext>();
    }
  }
  if (cancelled) {
    call->Done(Status::Cancelled("the client went away"));
    return;
  }
  auto timeout = std::chrono::duration_cast<std::chrono::system_clock::duration>(request_timeout_);
  if (call->deadline != ChunkCall::Clock::time_point::max()) {
    timeout = std::min(timeout, std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                    call->deadline - ChunkCall::Clock::now()));
  }
  call->context->set_deadline(std::chrono::system_clock::now() + timeout);
  call->response.Clear();
  bool refused = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    refused = cancelling_;
    if (!refused) calls_.insert(call.get());
  }
  if (refused) {  // answered outside the lock: the job's callback takes it
    call->Done(Status::Unavailable("the gateway is shutting down"));
    return;
  }
  r->AddOutstanding(call->tokens);
  call->via_score = call->scorer && r->score_rpc;
  if (call->via_score) {
    if (call->score_request.pairs_size() == 0) {
      *call->score_request.mutable_pairs() = call->request.sequences();
      call->score_request.set_model(call->request.model());
      call->score_request.set_tokenizer_fingerprint(call->request.tokenizer_fingerprint());
      call->score_request.set_priority(call->request.priority());
      call->score_request.set_request_class(call->request.request_class());
      call->score_request.set_flow(call->request.flow());
    }
    call->score_response.Clear();
    r->stub->async()->Score(call->context.get(), &call->score_request, &call->score_response,
                            [this, call](grpc::Status s) { OnDone(call, std::move(s)); });
    return;
  }
  r->stub->async()->Embed(call->context.get(), &call->request, &call->response,
                          [this, call](grpc::Status s) { OnDone(call, std::move(s)); });
}

void ChunkDispatcher::OnDone(const std::shared_ptr<ChunkCall>& call, grpc::Status s) {
  Replica& r = *call->replica;
  r.AddOutstanding(-call->tokens);
  {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.erase(call.get());
  }
  if (s.ok()) {
    ++r.chunks_done;
    Embeddings rows;
    Status st = call->via_score ? rpc::FromProto(call->score_response, &rows)
                                : rpc::FromProto(call->response, &rows);
    call->Done(st.ok() ? Result<Embeddings>(std::move(rows)) : Result<Embeddings>(st));
    return;
  }
  if (call->via_score && s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    // A worker older than Score: this chunk, and the replica's next ones, go to Embed.
    if (r.score_rpc.exchange(false)) {
      spdlog::info("replica {} has no Score RPC; scoring through Embed", r.address);
    }
    call->tried.erase(&r);
    return Send(call);
  }
  if (s.error_code() == grpc::StatusCode::CANCELLED && call->job->IsCancelled()) {
    // The client went away: not the replica's fault, nothing to retry.
    call->Done(Status::Cancelled("the client went away"));
    return;
  }
  replicas_->CountError(r, s.error_code());
  const bool stopping_now = cancelling();
  // CANCELLED is not ours unless the pool is stopping (or the job was cancelled, above): it
  // is the worker's side, e.g. a call that reached a worker as its server was shutting down.
  const bool transport = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                         s.error_code() == grpc::StatusCode::CANCELLED;
  if (transport && !stopping_now) {
    // Worker gone, connection broken, or draining: take it out until Health says otherwise.
    replicas_->SetHealthy(r, false);
    if (!call->retried_transport) {
      call->retried_transport = true;
      if (retries_ != nullptr) retries_->Inc();
      spdlog::warn("chunk failed on {} ({}); retrying on another replica", r.address,
                   s.error_message());
      return Send(call);
    }
  } else if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED && !stopping_now) {
    call->any_refused_for_load = true;
    return Send(call);
  }
  call->Done(rpc::FromGrpc(s));
}

}  // namespace orchid
