// Writing embeddings replies, and the `dimensions` transform (Matryoshka truncation).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/embeddings_request.h"

namespace orchid {

// Row-major [rows, dim] embeddings as the gateway hands them around.
struct EmbeddingMatrix {
  int rows = 0;
  int dim = 0;
  std::vector<float> data;
  const float* row(int i) const { return data.data() + size_t(i) * size_t(dim); }
};

// Keeps the first `dims` columns of every row and L2-normalises what is left (rows of norm
// zero stay zero). Requires 1 <= dims <= m->dim.
void TruncateDimensions(EmbeddingMatrix* m, int dims);

// {"object":"list","data":[{"object":"embedding","index":i,"embedding":[...] or "base64"}],
//  "model":model,"usage":{"prompt_tokens":n,"total_tokens":n}}
std::string WriteOpenAiEmbeddingsResponse(const EmbeddingMatrix& m, EncodingFormat format,
                                          std::string_view model, int64_t prompt_tokens);

// TEI /embed: [[floats], ...]
std::string WriteTeiEmbedResponse(const EmbeddingMatrix& m);

}  // namespace orchid
