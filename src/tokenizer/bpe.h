// BPE model (tokenizer.json "model": {"type": "BPE"}), as `tokenizers` implements it.
#pragma once

#include <memory>
#include <string_view>

#include "core/status.h"
#include "tokenizer/components.h"
#include "tokenizer/json_util.h"

namespace orchid::tok {

class BpeModel : public Model {
 public:
  // Byte-level mode (set when the pipeline has a ByteLevel pre-tokenizer): every byte of a
  // word is first mapped to its GPT-2 byte-level character, so words stay in the original
  // text and tokens' ranges are original byte ranges. Call before the first Tokenize.
  virtual void EnableByteLevel() = 0;
};

Result<std::unique_ptr<BpeModel>> MakeBpe(JsonObject json, std::string_view where);

}  // namespace orchid::tok
