// Engine: runs forward passes on ragged batches. It knows nothing of HTTP, gRPC or text.
//
// submit() returns at once with a LazyResult; the work happens on the engine's own thread(s)
// (CPU) or stream (CUDA). Batches submitted by one caller complete in submission order.
// Thread safety: submit() and info() may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/lazy_result.h"
#include "engine/ragged_batch.h"

namespace orchid {

class ThreadPool;  // engine/cpu/thread_pool.h

// What a model's output rows are.
enum class ModelTask : uint8_t {
  kEmbed,  // one pooled (optionally normalised) vector of hidden_size values per sequence
  kScore,  // rerankers / cross-encoders: Model::Head maps the pooled vector to num_labels logits
};

// How a scorer's logit becomes the relevance score the APIs return when raw scores are not
// asked for (sentence-transformers' CrossEncoder default for one label: sigmoid).
enum class ScoreActivation : uint8_t { kSigmoid, kIdentity };

// How a scorer's (query, document) pair becomes one input sequence.
enum class PairFormat : uint8_t {
  kTokenizerPair,     // the tokenizer's pair template with token types (BERT / XLM-R
                      // cross-encoders: [CLS] q [SEP] d [SEP])
  kQwen3RerankerChat, // Qwen3-Reranker's chat template around <Instruct>, <Query>, <Document>,
                      // one single sequence; the model's head gives logit(yes) - logit(no)
};

// Output encodings a model asks for natively (pplx-embed: int8 = round(tanh(x) * 127)).
enum class NativeQuantization : uint8_t { kNone, kTanhInt8 };

struct ModelInfo {
  std::string architecture;       // e.g. "BertModel", "XLMRobertaModel", "Qwen3Model"
  int32_t vocab_size = 0;
  // Token types the model embeds (BERT: 2). 1 for models without them: type ids must be 0.
  int type_vocab_size = 1;
  int hidden_size = 0;            // width of the transformer and of the pooled vector
  int max_position_embeddings = 0;
  int max_seq_length = 0;         // the longest input the model accepts (sentence-transformers)
  Pooling default_pooling = Pooling::kMean;
  bool default_normalize = false;  // sentence-transformers' 2_Normalize module present
  bool causal = false;             // decoder attention (each token sees only earlier ones)
  ModelTask task = ModelTask::kEmbed;
  int num_labels = 0;              // scorers: logits per sequence (1 for rerankers)
  // Scorers: each logit's name (config.json's id2label; empty: LABEL_0, LABEL_1, ...), and
  // whether the labels are independent (problem_type multi_label_classification: a sigmoid per
  // label in /predict) rather than exclusive classes (a softmax over them).
  std::vector<std::string> labels;
  bool multi_label = false;
  ScoreActivation score_activation = ScoreActivation::kSigmoid;
  PairFormat pair_format = PairFormat::kTokenizerPair;
  NativeQuantization native_quantization = NativeQuantization::kNone;

  // Width of the rows the engine returns: hidden_size for embedders, num_labels for scorers.
  int output_dim() const { return task == ModelTask::kScore ? num_labels : hidden_size; }
  // Label i's name: labels[i], or transformers' default "LABEL_<i>".
  std::string label(int i) const {
    return size_t(i) < labels.size() ? labels[size_t(i)] : "LABEL_" + std::to_string(i);
  }
};

// A model's forward pass, as the engine sees it: token ids in, one hidden vector per token out.
// Implementations live in src/models/ and are built from the ops in src/engine/cpu/.
// Forward() is called from one engine thread at a time.
class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelInfo& info() const = 0;
  // hidden: output, [batch.num_tokens(), info().hidden_size], row-major. Only the rows the
  // batch's pooling reads are sure to hold the last layer's states (PooledRows, in
  // engine/cpu/pooling.h): with CLS or last-token pooling a model may skip the others in its
  // last layer, and they then hold an earlier layer's.
  virtual Status Forward(const RaggedBatch& batch, float* hidden) = 0;
  // Scorers (info().task == kScore): maps pooled vectors [rows, hidden_size] to logits
  // [rows, num_labels] (a classifier head; Qwen3-Reranker's yes-minus-no row). The engine calls
  // it after pooling, on the engine thread, and does not L2-normalise scorer outputs.
  virtual Status Head(const float* pooled, int rows, float* logits) {
    (void)pooled;
    (void)rows;
    (void)logits;
    return Status::Unimplemented("this model has no scoring head");
  }
  // CPU models: the threads Forward() may use (null: the calling thread only). The CPU engine
  // sets it before the first Forward() and keeps the pool alive while the model runs.
  virtual void SetThreadPool(ThreadPool* pool) { (void)pool; }
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual const ModelInfo& info() const = 0;
  // Queues the batch and returns immediately. Invalid batches complete with an error.
  virtual LazyResult Submit(RaggedBatch batch) = 0;
};

}  // namespace orchid
