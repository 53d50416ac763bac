// Writing embeddings replies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/lazy_result.h"
#include "gateway/embeddings_request.h"

namespace orchid {

// Row-major [rows, dim] embeddings as the gateway hands them around: the engine's own type.
using EmbeddingMatrix = Embeddings;

// {"object":"list","data":[{"object":"embedding","index":i,"embedding":[...] or "base64"}],
//  "model":model,"usage":{"prompt_tokens":n,"total_tokens":n}}
std::string WriteOpenAiEmbeddingsResponse(const EmbeddingMatrix& m, EncodingFormat format,
                                          std::string_view model, int64_t prompt_tokens);

// TEI /embed: [[floats], ...]
std::string WriteTeiEmbedResponse(const EmbeddingMatrix& m);

}  // namespace orchid
