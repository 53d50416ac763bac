// Models (tokenizer.json "model"). Supported: WordPiece, BPE, Unigram.
#pragma once

#include <memory>
#include <string_view>

#include "core/status.h"
#include "tokenizer/components.h"
#include "tokenizer/json_util.h"

namespace orchid::tok {

Result<std::unique_ptr<Model>> MakeModel(JsonElement json, std::string_view where);

}  // namespace orchid::tok
