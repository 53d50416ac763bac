#include "runtime/cpu_engine.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/thread_pool.h"
#include "description/registry.h"
#include "families/family.h"
#include "runtime/int8_cache.h"
#include "runtime/int8_samples.h"

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
    // BGE-M3 keeps them: its dense vector comes from the same pass as its token rows.
    RaggedBatch pooled = batch;
    for (size_t s = 0; s < pooled.pooling.size(); ++s) {
      if (pooled.pooling[s] == Pooling::kNone) {
        pooled.pooling[s] = info_.bge_m3 ? info_.default_pooling : Pooling::kMean;
        pooled.normalize[s] = info_.bge_m3 && info_.default_normalize ? 1 : 0;
      }
    }
    const size_t width = size_t(info_.token_dim());
    std::vector<float> hidden(size_t(batch.num_tokens()) * width);
    ORCHID_RETURN_IF_ERROR(model_->RunWithHidden(pooled, pool, out.data.data(), hidden.data()));
    out.token_dim = info_.token_dim();
    out.token_offsets.assign(1, 0);
    for (int s = 0; s < out.rows; ++s) {
      int32_t end = out.token_offsets.back();
      if (batch.pooling[size_t(s)] == Pooling::kNone) {
        const float* first = hidden.data() + size_t(batch.cu_seqlens[size_t(s)]) * width;
        out.tokens.insert(out.tokens.end(), first, first + size_t(batch.seq_len(s)) * width);
        if (!info_.bge_m3) {
          std::fill_n(out.data.data() + size_t(s) * size_t(out.dim), size_t(out.dim), 0.0f);
        }
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
  ModelInfo* mutable_info() { return &info_; }
  CpuBackend* backend() { return backend_.get(); }
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
                size_t(batch.num_tokens()) * size_t(info_.token_dim()) * sizeof(float));
    return Status::Ok();
  }
  Status Hidden(const RaggedBatch& batch, ThreadPool* pool, float* hidden) override {
    ORCHID_RETURN_IF_ERROR(batch.Validate(info_));
    if (batch.num_sequences() == 0) return Status::Ok();
    backend_->SetThreadPool(pool);
    backend_->Begin(batch, /*allow_prune=*/false);
    ORCHID_RETURN_IF_ERROR(family_->Forward(*backend_));
    std::memcpy(hidden, backend_->data(family_->hidden()),
                size_t(batch.num_tokens()) * size_t(info_.token_dim()) * sizeof(float));
    return Status::Ok();
  }

 private:
  ModelInfo info_;
  std::unique_ptr<CpuBackend> backend_;
  std::unique_ptr<Family> family_;
};

// What the int8 gate compares for each sequence of `batch`: the output row (embedders), or
// the last hidden states of all its tokens (scorers: one or a few logits say little of the
// body's fidelity) as one vector per sequence; late-interaction (ColBERT) models: each token's
// projected vector on its own, the vectors their users get (each normalised alone, so each is
// compared alone); BGE-M3: its dense row per sequence, then each token's [ColBERT | sparse
// logit] row, from one pass.
Status GateOutputs(FamilyModel* model, const RaggedBatch& batch, ThreadPool* pool,
                   std::vector<std::vector<float>>* rows) {
  const ModelInfo& info = model->info();
  rows->assign(size_t(batch.num_sequences()), {});
  if (info.bge_m3) {
    const size_t dim = size_t(info.output_dim()), width = size_t(info.token_dim());
    std::vector<float> dense(size_t(batch.num_sequences()) * dim);
    std::vector<float> tokens(size_t(batch.num_tokens()) * width);
    ORCHID_RETURN_IF_ERROR(model->RunWithHidden(batch, pool, dense.data(), tokens.data()));
    rows->clear();
    for (size_t s = 0; s < size_t(batch.num_sequences()); ++s) {
      rows->emplace_back(dense.begin() + ptrdiff_t(s * dim),
                         dense.begin() + ptrdiff_t((s + 1) * dim));
    }
    for (size_t t = 0; t < size_t(batch.num_tokens()); ++t) {
      rows->emplace_back(tokens.begin() + ptrdiff_t(t * width),
                         tokens.begin() + ptrdiff_t((t + 1) * width));
    }
    return Status::Ok();
  }
  if (info.late_interaction.enabled) {
    const size_t width = size_t(info.token_dim());
    std::vector<float> vectors(size_t(batch.num_tokens()) * width);
    ORCHID_RETURN_IF_ERROR(model->Hidden(batch, pool, vectors.data()));
    rows->assign(size_t(batch.num_tokens()), {});
    for (size_t t = 0; t < rows->size(); ++t) {
      (*rows)[t].assign(vectors.begin() + ptrdiff_t(t * width),
                        vectors.begin() + ptrdiff_t((t + 1) * width));
    }
    return Status::Ok();
  }
  if (info.task == ModelTask::kScore) {
    const size_t width = size_t(info.hidden_size);
    std::vector<float> hidden(size_t(batch.num_tokens()) * width);
    ORCHID_RETURN_IF_ERROR(model->Hidden(batch, pool, hidden.data()));
    for (int s = 0; s < batch.num_sequences(); ++s) {
      (*rows)[size_t(s)].assign(
          hidden.begin() + ptrdiff_t(size_t(batch.cu_seqlens[size_t(s)]) * width),
          hidden.begin() + ptrdiff_t(size_t(batch.cu_seqlens[size_t(s) + 1]) * width));
    }
    return Status::Ok();
  }
  const size_t width = size_t(info.output_dim());
  std::vector<float> out(size_t(batch.num_sequences()) * width);
  ORCHID_RETURN_IF_ERROR(model->Run(batch, pool, out.data(), true));
  for (int s = 0; s < batch.num_sequences(); ++s) {
    (*rows)[size_t(s)].assign(out.begin() + ptrdiff_t(size_t(s) * width),
                              out.begin() + ptrdiff_t(size_t(s + 1) * width));
  }
  return Status::Ok();
}

double Cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double(a[i]) * double(b[i]);
    aa += double(a[i]) * double(a[i]);
    bb += double(b[i]) * double(b[i]);
  }
  if (aa == 0 && bb == 0) return 1.0;
  if (aa == 0 || bb == 0) return 0.0;
  return ab / std::sqrt(aa * bb);
}

// The start-up check's verdict on f (cpu_engine.h, Int8Options).
Status Int8Verdict(const ModelInfo::Fidelity& f, const Int8Options& o) {
  if ((f.mean_cosine < o.min_mean_cosine || f.min_cosine < o.min_cosine) && !o.serve_anyway) {
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "--dtype int8 is not faithful enough for this model: against float32 on %d "
                  "built-in texts, mean cosine %.6f (required %.6f) and minimum %.6f (required "
                  "%.6f). Serve it in float32 or bfloat16, lower --int8-min-mean-cosine / "
                  "--int8-min-cosine, or pass --int8-serve-anyway",
                  f.samples, f.mean_cosine, o.min_mean_cosine, f.min_cosine, o.min_cosine);
    return Status::FailedPrecondition(buf);
  }
  return Status::Ok();
}

// --dtype int8: calibrates, quantizes and checks the model (cpu_engine.h, Int8Options), or
// reads the check's results back from o.cache_dir (int8_cache.h).
Status QuantizeInt8(FamilyModel* model, const std::string& dir, const Int8Options& o,
                    int num_threads) {
  if (num_threads <= 0) num_threads = std::max(1, int(std::thread::hardware_concurrency()));
  // One column slice per engine thread (int8_linear.h: how a short query shares out).
  const int slices = num_threads;
  if (o.tokenizer == nullptr) {
    model->backend()->FinishInt8(0.5f, slices);
    return Status::Ok();
  }
  const ModelInfo& info = model->info();
  size_t max_length = size_t(std::max(1, o.max_length));
  const int limit = info.max_seq_length > 0 ? info.max_seq_length : info.max_position_embeddings;
  if (limit > 0) max_length = std::min(max_length, size_t(limit));
  std::string cache_key, cache_path, not_kept;
  if (!o.cache_dir.empty()) {
    if (auto key = Int8CacheKey(dir, int(max_length)); key.ok()) {
      cache_key = std::move(*key);
      cache_path = Int8CachePath(o.cache_dir, cache_key);
      if (std::optional<Int8CheckRecord> kept = LoadInt8Check(cache_path, cache_key)) {
        if (model->backend()->SetInt8InputRanges(kept->input_ranges).ok()) {
          model->backend()->StopRecording();
          model->backend()->FinishInt8(0.5f, slices);
          ModelInfo::Fidelity f;
          f.samples = kept->samples;
          f.mean_cosine = kept->mean_cosine;
          f.min_cosine = kept->min_cosine;
          f.source = "kept from an earlier start of this binary on these files: " + cache_path;
          model->mutable_info()->fidelity = f;
          return Int8Verdict(f, o);
        }
      }
    } else {
      not_kept = key.status().message();
    }
  }
  ORCHID_ASSIGN_OR_RETURN(
      RaggedBatch calibration,
      EncodeSampleBatch(*o.tokenizer, Int8CalibrationTexts(), max_length, info));
  ORCHID_ASSIGN_OR_RETURN(RaggedBatch gate,
                          EncodeSampleBatch(*o.tokenizer, Int8GateTexts(), max_length, info));
  ThreadPool pool(num_threads);
  if (calibration.num_sequences() > 0) {
    std::vector<float> out(size_t(calibration.num_sequences()) * size_t(info.output_dim()));
    // Unpruned, so that the last layer's every row is measured.
    ORCHID_RETURN_IF_ERROR(model->Run(calibration, &pool, out.data(), false));
  }
  model->backend()->StopRecording();
  Int8CheckRecord record;
  if (!cache_path.empty()) record.input_ranges = model->backend()->Int8InputRanges();
  std::vector<std::vector<float>> reference, quantized;
  if (gate.num_sequences() > 0) ORCHID_RETURN_IF_ERROR(GateOutputs(model, gate, &pool, &reference));
  model->backend()->FinishInt8(0.5f, slices);
  if (gate.num_sequences() == 0) return Status::Ok();
  ORCHID_RETURN_IF_ERROR(GateOutputs(model, gate, &pool, &quantized));
  ModelInfo::Fidelity f;
  f.samples = gate.num_sequences();
  f.min_cosine = 1.0;
  double sum = 0;
  for (size_t s = 0; s < reference.size(); ++s) {
    const double c = Cosine(reference[s], quantized[s]);
    sum += c;
    f.min_cosine = std::min(f.min_cosine, c);
  }
  f.mean_cosine = sum / double(reference.size());
  f.source = "measured at this start";
  if (!cache_path.empty()) {
    record.samples = f.samples;
    record.mean_cosine = f.mean_cosine;
    record.min_cosine = f.min_cosine;
    const Status kept = StoreInt8Check(cache_path, cache_key, record);
    f.source +=
        kept.ok() ? "; kept for the next in " + cache_path : "; not kept: " + kept.message();
  } else if (!not_kept.empty()) {
    f.source += "; not kept: " + not_kept;
  }
  model->mutable_info()->fidelity = f;
  return Int8Verdict(f, o);
}

}  // namespace

