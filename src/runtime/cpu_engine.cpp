#include "runtime/cpu_engine.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/thread_pool.h"
#include "description/registry.h"
#include "families/family.h"

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
        Result<Embeddings> result = Run(job.batch, &pool);
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
  }

  Result<Embeddings> Run(const RaggedBatch& batch, ThreadPool* pool) {
    ORCHID_RETURN_IF_ERROR(batch.Validate(info_));
    Embeddings out;
    out.rows = batch.num_sequences();
    out.dim = info_.output_dim();
    if (out.rows == 0) return out;
    out.data.resize(size_t(out.rows) * size_t(out.dim));
    if (std::find(batch.pooling.begin(), batch.pooling.end(), Pooling::kNone) ==
        batch.pooling.end()) {
      ORCHID_RETURN_IF_ERROR(model_->Run(batch, pool, out.data.data(), true));
      return out;
    }
    // Per-token output for the kNone sequences (the others pooled as usual, in the same pass):
    // every token's last hidden state; their pooled rows (mean, unused) are zeroed.
    if (info_.task != ModelTask::kEmbed || info_.sparse) {
      return Status::InvalidArgument(
          "per-token output (pooling \"none\") is for dense embedding models only");
    }
    RaggedBatch pooled = batch;
    for (size_t s = 0; s < pooled.pooling.size(); ++s) {
      if (pooled.pooling[s] == Pooling::kNone) {
        pooled.pooling[s] = Pooling::kMean;
        pooled.normalize[s] = 0;
      }
    }
    const size_t width = size_t(info_.hidden_size);
    std::vector<float> hidden(size_t(batch.num_tokens()) * width);
    ORCHID_RETURN_IF_ERROR(model_->RunWithHidden(pooled, pool, out.data.data(), hidden.data()));
    out.token_dim = info_.hidden_size;
    out.token_offsets.assign(1, 0);
    for (int s = 0; s < out.rows; ++s) {
      int32_t end = out.token_offsets.back();
      if (batch.pooling[size_t(s)] == Pooling::kNone) {
        const float* first = hidden.data() + size_t(batch.cu_seqlens[size_t(s)]) * width;
        out.tokens.insert(out.tokens.end(), first, first + size_t(batch.seq_len(s)) * width);
        std::fill_n(out.data.data() + size_t(s) * size_t(out.dim), size_t(out.dim), 0.0f);
        end += batch.seq_len(s);
      }
      out.token_offsets.push_back(end);
    }
    return out;
  }

  std::unique_ptr<Model> model_;
  const ModelInfo info_;
  int num_threads_ = 1;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: started after everything above is initialised
};

// A family on its CPU backend.
class FamilyModel final : public Model {
 public:
  FamilyModel(ModelInfo info, std::unique_ptr<CpuBackend> backend, std::unique_ptr<Family> family)
      : info_(std::move(info)), backend_(std::move(backend)), family_(std::move(family)) {}
  const ModelInfo& info() const override { return info_; }
  Status Run(const RaggedBatch& batch, ThreadPool* pool, float* out, bool prune) override {
    backend_->SetThreadPool(pool);
    backend_->Begin(batch, prune);
    ORCHID_RETURN_IF_ERROR(family_->Forward(*backend_));
    std::memcpy(out, backend_->data(family_->output()),
                size_t(batch.num_sequences()) * size_t(info_.output_dim()) * sizeof(float));
    return Status::Ok();
  }
  Status RunWithHidden(const RaggedBatch& batch, ThreadPool* pool, float* out,
                       float* hidden) override {
    ORCHID_RETURN_IF_ERROR(Run(batch, pool, out, /*prune=*/false));
    std::memcpy(hidden, backend_->data(family_->hidden()),
                size_t(batch.num_tokens()) * size_t(info_.hidden_size) * sizeof(float));
    return Status::Ok();
  }
  Status Hidden(const RaggedBatch& batch, ThreadPool* pool, float* hidden) override {
    ORCHID_RETURN_IF_ERROR(batch.Validate(info_));
    if (batch.num_sequences() == 0) return Status::Ok();
    backend_->SetThreadPool(pool);
    backend_->Begin(batch, /*allow_prune=*/false);
    ORCHID_RETURN_IF_ERROR(family_->Forward(*backend_));
    std::memcpy(hidden, backend_->data(family_->hidden()),
                size_t(batch.num_tokens()) * size_t(info_.hidden_size) * sizeof(float));
    return Status::Ok();
  }

 private:
  const ModelInfo info_;
  std::unique_ptr<CpuBackend> backend_;
  std::unique_ptr<Family> family_;
};

}  // namespace

Result<std::unique_ptr<Model>> LoadModel(const std::string& dir, const LoadOptions& options) {
  ORCHID_ASSIGN_OR_RETURN(ModelSpec spec, DescribeModel(dir));
  ORCHID_RETURN_IF_ERROR(CheckBackend(spec, BackendKind::kCpu));
  auto backend = std::make_unique<CpuBackend>(options.linear_weights);
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<Family> family, LoadFamily(spec, *backend));
  return std::unique_ptr<Model>(
      std::make_unique<FamilyModel>(spec.info, std::move(backend), std::move(family)));
}

std::unique_ptr<Engine> MakeCpuEngine(std::unique_ptr<Model> model, CpuEngineOptions options) {
  if (model == nullptr) return nullptr;
  return std::make_unique<CpuEngine>(std::move(model), options);
}

}  // namespace orchid
