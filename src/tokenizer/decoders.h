// Decoders (tokenizer.json "decoder"): token strings back to text, as `tokenizers`' decode_chain.
// Supported: WordPiece, Metaspace, ByteLevel, ByteFallback, Fuse, Strip, Replace (string
// pattern), Sequence.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/json_util.h"

namespace orchid::tok {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites *tokens in place (the chain step); the caller concatenates the result.
  virtual void DecodeChain(std::vector<std::string>* tokens) const = 0;
};

// JSON null gives nullptr (tokens are joined with spaces).
Result<std::unique_ptr<Decoder>> MakeDecoder(JsonElement json, std::string_view where);

}  // namespace orchid::tok
