// Quantized embedding outputs (`encoding_format` / `embedding_types` int8, uint8, binary,
// ubinary). Pure functions of one float row; thread-safe.
//
//   int8 / uint8   Without calibration data orchid uses the fixed range [-1, 1] (the range of
//                  an L2-normalised embedding's values), exactly as sentence-transformers'
//                  quantize_embeddings(emb, precision, ranges=[[-1]*d, [1]*d]) does:
//                  uint8 = trunc((x + 1) / (2 / 255)), int8 = trunc((x + 1) / (2 / 255) - 128),
//                  with x clamped to [-1, 1] first (in double, as numpy computes it).
//                  Models with NativeQuantization::kTanhInt8 (pplx-embed) use their own scheme
//                  instead: int8 = round(tanh(x) * 127) (half to even), uint8 = int8 + 128.
//   binary/ubinary The sign bits, packed 8 per byte, first dimension in the high bit, the last
//                  byte zero-padded (numpy.packbits(x > 0)): ubinary = those bytes as uint8,
//                  binary = ubinary - 128 as int8 (sentence-transformers' definition).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/engine.h"
#include "gateway/embeddings_request.h"

namespace orchid {

// Values of one row in `format` (kInt8, kUint8, kBinary or kUbinary), as integers; binary
// formats give ceil(dim / 8) values.
void QuantizeRow(const float* x, int dim, EncodingFormat format, NativeQuantization native,
                 std::vector<int32_t>* out);

// The JSON / Cohere name of a format: "float", "base64", "int8", ...
const char* EncodingFormatName(EncodingFormat format);

}  // namespace orchid