Result<std::unique_ptr<Model>> LoadModel(const std::string& dir, const LoadOptions& options) {
  ORCHID_ASSIGN_OR_RETURN(ModelSpec spec, DescribeModel(dir));
  ORCHID_RETURN_IF_ERROR(CheckBackend(spec, BackendKind::kCpu));
  if (options.linear_weights == WeightType::kInt8 && spec.info.image.enabled()) {
    // Its calibration and fidelity check run texts; the vision tower would be quantized blind.
    return Status::InvalidArgument("--dtype int8: " + dir + " (" + spec.info.architecture +
                                   ") has a vision tower, which the int8 calibration (texts) "
                                   "does not see; serve it with --dtype float32 or bfloat16");
  }
  auto backend = std::make_unique<CpuBackend>(options.linear_weights);
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<Family> family, LoadFamily(spec, *backend));
  spec.info.dtype = options.linear_weights == WeightType::kFloat32Blas
                        ? "float32"
                        : WeightTypeName(options.linear_weights);
  auto model = std::make_unique<FamilyModel>(spec.info, std::move(backend), std::move(family));
  if (options.linear_weights == WeightType::kInt8) {
    if (model->backend()->Int8InputRanges().empty()) {
      return Status::InvalidArgument("--dtype int8: " + dir + " has no linear layer to quantize (" +
                                     spec.info.architecture +
                                     "): int8 would change nothing; serve it without --dtype int8");
    }
    ORCHID_RETURN_IF_ERROR(QuantizeInt8(model.get(), dir, options.int8, options.num_threads));
  }
#ifdef __GLIBC__
  // Loading frees much of what it allocated (the checkpoint's tensors, int8's fp32 weights and
  // calibration passes) in the middle of the heap, where glibc keeps it; give it back to the OS.
  malloc_trim(0);
#endif
  return std::unique_ptr<Model>(std::move(model));
}

std::unique_ptr<Engine> MakeCpuEngine(std::unique_ptr<Model> model, CpuEngineOptions options) {
  if (model == nullptr) return nullptr;
  return std::make_unique<CpuEngine>(std::move(model), options);
}

}  // namespace orchid
