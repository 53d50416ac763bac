// The CPU engine: a model family (src/families) on the CPU backend (src/backends/cpu), run on
// the engine's own thread.
//
// LoadModel describes DIR through the registry, builds a CpuBackend with the chosen weight
// type and loads the family's weights onto it. MakeCpuEngine then runs that Model: Submit()
// queues the batch and returns a LazyResult at once; the engine thread validates the batch
// (RaggedBatch::Validate against the model's description), runs the family's forward pass
// (embeddings, layers, pooling, L2 normalisation where asked, the head of a scorer) and
// completes the result. Batches run in submission order. Destruction finishes queued
// batches, then joins the thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/kernel_report.h"
#include "backends/cpu/linear.h"
#include "core/status.h"
#include "engine/engine.h"

namespace orchid {

class ThreadPool;  // backends/cpu/thread_pool.h
class Tokenizer;   // tokenizer/tokenizer.h

// What the CPU engine runs: one loaded model. Run() is called from one thread at a time.
class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelInfo& info() const = 0;
  // out: [batch.num_sequences(), info().output_dim()] row-major. The batch is valid
  // (RaggedBatch::Validate(info())) and not empty. pool: the threads the ops may use (null:
  // the calling thread only). prune: the last layer may compute only the rows pooling reads
  // (the engine always allows it; false is for tests that compare the two).
  virtual Status Run(const RaggedBatch& batch, ThreadPool* pool, float* out, bool prune) = 0;
  // The last layer's per-token hidden states, hidden: [batch.num_tokens(), token_dim()], every
  // row computed (no pruning; a late-interaction model's: each token's projected vector, not
  // normalised). Validates the batch first. For tests and per-token output.
  virtual Status Hidden(const RaggedBatch& batch, ThreadPool* pool, float* hidden) = 0;
  // Run() (not pruned) and, into hidden ([batch.num_tokens(), token_dim()]), every token's
  // per-token output from the same pass. The default makes two passes.
  virtual Status RunWithHidden(const RaggedBatch& batch, ThreadPool* pool, float* out,
                               float* hidden) {
    ORCHID_RETURN_IF_ERROR(Run(batch, pool, out, false));
    return Hidden(batch, pool, hidden);
  }
};

// --dtype int8 at load. The model first runs in float32 on the calibration texts
// (int8_samples.h), which measures each int8 layer's input range per channel (the SmoothQuant
// factors, cpu_backend.h); then on the gate texts in float32, is quantized, and runs them again
// in int8. The cosine between the two outputs of each text (embedders: the embedding; scorers:
// the last hidden states of all its tokens, which the head reads; late-interaction models: each
// of its token vectors alone, the mean and minimum over all of them) is ModelInfo::fidelity.
// Below min_mean_cosine or min_cosine, LoadModel refuses the model (FailedPrecondition, naming
// the numbers) unless serve_anyway.
struct Int8Options {
  // Encodes the texts (the model's own tokenizer). Null: no calibration (plain per-channel
  // weights, no smoothing) and no gate; for tests and benchmarks that measure it themselves.
  const Tokenizer* tokenizer = nullptr;
  double min_mean_cosine = 0.999;
  double min_cosine = 0.995;
  bool serve_anyway = false;
  // Tokens per text at most (and the model's own limit).
  int max_length = 256;
  // Where the check's results are kept between runs (runtime/int8_cache.h: read back when the
  // binary, the model's files and the CPU path are the same); empty: the check runs every time.
  std::string cache_dir;
};

struct LoadOptions {
  // How the transformer's linear layers are stored and multiplied (linear.h); heads stay fp32.
  WeightType linear_weights = WeightType::kFloat32;
  Int8Options int8;     // kInt8 only
  int num_threads = 0;  // threads for what runs at load (the int8 calibration); 0 = all cores
};

// The model in DIR (config.json, model.safetensors, sentence-transformers files) on the CPU
// backend. Errors name the file and what is wrong (registry.h, family.h).
Result<std::unique_ptr<Model>> LoadModel(const std::string& dir, const LoadOptions& options = {});

struct CpuEngineOptions {
  int num_threads = 0;  // threads for BLAS and ops; 0 = all cores
};

std::unique_ptr<Engine> MakeCpuEngine(std::unique_ptr<Model> model, CpuEngineOptions options = {});

// What the CPU engine's kernels are for `type`, for the log (backends/cpu/kernel_report.h):
// before the model loads (loaded = false), and the choices made while it loaded (true).
inline std::vector<KernelNote> CpuKernelNotes(WeightType type, bool loaded) {
  return loaded ? DescribeCpuKernelChoices(type) : DescribeCpuKernels(type);
}

}  // namespace orchid
