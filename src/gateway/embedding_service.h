// EmbeddingService: turns a parsed embeddings request into rows — checks it against the model
// (served name, vocabulary, maximum length, dimension), tokenizes texts and hands the sequences
// to the EmbedBackend (the in-process scheduler, or gRPC worker replicas), which also applies
// `dimensions`.
//
// Thread safety: Embed() may be called from many threads at once. It tokenizes on the calling
// thread (so call it from a worker pool, not an io thread) and never waits for the engine.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/metrics.h"
#include "description/sentence_transformers.h"
#include "gateway/api_error.h"
#include "gateway/bge_m3.h"
#include "gateway/embed_backend.h"
#include "gateway/embeddings_request.h"
#include "gateway/embeddings_response.h"
#include "gateway/executor.h"
#include "gateway/image_inputs.h"
#include "gateway/late_interaction.h"
#include "tokenizer/tokenizer.h"

namespace orchid {

struct EmbeddingReply {
  std::optional<ApiError> error;  // set → nothing else is
  EmbeddingMatrix embeddings;     // one row per input, in input order
  int64_t prompt_tokens = 0;      // tokens fed to the model, special tokens included
  // Per-token requests (EmbeddingsRequest::per_token): `embeddings` has one row per token, and
  // these many rows belong to each input, in order.
  std::vector<int32_t> token_counts;
  // BGE-M3 per-token requests (bge_m3.h): `embeddings` holds each input's ColBERT vectors (CLS
  // dropped, normalised), and these its dense vector and its lexical weights, from that pass.
  EmbeddingMatrix dense;
  std::vector<LexicalWeights> lexical;
};

// A dual encoder's text rule (ModelInfo::TextInput) on one tokenized text: CLIP's text cut after
// the token it pools at, SigLIP's padded to its fixed length.
void ApplyTextInput(const TextInput& rule, std::vector<int32_t>* ids);

class EmbeddingService {
 public:
  // The tokenizer and backend (and metrics, if given) must outlive the service. `completions`
  // runs the second half of each request (after the engine) off the backend's threads.
  // Requests with many texts are tokenized in up to `parallelism` slices at once, on the
  // calling thread and the completions executor.
  EmbeddingService(const Tokenizer* tokenizer, EmbedBackend* backend,
                   std::string served_model_name, Executor completions,
                   MetricsRegistry* metrics = nullptr, int parallelism = 1);

  // Named prompts (the model's config_sentence_transformers.json) and the server's default
  // prompt text (--default-prompt; overrides the model's default_prompt_name). Call before the
  // first Embed().
  void SetPrompts(EncodeConfig prompts, std::optional<std::string> default_prompt);
  const EncodeConfig& prompts() const { return prompts_; }
  // --auto-truncate: requests that do not say `truncate` get it (else they are refused when an
  // input is over the maximum). Call before the first Embed().
  void set_auto_truncate(bool on) { auto_truncate_ = on; }
  bool auto_truncate() const { return auto_truncate_; }
  // Static embedding models (model2vec, sentence-transformers' StaticEmbedding): a text left
  // with no token (empty, or unknown characters model2vec drops) embeds as a row of zeros, as
  // those libraries answer, instead of a 400; the engine never sees it. Call before the first
  // Embed().
  void set_empty_text_is_zero(bool on) { empty_text_is_zero_ = on; }
  // Dual encoders (CLIP, SigLIP): how images become the vision tower's sequences. Without it
  // (text models) every image input is a 400. Call before the first Embed().
  void SetImagePreparer(ImagePreparer preparer) { images_.emplace(std::move(preparer)); }
  bool takes_images() const { return images_.has_value(); }

