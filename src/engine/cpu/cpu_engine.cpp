#include "engine/cpu/cpu_engine.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "core/tensor.h"
#include "engine/cpu/l2_normalize.h"
#include "engine/cpu/pooling.h"
#include "engine/cpu/thread_pool.h"

namespace orchid {
namespace {

class CpuEngine final : public Engine {
 public:
  CpuEngine(std::unique_ptr<Model> model, CpuEngineOptions options)
      : model_(std::move(model)), info_(model_->info()) {
    int threads = options.num_threads;
    if (threads <= 0) threads = int(std::thread::hardware_concurrency());
    if (threads <= 0) threads = 1;
    num_threads_ = threads;
    thread_ = std::thread([this] { Loop(); });
  }

  ~CpuEngine() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

  const ModelInfo& info() const override { return info_; }

  LazyResult Submit(RaggedBatch batch) override {
    auto [result, promise] = LazyResult::Make();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        promise.Set(Status::Unavailable("engine is shutting down"));
        return result;
      }
      queue_.push_back(Job{std::move(batch), std::move(promise)});
    }
    cv_.notify_one();
    return result;
  }

 private:
  struct Job {
    RaggedBatch batch;
    LazyResult::Promise promise;
  };

  void Loop() {
    // The pool lives on the engine thread: it is the pool's only caller.
    ThreadPool pool(num_threads_);
    model_->SetThreadPool(&pool);
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) break;  // stopping, and everything queued has run
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        Result<Embeddings> result = Run(job.batch);
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (queue_.empty()) pool.Park();  // free the cores for whoever answers the request
        }
        job.promise.Set(std::move(result));
      } catch (const std::bad_alloc&) {
        job.promise.Set(Status::ResourceExhausted("out of memory running a batch of " +
                                                  std::to_string(job.batch.num_tokens()) +
                                                  " tokens"));
      }
    }
    model_->SetThreadPool(nullptr);
  }

  Status Validate(const RaggedBatch& batch) const {
    ORCHID_RETURN_IF_ERROR(batch.Validate(info_.vocab_size));
    for (int32_t p : batch.positions) {
      if (p < 0 || p >= info_.max_position_embeddings) {
        return Status::OutOfRange("position " + std::to_string(p) + " is outside [0, " +
                                  std::to_string(info_.max_position_embeddings) +
                                  ") (the model's max_position_embeddings)");
      }
    }
    for (int s = 0; s < batch.num_sequences(); ++s) {
      if (batch.pooling[size_t(s)] == Pooling::kNone) {
        return Status::InvalidArgument("sequence " + std::to_string(s) +
                                       ": pooling \"none\" (per-token output) is not supported");
      }
    }
    return Status::Ok();
  }

  Result<Embeddings> Run(const RaggedBatch& batch) {
    ORCHID_RETURN_IF_ERROR(Validate(batch));
    const int dim = info_.hidden_size;
    Embeddings out;
    out.rows = batch.num_sequences();
    out.dim = info_.output_dim();
    if (out.rows == 0) return out;
    hidden_.Reserve(size_t(batch.num_tokens()) * size_t(dim));
    ORCHID_RETURN_IF_ERROR(model_->Forward(batch, hidden_.data()));
    if (info_.task == ModelTask::kScore) {
      // Scorers: pool, then the model's head; logits are never normalised.
      pooled_.Reserve(size_t(out.rows) * size_t(dim));
      Pool(hidden_.data(), dim, batch.cu_seqlens.data(), out.rows, batch.pooling.data(),
           pooled_.data());
      out.data.resize(size_t(out.rows) * size_t(out.dim));
      ORCHID_RETURN_IF_ERROR(model_->Head(pooled_.data(), out.rows, out.data.data()));
      return out;
    }
    out.data.resize(size_t(out.rows) * size_t(dim));
    Pool(hidden_.data(), dim, batch.cu_seqlens.data(), out.rows, batch.pooling.data(),
         out.data.data());
    L2Normalize(out.data.data(), out.rows, dim, batch.normalize.data());
    return out;
  }

  std::unique_ptr<Model> model_;
  const ModelInfo info_;
  int num_threads_ = 1;
  Buffer<float> hidden_;  // engine thread only
  Buffer<float> pooled_;  // engine thread only (scorers)

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: started after everything above is initialised
};

}  // namespace

std::unique_ptr<Engine> MakeCpuEngine(std::unique_ptr<Model> model, CpuEngineOptions options) {
  if (model == nullptr) return nullptr;
  return std::make_unique<CpuEngine>(std::move(model), options);
}

}  // namespace orchid
