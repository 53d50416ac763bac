// Unigram model (tokenizer.json "model": {"type": "Unigram"}), as `tokenizers` implements it.
#pragma once

#include <memory>
#include <string_view>

#include "core/status.h"
#include "tokenizer/components.h"
#include "tokenizer/json_util.h"

namespace orchid::tok {

Result<std::unique_ptr<Model>> MakeUnigram(JsonObject json, std::string_view where);

}  // namespace orchid::tok
