// ScoreService: turns a parsed scoring (rerank) request into one relevance score per
// (query, document) pair for a scorer model (ModelInfo::task == kScore) — builds each pair's
// input sequence as the model expects it (ModelInfo::pair_format), hands the sequences to the
// EmbedBackend (one logit row per sequence) and applies the model's activation.
//
//   kTokenizerPair      the tokenizer's pair template ([CLS] q [SEP] d [SEP]) with token type
//                       ids; truncation longest_first to the model's maximum, as TEI and
//                       sentence-transformers' CrossEncoder do.
//   kQwen3RerankerChat  Qwen3-Reranker's official usage: prefix tokens + the tokens of
//                       "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}" +
//                       suffix tokens, the three tokenized separately (prefix and suffix without
//                       special tokens); truncation cuts only the middle part, so the chat
//                       template around it survives.
//
// Long documents (ScoreRequest::max_chunks_per_doc, or set_max_chunks_per_doc): a pair over the
// window is scored as up to that many (query, chunk) pairs, the chunks of document_chunks.h, each
// encoded as the chunk's text sent as a document of its own would be; the document's score is
// its best chunk's. A pair that fits is scored as without chunking; one whose query leaves no
// room for a chunk is cut or refused as without chunking.
//
// Scores: sigmoid(logit) (or the logit itself for ScoreActivation::kIdentity models), the raw
// logit when the request asks for raw_scores. Predict() classifies texts or pairs with every
// label of a sequence-classification model (TEI's /predict).
//
// Thread safety: Score() may be called from many threads at once. It tokenizes on the calling
// thread (call it from a worker pool, not an io thread) and never waits for the engine.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/api_error.h"
#include "gateway/embed_backend.h"
#include "gateway/executor.h"
#include "gateway/score_request.h"
#include "tokenizer/tokenizer.h"

namespace orchid {

struct ScoreReply {
  std::optional<ApiError> error;  // set → nothing else is
  std::vector<float> scores;      // one per pair, in request order
  std::vector<ChunkHit> chunks;   // one per pair when the request was chunked, else empty
  int64_t tokens = 0;             // tokens fed to the model, special tokens included
};

struct PredictReply {
  std::optional<ApiError> error;  // set → nothing else is
  std::vector<float> scores;      // num_labels per input, in input then label order
  int64_t tokens = 0;
};

// Qwen3-Reranker's chat template (its model card's usage code).
inline constexpr const char* kQwen3RerankerPrefix =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
    "and the Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n"
    "<|im_start|>user\n";
inline constexpr const char* kQwen3RerankerSuffix =
    "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
inline constexpr const char* kQwen3RerankerDefaultInstruction =
    "Given a web search query, retrieve relevant passages that answer the query";

class ScoreService {
 public:
  // The tokenizer and backend must outlive the service. `completions` runs the second half of
  // each request (after the engine) off the backend's threads. Requests with many pairs are
  // tokenized in up to `parallelism` slices at once, on the calling thread and `completions`.
  ScoreService(const Tokenizer* tokenizer, EmbedBackend* backend, std::string served_model_name,
               Executor completions, int parallelism = 1);

  const std::string& model_name() const { return model_name_; }
  // --auto-truncate: requests that do not say `truncate` get it. Call before the first request.
  void set_auto_truncate(bool on) { auto_truncate_ = on; }
  // --max-chunks-per-doc: what requests that do not say max_chunks_per_doc get (0: no chunking).
  // Call before the first request.
  void set_max_chunks_per_doc(int64_t n) { max_chunks_per_doc_ = n; }
  // False for embedding models: every request is then refused with a 400 naming the model.
  bool is_scorer() const;

  // Calls `done` exactly once: inline when the request is refused before queueing, otherwise
  // as a task on the completions executor.
  void Score(ScoreRequest request, std::function<void(ScoreReply)> done);

  // /predict: every label's probability (or logit, with raw_scores) for each input — a text, or
  // a pair with the tokenizer's pair template. Probabilities: a one-label model's own
  // activation (as Score), a sigmoid per label when the labels are independent
  // (multi_label_classification), else a softmax. Refuses embedders and Qwen3-Reranker. Calls
  // `done` exactly once, as Score does.
  void Predict(PredictRequest request, std::function<void(PredictReply)> done);

  // The token ids (and type ids; empty = all zero) of pair i as the model will see it, or the
  // error (its param names the document, e.g. `texts[3]`). Exposed for tests.
  std::optional<ApiError> EncodePair(const ScoreRequest& request, size_t i, Encoding* out) const;

  // Pair i as the sequences chunked scoring feeds the model: one per chunk of its document (the
  // document itself when the pair fits), with each chunk's bytes [begin, end) in the document.
  struct DocumentChunks {
    std::vector<Encoding> encodings;
    std::vector<std::pair<size_t, size_t>> bytes;
  };
  std::optional<ApiError> EncodeChunks(const ScoreRequest& request, size_t i, size_t max_chunks,
                                       DocumentChunks* out) const;

 private:
  // Pairs are up to a model's whole input (hundreds of tokens): a few make a slice worth it.
  static constexpr size_t kMinPairsPerSlice = 4;
  using EncodeFn = std::function<std::optional<ApiError>(size_t i, Encoding* out)>;
  using RowsDone =
      std::function<void(std::optional<ApiError> error, Embeddings logits, int64_t tokens)>;
  // (query, document) as the model's input sequence (its pair format), cut to the window when
  // `truncate`; no length check.
  Status EncodeSequence(const ScoreRequest& request, std::string_view query,
                        std::string_view document, bool truncate, Encoding* out) const;
  void ScoreChunked(ScoreRequest request, size_t max_chunks, std::function<void(ScoreReply)> done);
  // Predict's input i as the model sees it, or the error (its param names inputs[i]).
  std::optional<ApiError> EncodeInput(const PredictRequest& request, size_t i, Encoding* out) const;
  // Encodes inputs [0, n) with `encode` (in up to parallelism_ slices), runs them through the
  // backend as one job, and calls `done` with the [n, num_labels] logit rows or the error:
  // inline when refused before queueing, else on the completions executor.
  void Run(size_t n, const EncodeFn& encode, Scheduling scheduling, RowsDone done);
  const Tokenizer* tokenizer_;
  EmbedBackend* backend_;
  std::string model_name_;
  Executor completions_;
  int parallelism_ = 1;
  int max_seq_length_ = 0;
  bool auto_truncate_ = false;
  int64_t max_chunks_per_doc_ = 0;
  // Qwen3-Reranker: the template's fixed token ids (empty for other formats).
  std::vector<int32_t> prefix_ids_;
  std::vector<int32_t> suffix_ids_;
};

}  // namespace orchid
