// The texts --dtype int8 embeds at load (cpu_engine.h, LoadOptions::int8): one set calibrates
// the quantization (each int8 layer's input range per channel), the other, disjoint, is the
// fidelity gate (int8 against float32 on the same texts). Both mix languages, scripts and
// lengths (int8_samples.cpp).
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "description/model_info.h"
#include "engine/ragged_batch.h"

namespace orchid {

class Tokenizer;

const std::vector<std::string_view>& Int8CalibrationTexts();
const std::vector<std::string_view>& Int8GateTexts();

// texts encoded with the model's special tokens, each cut to max_length tokens, as one batch
// pooled as the model pools by default (normalized; token types 0).
Result<RaggedBatch> EncodeSampleBatch(const Tokenizer& tokenizer,
                                      const std::vector<std::string_view>& texts, size_t max_length,
                                      const ModelInfo& info);

}  // namespace orchid
