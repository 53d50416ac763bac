// Arbitrary bytes as the JSON body of POST /v1/embeddings and POST /embed: the parsers must
// return an ApiError or a request that satisfies its documented shape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gateway/embeddings_request.h"

namespace {

void Check(const orchid::EmbeddingsRequest& r) {
  // Exactly one of texts / token_ids is non-empty.
  if (r.texts.empty() == r.token_ids.empty()) std::abort();
  if (r.num_inputs() == 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  {
    orchid::EmbeddingsRequest r;
    if (!orchid::ParseOpenAiEmbeddingsRequest(body, &r).has_value()) Check(r);
  }
  {
    orchid::EmbeddingsRequest r;
    if (!orchid::ParseTeiEmbedRequest(body, &r).has_value()) Check(r);
  }
  return 0;
}
