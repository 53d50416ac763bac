#include "gateway/quantize.h"

#include <algorithm>
#include <cmath>

namespace orchid {

void QuantizeRow(const float* x, int dim, EncodingFormat format, NativeQuantization native,
                 std::vector<int32_t>* out) {
  out->clear();
  const size_t n = size_t(std::max(0, dim));
  switch (format) {
    case EncodingFormat::kInt8:
    case EncodingFormat::kUint8: {
      const bool is_int8 = format == EncodingFormat::kInt8;
      out->reserve(n);
      for (size_t i = 0; i < n; ++i) {
        int32_t q = 0;
        if (native == NativeQuantization::kTanhInt8) {
          q = int32_t(std::nearbyint(std::tanh(double(x[i])) * 127.0));
          q = std::clamp(q, -127, 127);
          if (!is_int8) q += 128;
        } else {
          const double v = std::clamp(double(x[i]), -1.0, 1.0);
          const double steps = 2.0 / 255.0;
          const double scaled = (v + 1.0) / steps;
          q = is_int8 ? std::clamp(int32_t(std::trunc(scaled - 128.0)), -128, 127)
                      : std::clamp(int32_t(std::trunc(scaled)), 0, 255);
        }
        out->push_back(q);
      }
      return;
    }
    case EncodingFormat::kBinary:
    case EncodingFormat::kUbinary: {
      const size_t bytes = (n + 7) / 8;
      out->assign(bytes, 0);
      for (size_t i = 0; i < n; ++i) {
        if (x[i] > 0.0f) (*out)[i / 8] |= 1 << (7 - int(i % 8));
      }
      if (format == EncodingFormat::kBinary) {
        for (int32_t& b : *out) b -= 128;
      }
      return;
    }
    case EncodingFormat::kFloat:
    case EncodingFormat::kBase64:
      break;  // callers write float formats directly
  }
}

const char* EncodingFormatName(EncodingFormat format) {
  switch (format) {
    case EncodingFormat::kFloat:
      return "float";
    case EncodingFormat::kBase64:
      return "base64";
    case EncodingFormat::kInt8:
      return "int8";
    case EncodingFormat::kUint8:
      return "uint8";
    case EncodingFormat::kBinary:
      return "binary";
    case EncodingFormat::kUbinary:
      return "ubinary";
  }
  return "float";
}

}  // namespace orchid
