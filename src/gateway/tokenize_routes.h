// text-embeddings-inference's tokenizer routes, as standalone handlers over a Tokenizer:
//
//   POST /tokenize  {"inputs": str | [str], "add_special_tokens": bool = true,
//                    "prompt_name": ignored}
//     → [[{"id", "text", "special", "start", "stop"}, …], …]  (one array per input, also for a
//       single string). start / stop are character (Unicode scalar value) offsets into the
//       input and text is that slice of it; for the post-processor's special tokens ([CLS],
//       [SEP]) text is the token itself and start / stop are null.
//   POST /decode    {"ids": [int] | [[int]], "skip_special_tokens": bool = true}
//     → [str, …]  (one string per id sequence, also for a single one). Ids the vocabulary does
//       not hold are skipped, as `tokenizers` does.
//
// Errors use TEI's body {"error": message, "error_type": "Validation"}: 422 for a malformed
// request or an input the tokenizer refuses, 413 for more inputs than max_client_batch_size
// (TEI's status for its batch-size check).
//
// The route table's handlers (TeiTokenize, TeiDecode: route_handlers.h) call these with the
// default model's tokenizer.
//
// Thread safety: the handlers keep no state; they may run on many threads at once (Tokenizer
// is thread-safe).
#pragma once

#include <cstddef>
#include <string_view>

#include "gateway/http_types.h"
#include "tokenizer/tokenizer.h"

namespace orchid {

// max_client_batch_size: the most inputs one request may hold (0 = no limit).
HttpResponse HandleTokenize(const Tokenizer& tok, std::string_view body,
                            size_t max_client_batch_size);
HttpResponse HandleDecode(const Tokenizer& tok, std::string_view body,
                          size_t max_client_batch_size);

}  // namespace orchid
