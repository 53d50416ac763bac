#pragma once

#include <memory>
#include <string_view>

#include "core/status.h"
#include "tokenizer/components.h"
#include "tokenizer/json_util.h"

namespace orchid::tok {

// The WordPiece model from its tokenizer.json "model" object.
Result<std::unique_ptr<Model>> MakeWordPiece(JsonObject json, std::string_view where);

}  // namespace orchid::tok
