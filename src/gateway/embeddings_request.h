// The embeddings requests the HTTP API accepts, parsed from JSON (simdjson) into one form.
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

// How embeddings are written: floats as JSON numbers or base64 float32, or quantized (see
// quantize.h) as JSON integers.
enum class EncodingFormat : uint8_t { kFloat, kBase64, kInt8, kUint8, kBinary, kUbinary };

struct EmbeddingsRequest {
  // Exactly one of these is non-empty: texts to tokenize, or token-id sequences used as given.
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> token_ids;
  // Images among the inputs (dual encoders: CLIP, SigLIP): each as the client wrote it (a data
  // URI, an http(s) URL, or bare base64 where the API allows it) with the input index it stands
  // at; `texts` hold the other inputs in order. Parsers put here only what can be nothing but
  // an image (Jina's {"image": ...}, Cohere's images and image_url parts, vLLM's image_url
  // messages); whether a plain string input that is a data:image/ URI is an image is the
  // model's to say (EmbeddingService).
  struct Image {
    size_t index = 0;
    std::string source;
    bool bare_base64 = false;  // Jina: base64 without a data: prefix is an image too
    std::string bytes;  // the encoded file itself (orchid embed reads files); then no `source`
  };
  std::vector<Image> images;
  // Infinity's "modality": "image": every string input is an image.
  bool image_modality = false;
  std::optional<std::string> model;
  EncodingFormat encoding_format = EncodingFormat::kFloat;
  // Cohere's `embedding_types`: when not empty, the reply holds the embeddings once per type
  // ({"embeddings": {"float": [...], "int8": [...]}}) instead of OpenAI's `data`.
  std::vector<EncodingFormat> embedding_types;
  std::optional<int64_t> dimensions;  // keep the first N dimensions, then re-normalise
  // Cohere's `max_tokens`: at most this many tokens per input (the model's maximum when larger);
  // an input over it is cut or refused as `truncate` says.
  std::optional<int64_t> max_tokens;
  // Cut over-long inputs instead of refusing them; unset: the server's --auto-truncate.
  std::optional<bool> truncate;
  TruncationSide truncation_direction = TruncationSide::kRight;  // which end `truncate` cuts
  std::optional<bool> normalize;      // L2-normalise; unset → the model's own default
  // Prompt selection (texts only): a named prompt of the model's
  // config_sentence_transformers.json, or input_type (the prompt of that name if the model has
  // one, else none: "query" / "document" from OpenAI-style requests, also "classification" /
  // "clustering" from Cohere's). Neither: the server's default prompt, if any.
  std::optional<std::string> prompt_name;
  std::optional<std::string> input_type;
  // Jina's `task`: the task adapter to run (jina-embeddings-v3: "retrieval.query",
  // "retrieval.passage", "separation", "classification", "text-matching"), and that task's
  // prompt if the model has one. Unset: prompt_name naming a task picks it, else input_type
  // maps to one (query -> retrieval.query, document -> retrieval.passage, classification ->
  // classification, clustering -> separation) when the model has it, else none (the base
  // model, as jina's encode() without a task).
  std::optional<std::string> task;
  // `priority` from the body; the router adds the deadline (X-Request-Timeout,
  // X-Stainless-Timeout) and the client connection's cancellation; input_type "query" makes it
  // a query (EmbeddingService).
  Scheduling scheduling;
  // TEI's /embed_all: every token's last hidden state instead of one pooled vector per input.
  bool per_token = false;
  // Late-interaction (ColBERT) models: the first `late_queries` texts are encoded as queries,
  // the rest as documents; unset: all queries when prompt_name or input_type is "query", else
  // all documents.
  std::optional<size_t> late_queries;

  bool pretokenized() const { return !token_ids.empty(); }
  size_t num_inputs() const {
    return (pretokenized() ? token_ids.size() : texts.size()) + images.size();
  }
};

// OpenAI `POST /v1/embeddings`: input (string | [string] | [token id] | [[token id]], or Jina's
// [{"text": string} | {"image": string}, ...] mixed with strings), Infinity's `modality`
// ("text" | "image": every input an image), vLLM's `messages` instead of input (one user
// message whose content is text parts or one image_url part: one input), model,
// encoding_format (float, base64, and the quantized int8, uint8, binary, ubinary), dimensions,
// user (a string, not used), and our extensions `embedding_types` (Cohere), `truncate`,
// `truncation_direction` (left | right), `normalize`, `prompt_name`, `input_type` (query |
// document), `task` (Jina's), `priority` (vLLM's). Checks
// JSON types and shapes only; what depends on the model (its name, vocabulary, maximum length,
// dimension) is checked by EmbeddingService. Returns the error to send, or nullopt with *out
// filled.
std::optional<ApiError> ParseOpenAiEmbeddingsRequest(std::string_view body, EmbeddingsRequest* out);

// vLLM's `POST /pooling`: the OpenAI embeddings request's fields, and "task" (default
// "token_embed": every token's vector; the only task served here). Requests a token-id input.
std::optional<ApiError> ParsePoolingRequest(std::string_view body, EmbeddingsRequest* out);

// Cohere's `POST /v1/embed` and `POST /v2/embed`: "texts" ([string]) or v2's "inputs" ([{"content":
// [{"type": "text", "text"}]}], an input's text parts joined by newlines), "model",
// "input_type" (search_query → the model's "query" prompt, search_document → "document",
// classification and clustering → the prompt of that name; none when the model lacks it),
// "embedding_types" (v2: default ["float"]; v1: none, a plain list of float rows),
// "truncate" (NONE | START | END, default END: Cohere cuts long inputs), "max_tokens",
// "output_dimension" (→ dimensions) and "priority"; images: "images" ([data URI], with
// input_type "image") instead of texts, and v2 inputs whose content is one image_url part
// ({"type": "image_url", "image_url": {"url": ...}} or a bare string) instead of text parts.
enum class CohereApiVersion : uint8_t { kV1, kV2 };
std::optional<ApiError> ParseCohereEmbedRequest(std::string_view body, CohereApiVersion version,
                                                EmbeddingsRequest* out);

// text-embeddings-inference `POST /embed`: {"inputs": str | [str], "normalize": bool = true,
// "truncate": bool, "truncation_direction": "left" | "right", "prompt_name": str | null,
// "dimensions": int | null, "priority": int (orchid's, as vLLM's), "task": str | null (orchid's,
// as Jina's API)}.
std::optional<ApiError> ParseTeiEmbedRequest(std::string_view body, EmbeddingsRequest* out);

// text-embeddings-inference `POST /similarity`: {"inputs": {"source_sentence": str,
// "sentences": [str]}, "parameters": {"truncate", "truncation_direction", "prompt_name"} | null,
// "priority": int (orchid's, as vLLM's; top-level or in parameters), "model" (orchid's: which
// served model)}.
// *out gets the texts [source_sentence, sentences...] and the parameters.
std::optional<ApiError> ParseTeiSimilarityRequest(std::string_view body, EmbeddingsRequest* out);

}  // namespace orchid
