// The scoring (rerank) requests the HTTP API accepts, parsed from JSON into one form, and the
// three reply shapes written from one list of scores:
//
//   POST /rerank      text-embeddings-inference: {query, texts, truncate, truncation_direction,
//                     raw_scores, return_text} → [{index, score[, text]}] sorted by score
//   POST /v1/rerank   Cohere / Jina: {model, query, documents: [str | {text}], top_n,
//                     return_documents} → {id, model, results: [{index, relevance_score,
//                     document?: {text}}], usage}
//   POST /v1/score    vLLM's score API: {model, text_1: str | [str], text_2: str | [str]} →
//                     {id, object: "list", created, model, data: [{index, object: "score",
//                     score}], usage}
//
// Every route also takes `instruction` (Qwen3-Reranker's <Instruct>), `truncate`,
// `truncation_direction`, `raw_scores` and `priority` (vLLM's). The rerank routes (not /v1/score)
// take `max_chunks_per_doc` (Cohere v1's; a positive integer) and orchid's `return_chunks`
// (bool): long documents are scored in chunks (document_chunks.h), and each result says which
// chunk won. Parsers check JSON types and shapes only; what depends on the model is checked by
// ScoreService. Thread safety: free functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/api_error.h"
#include "tokenizer/tokenizer.h"
#include "worker/scheduling.h"

namespace orchid {

struct ScoreRequest {
  // Pairs (queries[i], documents[i]); a single query is paired with every document.
  std::vector<std::string> queries;
  std::vector<std::string> documents;
  std::optional<std::string> model;
  std::optional<std::string> instruction;  // Qwen3-Reranker's task instruction
  std::optional<bool> truncate;  // cut pairs over the maximum, else refuse; unset: --auto-truncate
  TruncationSide truncation_direction = TruncationSide::kRight;
  bool raw_scores = false;  // the model's logit instead of the activated score
  // Long documents: score a pair over the model's window as its document's chunks, at most
  // this many (the best chunk's score is the document's). Unset: the server's
  // --max-chunks-per-doc; 0: never (vLLM's /v1/score, which cuts or refuses).
  std::optional<int64_t> max_chunks_per_doc;
  // Reply options.
  bool return_chunks = false;                 // say which chunk of each document won (when chunked)
  bool return_text = false;                   // include each document's text in the reply
  std::optional<int64_t> top_n;               // /v1/rerank: only the best N results
  std::string documents_field = "documents";  // how errors name a document: texts, text_2
  // BGE-M3 models (bge_m3.h): which of FlagEmbedding's compute_score results to return
  // ("dense", "sparse", "colbert", "sparse+dense", "colbert+sparse+dense"; unset: dense) and
  // its weights_for_different_modes [dense, sparse, colbert] (three numbers in [0, 1e6], the dense
  // and sparse ones not both 0;
  // empty: [1, 1, 1]). Other models refuse them.
  std::optional<std::string> score_mode;
  std::vector<double> score_weights;
  // `priority` from the body; the router adds the deadline and the connection's cancellation.
  Scheduling scheduling;