  const std::string& model_name() const { return model_name_; }
  int dim() const { return dim_; }
  bool healthy() const { return backend_->healthy(); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  int max_seq_length() const { return max_seq_length_; }
  // Rerankers answer the rerank routes only; the router refuses embeddings for them.
  bool is_scorer() const { return backend_->model_info().task == ModelTask::kScore; }
  NativeQuantization native_quantization() const {
    return backend_->model_info().native_quantization;
  }
  const ModelInfo& model_info() const { return backend_->model_info(); }
  Pooling pooling() const { return pooling_; }
  // Late interaction (ColBERT): per-token vectors only (EmbeddingsRequest::per_token), MaxSim.
  bool late_interaction() const { return backend_->model_info().late_interaction.enabled; }
  // Why the model's late-interaction settings cannot be served with its tokenizer (a prefix or
  // mask token it lacks); Ok otherwise. Serving refuses to start on an error.
  const Status& late_interaction_status() const { return late_status_; }
  bool normalize() const { return normalize_; }
  // BGE-M3: dense on the pooled routes; per-token requests give all three outputs
  // (EmbeddingReply::dense, ::lexical and the ColBERT vectors).
  bool bge_m3() const { return backend_->model_info().bge_m3; }

  // Calls `done` exactly once: inline when the request is rejected before queueing, otherwise
  // as a task on the completions executor.
  void Embed(EmbeddingsRequest request, std::function<void(EmbeddingReply)> done);

 private:
  // The task adapter the request runs with (EmbeddingsRequest::task): *adapter 1-based into
  // ModelInfo::tasks, 0 = none; *task its name. A task the model lacks is a 400 naming those
  // it has.
  std::optional<ApiError> SelectTask(const EmbeddingsRequest& request, int* adapter,
                                     std::string* task) const;
  // The text to put before each input of the request, or the error. With a task (`task`
  // non-empty): the prompt of that name, unless prompt_name names another.
  std::optional<ApiError> SelectPrompt(const EmbeddingsRequest& request, const std::string& task,
                                       std::string* prefix) const;
  // *pool_skip: the prompt's token count when the model's pooling leaves the prompt out
  // (include_prompt: false), else 0.
  std::optional<ApiError> Tokenize(EmbeddingsRequest* request, const std::string& task,
                                   std::vector<std::vector<int32_t>>* sequences, int64_t* tokens,
                                   int* pool_skip) const;

  // Late interaction: each text encoded as PyLate does (late_interaction.h) into job's sequences
  // and attended lengths; *keep: per sequence, which token vectors the reply keeps.
  std::optional<ApiError> TokenizeLate(const EmbeddingsRequest& request, EmbedRequest* job,
                                       int64_t* tokens,
                                       std::vector<std::vector<uint8_t>>* keep) const;

  // BGE-M3: the pass's rows (per-token [colbert | sparse logit], pooled dense) into the reply's
  // three outputs; `ids` are the sequences' token ids.
  std::optional<ApiError> SplitBgeM3(Embeddings rows, const std::vector<std::vector<int32_t>>& ids,
                                     EmbeddingReply* reply) const;

  // A request with images (EmbeddingsRequest::images, data:image/ strings on a model that takes
  // images, or every input under modality "image"): the images through the vision tower, the
  // texts (if any) through Embed() as a request of their own, the rows merged in input order.
  void EmbedWithImages(EmbeddingsRequest request, int dims,
                       std::function<void(EmbeddingReply)> done);

  static constexpr size_t kMinInputsPerSlice = 16;
  std::optional<ImagePreparer> images_;
  std::optional<LateInteractionEncoder> late_;
  std::vector<int32_t> m3_unused_;  // BGE-M3: ids left out of lexical weights
  Status late_status_;
  EncodeConfig prompts_;
  std::optional<std::string> default_prompt_;
  const Tokenizer* tokenizer_;
  EmbedBackend* backend_;
  int parallelism_ = 1;
  Histogram* tokenize_seconds_ = nullptr;
  std::string model_name_;
  Executor completions_;
  int dim_;
  int max_seq_length_;
  int32_t vocab_size_;
  Pooling pooling_;
  bool normalize_;
  bool auto_truncate_ = false;
  bool empty_text_is_zero_ = false;
};

}  // namespace orchid
