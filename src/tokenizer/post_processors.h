// Post-processors (tokenizer.json "post_processor"). Supported: TemplateProcessing,
// BertProcessing, RobertaProcessing, ByteLevel, Sequence. Single and pair templates
// (with token_type_ids).
#pragma once

#include <memory>
#include <string_view>

#include "core/status.h"
#include "tokenizer/components.h"
#include "tokenizer/json_util.h"

namespace orchid::tok {

// JSON null gives nullptr (no special tokens are added).
Result<std::unique_ptr<PostProcessor>> MakePostProcessor(JsonElement json, std::string_view where);

}  // namespace orchid::tok