  size_t num_pairs() const { return documents.size(); }
  const std::string& query(size_t i) const { return queries.size() == 1 ? queries[0] : queries[i]; }
};

// Which chunk of a document gave its score (ScoreRequest::max_chunks_per_doc): its index among
// the document's `count` chunks and its span [start, end) in the document, in Unicode code points
// (Python's str indices). A document that fits the window is its own chunk 0 of 1.
struct ChunkHit {
  int64_t index = 0;
  int64_t start = 0;
  int64_t end = 0;
  int64_t count = 1;
};

// The number of documents (or pairs) one request may hold (TEI's max_client_batch_size for
// /rerank, OpenAI's input limit for embeddings).
inline constexpr size_t kMaxScorePairs = 2048;

std::optional<ApiError> ParseTeiRerankRequest(std::string_view body, ScoreRequest* out);
// Defaults: truncate true (Cohere and Jina cut long documents), return_documents false.
std::optional<ApiError> ParseRerankRequest(std::string_view body, ScoreRequest* out);
// text_1 a string and text_2 a string or a list: one query against every text_2; both lists of
// equal length: zipped pairs (a text_1 list of one is broadcast). Defaults: truncate false.
std::optional<ApiError> ParseScoreRequest(std::string_view body, ScoreRequest* out);

// The reply writers take the request (for texts and options) and one score per pair; with
// request.return_chunks, each result's `chunk` ({index, start, end, count}) from `chunks` (one
// per pair; empty when the request was not chunked: no `chunk`).
std::string WriteTeiRerankResponse(const ScoreRequest& request, const std::vector<float>& scores,
                                   const std::vector<ChunkHit>& chunks = {});
std::string WriteRerankResponse(const ScoreRequest& request, const std::vector<float>& scores,
                                std::string_view model, int64_t tokens,
                                const std::vector<ChunkHit>& chunks = {});
std::string WriteScoreResponse(const std::vector<float>& scores, std::string_view model,
                               int64_t tokens, int64_t created);

// text-embeddings-inference `POST /predict` (sequence classification): {"inputs": text |
// [text, text] (one pair) | [text | [text, text], ...] (a batch), "truncate",
// "truncation_direction", "raw_scores", "model" (orchid's: which served model)}. As in TEI, an
// array of exactly two strings is one pair, not a batch of two texts.
// What turns a classifier's logits into scores (Hugging Face's `function_to_apply`).
enum class ScoreFunction : uint8_t { kNone, kSigmoid, kSoftmax };

struct PredictRequest {
  std::vector<std::string> first;   // each input's text, or its pair's first text
  std::vector<std::string> second;  // its pair's second text; empty: a single text
  bool batch = false;               // `inputs` was a list of inputs: the reply is a list of lists
  std::optional<std::string> model;
  std::optional<bool> truncate;  // unset: the server's --auto-truncate
  TruncationSide truncation_direction = TruncationSide::kRight;
  bool raw_scores = false;  // logits instead of probabilities
  // Overrides the model's own activation (and raw_scores) when set: Hugging Face's
  // text-classification `parameters.function_to_apply`.
  std::optional<ScoreFunction> function;
  std::optional<int64_t> top_k;  // Hugging Face's `parameters.top_k`: the best k labels only
  Scheduling scheduling;         // as ScoreRequest's

  size_t size() const { return first.size(); }
};
std::optional<ApiError> ParsePredictRequest(std::string_view body, PredictRequest* out);

// The Hugging Face Inference API's text classification, as InferenceClient.text_classification
// posts it: /predict's request, plus `parameters` {"top_k": int, "function_to_apply":
// "sigmoid" | "softmax" | "none"}. The reply is always a list per input (batch is set), as the
// Inference API answers and the client reads it.
std::optional<ApiError> ParseHfClassificationRequest(std::string_view body, PredictRequest* out);

// Each input's [{"score", "label"}], best first (at most `top_k` of them when set); for a batch
// (PredictRequest::batch), a list of those. `scores` holds `labels.size()` values per input, in
// label order.
std::string WritePredictResponse(bool batch, const std::vector<float>& scores,
                                 const std::vector<std::string>& labels,
                                 std::optional<int64_t> top_k = std::nullopt);

// Cohere's v2 rerank (`POST /v2/rerank`): {"model", "query", "documents": [string], "top_n",
// "max_tokens_per_doc", "relevant_spans", "priority"}, plus orchid's `return_documents`,
// `truncate` (default true, as Cohere cuts long documents), `truncation_direction`,
// `raw_scores` and `instruction`. relevant_spans may only be disabled (orchid finds none).
// max_tokens_per_doc is checked (an integer of at least 1) but not applied: documents are cut
// to fit the model's own maximum, which is below Cohere's default of 4096 for every model
// orchid serves. Cohere v1's max_chunks_per_doc and orchid's return_chunks as on /v1/rerank.
std::optional<ApiError> ParseCohereRerankRequest(std::string_view body, ScoreRequest* out);
// {"id", "results": [{"index", "relevance_score", "document"?: {"text"}}], "meta": {"api_version":
// {"version": "2"}, "billed_units": {"search_units"}, "tokens": {"input_tokens"}}}, best first.
std::string WriteCohereRerankResponse(const ScoreRequest& request, const std::vector<float>& scores,
                                      int64_t tokens, const std::vector<ChunkHit>& chunks = {});

}  // namespace orchid
