// Writing embeddings replies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "engine/lazy_result.h"
#include "gateway/embeddings_request.h"

namespace orchid {

class JsonWriter;  // gateway/json_writer.h

// Row-major [rows, dim] embeddings as the gateway hands them around: the engine's own type.
using EmbeddingMatrix = Embeddings;

// How a reply writes its rows: OpenAI's one encoding_format, or Cohere's list of types.
struct EmbeddingOutput {
  EncodingFormat format = EncodingFormat::kFloat;
  std::vector<EncodingFormat> types;  // not empty: {"embeddings": {type: rows}} instead of data
  NativeQuantization native = NativeQuantization::kNone;  // the model's own int8 scheme
};

// {"object":"list","data":[{"object":"embedding","index":i,"embedding":[...] or "base64"}],
//  "model":model,"usage":{"prompt_tokens":n,"total_tokens":n}}; quantized formats write
// integers (quantize.h). With output.types (Cohere's embedding_types): "data" is replaced by
// "response_type":"embeddings_by_type","embeddings":{"float":[[...]],"int8":[[...]],...}.
std::string WriteOpenAiEmbeddingsResponse(const EmbeddingMatrix& m, const EmbeddingOutput& output,
                                          std::string_view model, int64_t prompt_tokens);
inline std::string WriteOpenAiEmbeddingsResponse(const EmbeddingMatrix& m, EncodingFormat format,
                                                 std::string_view model, int64_t prompt_tokens) {
  return WriteOpenAiEmbeddingsResponse(m, EmbeddingOutput{format, {}, NativeQuantization::kNone},
                                       model, prompt_tokens);
}

// Cohere's embed reply: {"id", "embeddings", "texts", "meta": {"api_version": {"version"},
// "billed_units": {"input_tokens"}}, "response_type"}. With output.types (always so on v2):
// "response_type": "embeddings_by_type", "embeddings": {"float": [[...]], "int8": [[...]], ...};
// without (v1): "response_type": "embeddings_floats", "embeddings": [[...]]. `texts`: the
// request's texts, echoed as Cohere does.
std::string WriteCohereEmbedResponse(const EmbeddingMatrix& m, const EmbeddingOutput& output,
                                     const std::vector<std::string>& texts,
                                     std::string_view api_version, int64_t input_tokens);

// TEI /embed: [[floats], ...]
std::string WriteTeiEmbedResponse(const EmbeddingMatrix& m);
// TEI's POST /embed_sparse: per input, its non-zero entries [{"index": i, "value": v}, ...] in
// index order.
std::string WriteTeiSparseResponse(const EmbeddingMatrix& m);

// One input's vectors of a per-token reply (TEI's /embed_all, vLLM's /pooling): [[floats], ...],
// the `count` rows from *row on (fewer where the matrix ends), *row moved past them. The caller
// checks that its inputs' rows add up to the matrix's.
void WriteTokenRows(const EmbeddingMatrix& m, int32_t count, int* row, JsonWriter* w);

}  // namespace orchid
